#pragma once
// What the chaos runs share: chaos_test.cpp's short cases (CI's serial part) and
// chaos_long_test.cpp's long one (scripts/chaos.sh, never in CI). Daemons that are `exo run`
// child processes on one config file, killed and replaced; Redis flushed; and the figures a
// run is judged by: payments lost or applied twice, the group's lag, the outbox's rows
// published.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "payments_workload.hpp"
#include "pipeline_harness.hpp"

namespace exo::testing {

// `exo run` child processes on the harness's config (written to /tmp/<schema>.yaml), one a
// slot; each launch logs to /tmp/<schema>-<n>.log, n counting the launches. Not thread-safe:
// the test's thread drives it.
class DaemonFleet {
public:
    // Launches `count` daemons.
    DaemonFleet(const PipelineHarness& h, std::size_t count);

    std::size_t size() const { return daemons_.size(); }
    // kill -9 of slot `i`'s process (none if it has ended already); fails the case if it has
    // not ended 10 s later.
    void kill(std::size_t i);
    // A new process in slot `i`, whose last one has ended, with `env` added to its
    // environment (e.g. EXO_FAILPOINTS).
    void launch(std::size_t i, const std::map<std::string, std::string>& env = {});
    // Whether slot `i`'s process has ended (a failpoint's kill, a crash).
    bool ended(std::size_t i);
    // SIGTERM to every process, then waits up to 30 s for each; a process still running
    // after that fails the case (CHECK) and is killed when the fleet is destroyed.
    void terminate();

private:
    std::string config_file_;
    std::string log_prefix_;
    int launches_ = 0;
    std::vector<std::unique_ptr<ChildProcess>> daemons_;
};

// FLUSHALL on the tests' Redis: every claim forgotten at once.
void flush_redis();

// The workload of the first `count` messages of `workload` (all of it if it has fewer): what
// a producer stopped there wrote, and its exactly-once result.
PaymentWorkload first_messages(const PaymentWorkload& workload, std::size_t count);

// What became of a workload's payments: `lost` have no ledger entry, `doubled` counts the
// entries beyond one a payment (and APPLIED rows beyond one an idempotency key), and
// `wrong_balances` the accounts whose balance is not the workload's.
struct ExactlyOnceFigures {
    std::int64_t lost = 0;
    std::int64_t doubled = 0;
    std::int64_t wrong_balances = 0;
};
ExactlyOnceFigures exactly_once_figures(const PipelineHarness& h, const PaymentWorkload& workload);

// The ledger's emits (one ledger.applied record a payment, through the outbox): its rows, those
// not yet published, the records in Kafka (a relay killed mid-round re-publishes, so some may be
// there twice, with the same exo-outbox-id), their distinct exo-outbox-ids, and whether each
// account's first copies are in sequence order. Reads all of ledger.applied: the harness's
// Kafka must hold this run's emits only (the mock cluster of its own, or a cluster of the run's).
struct OutboxFigures {
    std::int64_t rows = 0;
    std::int64_t pending = 0;
    std::int64_t in_kafka = 0;
    std::int64_t distinct_ids = 0;
    bool in_order = true;
};
OutboxFigures outbox_figures(const PipelineHarness& h);

inline std::ostream& operator<<(std::ostream& out, const OutboxFigures& o) {
    return out << o.rows << " rows, " << o.pending << " pending, " << o.in_kafka
               << " records in Kafka, " << o.distinct_ids << " distinct ids, "
               << (o.in_order ? "in order" : "OUT OF ORDER");
}

}  // namespace exo::testing
