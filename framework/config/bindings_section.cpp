// bindings: which handler consumes which topic, where each record's idempotency
// key comes from, the optional sequence check, retries, the dead-letter topic
// and the handler's own options.
#include <algorithm>
#include <map>

#include "config/sections.hpp"
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

const Keys kBindingKeys = {
    "topic",        "handler",           "key",     "sequence",    "ordering",
    "max_attempts", "dead_letter_topic", "options", "on_key_reuse"};
const Keys kKeySourceKeys = {"header", "json", "hash"};
const Keys kHashKeys = {"fields", "exclude", "prefix_topic"};
const Keys kSequenceKeys = {"entity", "value", "mode", "scope", "gap_timeout_ms"};

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

SequenceConfig read_sequence(const Reader& sequence, const std::string& handler,
                             ScopesSeen& scopes) {
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
    sequence.read("scope", out.scope, kSequenceScopes);
    sequence.read("gap_timeout_ms", out.gap_timeout, kPositiveMs);
    if (handler.empty()) return out;
    const int line = sequence.line_of("scope");  // the sequence's own line without one
    // sequence_owner() writes "<handler>@<group>": a handler with '@' would make
    // two (handler, group) pairs one row.
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
                           std::map<std::string, int>& bound, ScopesSeen& scopes) {
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
        out.sequence = read_sequence(binding.map("sequence", kSequenceKeys), out.handler, scopes);
    binding.read("ordering", out.ordering, kOrderings);
    if (out.ordering == Ordering::entity && !binding.has("sequence")) {
        binding.problem("ordering",
                        "is entity, but the binding has no sequence to name the entity: add "
                        "sequence: { entity: /pointer, value: /pointer }, or use ordering: key");
    }
    out.options = read_options(binding, ctx.source);
    binding.read("max_attempts", out.max_attempts, kPositive);
    binding.read("on_key_reuse", out.on_key_reuse, kKeyReusePolicies);
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
    std::map<std::string, int> bound;
    ScopesSeen scopes;
    for (const Item& item : items)
        out.push_back(read_binding(top.context(), item, handlers, bound, scopes));
    return out;
}

}  // namespace exo::config_reading

namespace exo::config_schema {

// Written by hand beside the hand-written reader above: a binding is a list
// element with nested key specs, not a flat table. The defaults come from the
// structs and the Choices the reader uses.
std::vector<DocRow> binding_doc_rows() {
    using namespace config_reading;
    const BindingConfig binding;
    std::vector<DocRow> rows;
    const auto row = [&](std::string_view key, std::string_view default_text,
                         std::string_view meaning) {
        rows.push_back(
            {"bindings[]." + std::string(key), std::string(default_text), std::string(meaning)});
    };
    row("topic", "—", R"md(required, unique)md");
    row("handler", "—",
        R"md(a handler name registered with `app.handler(...)` (a wrong name's error lists the registered ones))md");
    row("key", "—",
        R"md(`{header: NAME}`, `{json: /pointer}` (RFC 6901), `{hash: {...}}` (below) or `coordinates`)md");
    row("key.hash.fields", "—",
        R"md(JSON pointers: the key is the SHA-256 (lowercase hex) of the canonical JSON of `{"<pointer>": value, ...}` (listing order does not matter). A payload lacking one is dead-lettered: `idempotency key: payload has no /x`)md");
    row("key.hash.exclude", "—",
        R"md(JSON pointers: the key is the SHA-256 of the canonical JSON of the whole payload without these values (what changes on redelivery: `[/sentAt, /traceId]`); a pointer absent from a payload is ignored. Not with `fields`; `hash: {}` hashes the whole payload. Lists may not be empty or repeat a pointer. The canonical form: docs/design.md, "Payload-derived keys")md");
    row("key.hash.prefix_topic", HashKeySpec{}.prefix_topic ? "true" : "false",
        R"md(the key is `<topic>/<hex digest>`: the same payload on two topics is two events)md");
    row("sequence", "none",
        R"md(`{entity: /pointer, value: /pointer, mode: latest\|strict, scope: shared\|group, gap_timeout_ms: 60000}`)md");
    row("sequence.scope", name_of(kSequenceScopes, SequenceConfig{}.scope),
        R"md(whose sequences the entities are: `shared`, one per (handler, entity) for every consumer group on the database, as before; `group`, this group's own (stored in `exo_sequences` as handler `<handler>@<group>`), so another group running the same handler on the same database neither reads nor moves them. The `group` scope is refused for a handler name containing `@`, and every sequenced binding of one handler must have the same scope. Switching an existing deployment: docs/operations.md, "Recovering a sequence that jumped")md");
    row("ordering", name_of(kOrderings, binding.ordering),
        R"md(which records of a partition run one after another: `partition` (all, in offset order), `key` (those with the same Kafka record key; records without a key share one lane), `entity` (those with the same `sequence.entity`; needs `sequence`). Different keys run concurrently with `pipeline.concurrency` above 1 (docs/design.md#ordering-and-concurrency; docs/handlers.md, "Ordering and concurrency"))md");
    row("on_key_reuse", name_of(kKeyReusePolicies, binding.on_key_reuse),
        R"md(what to do with a later copy of a key whose payload differs from the copy that was applied (a producer reused an event id). `dead_letter`: the copy is dead-lettered, without a dedup row, with the reason `key reused with a different payload: this copy <fp>, the applied one <fp> at <topic>/<partition>/<offset>`; `log`: a warning, and the copy is finished as a duplicate; `ignore`: a plain duplicate, and no fingerprint is computed or kept (its dedup rows have none: switching to another policy later cannot compare the keys they hold). Two copies in one batch are compared too: the later one with another fingerprint goes to its own claim, which decides. `dead_letter` and `log` count `exo_key_reuse_total{topic}`. A byte-identical redelivery is always a plain duplicate. The fingerprint is the first 128 bits of the SHA-256 of the value; for `key: {hash: ...}` it is the key's own digest (the listed `fields`, or the payload minus `exclude`): the binding says what makes an event itself, so a copy that differs elsewhere (a timestamp) is a redelivery, and a reuse cannot happen)md");
    row("max_attempts", std::to_string(binding.max_attempts),
        R"md(tries before a retryable failure is dead-lettered (a failed `COMMIT` or `SAVEPOINT` around the record counts as a try), and tries to record a dead letter before its partition stalls)md");
    row("dead_letter_topic", "`<topic>.dlq`",
        R"md(where dead letters go (not the topic itself))md");
    row("options", "{}",
        R"md(free `key: value` map handed to the handler's factory, so one handler class can serve several bindings with different settings. Values must be scalars (`${VAR}` expanded); the handler reads them with `exo::HandlerOptions`, and a missing or mistyped value is reported like any config error, with YAML path and line)md");
    return rows;
}

}  // namespace exo::config_schema
