#pragma once
// A record's payload parsed as JSON at most once, on first use, and shared by
// key derivation, the sequence check and the handler.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace exo {

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
