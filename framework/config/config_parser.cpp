#include "config/config_parser.hpp"

#include "core/text.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

namespace exo {
namespace {

using Keys = std::vector<std::string_view>;

// ---------------------------------------------------------------- text helpers

std::string in_quotes(std::string_view s) {
    return "'" + std::string(s) + "'";
}

std::string join(const Keys& words, std::string_view separator) {
    std::string out;
    for (std::string_view w : words) {
        if (!out.empty()) out += separator;
        out += w;
    }
    return out;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions,
// so a dropped letter ("ledgr") and a swapped pair ("strcit") both count as one.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

// The candidate closest to `word`, if one is within edit distance 2.
std::optional<std::string_view> closest(std::string_view word, const Keys& candidates) {
    std::string_view best;
    std::size_t best_distance = 3;
    for (std::string_view c : candidates) {
        const std::size_t distance = edit_distance(word, c);
        if (distance < best_distance) {
            best = c;
            best_distance = distance;
        }
    }
    if (best_distance > 2) return std::nullopt;
    return best;
}

// " (did you mean 'x'?)", or "" when nothing is close.
std::string did_you_mean(std::string_view word, const Keys& candidates) {
    const auto best = closest(word, candidates);
    return best ? " (did you mean " + in_quotes(*best) + "?)" : std::string{};
}

// Kafka's own rule for topic names (legal characters, at most 249 of them).
std::optional<std::string> topic_name_problem(std::string_view name) {
    if (name.empty()) return "a topic name must not be empty";
    if (name.size() > 249) return "a topic name has at most 249 characters";
    if (name == "." || name == "..") return "a topic name cannot be '.' or '..'";
    const bool legal = std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '_' || c == '-';
    });
    if (!legal) {
        return "topic " + in_quotes(name) +
               " has characters Kafka refuses; use letters, digits, '.', '_' and '-'";
    }
    return std::nullopt;
}

// RFC 6901: "/a/b", with '~' only as "~0" ('~') or "~1" ('/').
std::optional<std::string> json_pointer_problem(std::string_view pointer) {
    if (pointer.empty() || pointer.front() != '/') {
        return "a JSON pointer (RFC 6901) starts with '/': write " +
               in_quotes("/" + std::string(pointer)) + " for a top-level field";
    }
    for (std::size_t i = 0; i < pointer.size(); ++i) {
        if (pointer[i] == '~' &&
            (i + 1 == pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
            return "JSON pointer " + in_quotes(pointer) +
                   " has a '~' not followed by 0 or 1: write '~0' for '~' and '~1' for '/'";
        }
    }
    return std::nullopt;
}

// ------------------------------------------------------------- ${ENV} expansion

bool valid_env_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
    return std::all_of(name.begin(), name.end(),
                       [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

struct Expansion {
    std::string text;
    std::vector<std::string> errors;  // one per reference that could not be resolved
};

// ${NAME} and ${NAME:-default} (the default also when NAME is set but empty, as in
// the shell); "$${" is a literal "${". A '$' anywhere else is kept as it is, so
// passwords such as "pa$$word" survive.
Expansion expand_env(std::string_view in, const EnvLookup& env) {
    Expansion out;
    std::size_t i = 0;
    while (i < in.size()) {
        if (in.substr(i, 3) == "$${") {
            out.text += "${";
            i += 3;
            continue;
        }
        if (in.substr(i, 2) != "${") {
            out.text += in[i++];
            continue;
        }
        const std::size_t close = in.find('}', i + 2);
        if (close == std::string_view::npos) {
            out.errors.push_back(
                "'${' is never closed: write ${NAME} or ${NAME:-default}, or '$${' for a literal "
                "'${'");
            return out;
        }
        const std::string_view body = in.substr(i + 2, close - i - 2);
        i = close + 1;
        const std::size_t sep = body.find(":-");
        const std::string_view name = body.substr(0, sep);
        if (!valid_env_name(name)) {
            out.errors.push_back("${" + std::string(body) +
                                 "} does not name a variable: use letters, digits and '_', not "
                                 "starting with a digit");
            continue;
        }
        const std::optional<std::string> value = env ? env(std::string(name)) : std::nullopt;
        if (sep != std::string_view::npos && (!value || value->empty())) {
            out.text += body.substr(sep + 2);
        } else if (value) {
            out.text += *value;
        } else {
            out.errors.push_back("environment variable " + std::string(name) +
                                 " is not set: export it, or give a default as ${" +
                                 std::string(name) + ":-value}");
        }
    }
    return out;
}

// ------------------------------------------------------------ integer helpers

struct Bounds {
    long long min;
    long long max;
};
constexpr Bounds kPositive{1, INT_MAX};
constexpr Bounds kNonNegative{0, INT_MAX};
constexpr Bounds kPort{1, 65535};
constexpr long long kMaxDays = 36500;  // a century is plenty
constexpr Bounds kPositiveMs{1, kMaxDays * 24 * 3600 * 1000LL};
constexpr Bounds kNonNegativeMs{0, kPositiveMs.max};
constexpr Bounds kPositiveDays{1, kMaxDays};

enum class Unit { count, milliseconds, days };

std::string bounds_text(Bounds b) {
    if (b.max == INT_MAX || b.max == kPositiveMs.max)
        return "must be at least " + std::to_string(b.min);
    return "must be between " + std::to_string(b.min) + " and " + std::to_string(b.max);
}

// "5s" -> 5000: only to suggest the fix when someone writes a unit.
std::optional<long long> with_unit_as_ms(std::string_view text) {
    const std::size_t unit_at = text.find_first_not_of("0123456789.");
    if (unit_at == 0 || unit_at == std::string_view::npos) return std::nullopt;
    double number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + unit_at, number);
    if (ec != std::errc{} || end != text.data() + unit_at) return std::nullopt;
    std::string_view unit = text.substr(unit_at);
    unit.remove_prefix(std::min(unit.find_first_not_of(' '), unit.size()));
    static const std::map<std::string_view, double> factors = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000}};
    const auto factor = factors.find(unit);
    if (factor == factors.end()) return std::nullopt;
    const double ms = number * factor->second;
    // Beyond long long the cast is undefined; such a value is no useful suggestion.
    if (ms != std::floor(ms) || !(ms < 9.2e18)) return std::nullopt;
    return static_cast<long long>(ms);
}

std::string not_an_integer(std::string_view text, Unit unit) {
    switch (unit) {
        case Unit::milliseconds: {
            std::string message =
                "expected a duration in whole milliseconds (e.g. 1500), got " + in_quotes(text);
            if (const auto ms = with_unit_as_ms(text)) message += "; write " + std::to_string(*ms);
            return message;
        }
        case Unit::days:
            return "expected a whole number of days (e.g. 30), got " + in_quotes(text);
        case Unit::count:
            break;
    }
    return "expected a whole number, got " + in_quotes(text);
}

// ------------------------------------------------------------------- reading

struct Context {
    const EnvLookup& env;
    std::vector<ConfigProblem> problems;
    std::string source;  // the config file's name: handler options label their own errors with it

