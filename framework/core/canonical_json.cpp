#include "core/canonical_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include <exo/errors.hpp>
#include "core/payload.hpp"

namespace exo {
namespace {

struct Member;

// A parsed payload that keeps what the canonical form needs and nlohmann::json
// loses: each number's text and every member name (duplicates included).
struct Value {
    enum class Kind : unsigned char { scalar, object, array };
    Kind kind = Kind::scalar;
    bool excluded = false;
    std::string text;             // scalar: its canonical text
    std::vector<Member> members;  // object: sorted by name once complete
    std::vector<Value> elements;  // array
};

struct Member {
    std::string name;  // as parsed: escapes resolved
    Value value;
};

void append_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out.push_back(kHex[c >> 4]);
                    out.push_back(kHex[c & 0xF]);
                } else {
                    out.push_back(ch);
                }
        }
    }
    out.push_back('"');
}

// nlohmann's SAX interface, building the Value tree. Its parser is iterative, so
// only this tree bounds the depth.
class TreeBuilder {
public:
    using json = nlohmann::json;

    Value root;

    bool null() { return scalar("null"); }
    bool boolean(bool b) { return scalar(b ? "true" : "false"); }
    bool number_integer(json::number_integer_t n) { return scalar(std::to_string(n)); }
    bool number_unsigned(json::number_unsigned_t n) { return scalar(std::to_string(n)); }
    bool number_float(json::number_float_t, const json::string_t& written) {
        // The lexer's copy of the number, with '.' replaced by the C locale's
        // decimal point: put '.' back whatever the locale.
        std::string text = written;
        for (char& c : text)
            if ((c < '0' || c > '9') && c != '-' && c != '+' && c != 'e' && c != 'E') c = '.';
        return scalar(std::move(text));
    }
    bool string(json::string_t& s) {
        std::string text;
        text.reserve(s.size() + 2);
        append_string(text, s);
        return scalar(std::move(text));
    }
    bool binary(json::binary_t&) { return false; }  // not produced by JSON text
    bool start_object(std::size_t) { return open(Value::Kind::object); }
    bool key(json::string_t& name) {
        name_ = std::move(name);
        return true;
    }
    bool end_object() {
        auto& members = open_.back()->members;
        std::sort(members.begin(), members.end(),
                  [](const Member& a, const Member& b) { return a.name < b.name; });
        const auto twice =
            std::adjacent_find(members.begin(), members.end(),
                               [](const Member& a, const Member& b) { return a.name == b.name; });
        if (twice != members.end()) {
            std::string name;
            append_string(name, twice->name);
            throw PermanentError("idempotency key: payload has the member " + name +
                                 " twice in one object, so which event it is is ambiguous");
        }
        open_.pop_back();
        return true;
    }
    bool start_array(std::size_t) { return open(Value::Kind::array); }
    bool end_array() {
        open_.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
        return false;
    }

private:
    // The slot of the next value: the root, a member named by key(), or an element.
    // Pointers in open_ stay valid: a container grows only while it is the
    // innermost open one, when no pointer into it is held.
    Value& place() {
        if (open_.empty()) return root;
        Value& parent = *open_.back();
        if (parent.kind == Value::Kind::object) {
            parent.members.push_back({std::move(name_), {}});
            return parent.members.back().value;
        }
        return parent.elements.emplace_back();
    }
    bool scalar(std::string text) {
        place().text = std::move(text);
        return true;
    }
    bool open(Value::Kind kind) {
        if (open_.size() >= kMaxCanonicalDepth)
            throw PermanentError("idempotency key: payload nests deeper than " +
                                 std::to_string(kMaxCanonicalDepth) + " levels");
        Value& v = place();
        v.kind = kind;
        open_.push_back(&v);
        return true;
    }

    std::vector<Value*> open_;
    std::string name_;
};

