// claim.store: postgres (docs/design.md#two-fences), without a server: the key
// parsed, checked against the Redis-only keys and printed back; a daemon
// without Redis shown without it; `exo inspect` saying where claims are.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "config/config_printer.hpp"
#include "observability/metrics_text.hpp"
#include "observability/status_json.hpp"
#include "ops/ops_report.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

// kMinimal with a claim section: a file without Redis.
constexpr std::string_view kPostgresClaims = R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: exo-ledger
postgres:
  uri: postgresql://exo@localhost/exo
claim: { store: postgres }
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)";

bool has_line(const std::string& text, const std::string& line) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l == line) return true;
    return false;
}

}  // namespace

TEST_SUITE("claim store") {
    TEST_CASE(
        "claim.store is redis unless a file says postgres, and a file without redis: keeps "
        "the Redis defaults") {
        const Config redis = parse(kMinimal);
        CHECK(redis.claim.store == ClaimConfig::Store::redis);
        CHECK(redis.claim.in_redis());
        CHECK(redis.redis.host == "127.0.0.1");
        CHECK(redis.redis.port == 6379);

        const Config postgres = parse(kPostgresClaims);
        CHECK(postgres.claim.store == ClaimConfig::Store::postgres);
        CHECK_FALSE(postgres.claim.in_redis());

        std::string explicit_redis(kMinimal);
        explicit_redis += "claim: { store: redis, lease_ms: 9000 }\nredis: { port: 6380 }\n";
        const Config both = parse(explicit_redis);
        CHECK(both.claim.store == ClaimConfig::Store::redis);
        CHECK(both.claim.lease == std::chrono::milliseconds(9000));
        CHECK(both.redis.port == 6380);
    }

    TEST_CASE("an unknown claim.store is refused with its path, line and the allowed values") {
        const std::string text = errors_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: exo-ledger
postgres:
  uri: postgresql://exo@localhost/exo
claim:
  store: postgress
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)");
        CAPTURE(text);
        CHECK(text.find("exo.yaml:7: claim.store: unknown value 'postgress'; expected one of: "
                        "redis, postgres") != std::string::npos);
        CHECK(text.find("did you mean 'postgres'") != std::string::npos);
    }

    TEST_CASE(
        "with claim.store postgres a redis section, the Redis claim timings and "
        "on_redis_down are refused, each naming its path, line and the fix") {
        const ConfigError e = error_of(R"(
kafka:
  bootstrap_servers: localhost:9092
  group_id: exo-ledger
redis:
  host: redis.local
postgres:
  uri: postgresql://exo@localhost/exo
claim:
  store: postgres
  lease_ms: 10000
  completed_ttl_ms: 60000
  verify_duplicates: true
pipeline:
  on_redis_down: postgres_only
bindings:
  - topic: payments
    handler: ledger
    key: coordinates
)");
        const std::string text = e.what();
        CAPTURE(text);
        const std::string fix = "or set claim.store: redis to keep claims in Redis";
        CHECK(text.find("exo.yaml:4: redis: is given, but claim.store is postgres, so exo never "
                        "connects to Redis: remove the section, " +
                        fix) != std::string::npos);
        CHECK(text.find("exo.yaml:10: claim.lease_ms: is a setting of Redis claims, but "
                        "claim.store is postgres, so exo never connects to Redis: remove the "
                        "key, " +
                        fix) != std::string::npos);
        CHECK(text.find("exo.yaml:11: claim.completed_ttl_ms: is a setting of Redis claims") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:12: claim.verify_duplicates: is a setting of Redis claims") !=
              std::string::npos);
        CHECK(text.find("exo.yaml:14: pipeline.on_redis_down: says what to do while Redis is "
                        "down, but claim.store is postgres") != std::string::npos);
        CHECK(e.problems().size() == 5);
    }

    TEST_CASE(
        "with claim.store postgres the dedup rows need not outlive a Redis TTL that is "
        "not there") {
        std::string yaml(kPostgresClaims);
        yaml.replace(yaml.find("  uri:"), 0, "  dedup_retention_days: 1\n");
        CHECK(parse(yaml).postgres.dedup_retention == std::chrono::hours(24));
        // The same file keeping claims in Redis is refused: its COMPLETED
        // record (a day by default) would outlive the row.
        std::string redis = yaml;
        redis.replace(redis.find("store: postgres"), 15, "store: redis");
        CHECK(errors_of(redis).find("must be less than postgres.dedup_retention_days") !=
              std::string::npos);
    }

    TEST_CASE(
        "check-config --print shows claim.store, leaves out the Redis keys with postgres, "
        "and parses back to the same store") {
        const std::string printed = effective_config_yaml(parse(kPostgresClaims));
        CAPTURE(printed);
        CHECK(printed.find("store: \"postgres\"") != std::string::npos);
        for (const char* redis_only : {"redis:", "key_prefix", "lease_ms", "completed_ttl_ms",
                                       "verify_duplicates", "on_redis_down"}) {
            CAPTURE(redis_only);
            CHECK(printed.find(redis_only) == std::string::npos);
        }
        const Config again = parse_config_text(printed, "printed", kHandlers, kNoEnv);
        CHECK(again.claim.store == ClaimConfig::Store::postgres);
        CHECK(effective_config_yaml(again) == printed);

        const std::string with_redis = effective_config_yaml(parse(kMinimal));
        CHECK(with_redis.find("store: \"redis\"") != std::string::npos);
        CHECK(with_redis.find("lease_ms: 30000") != std::string::npos);
        CHECK(with_redis.find("verify_duplicates: false") != std::string::npos);
        std::string verifying(kMinimal);
        verifying += "claim:\n  verify_duplicates: true\n";
        const Config verifies = parse(verifying);
        CHECK(verifies.claim.verify_duplicates);
        CHECK(parse_config_text(effective_config_yaml(verifies), "printed", kHandlers, kNoEnv)
                  .claim.verify_duplicates);
        CHECK(parse_config_text(with_redis, "printed", kHandlers, kNoEnv).claim.store ==
              ClaimConfig::Store::redis);
    }

    TEST_CASE(
        "a daemon without Redis lists no Redis dependency in /metrics or /status, and is "
        "ready") {
        DaemonStatus s;
        s.running = true;
        s.last_poll = DaemonStatus::Clock::now();
        s.joined = true;
        s.kafka_up = true;
        s.runners = {{0, std::nullopt}};
        s.redis_used = false;
        s.redis_up = false;  // whatever it says, nothing shows it
        const auto now = DaemonStatus::Clock::now();
        const auto ready = readiness(s, now, std::chrono::seconds(60));
        CHECK(ready.ok);

        PipelineStats stats({"payments"});
        const std::string metrics = render_metrics(stats, s, ready.ok, "0.2.0");
        CHECK(metrics.find("dependency=\"redis\"") == std::string::npos);
        CHECK(has_line(metrics, "exo_dependency_up{dependency=\"postgres\"} 1"));
        CHECK(has_line(metrics, "exo_ready 1"));

        const auto status = nlohmann::json::parse(status_json(s, ready, ready, now));
        CHECK_FALSE(status["dependencies"].contains("redis"));
        CHECK(status["dependencies"]["postgres"] == true);

        // With Redis claims the dependency is listed as before.
        s.redis_used = true;
        CHECK(has_line(render_metrics(stats, s, ready.ok, "0.2.0"),
                       "exo_dependency_up{dependency=\"redis\"} 0"));
    }

    TEST_CASE(
        "exo inspect of a key with claims in PostgreSQL says the claim store is postgres "
        "instead of a Redis claim") {
        InspectReport r;
        r.group = "billing";
        r.key = "e-1";
        r.claims_in_redis = false;
        const std::string text = to_text(r);
        CAPTURE(text);
        CHECK(text.find("claim: none kept (claim.store is postgres") != std::string::npos);
        CHECK(text.find("claim (Redis)") == std::string::npos);
        const auto json = to_json(r);
        CHECK(json["claim_store"] == "postgres");
        CHECK(json["claim"].is_null());
        r.claims_in_redis = true;
        CHECK(to_json(r)["claim_store"] == "redis");
        CHECK(to_text(r).find("claim (Redis): none") != std::string::npos);
    }
}
