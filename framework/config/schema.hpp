#pragma once
// The config schema: each key of a section of exo.yaml is written once, as a row
// of its section's table (the *_section.cpp files): its YAML name, the struct
// member it fills with its bounds or choices, and its docs text. From a table
// come the keys the section accepts (an unknown one gets a "did you mean"), its
// reader, its printer (check-config --print, config_printer.cpp) and its rows in
// docs/configuration.md (config_docs.cpp). A default is never written in a row:
// it is the struct's (config.hpp), read from a default-constructed one.
//
// A row, e.g.
//     ms("linger_ms", &PipelineConfig::linger, kNonNegativeMs, R"md(how long ...)md")
// reads pipeline.linger_ms as whole milliseconds within the bounds, prints it
// as a number and documents it with its default (5). Modifiers say the rest:
// .required(hint), .checked(rule on the value), .printed_if(predicate),
// .default_plus(note); removed(name, message, doc) is a key refused with what
// replaced it; custom(...) a key with a reader and printer of its own (lists,
// nested mappings, addresses).
//
// A section's rules between keys live in its table's `validate`, run once every
// key is read; rules between sections in config_parser.cpp. Reading records
// problems in the Reader's context (yaml_reader.hpp) and throws nothing else.
// Each table is a function-local static, built once on first use (thread-safe)
// and never changed.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "config/yaml_reader.hpp"
#include "config/yaml_writer.hpp"

namespace exo::config_reading {

// A key that is on or off: true | false (outbox_section.cpp).
extern const Choices<bool> kSwitch;

}  // namespace exo::config_reading

namespace exo::config_schema {

using config_reading::Bounds;
using config_reading::Choices;
using config_reading::Keys;
using config_reading::Reader;
using config_reading::Text;

// One row of docs/configuration.md's tables.
struct DocRow {
    std::string key;  // e.g. "pipeline.batch_size"
    std::string default_text;
    std::string meaning;
};

// The docs' default column for a value of each kind.
std::string shown_bytes(std::size_t bytes);  // "16777216 (16 MiB)"
inline std::string shown_text(std::string_view text) {
    return text.empty() ? "\"\"" : std::string(text);
}

// "`a`, `b` or `c`": the spellings as the docs list them.
template <typename E>
std::string spellings_of(const Choices<E>& choices) {
    std::string out;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
        out += "`" + std::string(choices[i].first) + "`";
    }
    return out;
}

template <typename E>
std::string_view name_of(const Choices<E>& choices, E value) {
    for (const auto& [name, v] : choices)
        if (v == value) return name;
    return "?";  // a value missing from its Choices: a table bug, shown rather than hidden
}

template <typename S>
class Section;

// One key of a section whose struct is S.
template <typename S>
struct Key {
    std::string_view name;
    std::string_view doc;  // the meaning column of docs/configuration.md (Markdown)
    // Reads the key into the struct; absent or wrong (recorded) leaves it as it was.
    std::function<void(const Reader&, S&)> read;
    // Writes "name: value" for check-config --print; empty for a removed key.
    std::function<void(YAML::Emitter&, const S&, const Config&)> print;
    // The value as the docs' default column shows it.
    std::function<std::string(const S&)> shown;
    // Set: printed only when it holds, for a key another setting refuses or
    // leaves meaningless (the output must parse back).
    std::function<bool(const Config&, const S&)> printed;
    // Non-empty: the key is required, and this says what to write when it is missing.
    std::string_view required_hint;
    // A rule on this key's value alone, run when it was read: the problem, or nullopt.
    std::function<std::optional<std::string>(const S&)> check;
    std::string_view default_override;  // non-empty: the docs' default column instead of `shown`
    std::string_view default_note;      // appended to the docs' default column
    std::string spellings;              // a choice's accepted values, for the docs
    // The docs rows of a nested mapping's keys (kafka.mock), listed after this one.
    std::function<std::vector<DocRow>(std::string_view prefix)> nested_rows;

    Key required(std::string_view hint) && {
        required_hint = hint;
        return std::move(*this);
    }
    Key checked(std::function<std::optional<std::string>(const S&)> rule) && {
        check = std::move(rule);
        return std::move(*this);
    }
    Key printed_if(std::function<bool(const Config&, const S&)> when) && {
        printed = std::move(when);
        return std::move(*this);
    }
    Key default_is(std::string_view text) && {
        default_override = text;
        return std::move(*this);
    }
    Key default_plus(std::string_view note) && {
        default_note = note;
        return std::move(*this);
    }
    template <typename T>
    Key nesting(const Section<T>& section) && {
        nested_rows = [&section](std::string_view path) { return section.doc_rows(path); };
        return std::move(*this);
    }
};

