// bindings: which handler consumes which topic, where each record's idempotency
// key comes from, the optional sequence check, retries, the dead-letter topic
// and the handler's own options.
#include <algorithm>
#include <map>

#include "config/sections.hpp"
#include "core/secrets.hpp"
#include "kafka/kafka_names.hpp"

namespace exo::config_reading {

const Choices<Ordering> kOrderings = {
    {"partition", Ordering::partition}, {"key", Ordering::key}, {"entity", Ordering::entity}};
const Choices<KeyReusePolicy> kKeyReusePolicies = {{"dead_letter", KeyReusePolicy::dead_letter},
                                                   {"log", KeyReusePolicy::log},
                                                   {"ignore", KeyReusePolicy::ignore}};
const Choices<SequenceMode> kSequenceModes = {{"latest", SequenceMode::latest},
                                              {"strict", SequenceMode::strict}};
const Choices<SequenceScope> kSequenceScopes = {{"shared", SequenceScope::shared},
                                                {"group", SequenceScope::group}};

namespace {

const Keys kKeySourceKeys = {"header", "json", "hash"};
const Keys kHashKeys = {"fields", "exclude", "prefix_topic"};

constexpr std::string_view kKeyForms =
    "{ header: NAME }, { json: /pointer }, { hash: { fields | exclude: [/pointer, ...] } } or "
    "coordinates";

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

// What is wrong with a value by a rule, or nullopt if nothing is.
using Rule = std::optional<std::string> (*)(std::string_view);

// The text under `key` (`what` names it for the message), if `rule` accepts it.
void read_checked(const Reader& r, std::string_view key, std::string_view what, Rule rule,
                  std::string& out) {
    std::optional<std::string> text = r.scalar(key, what);
    if (!text) return;
    if (auto problem = rule(*text)) {
        r.problem(key, std::move(*problem));
        return;
    }
    out = std::move(*text);
}

void read_topic(const Reader& r, std::string_view key, std::string& out) {
    read_checked(r, key, "a topic name", topic_name_problem, out);
}

void read_pointer(const Reader& r, std::string_view key, std::string& out) {
    read_checked(r, key, "a JSON pointer such as /id", json_pointer_problem, out);
}

// A list of distinct JSON pointers under `name`, if present: an empty list is a
// mistake (leave the key out instead), and so is a pointer listed twice.
void read_pointer_list(const Reader& r, std::string_view name, std::string_view if_empty,
                       std::vector<std::string>& out) {
    if (!r.has(name)) return;
    const YAML::Node node = r.node(name);
    const std::vector<Item> items = r.list(name);  // records a value that is not a list
    if (items.empty() && (node.IsNull() || node.IsSequence())) {
        r.problem(name, "lists no pointer: " + std::string(if_empty));
        return;
    }
    std::map<std::string, int> first_line;  // pointer -> line listing it
    for (const Item& item : items) {
        auto text =
            scalar_text(r.context(), item.node, item.path, item.line, "a JSON pointer such as /id");
        if (!text) continue;
        if (auto problem = json_pointer_problem(*text)) {
            r.context().add(item.path, item.line, std::move(*problem));
            continue;
        }
        if (const auto [it, added] = first_line.emplace(*text, item.line); !added) {
            r.context().add(item.path, item.line,
                            "pointer " + in_quotes(*text) + " is already listed at line " +
                                std::to_string(it->second) + ": list each pointer once");
            continue;
        }
        out.push_back(std::move(*text));
    }
}

// `hash: { fields: [...] }`, `hash: { exclude: [...] }` or `hash: {}` (the whole
// payload), each with an optional `prefix_topic: true`.
HashKeySpec read_hash(const Reader& key) {
    HashKeySpec out;
    const YAML::Node node = key.node("hash");
    if (!node.IsMap()) {
        key.problem("hash",
                    "expected { fields: [/pointer, ...] }, { exclude: [/pointer, ...] } or {} "
                    "(the whole payload), got " +
                        kind_of(node));
        return out;
    }
    const Reader hash = key.map("hash", kHashKeys);
    if (hash.has("fields") && hash.has("exclude")) {
        key.problem("hash",
                    "gives both fields and exclude: hash only the listed fields, or the whole "
                    "payload without the excluded ones; keep one");
    }
    read_pointer_list(hash, "fields", "list the fields the key is made of", out.fields);
    read_pointer_list(hash, "exclude",
                      "list what changes on redelivery, or write hash: {} for the whole payload",
                      out.exclude);
    hash.read("prefix_topic", out.prefix_topic, kSwitch);
    return out;
}

KeySource read_key(const Reader& binding) {
    KeySource out;  // coordinates unless a header, a JSON pointer or a hash is named
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
    Keys forms;
    for (const std::string_view form : {"header", "json", "hash"})
        if (key.has(form)) forms.push_back(form);
    if (forms.size() > 1) {
        binding.problem("key", "gives " + std::string(forms.size() == 2 ? "two" : "three") +
                                   " key forms (" +
                                   join(Keys(forms.begin(), forms.end() - 1), ", ") + " and " +
                                   std::string(forms.back()) + "): keep one");
    } else if (forms.empty() && !key.had_unknown_keys()) {
        binding.problem("key", "names no key form: write " + std::string(kKeyForms));
    }
    // Every form given is read, so every mistake shows at once.
    if (key.has("hash")) {
        out.kind = KeySourceKind::hash;
        out.hash = read_hash(key);
    }
    if (key.has("json")) {
        out.kind = KeySourceKind::json;
        read_pointer(key, "json", out.name);
    }
    if (key.has("header")) {
        out.kind = KeySourceKind::header;
        key.read("header", out.name, Text::non_empty);
    }
    return out;
}

// The scope each handler's sequenced bindings asked for, and where: every
// binding of one handler in a config must agree, or one entity would have two
// sequences in one group and `exo sequence` could not say which it moves.
using ScopesSeen = std::map<std::string, std::pair<SequenceScope, int>>;

// What reading one binding needs of the others and of the application: the
// registered handler names, the topics bound so far (with their bindings'
// lines) and the sequence scopes seen so far. Empty for the docs and the printer.
struct BindingsSeen {
    const std::vector<std::string>* handlers = nullptr;
    std::map<std::string, int> bound;
    ScopesSeen scopes;
};

// Rules between a binding's sequence and its handler: sequence_owner() writes
// "<handler>@<group>", and every sequenced binding of one handler needs one scope.
void check_sequence_scope(const Reader& sequence, const SequenceConfig& out,
                          const std::string& handler, ScopesSeen& scopes) {
    if (handler.empty()) return;
    const int line = sequence.line_of("scope");  // the sequence's own line without one
    // A handler with '@' would make two (handler, group) pairs one row.
    if (out.scope == SequenceScope::group && handler.find('@') != std::string::npos) {
        sequence.problem("scope", "is group, but handler " + in_quotes(handler) +
                                      " has '@' in its name, which exo uses to add the group to "
                                      "the handler in exo_sequences: register the handler under "
                                      "a name without '@', or use scope: shared");
    }
    const auto [seen, added] = scopes.emplace(handler, std::pair{out.scope, line});
    if (!added && seen->second.first != out.scope) {
        const auto name = [](SequenceScope s) {
            return s == SequenceScope::group ? "group" : "shared (the default)";
        };
        sequence.problem("scope", std::string("is ") + name(out.scope) +
                                      ", but another binding of handler " + in_quotes(handler) +
                                      " (line " + std::to_string(seen->second.second) + ") has " +
                                      name(seen->second.first) +
                                      ": give every sequenced binding of one handler the same "
                                      "scope, or its entities would have two sequences");
    }
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

namespace schema = config_schema;

// `sequence:` of a binding: the entity and value pointers (required), the mode,
// the scope and the gap timeout.
const schema::Section<SequenceConfig>& sequence_section() {
    static const schema::Section<SequenceConfig> section(
        "sequence",
        {
            schema::custom<SequenceConfig>(
                "entity",
                [](const Reader& r, SequenceConfig& s) {
                    read_pointer(r, "entity", s.entity_pointer);
                },
                [](YAML::Emitter& e, const SequenceConfig& s, const Config&) {
                    yaml_writer::text(e, "entity", s.entity_pointer);
                },
                "—", R"md(the JSON pointer (RFC 6901) to the entity id)md")
                .required("give the JSON pointer to the entity id, e.g. entity: /account_id"),
            schema::custom<SequenceConfig>(
                "value",
                [](const Reader& r, SequenceConfig& s) {
                    read_pointer(r, "value", s.value_pointer);
                },
                [](YAML::Emitter& e, const SequenceConfig& s, const Config&) {
                    yaml_writer::text(e, "value", s.value_pointer);
                },
                "—", R"md(the JSON pointer to the record's sequence number)md")
                .required("give the JSON pointer to the sequence number, e.g. value: /sequence"),
            schema::choice(
                "mode", &SequenceConfig::mode, kSequenceModes,
                R"md(`latest` applies a record only if its sequence is above the entity's last (older ones are stale); `strict` applies exactly the next one and parks a record that arrives early until its predecessor applies or `gap_timeout_ms` passes)md"),
            schema::choice(
                "scope", &SequenceConfig::scope, kSequenceScopes,
                R"md(whose sequences the entities are: `shared`, one per (handler, entity) for every consumer group on the database, as before; `group`, this group's own (stored in `exo_sequences` as handler `<handler>@<group>`), so another group running the same handler on the same database neither reads nor moves them. The `group` scope is refused for a handler name containing `@`, and every sequenced binding of one handler must have the same scope. Switching an existing deployment: docs/operations.md, "Recovering a sequence that jumped")md"),
            schema::ms(
                "gap_timeout_ms", &SequenceConfig::gap_timeout, kPositiveMs,
                R"md(`strict`: how long a record waits for a missing predecessor before it is dead-lettered, timed from its first sighting across restarts)md"),
        });
    return section;
}

// One binding's keys. Reading a row may consult `seen` (the registered handlers,
// the topics bound and sequence scopes seen so far); the docs and the printer
// pass an empty one. The cross-key rules of one binding are its validate.
schema::Section<BindingConfig> binding_section(BindingsSeen& seen) {
    using schema::custom;
    const auto validate = [](const Reader& binding, BindingConfig& out) {
        if (out.ordering == Ordering::entity && !binding.has("sequence")) {
            binding.problem(
                "ordering",
                "is entity, but the binding has no sequence to name the entity: add "
                "sequence: { entity: /pointer, value: /pointer }, or use ordering: key");
        }
        if (binding.has("dead_letter_topic")) {
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
        // Without the key, options that still know where the binding is, so a
        // handler's "required option is missing" names a line.
        if (!binding.has("options")) out.options = read_options(binding, binding.context().source);
    };
    auto key = custom<BindingConfig>(
        "key", [](const Reader& r, BindingConfig& b) { b.key = read_key(r); },
        [](YAML::Emitter& e, const BindingConfig& b, const Config&) {
            if (b.key.kind == KeySourceKind::coordinates) {
                yaml_writer::text(e, "key", "coordinates");
                return;
            }
            yaml_writer::begin_map(e, "key");
            if (b.key.kind == KeySourceKind::hash) {
                const HashKeySpec& h = b.key.hash;
                yaml_writer::begin_map(e, "hash",
                                       h.fields.empty() && h.exclude.empty() && !h.prefix_topic);
                if (!h.fields.empty()) yaml_writer::texts(e, "fields", h.fields);
                if (!h.exclude.empty()) yaml_writer::texts(e, "exclude", h.exclude);
                if (h.prefix_topic) yaml_writer::boolean(e, "prefix_topic", true);
                yaml_writer::end_map(e);
            } else {
                yaml_writer::text(e, b.key.kind == KeySourceKind::header ? "header" : "json",
                                  b.key.name);
            }
            yaml_writer::end_map(e);
        },
        "—",
        R"md(`{header: NAME}`, `{json: /pointer}` (RFC 6901), `{hash: {...}}` (below) or `coordinates`)md");
    static const std::string kKeyHint =
        "say where the idempotency key comes from: " + std::string(kKeyForms);
    key = std::move(key).required(kKeyHint);
    key.nested_rows = [](std::string_view path) {
        const std::string p(path);
        return std::vector<schema::DocRow>{
            {p + ".hash.fields", "—",
             R"md(JSON pointers: the key is the SHA-256 (lowercase hex) of the canonical JSON of `{"<pointer>": value, ...}` (listing order does not matter). A payload lacking one is dead-lettered: `idempotency key: payload has no /x`)md"},
            {p + ".hash.exclude", "—",
             R"md(JSON pointers: the key is the SHA-256 of the canonical JSON of the whole payload without these values (what changes on redelivery: `[/sentAt, /traceId]`); a pointer absent from a payload is ignored. Not with `fields`; `hash: {}` hashes the whole payload. Lists may not be empty or repeat a pointer. The canonical form: docs/design.md, "Payload-derived keys")md"},
            {p + ".hash.prefix_topic", HashKeySpec{}.prefix_topic ? "true" : "false",
             R"md(the key is `<topic>/<hex digest>`: the same payload on two topics is two events)md"},
        };
    };
    // Read in this order: "topic" files b.yaml_line (set by the caller) under the
    // topics seen, and "sequence" checks its scope against b.handler, read before it.
    std::vector<schema::Key<BindingConfig>> keys;
    keys.push_back(
        custom<BindingConfig>(
            "topic",
            [&seen](const Reader& r, BindingConfig& b) {
                read_topic(r, "topic", b.topic);
                if (b.topic.empty()) return;
                if (const auto [it, added] = seen.bound.emplace(b.topic, b.yaml_line); !added) {
                    r.problem("topic",
                              "topic " + in_quotes(b.topic) + " is already bound at line " +
                                  std::to_string(it->second) + ": give each topic one binding");
                }
            },
            [](YAML::Emitter& e, const BindingConfig& b, const Config&) {
                yaml_writer::text(e, "topic", b.topic);
            },
            "—", R"md(unique)md")
            .required("name the topic to consume, e.g. topic: payments"));
    keys.push_back(
        custom<BindingConfig>(
            "handler",
            [&seen](const Reader& r, BindingConfig& b) {
                static const std::vector<std::string> kNone;
                read_handler(r, seen.handlers ? *seen.handlers : kNone, b.handler);
            },
            [](YAML::Emitter& e, const BindingConfig& b, const Config&) {
                yaml_writer::text(e, "handler", b.handler);
            },
            "—",
            R"md(a handler name registered with `app.handler(...)` (a wrong name's error lists the registered ones))md")
            .required("name a registered handler, e.g. handler: ledger"));
    keys.push_back(std::move(key));
    keys.push_back(
        custom<BindingConfig>(
            "sequence",
            [&seen](const Reader& r, BindingConfig& b) {
                const auto& section = sequence_section();
                const Reader sequence = r.map("sequence", section.names());
                b.sequence = section.read(sequence);
                check_sequence_scope(sequence, *b.sequence, b.handler, seen.scopes);
            },
            [](YAML::Emitter& e, const BindingConfig& b, const Config& c) {
                if (b.sequence) sequence_section().print_as(e, "sequence", *b.sequence, c);
            },
            "none",
            R"md(the entity's sequence check (optimistic concurrency): each record carries its entity and sequence number, and exo applies it only in sequence order)md")
            .nesting(sequence_section()));
    keys.push_back(schema::choice(
        "ordering", &BindingConfig::ordering, kOrderings,
        R"md(which records of a partition run one after another: `partition` (all, in offset order), `key` (those with the same Kafka record key; records without a key share one lane), `entity` (those with the same `sequence.entity`; needs `sequence`). Different keys run concurrently with `pipeline.concurrency` above 1 (docs/design.md#ordering-and-concurrency; docs/handlers.md, "Ordering and concurrency"))md"));
    keys.push_back(schema::number(
        "max_attempts", &BindingConfig::max_attempts, kPositive,
        R"md(tries before a retryable failure is dead-lettered (a failed `COMMIT` or `SAVEPOINT` around the record counts as a try), and tries to record a dead letter before its partition stalls)md"));
    keys.push_back(custom<BindingConfig>(
        "dead_letter_topic",
        [](const Reader& r, BindingConfig& b) {
            read_topic(r, "dead_letter_topic", b.dead_letter_topic);
        },
        [](YAML::Emitter& e, const BindingConfig& b, const Config&) {
            yaml_writer::text(e, "dead_letter_topic", b.dead_letter_topic);
        },
        "`<topic>.dlq`", R"md(where dead letters go (not the topic itself))md"));
    keys.push_back(
        schema::choice("on_key_reuse", &BindingConfig::on_key_reuse, kKeyReusePolicies, R"md(what to do with a later copy of a key whose payload differs from the copy that was applied (a producer reused an event id). `dead_letter`: the copy is dead-lettered, without a dedup row, with the reason `key reused with a different payload: this copy <fp>, the applied one <fp> at <topic>/<partition>/<offset>`; `log`: a warning, and the copy is finished as a duplicate; `ignore`: a plain duplicate, and no fingerprint is computed or kept (its dedup rows have none: switching to another policy later cannot compare the keys they hold). Two copies in one batch are compared too: the later one with another fingerprint goes to its own claim, which decides. `dead_letter` and `log` count `exo_key_reuse_total{topic}`. A byte-identical redelivery is always a plain duplicate. The fingerprint is the first 128 bits of the SHA-256 of the value; for `key: {hash: ...}` it is the key's own digest (the listed `fields`, or the payload minus `exclude`): the binding says what makes an event itself, so a copy that differs elsewhere (a timestamp) is a redelivery, and a reuse cannot happen)md"));
    keys.push_back(custom<BindingConfig>(
        "options",
        [](const Reader& r, BindingConfig& b) { b.options = read_options(r, r.context().source); },
        [](YAML::Emitter& e, const BindingConfig& b, const Config&) {
            yaml_writer::begin_map(e, "options", b.options.empty());
            for (const auto& key : b.options.keys()) {
                const std::string value = b.options.string(key);
                yaml_writer::text(
                    e, key, is_secret_key(key) ? yaml_writer::secret(value) : mask_uri(value));
            }
            yaml_writer::end_map(e);
        },
        "{}",
        R"md(free `key: value` map handed to the handler's factory, so one handler class can serve several bindings with different settings. Values must be scalars (`${VAR}` expanded); the handler reads them with `exo::HandlerOptions`, and a missing or mistyped value is reported like any config error, with YAML path and line)md"));
    return schema::Section<BindingConfig>("bindings[]", std::move(keys), validate);
}

}  // namespace

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
    BindingsSeen seen;
    seen.handlers = &handlers;
    const auto section = binding_section(seen);
    for (const Item& item : items) {
        const Reader binding(top.context(), item.node, item.path, item.line, section.names());
        BindingConfig b;
        b.yaml_line = item.line;
        section.read_into(binding, b);
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace exo::config_reading

namespace exo::config_schema {

std::vector<DocRow> binding_doc_rows() {
    config_reading::BindingsSeen none;
    return config_reading::binding_section(none).doc_rows("bindings[]");
}

void print_bindings(YAML::Emitter& out, const Config& config) {
    config_reading::BindingsSeen none;
    const auto section = config_reading::binding_section(none);
    out << YAML::Key << "bindings" << YAML::Value << YAML::BeginSeq;
    for (const BindingConfig& b : config.bindings) {
        out << YAML::BeginMap;
        section.print_entries(out, b, config);
        out << YAML::EndMap;
    }
    out << YAML::EndSeq;
}

}  // namespace exo::config_schema