    void add(std::string path, int line, std::string message) {
        problems.push_back({std::move(path), line, std::move(message)});
    }
};

int line_of_node(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    return mark.line >= 0 ? mark.line + 1 : 0;
}

std::string kind_of(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return "the value " + in_quotes(node.Scalar());
        default:
            return "nothing";
    }
}

// The text of a scalar after ${ENV} expansion, or nullopt with the problem
// recorded. `what` names the expected value for the message ("a string").
std::optional<std::string> scalar_text(Context& ctx, const YAML::Node& node,
                                       const std::string& path, int line, std::string_view what) {
    if (node.IsNull()) {
        ctx.add(path, line, "has no value: give " + std::string(what));
        return std::nullopt;
    }
    if (!node.IsScalar()) {
        ctx.add(path, line, "expected " + std::string(what) + ", got " + kind_of(node));
        return std::nullopt;
    }
    Expansion expanded = expand_env(node.Scalar(), ctx.env);
    for (std::string& error : expanded.errors) ctx.add(path, line, std::move(error));
    if (!expanded.errors.empty()) return std::nullopt;
    return std::move(expanded.text);
}

// One element of a YAML list, with where it is.
struct Item {
    YAML::Node node;
    std::string path;  // e.g. "bindings[2]"
    int line;
};

template <typename E>
using Choices = std::vector<std::pair<std::string_view, E>>;

enum class Text { any, non_empty };

// One YAML mapping being read. It knows its path and line, reports keys it does
// not know (with a "did you mean") and duplicate keys on construction, and
// converts values, recording a problem instead of throwing. A read leaves its
// output untouched when the key is absent or its value is wrong, so the
// defaults of config.hpp stay in place.
class Reader {
public:
    // `known` lists the accepted keys; nullopt accepts any key (e.g. librdkafka
    // properties). A null node (absent section, or "key:" with nothing after it)
    // reads as an empty mapping.
    Reader(Context& ctx, const YAML::Node& node, std::string path, int line,
           std::optional<Keys> known)
        : ctx_(ctx), path_(std::move(path)), line_(line) {
        if (node.IsNull()) return;
        if (!node.IsMap()) {
            ctx_.add(path_, line_,
                     "expected a mapping of 'key: value' lines, got " + kind_of(node));
            is_map_ = false;
            return;
        }
        for (auto it = node.begin(); it != node.end(); ++it)
            add_entry(it->first, it->second, known);
    }

    Context& context() const { return ctx_; }
    bool had_unknown_keys() const { return had_unknown_keys_; }
    // False if the node was not a mapping (already reported): then nothing is
    // "missing" from it either.
    bool is_map() const { return is_map_; }