// One section: its keys in the order messages list them, and its cross-key rules.
template <typename S>
class Section {
public:
    using Validate = void (*)(const Reader&, S&);

    // `printed`: when set, the section is printed only when it holds (a section
    // another setting refuses).
    Section(std::string_view name, std::vector<Key<S>> keys, Validate validate = nullptr,
            bool (*printed)(const Config&) = nullptr)
        : name_(name), keys_(std::move(keys)), validate_(validate), printed_(printed) {
        for (const Key<S>& key : keys_) names_.push_back(key.name);
    }

    std::string_view name() const { return name_; }
    const Keys& names() const { return names_; }
    const std::vector<Key<S>>& keys() const { return keys_; }

    // Every key of `r` (opened with names()), then validate; problems go to r's context.
    S read(const Reader& r) const {
        S out = S();  // not S{}: aggregate init would copy-list-initialize explicit members
        read_into(r, out);
        return out;
    }
    void read_into(const Reader& r, S& out) const {
        for (const Key<S>& key : keys_) {
            if (!key.required_hint.empty() && !r.require(key.name, key.required_hint)) continue;
            if (!r.has(key.name)) continue;
            const std::size_t problems = r.context().problems.size();
            key.read(r, out);
            if (key.check && r.context().problems.size() == problems)
                if (auto problem = key.check(out)) r.problem(key.name, std::move(*problem));
        }
        if (validate_) validate_(r, out);
    }

    // "<name>: {...}" with every printed key, "<name>: {}" when none is;
    // nothing when the section is not printed.
    void print(YAML::Emitter& out, const S& value, const Config& config) const {
        if (!printed_ || printed_(config)) print_as(out, name_, value, config);
    }
    void print_as(YAML::Emitter& out, std::string_view as, const S& value,
                  const Config& config) const {
        std::vector<const Key<S>*> shown;
        for (const Key<S>& key : keys_)
            if (key.print && (!key.printed || key.printed(config, value))) shown.push_back(&key);
        yaml_writer::begin_map(out, as, shown.empty());
        for (const Key<S>* key : shown) key->print(out, value, config);
        yaml_writer::end_map(out);
    }

    // Every printed key of a mapping the caller opened (a list's element).
    void print_entries(YAML::Emitter& out, const S& value, const Config& config) const {
        for (const Key<S>& key : keys_)
            if (key.print && (!key.printed || key.printed(config, value)))
                key.print(out, value, config);
    }

    // The docs rows, keys named "<prefix>.<key>".
    std::vector<DocRow> doc_rows(std::string_view prefix) const {
        const S defaults = S();
        std::vector<DocRow> rows;
        for (const Key<S>& key : keys_) {
            std::string shown = !key.default_override.empty() ? std::string(key.default_override)
                                : !key.required_hint.empty()  ? std::string("—")
                                                              : key.shown(defaults);
            shown += key.default_note;
            std::string meaning = key.spellings;
            if (!meaning.empty() && !key.doc.empty()) meaning += ": ";
            meaning += key.doc;
            if (!key.required_hint.empty()) meaning = "required; " + meaning;
            const std::string path = std::string(prefix) + "." + std::string(key.name);
            rows.push_back({path, std::move(shown), std::move(meaning)});
            if (key.nested_rows)
                for (DocRow& row : key.nested_rows(path)) rows.push_back(std::move(row));
        }
        return rows;
    }

private:
    std::string_view name_;
    std::vector<Key<S>> keys_;
    Validate validate_;
    bool (*printed_)(const Config&);
    Keys names_;
};

// The kinds of row. Each takes the YAML name, the member, its bounds or choices,
// and the docs text.

// A row with its name and docs text only, for the kinds below to fill in.
template <typename S>
Key<S> named(std::string_view name, std::string_view doc) {
    Key<S> k;
    k.name = name;
    k.doc = doc;
    return k;
}

// A value as the printer writes it: a whole number bare, text quoted.
inline void write_value(YAML::Emitter& out, std::string_view key, long long value) {
    yaml_writer::number(out, key, value);
}
inline void write_value(YAML::Emitter& out, std::string_view key, std::string_view value) {
    yaml_writer::text(out, key, value);
}
inline std::string shown_value(long long value) {
    return std::to_string(value);
}
inline std::string shown_value(std::string_view value) {
    return std::string(value);
}

// A row of one scalar: `read` reads the member, `value` gives what is printed
// and shown (a whole number, or text).
template <typename S, typename M, typename ReadFn, typename ValueFn>
Key<S> scalar(std::string_view name, M S::*member, std::string_view doc, ReadFn read,
              ValueFn value) {
    Key<S> k = named<S>(name, doc);
    k.read = [=](const Reader& r, S& s) { read(r, s.*member); };
    k.print = [=](YAML::Emitter& e, const S& s, const Config&) {
        write_value(e, name, value(s.*member));
    };
    k.shown = [=](const S& s) { return shown_value(value(s.*member)); };
    return k;
}

