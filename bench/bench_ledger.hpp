#pragma once
// The benchmark's ledger: the example's, with its outbox emits off by default
// (applied_topic ""), so the scenarios measure the workload issue 10 defined:
// balances and entries, no emitted records. exo-emits passes a topic: the
// shipped ledger's default, one `ledger.applied` record per applied payment.
#include <exo/options.hpp>
#include <string>

namespace exo::bench {

inline HandlerOptions bench_ledger_options(const std::string& applied_topic = "") {
    return HandlerOptions("exo_bench", "options", {{"applied_topic", {applied_topic, 0}}});
}

}  // namespace exo::bench