    bool has(std::string_view key) const { return find(key) != nullptr; }
    std::string path_of(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    // The line of the key, or of this mapping when the key is absent.
    int line_of(std::string_view key) const {
        const Entry* entry = find(key);
        return entry ? entry->line : line_;
    }
    void problem(std::string_view key, std::string message) const {
        ctx_.add(path_of(key), line_of(key), std::move(message));
    }

    // Every entry, in document order: for mappings of free-form keys.
    template <typename F>
    void for_each(F&& f) const {
        for (const Entry& e : entries_) f(e.key, e.value, e.line);
    }

    // True if present; otherwise records "missing" with a hint on what to write.
    bool require(std::string_view key, std::string_view hint) const {
        if (has(key)) return true;
        if (!is_map_) return false;
        problem(key, "required key is missing: " + std::string(hint));
        return false;
    }

    // The nested mapping under `key` (empty when absent).
    Reader map(std::string_view key, std::optional<Keys> known) const {
        const Entry* entry = find(key);
        return Reader(ctx_, entry ? entry->value : YAML::Node(), path_of(key), line_of(key),
                      std::move(known));
    }

    // The elements of the list under `key` (none when absent or not a list).
    std::vector<Item> list(std::string_view key) const {
        std::vector<Item> items;
        const Entry* entry = find(key);
        if (!entry || entry->value.IsNull()) return items;
        if (!entry->value.IsSequence()) {
            problem(key,
                    "expected a list ('- item' lines or [a, b]), got " + kind_of(entry->value));
            return items;
        }
        std::size_t index = 0;
        for (const YAML::Node& element : entry->value) {
            const int line = element.IsNull() ? entry->line : line_of_node(element);
            items.push_back({element, path_of(key) + "[" + std::to_string(index++) + "]", line});
        }
        return items;
    }

    YAML::Node node(std::string_view key) const {
        const Entry* entry = find(key);
        return entry ? entry->value : YAML::Node();
    }

    std::optional<std::string> scalar(std::string_view key, std::string_view what) const {
        const Entry* entry = find(key);
        if (!entry) return std::nullopt;
        return scalar_text(ctx_, entry->value, path_of(key), entry->line, what);
    }

    void read(std::string_view key, std::string& out, Text rule = Text::any) const {
        std::optional<std::string> text = scalar(key, "a string");
        if (!text) return;
        if (rule == Text::non_empty && text->empty()) {
            problem(key, "must not be empty: give a value");
            return;
        }
        out = std::move(*text);
    }

    void read(std::string_view key, int& out, Bounds bounds) const {
        if (const auto value = integer(key, bounds, Unit::count)) out = static_cast<int>(*value);
    }

    void read(std::string_view key, milliseconds& out, Bounds bounds) const {
        if (const auto value = integer(key, bounds, Unit::milliseconds)) out = milliseconds(*value);
    }

    void read_days(std::string_view key, std::chrono::hours& out, Bounds bounds) const {
        if (const auto value = integer(key, bounds, Unit::days))
            out = std::chrono::hours(*value * 24);
    }

    template <typename E>
    void read(std::string_view key, E& out, const Choices<E>& choices) const {
        Keys names;
        for (const auto& choice : choices) names.push_back(choice.first);
        const std::optional<std::string> text = scalar(key, "one of: " + join(names, ", "));
        if (!text) return;
        for (const auto& [name, value] : choices) {
            if (name == *text) {
                out = value;
                return;
            }
        }
        problem(key, "unknown value " + in_quotes(*text) +
                         "; expected one of: " + join(names, ", ") + did_you_mean(*text, names));
    }

    // Whole number within `bounds`, or nullopt with the problem recorded.
    std::optional<long long> integer(std::string_view key, Bounds bounds, Unit unit) const {
        const std::optional<std::string> text =
            scalar(key, unit == Unit::count ? "a whole number" : "a duration");
        if (!text) return std::nullopt;
        long long value = 0;
        const char* end = text->data() + text->size();
        const auto [stop, ec] = std::from_chars(text->data(), end, value);
        if (ec == std::errc::result_out_of_range ||
            (ec == std::errc{} && stop == end && (value < bounds.min || value > bounds.max))) {
            problem(key, bounds_text(bounds) + ", got " + *text);
            return std::nullopt;
        }
        if (ec != std::errc{} || stop != end) {
            problem(key, not_an_integer(*text, unit));
            return std::nullopt;
        }
        return value;
    }

private:
    struct Entry {
        std::string key;
        YAML::Node value;
        int line;  // of the key: where a reader looks, also when the value is empty
    };

    const Entry* find(std::string_view key) const {
        const auto it = std::find_if(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.key == key; });
        return it == entries_.end() ? nullptr : &*it;
    }

    void add_entry(const YAML::Node& key_node, const YAML::Node& value,
                   const std::optional<Keys>& known) {
        const int line = line_of_node(key_node);
        if (!key_node.IsScalar()) {
            ctx_.add(path_, line, "keys must be plain names, got " + kind_of(key_node));
            return;
        }
        const std::string& key = key_node.Scalar();
        if (const Entry* first = find(key)) {
            ctx_.add(path_of(key), line,
                     "duplicate key (first given at line " + std::to_string(first->line) +
                         "): keep only one");
            return;
        }
        if (known && std::find(known->begin(), known->end(), key) == known->end()) {
            had_unknown_keys_ = true;
            const auto best = closest(key, *known);
            ctx_.add(path_of(key), line,
                     "unknown key " + in_quotes(key) +
                         (best ? "; did you mean " + in_quotes(*best) + "?"
                               : "; known keys here: " + join(*known, ", ")));
            return;
        }
        entries_.push_back({key, value, line});
    }

