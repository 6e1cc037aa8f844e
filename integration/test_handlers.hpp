#pragma once
// Handlers for failure tests: the ledger, misbehaving on cue. The cue is the
// event id's prefix, so one workload can mix well-behaved and faulty records.
//   slow-*    sleeps `slow_for` before applying (a long handler, a held key)
//   flaky-*   throws RetryableError on attempts 1 and 2, succeeds on attempt 3
//   poison-*  throws PermanentError (a record that can never apply)
//   divzero-* runs a failing statement through exec() (not exec_prepared): the
//             way most libpqxx code is written, and the way that used to make
//             libpqxx abort the whole batch transaction
#include <chrono>
#include <thread>

#include "core/errors.hpp"
#include "handlers/ledger.hpp"

namespace exo::testing {

class MisbehavingLedger final : public Handler {
public:
    explicit MisbehavingLedger(std::chrono::milliseconds slow_for) : slow_for_(slow_for) {}
    void prepare(pqxx::connection_base& c) override { ledger_.prepare(c); }
    void handle(HandlerContext& ctx) override {
        const auto& key = ctx.idempotency_key();
        if (key.rfind("slow-", 0) == 0) std::this_thread::sleep_for(slow_for_);
        if (key.rfind("flaky-", 0) == 0 && ctx.attempt() < 3)
            throw RetryableError("flaky: attempt " + std::to_string(ctx.attempt()));
        if (key.rfind("poison-", 0) == 0) throw PermanentError("poison record refused");
        if (key.rfind("divzero-", 0) == 0) ctx.transaction().exec("SELECT 1 / 0");
        ledger_.handle(ctx);
    }

private:
    handlers::LedgerHandler ledger_;
    std::chrono::milliseconds slow_for_;
};

}  // namespace exo::testing
