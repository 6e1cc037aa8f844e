#pragma once
// A record's payload parsed as JSON at most once, on first use, and shared by
// key derivation, the sequence check and the handler.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace exo {

// The dead-letter reason of a payload that is not JSON, the same for every
// reader of it (JsonPayload, canonical_json).
std::string not_json_reason(std::string_view payload);

class JsonPayload {
public:
    explicit JsonPayload(std::string_view text) : text_(text) {}

    // The parsed document. Throws PermanentError if the payload is not JSON:
    // such a record can never succeed and is dead-lettered.
    const nlohmann::json& document();
    // The value at an RFC 6901 pointer, or nullptr if it does not exist.
    // Throws PermanentError if the payload is not JSON.
    const nlohmann::json* at(const std::string& pointer);

private:
    std::string_view text_;
    std::optional<nlohmann::json> parsed_;
};

}  // namespace exo