// A whole number within `bounds`.
template <typename S>
Key<S> number(std::string_view name, int S::*member, Bounds bounds, std::string_view doc) {
    return scalar(
        name, member, doc, [=](const Reader& r, int& m) { r.read(name, m, bounds); },
        [](int m) { return static_cast<long long>(m); });
}

// A count of bytes within `bounds`, shown in MiB too.
template <typename S>
Key<S> bytes(std::string_view name, std::size_t S::*member, Bounds bounds, std::string_view doc) {
    Key<S> k = scalar(
        name, member, doc, [=](const Reader& r, std::size_t& m) { r.read(name, m, bounds); },
        [](std::size_t m) { return static_cast<long long>(m); });
    k.shown = [=](const S& s) { return shown_bytes(s.*member); };
    return k;
}

// A duration in whole milliseconds within `bounds` (the name ends in _ms).
template <typename S>
Key<S> ms(std::string_view name, std::chrono::milliseconds S::*member, Bounds bounds,
          std::string_view doc) {
    return scalar(
        name, member, doc,
        [=](const Reader& r, std::chrono::milliseconds& m) { r.read(name, m, bounds); },
        [](std::chrono::milliseconds m) { return static_cast<long long>(m.count()); });
}

// A duration in whole days within `bounds` (the name ends in _days).
template <typename S>
Key<S> days(std::string_view name, std::chrono::hours S::*member, Bounds bounds,
            std::string_view doc) {
    return scalar(
        name, member, doc,
        [=](const Reader& r, std::chrono::hours& m) { r.read_days(name, m, bounds); },
        [](std::chrono::hours m) { return static_cast<long long>(m.count() / 24); });
}

// Text. `printed_as` masks it when printed (a secret), or nullptr.
template <typename S>
Key<S> text(std::string_view name, std::string S::*member, Text rule, std::string_view doc,
            std::string (*printed_as)(std::string_view) = nullptr) {
    Key<S> k = scalar(
        name, member, doc, [=](const Reader& r, std::string& m) { r.read(name, m, rule); },
        [=](const std::string& m) { return printed_as ? printed_as(m) : m; });
    k.shown = [=](const S& s) { return shown_text(s.*member); };
    return k;
}

// One of `choices` (which must outlive the table): read and printed by the same spellings.
template <typename S, typename E>
Key<S> choice(std::string_view name, E S::*member, const Choices<E>& choices,
              std::string_view doc) {
    const Choices<E>* table = &choices;
    Key<S> k = scalar(
        name, member, doc, [=](const Reader& r, E& m) { r.read(name, m, *table); },
        [=](E m) { return name_of(*table, m); });
    k.spellings = spellings_of(choices);
    return k;
}

// Text that is one of `choices` (which must outlive the table), kept as written.
template <typename S>
Key<S> one_of(std::string_view name, std::string S::*member,
              const Choices<std::string_view>& choices, std::string_view doc) {
    const Choices<std::string_view>* table = &choices;
    Key<S> k = scalar(
        name, member, doc,
        [=](const Reader& r, std::string& m) {
            std::string_view value = m;
            r.read(name, value, *table);
            m = std::string(value);
        },
        [](const std::string& m) { return m; });
    k.spellings = spellings_of(choices);
    return k;
}

// true | false, printed as a YAML boolean.
template <typename S>
Key<S> toggle(std::string_view name, bool S::*member, std::string_view doc) {
    Key<S> k = named<S>(name, doc);
    k.read = [=](const Reader& r, S& s) { r.read(name, s.*member, config_reading::kSwitch); };
    k.print = [=](YAML::Emitter& e, const S& s, const Config&) {
        yaml_writer::boolean(e, name, s.*member);
    };
    k.shown = [=](const S& s) { return std::string(s.*member ? "true" : "false"); };
    return k;
}

// A key that is no more: known only to refuse it with `message` (what replaced it).
template <typename S>
Key<S> removed(std::string_view name, std::string_view message, std::string_view doc) {
    Key<S> k = named<S>(name, doc);
    k.read = [=](const Reader& r, S&) { r.problem(name, std::string(message)); };
    k.default_override = "—";
    return k;
}

// A key with a reader and printer of its own (lists, nested mappings, addresses).
template <typename S>
Key<S> custom(std::string_view name, std::function<void(const Reader&, S&)> read,
              std::function<void(YAML::Emitter&, const S&, const Config&)> print,
              std::string_view default_text, std::string_view doc) {
    Key<S> k = named<S>(name, doc);
    k.read = std::move(read);
    k.print = std::move(print);
    k.default_override = default_text;
    return k;
}

}  // namespace exo::config_schema