    Context& ctx_;
    std::string path_;
    int line_;
    std::vector<Entry> entries_;
    bool had_unknown_keys_ = false;
    bool is_map_ = true;
};

// ------------------------------------------------------------------ sections

const Keys kTopKeys = {"kafka", "redis", "postgres", "claim", "pipeline", "logging", "bindings"};
const Keys kKafkaKeys = {"bootstrap_servers", "mock", "group_id", "commit_interval_ms",
                         "properties"};
const Keys kMockKeys = {"brokers", "topics", "bootstrap_file"};
const Keys kRedisKeys = {
    "host", "port", "password", "db", "connect_timeout_ms", "command_timeout_ms", "key_prefix"};
const Keys kPostgresKeys = {"uri",
                            "dedup_retention_days",
                            "connect_timeout_ms",
                            "statement_timeout_ms",
                            "lock_timeout_ms",
                            "idle_in_transaction_timeout_ms",
                            "keepalives_idle_ms",
                            "keepalives_interval_ms",
                            "keepalives_count",
                            "tcp_user_timeout_ms"};
const Keys kClaimKeys = {"lease_ms", "completed_ttl_ms"};
const Keys kPipelineKeys = {"workers",
                            "batch_size",
                            "linger_ms",
                            "max_queued_per_partition",
                            "shutdown_timeout_ms",
                            "retry_backoff_initial_ms",
                            "retry_backoff_max_ms",
                            "on_redis_down"};
const Keys kLoggingKeys = {"level"};
const Keys kBindingKeys = {"topic",        "handler",           "key",    "sequence",
                           "max_attempts", "dead_letter_topic", "options"};
const Keys kKeySourceKeys = {"header", "json"};
const Keys kSequenceKeys = {"entity", "value", "mode", "gap_timeout_ms"};

const Choices<RedisDownPolicy> kRedisDownPolicies = {
    {"pause", RedisDownPolicy::pause}, {"postgres_only", RedisDownPolicy::postgres_only}};
const Choices<SequenceMode> kSequenceModes = {{"latest", SequenceMode::latest},
                                              {"strict", SequenceMode::strict}};
const Choices<std::string_view> kLogLevels = {
    {"trace", "trace"}, {"debug", "debug"},       {"info", "info"}, {"warn", "warn"},
    {"error", "error"}, {"critical", "critical"}, {"off", "off"}};

constexpr std::string_view kKeyForms = "{ header: NAME }, { json: /pointer } or coordinates";

// librdkafka properties exo sets itself, and why.
const std::map<std::string, std::string, std::less<>> kOwnedProperties = {
    {"group.id", "set kafka.group_id instead"},
    {"bootstrap.servers", "set kafka.bootstrap_servers instead"},
    {"enable.auto.commit",
     "exo owns it (offsets are committed only once each record's outcome is durable): remove it"},
    {"enable.auto.offset.store",
     "exo owns it (offsets are stored only once each record's outcome is durable): remove it"},
};

void read_topic(const Reader& r, std::string_view key, std::string& out) {
    std::optional<std::string> text = r.scalar(key, "a topic name");
    if (!text) return;
    if (auto problem = topic_name_problem(*text)) {
        r.problem(key, std::move(*problem));
        return;
    }
    out = std::move(*text);
}

void read_pointer(const Reader& r, std::string_view key, std::string& out) {
    std::optional<std::string> text = r.scalar(key, "a JSON pointer such as /id");
    if (!text) return;
    if (auto problem = json_pointer_problem(*text)) {
        r.problem(key, std::move(*problem));
        return;
    }
    out = std::move(*text);
}

// "NAME:PARTITIONS", or just "NAME" for one partition.
std::optional<MockKafkaConfig::TopicSpec> read_mock_topic(Context& ctx, const Item& item) {
    const std::optional<std::string> text = scalar_text(
        ctx, item.node, item.path, item.line, "a topic as NAME:PARTITIONS (e.g. payments:4)");
    if (!text) return std::nullopt;
    MockKafkaConfig::TopicSpec spec;
    const std::size_t colon = text->rfind(':');
    spec.name = text->substr(0, colon);
    if (auto problem = topic_name_problem(spec.name)) {
        ctx.add(item.path, item.line, std::move(*problem));
        return std::nullopt;
    }
    if (colon == std::string::npos) return spec;
    const std::string_view count = std::string_view(*text).substr(colon + 1);
    const auto [end, ec] =
        std::from_chars(count.data(), count.data() + count.size(), spec.partitions);
    if (ec != std::errc{} || end != count.data() + count.size() || spec.partitions < 1) {
        ctx.add(item.path, item.line,
                "the partition count after ':' must be a whole number of at least 1 (e.g. " +
                    spec.name + ":4), got " + in_quotes(count));
        return std::nullopt;
    }
    return spec;
}

