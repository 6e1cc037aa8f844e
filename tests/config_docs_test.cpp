// The config schema (config/schema.hpp) as the docs and the printer see it: the
// committed key tables of docs/configuration.md, and enum spellings read back
// as printed. No servers.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/config_docs.hpp"
#include "config/config_printer.hpp"
#include "config/sections.hpp"
#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;

namespace {

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_SUITE("config schema") {
    TEST_CASE("docs/configuration.md's key tables are the ones the config schema generates") {
        const std::string document =
            file_text(std::string(EXO_SOURCE_DIR) + "/docs/configuration.md");
        const std::optional<std::string> committed = committed_tables(document);
        REQUIRE_MESSAGE(committed.has_value(),
                        "docs/configuration.md lost its generated-tables markers");
        const std::string generated = configuration_tables();
        CHECK_MESSAGE(*committed == generated,
                      "docs/configuration.md's key tables differ from the config schema "
                      "(framework/config/*_section.cpp): regenerate them with `"
                          << kConfigDocsCommand << "`");
    }

    TEST_CASE("every key a section accepts has a row in its docs table, in the same order") {
        const std::string tables = configuration_tables();
        std::size_t at = 0;
        for (const std::string_view key : config_schema::pipeline_section().names()) {
            const std::size_t found = tables.find("| `pipeline." + std::string(key) + "` |", at);
            CHECK_MESSAGE(found != std::string::npos, key);
            if (found != std::string::npos) at = found;
        }
        CHECK(tables.find("| `kafka.mock.brokers` | 1 |") != std::string::npos);
        CHECK(tables.find("| `postgres.uri` | — |") != std::string::npos);
        CHECK(tables.find("| `pipeline.max_in_flight_bytes` | 268435456 (256 MiB) |") !=
              std::string::npos);
        CHECK(tables.find("| `logging.format` | text | `text` or `json`: ") != std::string::npos);
        CHECK(tables.find("| `bindings[].max_attempts` | 5 |") != std::string::npos);
    }

    TEST_CASE(
        "a binding's keys, and its sequence's, are documented from the table the reader reads, "
        "in its order, with the struct's defaults") {
        const std::string tables = configuration_tables();
        std::size_t at = 0;
        for (const std::string_view key :
             {"topic", "handler", "key", "sequence", "sequence.entity", "sequence.value",
              "sequence.mode", "sequence.scope", "sequence.gap_timeout_ms", "ordering",
              "max_attempts", "dead_letter_topic", "on_key_reuse", "options"}) {
            const std::size_t found = tables.find("| `bindings[]." + std::string(key) + "` |", at);
            CHECK_MESSAGE(found != std::string::npos, key);
            if (found != std::string::npos) at = found;
        }
        CHECK(tables.find("| `bindings[].sequence.gap_timeout_ms` | 60000 |") != std::string::npos);
        CHECK(tables.find("| `bindings[].sequence.mode` | latest | `latest` or `strict`") !=
              std::string::npos);
    }

    TEST_CASE("the generated tables replace only the text between the markers") {
        const std::string before =
            file_text(std::string(EXO_SOURCE_DIR) + "/docs/configuration.md");
        const std::optional<std::string> stale = with_tables(before, "| stale |\n");
        REQUIRE(stale.has_value());
        CHECK(committed_tables(*stale) == std::optional<std::string>("| stale |\n"));
        CHECK(with_tables(*stale, *committed_tables(before)) == before);
        CHECK_FALSE(with_tables("no markers here", "x").has_value());
    }

    TEST_CASE("every enum value is printed with a spelling the reader takes back") {
        // For each value of `choices`: set it with `set`, print, parse, and read it back with
        // `get`.
        const auto round_trip = [](const auto& choices, auto set, auto get) {
            for (const auto& [name, value] : choices) {
                Config config = parse(kMinimal);
                set(config, value);
                const Config again =
                    parse_config_text(effective_config_yaml(config), "printed", kHandlers, kNoEnv);
                CHECK_MESSAGE(get(again) == value, name);
            }
        };
        round_trip(
            config_reading::kRedisDownPolicies,
            [](Config& c, RedisDownPolicy v) { c.pipeline.on_redis_down = v; },
            [](const Config& c) { return c.pipeline.on_redis_down; });
        round_trip(
            config_reading::kClaimStores,
            [](Config& c, ClaimConfig::Store v) { c.claim.store = v; },
            [](const Config& c) { return c.claim.store; });
        round_trip(
            config_reading::kLogFormats, [](Config& c, LogFormat v) { c.logging.format = v; },
            [](const Config& c) { return c.logging.format; });
        round_trip(
            config_reading::kOrderings,
            [](Config& c, Ordering v) {
                c.bindings[0].ordering = v;
                // ordering: entity needs a sequence to name the entity.
                c.bindings[0].sequence = SequenceConfig{"/account", "/seq"};
            },
            [](const Config& c) { return c.bindings[0].ordering; });
        round_trip(
            config_reading::kKeyReusePolicies,
            [](Config& c, KeyReusePolicy v) { c.bindings[0].on_key_reuse = v; },
            [](const Config& c) { return c.bindings[0].on_key_reuse; });
        round_trip(
            config_reading::kSequenceModes,
            [](Config& c, SequenceMode v) {
                c.bindings[0].sequence = SequenceConfig{"/account", "/seq", v};
            },
            [](const Config& c) { return c.bindings[0].sequence->mode; });
    }
}
