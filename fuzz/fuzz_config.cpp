// Fuzzes the exo.yaml parser (config/config_parser.hpp) with the whole input as
// the YAML text, the handlers "ledger" and "noop", and an environment that sets
// PORT and *_PORT, HOST, EMPTY, DOLLAR and every other name starting with EXO_.
//
// Invariants:
//   - parse_config_text throws nothing but ConfigError;
//   - a ConfigError lists at least one problem, each with a message and a line
//     inside the document, and what() is "<source>..." naming every message;
//   - an accepted Config holds what the parser promises: at least one binding,
//     unique and legal topics, registered handlers, RFC 6901 pointers, a
//     dead-letter topic that is not the consumed one, positive counts and
//     durations, backoff max >= initial, dedup rows outliving the Redis record,
//     and exactly one of bootstrap_servers and mock.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/config_parser.hpp"
#include "fuzz_check.hpp"

namespace {

using exo::fuzz::shown;

const std::string kSource = "fuzz.yaml";
const std::vector<std::string> kHandlers = {"ledger", "noop"};

std::optional<std::string> fixed_env(const std::string& name) {
    if (name == "PORT" || name.ends_with("_PORT")) return "6380";
    if (name == "HOST") return "redis.internal";
    if (name == "EMPTY") return "";
    if (name == "DOLLAR") return "pa$${NOT_EXPANDED}";  // values are not expanded again
    if (name.rfind("EXO_", 0) == 0) return "exo-" + name.substr(4);
    return std::nullopt;
}

bool legal_topic(const std::string& t) {
    return !t.empty() && t.size() <= 249 && t != "." && t != ".." &&
           std::all_of(t.begin(), t.end(), [](unsigned char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
           });
}

bool pointer(const std::string& p) {
    if (p.empty() || p.front() != '/') return false;
    for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1')))
            return false;
    return true;
}

void check_error(const exo::ConfigError& e, std::string_view yaml) {
    const std::string_view what = e.what();
    FUZZ_CHECK(!e.problems().empty(), "a ConfigError without problems: " + shown(what));
    FUZZ_CHECK(e.source() == kSource, "the ConfigError names the source " + shown(e.source()));
    FUZZ_CHECK(what.substr(0, kSource.size()) == kSource,
               "what() does not start with the source: " + shown(what));
    // yaml-cpp counts "\r", "\n" and "\r\n" as line breaks: the line count is at
    // most the number of both characters, plus one.
    const auto breaks =
        std::count(yaml.begin(), yaml.end(), '\n') + std::count(yaml.begin(), yaml.end(), '\r');
    for (const exo::ConfigProblem& p : e.problems()) {
        FUZZ_CHECK(!p.message.empty(), "a problem without a message at " + shown(p.path));
        // what() is a C string: a NUL byte copied from the YAML ends it early, and
        // every problem after it is lost to whoever prints e.what().
        FUZZ_CHECK(p.message.find('\0') == std::string::npos,
                   "the problem message " + shown(p.message) + " holds a NUL byte");
        FUZZ_CHECK(what.find(p.message) != std::string_view::npos,
                   "what() leaves out the problem " + shown(p.message));
        FUZZ_CHECK(p.line >= 0 && p.line <= breaks + 1,
                   "the problem " + shown(p.message) + " names line " + std::to_string(p.line) +
                       " of a document of " + std::to_string(breaks + 1) + " lines");
    }
}

void check_config(const exo::Config& c) {
    FUZZ_CHECK(!c.bindings.empty(), "a config without bindings was accepted");
    std::set<std::string> topics;
    for (const exo::BindingConfig& b : c.bindings) {
        FUZZ_CHECK(legal_topic(b.topic), "the illegal topic " + shown(b.topic) + " was accepted");
        FUZZ_CHECK(topics.insert(b.topic).second,
                   "the topic " + shown(b.topic) + " is bound twice");
        FUZZ_CHECK(std::find(kHandlers.begin(), kHandlers.end(), b.handler) != kHandlers.end(),
                   "the unknown handler " + shown(b.handler) + " was accepted");
        FUZZ_CHECK(legal_topic(b.dead_letter_topic) && b.dead_letter_topic != b.topic,
                   "the dead-letter topic " + shown(b.dead_letter_topic) + " of " + shown(b.topic) +
                       " was accepted");
        FUZZ_CHECK(b.max_attempts >= 1, "max_attempts " + std::to_string(b.max_attempts));
        switch (b.key.kind) {
            case exo::KeySourceKind::header:
                FUZZ_CHECK(!b.key.name.empty(), "an empty key header name was accepted");
                break;
            case exo::KeySourceKind::json:
                FUZZ_CHECK(pointer(b.key.name), "the key pointer " + shown(b.key.name));
                break;
            case exo::KeySourceKind::coordinates:
                FUZZ_CHECK(b.key.name.empty(),
                           "a coordinates key with the name " + shown(b.key.name));
                break;
            case exo::KeySourceKind::hash:
                FUZZ_CHECK(b.key.hash.fields.empty() || b.key.hash.exclude.empty(),
                           "a hash key with both fields and exclude was accepted");
                for (const auto& p : b.key.hash.fields)
                    FUZZ_CHECK(pointer(p), "the hash field " + shown(p));
                for (const auto& p : b.key.hash.exclude)
                    FUZZ_CHECK(pointer(p), "the hash exclusion " + shown(p));
                break;
        }
        if (b.sequence) {
            FUZZ_CHECK(pointer(b.sequence->entity_pointer) && pointer(b.sequence->value_pointer),
                       "the sequence pointers " + shown(b.sequence->entity_pointer) + ", " +
                           shown(b.sequence->value_pointer));
            FUZZ_CHECK(b.sequence->gap_timeout.count() > 0, "a gap_timeout that is not positive");
        }
    }
    FUZZ_CHECK(c.kafka.bootstrap_servers.empty() == c.kafka.mock.has_value(),
               "not exactly one of bootstrap_servers and mock");
    FUZZ_CHECK(!c.kafka.group_id.empty(), "an empty group_id was accepted");
    FUZZ_CHECK(c.kafka.commit_interval.count() > 0, "commit_interval is not positive");
    if (c.kafka.mock) {
        FUZZ_CHECK(c.kafka.mock->brokers >= 1, "mock brokers < 1");
        for (const auto& t : c.kafka.mock->topics)
            FUZZ_CHECK(legal_topic(t.name) && t.partitions >= 1,
                       "the mock topic " + shown(t.name) + ":" + std::to_string(t.partitions));
    }
    for (const auto& [name, value] : c.kafka.properties)
        FUZZ_CHECK(name != "group.id" && name != "bootstrap.servers" &&
                       name != "enable.auto.commit" && name != "enable.auto.offset.store",
                   "the owned property " + shown(name) + " was accepted");
    FUZZ_CHECK(c.redis.port >= 1 && c.redis.port <= 65535,
               "redis port " + std::to_string(c.redis.port));
    FUZZ_CHECK(!c.postgres.uri.empty(), "an empty postgres uri was accepted");
    FUZZ_CHECK(c.claim.lease.count() > 0, "a lease that is not positive");
    FUZZ_CHECK(c.claim.completed_ttl < c.postgres.dedup_retention,
               "dedup rows do not outlive the Redis COMPLETED record");
    FUZZ_CHECK(c.pipeline.concurrency >= 1 && c.pipeline.batch_size >= 1 &&
                   c.pipeline.max_queued_per_partition >= 1,
               "a pipeline count below 1");
    FUZZ_CHECK(c.pipeline.linger.count() >= 0 && c.pipeline.shutdown_timeout.count() > 0,
               "a pipeline duration out of range");
    FUZZ_CHECK(c.pipeline.retry_backoff_initial.count() > 0 &&
                   c.pipeline.retry_backoff_max >= c.pipeline.retry_backoff_initial,
               "retry backoff initial " + std::to_string(c.pipeline.retry_backoff_initial.count()) +
                   " max " + std::to_string(c.pipeline.retry_backoff_max.count()));
    static const std::set<std::string> kLevels = {"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
    FUZZ_CHECK(kLevels.count(c.logging.level) == 1, "log level " + shown(c.logging.level));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view yaml = exo::fuzz::as_text(data, size);
    try {
        check_config(exo::parse_config_text(yaml, kSource, kHandlers, fixed_env));
    } catch (const exo::ConfigError& e) {
        check_error(e, yaml);
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("parse_config_text", "exo::ConfigError");
    }
    return 0;
}