MockKafkaConfig read_mock(const Reader& mock) {
    MockKafkaConfig out;
    mock.read("brokers", out.brokers, kPositive);
    mock.read("bootstrap_file", out.bootstrap_file, Text::non_empty);
    std::map<std::string, int> first_line;  // topic name -> line declaring it
    for (const Item& item : mock.list("topics")) {
        std::optional<MockKafkaConfig::TopicSpec> topic = read_mock_topic(mock.context(), item);
        if (!topic) continue;
        if (const auto [it, added] = first_line.emplace(topic->name, item.line); !added) {
            mock.context().add(item.path, item.line,
                               "topic " + in_quotes(topic->name) + " is already listed at line " +
                                   std::to_string(it->second) + ": list each topic once");
            continue;
        }
        out.topics.push_back(std::move(*topic));
    }
    return out;
}

std::map<std::string, std::string> read_properties(const Reader& properties) {
    std::map<std::string, std::string> out;
    properties.for_each([&](const std::string& key, const YAML::Node& value, int line) {
        const std::string path = properties.path_of(key);
        if (const auto owned = kOwnedProperties.find(key); owned != kOwnedProperties.end()) {
            properties.context().add(
                path, line, "property " + in_quotes(key) + " is refused: " + owned->second);
            return;
        }
        if (auto text = scalar_text(properties.context(), value, path, line,
                                    "a string, number or boolean")) {
            out[key] = std::move(*text);
        }
    });
    return out;
}

KafkaConfig read_kafka(const Reader& kafka) {
    KafkaConfig out;
    kafka.read("bootstrap_servers", out.bootstrap_servers, Text::non_empty);
    if (kafka.has("mock")) out.mock = read_mock(kafka.map("mock", kMockKeys));
    if (kafka.has("bootstrap_servers") && kafka.has("mock")) {
        kafka.problem(
            "mock",
            "both bootstrap_servers and mock are given: keep bootstrap_servers for real brokers, "
            "or mock for the embedded test cluster");
    } else if (kafka.is_map() && !kafka.has("bootstrap_servers") && !kafka.has("mock")) {
        kafka.problem(
            "bootstrap_servers",
            "required key is missing: give the brokers (bootstrap_servers: \"host:9092\"), or "
            "mock: { topics: [\"payments:4\"] } for the embedded test cluster");
    }
    if (kafka.require("group_id", "name the consumer group, e.g. group_id: exo-ledger")) {
        kafka.read("group_id", out.group_id, Text::non_empty);
        // The group is part of every dedup row's primary key (with a key of up to
        // kMaxStoredKeyBytes): it must be text PostgreSQL stores, short enough for
        // the index.
        if (!is_postgres_text(out.group_id))
            kafka.problem("group_id", "must be valid UTF-8 without NUL characters");
        else if (out.group_id.size() > kMaxGroupIdBytes)
            kafka.problem("group_id", "is " + std::to_string(out.group_id.size()) +
                                          " bytes; at most " + std::to_string(kMaxGroupIdBytes) +
                                          " fit beside an idempotency key in the dedup index");
    }
    kafka.read("commit_interval_ms", out.commit_interval, kPositiveMs);
    out.properties = read_properties(kafka.map("properties", std::nullopt));
    return out;
}

RedisConfig read_redis(const Reader& redis) {
    RedisConfig out;
    redis.read("host", out.host, Text::non_empty);
    redis.read("port", out.port, kPort);
    redis.read("password", out.password);
    redis.read("db", out.db, kNonNegative);
    redis.read("connect_timeout_ms", out.connect_timeout, kPositiveMs);
    redis.read("command_timeout_ms", out.command_timeout, kPositiveMs);
    redis.read("key_prefix", out.key_prefix, Text::non_empty);
    return out;
}

// libpq takes connect_timeout and the keepalive times in whole seconds: a value
// it would round is refused rather than silently changed.
void require_whole_seconds(const Reader& postgres, std::string_view key, milliseconds& value,
                           milliseconds fallback) {
    if (value.count() % 1000 == 0) return;
    const long long up = (value.count() / 1000 + 1) * 1000;
    postgres.problem(key, "libpq takes whole seconds here: write a multiple of 1000 (e.g. " +
                              std::to_string(up) + "), got " + std::to_string(value.count()));
    value = fallback;
}

