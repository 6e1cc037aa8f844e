// Whose sequences a binding's entities are (bindings[].sequence.scope) and the
// way back for a sequence that jumped (`exo sequence rewind`), against the real
// servers: two consumer groups with the same handler on one database, and an
// entity a record with sequence INT64_MAX made STALE to everything after it.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <thread>

#include "kafka/producer.hpp"
#include "operations_cli.hpp"

using namespace std::chrono_literals;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using nlohmann::json;
using namespace exo::testing::ops;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Waits (generously) until `sql` counts `expected`; false if it never does.
bool wait_for_count(const PipelineHarness& h, const std::string& sql, std::int64_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (h.count(sql) == expected) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

void produce_to(const PipelineHarness& h, const std::string& topic, const exo::PaymentMessage& m) {
    exo::KafkaProducer producer(exo::ProducerOptions{h.bootstrap(), {}});
    producer.produce({topic, m.partition, m.payment.account_id, m.payment.json(), {}});
    producer.flush(std::chrono::seconds(30));
}

// A test group beside production on production's database: the same handler,
// its own topic. Its record for acc-1 carries sequence INT64_MAX; then
// production's own record for acc-1, sequence 5, arrives. Returns production's
// outcome for it.
std::string production_after_test_group(PipelineHarness& h, exo::SequenceScope scope) {
    exo::Config production = h.config();
    production.bindings[0].sequence->scope = scope;
    exo::Config test = production;
    test.kafka.group_id = production.kafka.group_id + "-test";
    test.redis.key_prefix = production.redis.key_prefix + "-test";
    test.bindings[0].topic = h.topic() + ".test";
    test.bindings[0].dead_letter_topic = h.topic() + ".test.dlq";
    h.cluster().create_topic(test.bindings[0].topic, 1);
    h.cluster().create_topic(test.bindings[0].dead_letter_topic, 1);

    produce_to(h, test.bindings[0].topic, payment("t-1", "acc-1", 7, kMax));
    {
        exo::testing::RunningDaemon d(test, h.registry(), h.bootstrap());
        REQUIRE(wait_for_count(h,
                               "SELECT count(*) FROM exo_processed WHERE consumer_group = '" +
                                   test.kafka.group_id + "' AND idempotency_key = 't-1'",
                               1));
        d.stop();
    }
    h.produce({payment("p-1", "acc-1", 10, 5)});
    {
        exo::testing::RunningDaemon d(production, h.registry(), h.bootstrap());
        REQUIRE(h.wait_until_consumed(90s));
        d.stop();
    }
    return outcome(h, "p-1");
}

std::int64_t last_sequence(const PipelineHarness& h, const std::string& handler) {
    return h.count("SELECT last_sequence FROM exo_sequences WHERE handler = '" + handler +
                   "' AND entity = 'acc-1'");
}

}  // namespace

TEST_CASE(
    "with sequence scope: group, a test group with the same handler on the same database moves "
    "none of production's entities") {
    PipelineHarness h({.name = "seq_scope_group",
                       .partitions = 1,
                       .mode = exo::SequenceMode::latest,
                       .concurrency = 1});
    const std::string group = h.config().kafka.group_id;
    CHECK(production_after_test_group(h, exo::SequenceScope::group) == "APPLIED");
    CHECK(last_sequence(h, "ledger@" + group) == 5);
    CHECK(last_sequence(h, "ledger@" + group + "-test") == kMax);
    CHECK(h.count("SELECT count(*) FROM exo_sequences WHERE handler = 'ledger'") == 0);
}

TEST_CASE(
    "by default the groups on one database share a handler's sequences, as before the scope "
    "existed") {
    PipelineHarness h({.name = "seq_scope_shared",
                       .partitions = 1,
                       .mode = exo::SequenceMode::latest,
                       .concurrency = 1});
    CHECK(production_after_test_group(h, exo::SequenceScope::shared) == "STALE");
    CHECK(last_sequence(h, "ledger") == kMax);
    CHECK(h.count("SELECT count(*) FROM exo_sequences") == 1);
}

