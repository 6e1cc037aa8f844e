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
#include <atomic>
#include <map>
#include <string>

namespace exo {

class Failpoints {
public:
    // Parses "name=kill[@N],name2=kill". Throws UsageError on a malformed spec.
    static Failpoints parse(const std::string& spec);
    static Failpoints from_environment();

    // Raises SIGKILL / SIGSTOP if `name` is armed and this is its N-th pass.
    void hit(const char* name);
    bool empty() const { return armed_.empty(); }

private:
    struct Armed {
        int on_pass = 1;
        int signal = 0;
        std::atomic<int> passes{0};
    };
    std::map<std::string, Armed> armed_;
};

}  // namespace exo