PostgresConfig read_postgres(const Reader& postgres) {
    PostgresConfig out;
    const PostgresConfig defaults;
    if (postgres.require("uri", "give the connection, e.g. uri: postgresql://exo@localhost/exo")) {
        postgres.read("uri", out.uri, Text::non_empty);
    }
    postgres.read_days("dedup_retention_days", out.dedup_retention, kPositiveDays);

    // libpq reads a connect_timeout of 1 s as 2 s, and 0 as "wait forever".
    postgres.read("connect_timeout_ms", out.connect_timeout, Bounds{2000, INT_MAX});
    require_whole_seconds(postgres, "connect_timeout_ms", out.connect_timeout,
                          defaults.connect_timeout);
    // PostgreSQL stores these three as int milliseconds.
    postgres.read("statement_timeout_ms", out.statement_timeout, kNonNegative);
    postgres.read("lock_timeout_ms", out.lock_timeout, kNonNegative);
    postgres.read("idle_in_transaction_timeout_ms", out.idle_in_transaction_timeout, kNonNegative);
    // Linux caps TCP_KEEPIDLE and TCP_KEEPINTVL at 32767 s and TCP_KEEPCNT at 127;
    // beyond that setsockopt fails and so would every connection.
    postgres.read("keepalives_idle_ms", out.keepalives_idle, Bounds{0, 32767000});
    require_whole_seconds(postgres, "keepalives_idle_ms", out.keepalives_idle,
                          defaults.keepalives_idle);
    postgres.read("keepalives_interval_ms", out.keepalives_interval, Bounds{0, 32767000});
    require_whole_seconds(postgres, "keepalives_interval_ms", out.keepalives_interval,
                          defaults.keepalives_interval);
    postgres.read("keepalives_count", out.keepalives_count, Bounds{0, 127});
    postgres.read("tcp_user_timeout_ms", out.tcp_user_timeout, kNonNegative);

    // The statement timer starts before the lock wait's, so with statement_timeout
    // <= lock_timeout a statement stuck on a row lock fails as "canceling
    // statement due to statement timeout" (retried as a failure) instead of as
    // 55P03 (NACKed as contention).
    if (out.statement_timeout.count() > 0 && out.lock_timeout.count() > 0 &&
        out.statement_timeout <= out.lock_timeout) {
        const std::string_view key =
            postgres.has("statement_timeout_ms") ? "statement_timeout_ms" : "lock_timeout_ms";
        postgres.problem(key,
                         "statement_timeout_ms (" + std::to_string(out.statement_timeout.count()) +
                             ") must be greater than lock_timeout_ms (" +
                             std::to_string(out.lock_timeout.count()) +
                             "), or a wait for a row lock fails as a statement timeout: raise "
                             "statement_timeout_ms, lower lock_timeout_ms, or set either to 0");
    }
    return out;
}

ClaimConfig read_claim(const Reader& claim) {
    ClaimConfig out;
    claim.read("lease_ms", out.lease, kPositiveMs);
    claim.read("completed_ttl_ms", out.completed_ttl, kPositiveMs);
    return out;
}

PipelineConfig read_pipeline(const Reader& pipeline) {
    PipelineConfig out;
    pipeline.read("workers", out.workers, kPositive);
    pipeline.read("batch_size", out.batch_size, kPositive);
    pipeline.read("linger_ms", out.linger, kNonNegativeMs);
    pipeline.read("max_queued_per_partition", out.max_queued_per_partition, kPositive);
    pipeline.read("shutdown_timeout_ms", out.shutdown_timeout, kPositiveMs);
    pipeline.read("retry_backoff_initial_ms", out.retry_backoff_initial, kPositiveMs);
    pipeline.read("retry_backoff_max_ms", out.retry_backoff_max, kPositiveMs);
    pipeline.read("on_redis_down", out.on_redis_down, kRedisDownPolicies);
    if (out.retry_backoff_max < out.retry_backoff_initial) {
        const std::string_view key = pipeline.has("retry_backoff_max_ms")
                                         ? "retry_backoff_max_ms"
                                         : "retry_backoff_initial_ms";
        pipeline.problem(
            key, "retry_backoff_max_ms (" + std::to_string(out.retry_backoff_max.count()) +
                     ") must be at least retry_backoff_initial_ms (" +
                     std::to_string(out.retry_backoff_initial.count()) + "): raise the maximum");
    }
    return out;
}

LoggingConfig read_logging(const Reader& logging) {
    LoggingConfig out;
    std::string_view level = out.level;
    logging.read("level", level, kLogLevels);
    out.level = std::string(level);
    return out;
}

KeySource read_key(const Reader& binding) {
    KeySource out;  // coordinates unless a header or JSON pointer is named
    const YAML::Node node = binding.node("key");
    if (node.IsScalar()) {
        const std::optional<std::string> text = binding.scalar("key", kKeyForms);
        if (text && *text != "coordinates") {
            binding.problem("key", "unknown key form " + in_quotes(*text) + "; write " +
                                       std::string(kKeyForms) +
                                       did_you_mean(*text, {"coordinates"}));
        }
        return out;
    }
    if (!node.IsMap()) {
        binding.problem("key", "expected " + std::string(kKeyForms) + ", got " + kind_of(node));
        return out;
    }
    const Reader key = binding.map("key", kKeySourceKeys);
    const bool header = key.has("header");
    const bool json = key.has("json");
    if (header && json) {
        binding.problem("key", "gives two key forms (header and json): keep one");
    } else if (!header && !json && !key.had_unknown_keys()) {
        binding.problem("key", "names no key form: write " + std::string(kKeyForms));
    }
    // Both forms are read even when both are given, so every mistake shows at once.
    if (json) {
        out.kind = KeySourceKind::json;
        read_pointer(key, "json", out.name);
    }
    if (header) {
        out.kind = KeySourceKind::header;
        key.read("header", out.name, Text::non_empty);
    }
    return out;
}

