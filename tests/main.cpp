// doctest's implementation and main: one line per test case, the logs of a failed one
// (tests/support/quiet_reporter.hpp).
#include "support/quiet_reporter.hpp"

int main(int argc, char** argv) {
    return exo::testing::run_tests(argc, argv);
}