TEST_CASE(
    "an entity a sequence of INT64_MAX made STALE is rewound by an audited sequence rewind, "
    "refused while its row is locked, and its next record applies exactly once") {
    PipelineHarness h({.name = "seq_rewind",
                       .partitions = 1,
                       .mode = exo::SequenceMode::latest,
                       .concurrency = 1});
    h.mutable_config().bindings[0].sequence->scope = exo::SequenceScope::group;
    const std::string owner = "ledger@" + h.config().kafka.group_id;
    const std::string config = write_config(h);

    h.produce({payment("e-1", "acc-1", 10, 1), payment("e-max", "acc-1", 1, kMax),
               payment("e-2", "acc-1", 20, 2)});
    consume_fixed(h);
    REQUIRE(outcome(h, "e-max") == "APPLIED");
    REQUIRE(outcome(h, "e-2") == "STALE");  // the jump: every later sequence is
    REQUIRE(last_sequence(h, owner) == kMax);

    const std::vector<std::string> rewind{"sequence", "rewind",   "--config",
                                          config,     "--entity", "acc-1"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = rewind;
        args.insert(args.end(), extra.begin(), extra.end());
        return exo_cli(args);
    };
    auto unconfirmed = with({"--to", "1", "--reason", "e-max was a producer bug"});
    CHECK(unconfirmed.exit_code == 2);
    CHECK(unconfirmed.output.find("--confirm-rewind") != std::string::npos);
    CHECK(with({"--to", "1", "--confirm-rewind"}).exit_code == 2);  // no reason
    auto dry = with({"--to", "1", "--reason", "x", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK(dry.output.find("would rewind entity 'acc-1' of handler '" + owner + "' from " +
                          std::to_string(kMax) + " to 1") != std::string::npos);
    CHECK(last_sequence(h, owner) == kMax);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances") == 0);

    {  // A record of the entity being applied holds its row: refused at once,
        // even with no lock timeout at all (lock_timeout_ms: 0 would wait forever).
        std::string unbounded = config + ".no-lock-timeout.yaml";
        {
            std::ifstream in(config);
            std::string text((std::istreambuf_iterator<char>(in)), {});
            const auto at = text.find("postgres: {uri: ");
            REQUIRE(at != std::string::npos);
            text.insert(text.find('}', at), ", lock_timeout_ms: 0");
            std::ofstream(unbounded) << text;
        }
        pqxx::connection holder_connection(h.postgres_uri());
        pqxx::work holder(holder_connection);
        holder.exec("SELECT last_sequence FROM exo_sequences WHERE entity = 'acc-1' FOR UPDATE");
        auto locked = exo_cli({"sequence", "rewind", "--config", unbounded, "--entity", "acc-1",
                               "--to", "1", "--reason", "x", "--confirm-rewind"});
        CHECK(locked.exit_code == 1);
        CHECK(locked.output.find("is locked by another transaction") != std::string::npos);
        holder.abort();
    }
    CHECK(last_sequence(h, owner) == kMax);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances") == 0);

    auto moved = with({"--to", "1", "--reason", "e-max was a producer bug", "--by", "ops-test",
                       "--confirm-rewind", "--json"});
    CHECK(moved.exit_code == 0);
    json m = json_of(moved);
    CHECK(m["status"] == "rewound");
    CHECK(m["from"] == kMax);
    CHECK(m["to"] == 1);
    CHECK(last_sequence(h, owner) == 1);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances WHERE handler = '" + owner +
                  "' AND entity = 'acc-1' AND from_sequence = " + std::to_string(kMax) +
                  " AND to_sequence = 1 AND reason = 'e-max was a producer bug' AND advanced_by"
                  " = 'ops-test' AND advanced_from LIKE '%/exo-%'") == 1);
    CHECK(with({"--to", "5", "--reason", "x", "--confirm-rewind"}).exit_code == 2);  // forward

    // The next record applies, once; a copy of it is a duplicate; e-2 stays
    // STALE (its key has a dedup row) and e-max's copy stays a duplicate.
    h.produce({payment("e-3", "acc-1", 30, 3), payment("e-3", "acc-1", 30, 3),
               payment("e-max", "acc-1", 1, kMax)});
    consume_fixed(h);
    CHECK(outcome(h, "e-3") == "APPLIED");
    CHECK(outcome(h, "e-2") == "STALE");
    CHECK(h.count("SELECT count(*) FROM ledger_entries WHERE event_id = 'e-3'") == 1);
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 41}});
    CHECK(last_sequence(h, owner) == 3);
    CHECK(h.count("SELECT count(*) FROM exo_sequence_advances") == 1);
}