SequenceConfig read_sequence(const Reader& sequence) {
    SequenceConfig out;
    if (sequence.require("entity",
                         "give the JSON pointer to the entity id, e.g. entity: /account_id")) {
        read_pointer(sequence, "entity", out.entity_pointer);
    }
    if (sequence.require("value",
                         "give the JSON pointer to the sequence number, e.g. value: /sequence")) {
        read_pointer(sequence, "value", out.value_pointer);
    }
    sequence.read("mode", out.mode, kSequenceModes);
    sequence.read("gap_timeout_ms", out.gap_timeout, kPositiveMs);
    return out;
}

void read_handler(const Reader& binding, const std::vector<std::string>& handlers,
                  std::string& out) {
    std::optional<std::string> text = binding.scalar("handler", "a handler name");
    if (!text) return;
    if (std::find(handlers.begin(), handlers.end(), *text) != handlers.end()) {
        out = std::move(*text);
        return;
    }
    const Keys names(handlers.begin(), handlers.end());
    binding.problem("handler", "unknown handler " + in_quotes(*text) + "; registered handlers: " +
                                   (names.empty() ? std::string("(none)") : join(names, ", ")) +
                                   did_you_mean(*text, names));
}

// `options:`: free keys (they are the handler's, which checks them when it reads
// them), scalar values with ${ENV} expanded. A binding without it gets empty
// options that still know where the binding is, so a handler's "required
// option is missing" names a line.
HandlerOptions read_options(const Reader& binding, const std::string& source_name) {
    const Reader options = binding.map("options", std::nullopt);
    std::map<std::string, HandlerOptions::Value> values;
    options.for_each([&](const std::string& key, const YAML::Node& value, int line) {
        const std::string path = options.path_of(key);
        if (value.IsMap() || value.IsSequence()) {
            options.context().add(
                path, line,
                "options values must be scalars (text, numbers, booleans), got " + kind_of(value));
            return;
        }
        if (auto text =
                scalar_text(options.context(), value, path, line, "text, a number or a boolean")) {
            values[key] = {std::move(*text), line};
        }
    });
    return HandlerOptions(source_name, binding.path_of("options"), std::move(values),
                          binding.line_of("options"));
}

// `bound` maps each topic already bound to the line of its binding.
BindingConfig read_binding(Context& ctx, const Item& item, const std::vector<std::string>& handlers,
                           std::map<std::string, int>& bound) {
    const Reader binding(ctx, item.node, item.path, item.line, kBindingKeys);
    BindingConfig out;
    out.yaml_line = item.line;
    if (binding.require("topic", "name the topic to consume, e.g. topic: payments")) {
        read_topic(binding, "topic", out.topic);
        if (!out.topic.empty()) {
            if (const auto [it, added] = bound.emplace(out.topic, item.line); !added) {
                binding.problem("topic",
                                "topic " + in_quotes(out.topic) + " is already bound at line " +
                                    std::to_string(it->second) + ": give each topic one binding");
            }
        }
    }
    if (binding.require("handler", "name a registered handler, e.g. handler: ledger")) {
        read_handler(binding, handlers, out.handler);
    }
    if (binding.require("key",
                        "say where the idempotency key comes from: " + std::string(kKeyForms))) {
        out.key = read_key(binding);
    }
    if (binding.has("sequence"))
        out.sequence = read_sequence(binding.map("sequence", kSequenceKeys));
    out.options = read_options(binding, ctx.source);
    binding.read("max_attempts", out.max_attempts, kPositive);
    if (binding.has("dead_letter_topic")) {
        read_topic(binding, "dead_letter_topic", out.dead_letter_topic);
        if (!out.topic.empty() && out.dead_letter_topic == out.topic) {
            binding.problem(
                "dead_letter_topic",
                "is the consumed topic itself, so a dead letter would come back forever: "
                "name another topic, or remove the key for " +
                    in_quotes(out.topic + ".dlq"));
        }
    } else if (!out.topic.empty()) {
        out.dead_letter_topic = out.topic + ".dlq";
    }
    return out;
}

std::vector<BindingConfig> read_bindings(const Reader& top,
                                         const std::vector<std::string>& handlers) {
    std::vector<BindingConfig> out;
    if (!top.require("bindings", "list at least one { topic, handler, key } under bindings:"))
        return out;
    const YAML::Node node = top.node("bindings");
    const std::vector<Item> items = top.list("bindings");
    if (items.empty() && (node.IsNull() || node.IsSequence())) {
        top.problem("bindings", "lists no binding: add at least one { topic, handler, key }");
    }
    std::map<std::string, int> bound;
    for (const Item& item : items)
        out.push_back(read_binding(top.context(), item, handlers, bound));
    return out;
}