// RFC 6901 reference tokens of `pointer`, "~1" and "~0" resolved.
std::vector<std::string> tokens_of(const std::string& pointer) {
    if (pointer.empty() || pointer.front() != '/')
        throw PermanentError("idempotency key: invalid JSON pointer '" + pointer + "'");
    std::vector<std::string> tokens;
    std::string token;
    for (std::size_t i = 1; i <= pointer.size(); ++i) {
        if (i == pointer.size() || pointer[i] == '/') {
            tokens.push_back(std::move(token));
            token.clear();
        } else if (pointer[i] == '~') {
            const char next = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
            if (next != '0' && next != '1')
                throw PermanentError("idempotency key: invalid JSON pointer '" + pointer + "'");
            token.push_back(next == '0' ? '~' : '/');
            ++i;
        } else {
            token.push_back(pointer[i]);
        }
    }
    return tokens;
}

// The value at `pointer`, or nullptr if the payload has none there.
Value* resolve(Value& root, const std::string& pointer) {
    Value* at = &root;
    for (const std::string& token : tokens_of(pointer)) {
        if (at->kind == Value::Kind::object) {
            const auto it = std::lower_bound(
                at->members.begin(), at->members.end(), token,
                [](const Member& m, const std::string& name) { return m.name < name; });
            if (it == at->members.end() || it->name != token) return nullptr;
            at = &it->value;
        } else if (at->kind == Value::Kind::array) {
            // "0" or digits without a leading zero; "-" (past the end) is never there.
            const bool index = !token.empty() && token.size() <= 18 &&
                               std::all_of(token.begin(), token.end(),
                                           [](char c) { return c >= '0' && c <= '9'; }) &&
                               (token.size() == 1 || token.front() != '0');
            if (!index) return nullptr;
            const std::size_t i = std::stoull(token);
            if (i >= at->elements.size()) return nullptr;
            at = &at->elements[i];
        } else {
            return nullptr;
        }
    }
    return at;
}

void append_value(std::string& out, const Value& v) {
    switch (v.kind) {
        case Value::Kind::scalar:
            out += v.text;
            return;
        case Value::Kind::object: {
            out.push_back('{');
            bool first = true;
            for (const Member& m : v.members) {
                if (m.value.excluded) continue;
                if (!first) out.push_back(',');
                first = false;
                append_string(out, m.name);
                out.push_back(':');
                append_value(out, m.value);
            }
            out.push_back('}');
            return;
        }
        case Value::Kind::array: {
            out.push_back('[');
            bool first = true;
            for (const Value& e : v.elements) {
                if (e.excluded) continue;
                if (!first) out.push_back(',');
                first = false;
                append_value(out, e);
            }
            out.push_back(']');
            return;
        }
    }
}

}  // namespace

std::string canonical_json(std::string_view payload, const HashKeySpec& spec) {
    TreeBuilder builder;
    if (!nlohmann::json::sax_parse(payload, &builder))
        throw PermanentError(not_json_reason(payload));
    Value& root = builder.root;
    // Every excluded pointer is resolved before any is dropped, so "/items/0" and
    // "/items/1" name the elements the producer sent, not what is left after one.
    for (const std::string& pointer : spec.exclude)
        if (Value* v = resolve(root, pointer)) v->excluded = true;
    std::string out;
    out.reserve(payload.size());
    if (spec.fields.empty()) {
        if (!root.excluded) append_value(out, root);
        return out;
    }
    std::map<std::string, const Value*> selected;  // by pointer text: the sorted order
    for (const std::string& pointer : spec.fields) {
        const Value* v = resolve(root, pointer);
        if (v == nullptr || v->excluded)
            throw PermanentError("idempotency key: payload has no " + pointer);
        selected.emplace(pointer, v);
    }
    out.push_back('{');
    for (const auto& [pointer, v] : selected) {
        if (out.size() > 1) out.push_back(',');
        append_string(out, pointer);
        out.push_back(':');
        append_value(out, *v);
    }
    out.push_back('}');
    return out;
}

}  // namespace exo
