// Fuzzes the lazily parsed payload (core/payload.hpp): document() and at(pointer).
//
// Input: fields separated by 0x1E (fuzz_check.hpp): [0] the payload, [1...] JSON
// pointers to look up in it.
//
// Invariants:
//   - document() and at() throw nothing but PermanentError;
//   - document() succeeds exactly for JSON text, and then returns the same
//     document every time; after a failure it fails again;
//   - at() refuses a pointer that is not RFC 6901 with PermanentError, and finds the
//     value an independent RFC 6901 walk finds (the same object, not a copy); where
//     that walk finds nothing, at() gives nullptr or PermanentError;
//   - at("") is the whole document, and every member and element is found by its
//     escaped pointer.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exo/errors.hpp>
#include "core/payload.hpp"
#include "fuzz_check.hpp"

namespace {

using exo::fuzz::shown;
using Json = nlohmann::json;

// RFC 6901 docs/design.md#redis-claim-record-and-scripts: "" or "/"-separated tokens, '~' only in
// "~0" and "~1".
bool valid_pointer(std::string_view p) {
    if (p.empty()) return true;
    if (p.front() != '/') return false;
    for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1')))
            return false;
    return true;
}

std::string unescape(std::string_view token) {
    std::string out;
    for (std::size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~') {
            out += token[i + 1] == '1' ? '/' : '~';  // valid_pointer: "~0" or "~1"
            ++i;
        } else {
            out += token[i];
        }
    }
    return out;
}

std::string escape(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

// An array index token: "0" or a decimal without leading zeros, below `size`.
std::optional<std::size_t> array_index(std::string_view token, std::size_t size) {
    if (token.empty() || (token.size() > 1 && token[0] == '0')) return std::nullopt;
    std::size_t index = 0;
    for (char c : token) {
        if (c < '0' || c > '9') return std::nullopt;
        if (index > (size + 9) / 10) return std::nullopt;  // already past the end
        index = index * 10 + static_cast<std::size_t>(c - '0');
    }
    if (index >= size) return std::nullopt;
    return index;
}

// The value `pointer` designates in `doc`, walked without json_pointer.
// Precondition: valid_pointer(pointer).
const Json* resolve(const Json& doc, std::string_view pointer) {
    const Json* at = &doc;
    while (!pointer.empty()) {
        pointer.remove_prefix(1);  // the '/'
        const std::size_t end = std::min(pointer.find('/'), pointer.size());
        const std::string token = unescape(pointer.substr(0, end));
        pointer.remove_prefix(end);
        if (at->is_object()) {
            const auto it = at->find(token);
            if (it == at->end()) return nullptr;
            at = &*it;
        } else if (at->is_array()) {
            const std::optional<std::size_t> i = array_index(token, at->size());
            if (!i) return nullptr;
            at = &(*at)[*i];
        } else {
            return nullptr;
        }
    }
    return at;
}

// at(pointer): the value, nullptr, or nullopt for a PermanentError.
std::optional<const Json*> lookup(exo::JsonPayload& payload, const std::string& pointer) {
    try {
        return payload.at(pointer);
    } catch (const exo::PermanentError&) {
        return std::nullopt;
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("JsonPayload::at", "exo::PermanentError");
    }
}

void check_pointer(exo::JsonPayload& payload, const Json& doc, const std::string& pointer) {
    const std::optional<const Json*> found = lookup(payload, pointer);
    if (!valid_pointer(pointer)) {
        FUZZ_CHECK(!found, "at(" + shown(pointer) + ") accepted a pointer RFC 6901 refuses");
        return;
    }
    const Json* expected = resolve(doc, pointer);
    if (expected != nullptr) {
        FUZZ_CHECK(found && *found == expected,
                   "at(" + shown(pointer) + ") did not find the value it designates");
    } else {
        FUZZ_CHECK(!found || *found == nullptr,
                   "at(" + shown(pointer) + ") found a value where there is none");
    }
    FUZZ_CHECK(lookup(payload, pointer) == found, "at(" + shown(pointer) + ") changed its answer");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::string_view> fields =
        exo::fuzz::split_fields(exo::fuzz::as_text(data, size), 16);
    const std::string text(fields[0]);
    exo::JsonPayload payload(text);

    const Json* doc = nullptr;
    try {
        doc = &payload.document();
    } catch (const exo::PermanentError&) {
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("JsonPayload::document", "exo::PermanentError");
    }
    const bool is_json = Json::accept(text);
    FUZZ_CHECK((doc != nullptr) == is_json,
               "document() " + std::string(doc ? "accepted" : "refused") + " " + shown(text) +
                   ", which nlohmann::json::accept " + (is_json ? "accepts" : "refuses"));

    if (doc == nullptr) {
        // A payload that is not JSON stays refused, by every call.
        for (const char* pointer : {"", "/a"}) {
            FUZZ_CHECK(!lookup(payload, pointer), "at() answered for a payload that is not JSON");
        }
        bool threw = false;
        try {
            payload.document();
        } catch (const exo::PermanentError&) {
            threw = true;
        } catch (...) {
            FUZZ_UNEXPECTED_EXCEPTION("JsonPayload::document", "exo::PermanentError");
        }
        FUZZ_CHECK(threw, "document() refused " + shown(text) + " once, then accepted it");
        return 0;
    }

    FUZZ_CHECK(&payload.document() == doc, "document() returned another document the second time");
    const std::optional<const Json*> root = lookup(payload, "");
    FUZZ_CHECK(root && *root == doc, "at(\"\") is not the whole document");

    // Every member and element (of the top level, a bounded number) by its own pointer.
    std::size_t checked = 0;
    for (auto it = doc->begin(); it != doc->end() && checked < 32; ++it, ++checked) {
        if (!doc->is_structured()) break;
        const std::string pointer =
            "/" + (doc->is_object() ? escape(it.key()) : std::to_string(checked));
        const std::optional<const Json*> member = lookup(payload, pointer);
        FUZZ_CHECK(member && *member == &*it,
                   "at(" + shown(pointer) + ") did not find a member that is there");
    }

    for (std::size_t i = 1; i < fields.size(); ++i)
        check_pointer(payload, *doc, std::string(fields[i]));
    FUZZ_CHECK(&payload.document() == doc, "document() changed after at()");
    return 0;
}