// docs/design.md section 2: the Redis COMPLETED record is a cache of the dedup row, so the row
// must outlive it, or a redelivery after the row is gone would run again.
void check_retention(const Config& config, const Reader& claim, const Reader& postgres) {
    if (config.claim.completed_ttl < config.postgres.dedup_retention) return;
    const bool ttl_given = claim.has("completed_ttl_ms");
    const Reader& at = ttl_given ? claim : postgres;
    at.problem(
        ttl_given ? "completed_ttl_ms" : "dedup_retention_days",
        "claim.completed_ttl_ms (" + std::to_string(config.claim.completed_ttl.count()) +
            " ms) must be less than postgres.dedup_retention_days (" +
            std::to_string(config.postgres.dedup_retention.count() / 24) +
            " days = " + std::to_string(milliseconds(config.postgres.dedup_retention).count()) +
            " ms): dedup rows must outlive the Redis COMPLETED record; lower completed_ttl_ms "
            "or raise dedup_retention_days");
}

Config read_config(Context& ctx, const YAML::Node& root, const std::vector<std::string>& handlers) {
    const Reader top(ctx, root, "", 0, kTopKeys);
    Config config;
    if (!top.is_map()) return config;
    const Reader claim = top.map("claim", kClaimKeys);
    const Reader postgres = top.map("postgres", kPostgresKeys);
    config.kafka = read_kafka(top.map("kafka", kKafkaKeys));
    config.redis = read_redis(top.map("redis", kRedisKeys));
    config.postgres = read_postgres(postgres);
    config.claim = read_claim(claim);
    config.pipeline = read_pipeline(top.map("pipeline", kPipelineKeys));
    config.logging = read_logging(top.map("logging", kLoggingKeys));
    config.bindings = read_bindings(top, handlers);
    check_retention(config, claim, postgres);
    return config;
}

std::string format_problems(const std::string& source, const std::vector<ConfigProblem>& problems) {
    std::string out;
    for (const ConfigProblem& p : problems) {
        if (!out.empty()) out += '\n';
        out += source;
        if (p.line > 0) out += ":" + std::to_string(p.line);
        out += ": ";
        if (!p.path.empty()) out += p.path + ": ";
        out += p.message;
    }
    return out;
}

// The line (1-based) of `text`, or "" past its end.
std::string_view line_text(std::string_view text, int line) {
    for (int i = 1; i < line && !text.empty(); ++i) {
        const std::size_t newline = text.find('\n');
        text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    }
    return text.substr(0, text.find('\n'));
}

std::string syntax_error_message(std::string_view yaml, int line, const std::string& what) {
    std::string message = "YAML syntax error: " + what + "; fix the YAML at this line";
    // A '}' ends a { flow } mapping, so an unquoted ${VAR} inside one breaks it.
    const std::string_view text = line_text(yaml, line);
    if (text.find("${") != std::string_view::npos && text.find_first_of("{[") < text.find("${")) {
        message += " (inside { } or [ ], quote a value that uses ${VAR}: port: \"${PORT}\")";
    }
    return message;
}

std::optional<std::string> getenv_lookup(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
}

}  // namespace

namespace {

// Messages quote the input, which may hold any bytes (a "\0" escape, a binary
// file): made valid UTF-8 without NUL, so what() is not cut short and a
// terminal or log shows every problem.
std::vector<ConfigProblem> printable(std::vector<ConfigProblem> problems) {
    for (auto& p : problems) {
        p.path = printable_text(p.path, 1024);
        p.message = printable_text(p.message, 4096);
    }
    return problems;
}

}  // namespace

ConfigError::ConfigError(std::string source, std::vector<ConfigProblem> problems)
    : ConfigError(printable_text(source, 4096), printable(std::move(problems)), Printable{}) {}

ConfigError::ConfigError(std::string source, std::vector<ConfigProblem> problems, Printable)
    : UsageError(format_problems(source, problems)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

Config parse_config_text(std::string_view yaml, const std::string& source_name,
                         const std::vector<std::string>& known_handlers, const EnvLookup& env) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml));
    } catch (const YAML::Exception& e) {
        const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
        throw ConfigError(source_name, {{"", line, syntax_error_message(yaml, line, e.msg)}});
    }
    Context ctx{env, {}, source_name};
    Config config = read_config(ctx, root, known_handlers);
    if (ctx.problems.empty()) return config;
    // Document order reads best; problems without a line (missing top-level
    // sections) come last.
    std::stable_sort(ctx.problems.begin(), ctx.problems.end(),
                     [](const ConfigProblem& a, const ConfigProblem& b) {
                         const int la = a.line > 0 ? a.line : INT_MAX;
                         const int lb = b.line > 0 ? b.line : INT_MAX;
                         return la < lb;
                     });
    throw ConfigError(source_name, std::move(ctx.problems));
}

Config parse_config_file(const std::string& path, const std::vector<std::string>& known_handlers) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        throw ConfigError(
            path, {{"", 0, "is a directory, not a config file: give the path of exo.yaml"}});
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw ConfigError(path,
                          {{"", 0,
                            std::string("cannot open the config file (") + std::strerror(errno) +
                                "): check the path and its permissions"}});
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        throw ConfigError(
            path, {{"", 0, "cannot read the config file: check the path and its permissions"}});
    }
    return parse_config_text(text.str(), path, known_handlers, getenv_lookup);
}

}  // namespace exo
