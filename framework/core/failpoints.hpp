#pragma once
// Named places where a test can make the process die as if by `kill -9`, or
// freeze as if by SIGSTOP (a worker paused past its lease), like
// FoundationDB/TiKV-style failpoints. Read once from EXO_FAILPOINTS at start-up
// by the composition root, e.g. EXO_FAILPOINTS="after_pg_commit=kill@3" kills the
// process the 3rd time it passes that point, "after_claim=stop" freezes it there
// until SIGCONT. Points: after_claim, after_pg_commit; the outbox relay's
// outbox_after_ack (Kafka acknowledged a round, its mark not yet committed);
// `exo dlq replay`'s
// replay_after_ticket, replay_after_claim_forgotten, replay_after_produce
// (ops/replay.hpp). Unset in production: every
// check is then one map emptiness test.
//
// A statement can be cancelled instead: "pg_commit_probe=cancel@2" makes the
// 2nd COMMIT of a worker's transaction fail on the server as a cancel does
// (SQLSTATE 57014), in the statement sent with it (pg/explicit_transaction.hpp),
// so the session is left exactly as a real cancel or out-of-memory leaves it.
// A point is either a place to die or freeze (hit()) or a statement to cancel
// (cancels()): each only counts the passes of its own kind.
#include <atomic>
#include <map>
#include <string>

namespace exo {

class Failpoints {
public:
    // Parses "name=kill[@N],name2=stop[@N],name3=cancel[@N]". Throws UsageError
    // on a malformed spec.
    static Failpoints parse(const std::string& spec);
    static Failpoints from_environment();

    // Raises SIGKILL / SIGSTOP if `name` is armed with kill or stop and this is
    // its N-th pass.
    void hit(const char* name);
    // True if `name` is armed with cancel and this is its N-th pass: the caller
    // then makes its statement fail on the server as a cancel would.
    bool cancels(const char* name);
    bool empty() const { return armed_.empty(); }

    // Thread-safety: hit() and cancels() may be called from any thread; parse()
    // builds the set before any of them.

private:
    enum class Action { kill, stop, cancel };
    struct Armed {
        int on_pass = 1;
        Action action = Action::kill;
        std::atomic<int> passes{0};
    };
    // `name`'s entry if it is armed with cancel (`cancel`) or with kill or stop
    // (not `cancel`), and this pass of that kind is its N-th; nullptr otherwise.
    const Armed* due(const char* name, bool cancel);
    std::map<std::string, Armed> armed_;
};

}  // namespace exo
