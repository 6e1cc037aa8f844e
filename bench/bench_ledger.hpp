#pragma once
// The benchmark's ledger: the example's, with its outbox emits off
// (applied_topic ""), so every scenario measures the workload issue 10
// defined: balances and entries, no emitted records.
#include <exo/options.hpp>

namespace exo::bench {

inline HandlerOptions bench_ledger_options() {
    return HandlerOptions("exo_bench", "options", {{"applied_topic", {"", 0}}});
}

}  // namespace exo::bench
