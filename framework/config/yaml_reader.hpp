#pragma once
// The reading machinery under every section reader: a YAML mapping read key by
// key (Reader), values converted and bounded, ${ENV} expanded in every scalar,
// and each mistake recorded with its YAML path and line instead of thrown.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <climits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_parser.hpp"
#include "config/suggestions.hpp"
#include "core/message_text.hpp"

namespace exo::config_reading {

// The keys a mapping accepts, in the order a message lists them.
using Keys = std::vector<std::string_view>;

// One parse's state: the environment and every problem found so far.
struct Context {
    const EnvLookup& env;
    std::vector<ConfigProblem> problems;
    std::string source;  // the config file's name: handler options label their own errors with it

    void add(std::string path, int line, std::string message) {
        problems.push_back({std::move(path), line, std::move(message)});
    }
};

// Inclusive bounds of a whole number.
struct Bounds {
    long long min;
    long long max;
};
inline constexpr Bounds kPositive{1, INT_MAX};
inline constexpr Bounds kNonNegative{0, INT_MAX};
inline constexpr Bounds kPort{1, 65535};
inline constexpr long long kMaxDays = 36500;  // a century is plenty
inline constexpr Bounds kPositiveMs{1, kMaxDays * 24 * 3600 * 1000LL};
inline constexpr Bounds kNonNegativeMs{0, kPositiveMs.max};
inline constexpr Bounds kPositiveDays{1, kMaxDays};
// A count of bytes held in memory: a tebibyte is past any machine exo runs on.
inline constexpr Bounds kPositiveBytes{1, 1LL << 40};

enum class Text { any, non_empty };

// The accepted spellings of an enum value, in the order a message lists them.
template <typename E>
using Choices = std::vector<std::pair<std::string_view, E>>;

// One element of a YAML list, with where it is.
struct Item {
    YAML::Node node;
    std::string path;  // e.g. "bindings[2]"
    int line;
};

// The 1-based line of `node`, or 0 if yaml-cpp does not know it.
int line_of_node(const YAML::Node& node);

// "a mapping", "a list", "the value 'x'" or "nothing": what was found instead.
std::string kind_of(const YAML::Node& node);

// The text of a scalar after ${ENV} expansion, or nullopt with the problem
// recorded. `what` names the expected value for the message ("a string").
std::optional<std::string> scalar_text(Context& ctx, const YAML::Node& node,
                                       const std::string& path, int line, std::string_view what);

// One YAML mapping being read. It knows its path and line, reports keys it does
// not know (with a "did you mean") and duplicate keys on construction, and
// converts values, recording a problem instead of throwing. A read leaves its
// output untouched when the key is absent or its value is wrong, so the
// defaults of config.hpp stay in place. Construct each mapping's Reader once:
// construction reports its key problems.
class Reader {
public:
    // `known` lists the accepted keys; nullopt accepts any key (e.g. librdkafka
    // properties). A null node (absent section, or "key:" with nothing after it)
    // reads as an empty mapping.
    Reader(Context& ctx, const YAML::Node& node, std::string path, int line,
           const std::optional<Keys>& known);

    Context& context() const { return ctx_; }
    bool had_unknown_keys() const { return had_unknown_keys_; }
    // False if the node was not a mapping (already reported): then nothing is
    // "missing" from it either.
    bool is_map() const { return is_map_; }

    bool has(std::string_view key) const { return find(key) != nullptr; }
    std::string path_of(std::string_view key) const;
    // The line of the key, or of this mapping when the key is absent.
    int line_of(std::string_view key) const;
    void problem(std::string_view key, std::string message) const;

    // Every entry, in document order: for mappings of free-form keys.
    template <typename F>
    void for_each(F&& f) const {
        for (const Entry& e : entries_) f(e.key, e.value, e.line);
    }

    // True if present; otherwise records "missing" with a hint on what to write.
    bool require(std::string_view key, std::string_view hint) const;

    // The nested mapping under `key` (empty when absent).
    Reader map(std::string_view key, const std::optional<Keys>& known) const;

    // The elements of the list under `key` (none when absent or not a list).
    std::vector<Item> list(std::string_view key) const;

    // The node under `key`, unread (a null node when absent).
    YAML::Node node(std::string_view key) const;

    // The expanded text under `key`; nullopt when absent or wrong (recorded).
    std::optional<std::string> scalar(std::string_view key, std::string_view what) const;

    void read(std::string_view key, std::string& out, Text rule = Text::any) const;
    void read(std::string_view key, int& out, Bounds bounds) const;
    void read(std::string_view key, std::size_t& out, Bounds bounds) const;
    void read(std::string_view key, std::chrono::milliseconds& out, Bounds bounds) const;
    void read_days(std::string_view key, std::chrono::hours& out, Bounds bounds) const;

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

private:
    enum class Unit { count, milliseconds, days };

    struct Entry {
        std::string key;
        YAML::Node value;
        int line;  // of the key: where a reader looks, also when the value is empty
    };

    // Whole number within `bounds`, or nullopt with the problem recorded.
    std::optional<long long> integer(std::string_view key, Bounds bounds, Unit unit) const;

    const Entry* find(std::string_view key) const;
    void add_entry(const YAML::Node& key_node, const YAML::Node& value,
                   const std::optional<Keys>& known);

    Context& ctx_;
    std::string path_;
    int line_;
    std::vector<Entry> entries_;
    bool had_unknown_keys_ = false;
    bool is_map_ = true;
};

// The problem for a document yaml-cpp cannot load, with a hint when the
// cause is a common one.
ConfigProblem yaml_syntax_problem(std::string_view yaml, const YAML::Exception& e);

}  // namespace exo::config_reading
