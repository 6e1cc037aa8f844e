#pragma once
// The batch ledger failing a few records once, to measure what isolating a
// failed record in a batch costs (docs/handlers.md, "Batch handlers"). A record whose
// event id hashes to 0 modulo `every` fails its first attempt with a
// RetryableError and applies on the second, so the benchmark's exactly-once
// check holds unchanged. `named`: the failure names the record
// (BatchRecordFailed: the batch runs again without it); otherwise it names
// none (each record of the batch then runs alone, in a savepoint).
#include <functional>
#include <string>

#include "bench_ledger.hpp"
#include "ledger.hpp"

namespace exo::bench {

class FlakyLedger final : public BatchHandler {
public:
    FlakyLedger(int every, bool named) : every_(every), named_(named) {}
    void prepare(pqxx::connection_base& connection) override { inner_.prepare(connection); }
    void handle_batch(BatchContext& ctx) override {
        const auto records = ctx.records();
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (records[i].attempt() > 1) continue;
            const auto& key = records[i].idempotency_key();
            if (std::hash<std::string>{}(key) % every_ != 0) continue;
            RetryableError failure("flaky: first attempt of " + key);
            if (named_) ctx.fail(i, failure);
            throw failure;
        }
        inner_.handle_batch(ctx);
    }

private:
    std::size_t every_;
    bool named_;
    handlers::LedgerHandler inner_{bench_ledger_options()};
};

}  // namespace exo::bench
