// doctest's implementation and main: one line per test case; a failed one shows the logs
// captured while it ran and the tails of its `exo` child processes' log files
// (tests/support/quiet_reporter.hpp, child_process.hpp).
#include "../tests/support/quiet_reporter.hpp"
#include "child_process.hpp"

int main(int argc, char** argv) {
    exo::testing::failure_logs().push_back(
        {&exo::testing::ChildLogs::forget, &exo::testing::ChildLogs::print});
    return exo::testing::run_tests(argc, argv);
}
