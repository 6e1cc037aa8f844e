#include "core/payload.hpp"

#include <exo/errors.hpp>

namespace exo {

std::string not_json_reason(std::string_view payload) {
    return "payload is not valid JSON (" + std::to_string(payload.size()) + " bytes)";
}

const nlohmann::json& JsonPayload::document() {
    if (!parsed_) {
        auto doc = nlohmann::json::parse(text_, nullptr, /*allow_exceptions=*/false);
        if (doc.is_discarded()) throw PermanentError(not_json_reason(text_));
        parsed_ = std::move(doc);
    }
    return *parsed_;
}

const nlohmann::json* JsonPayload::at(const std::string& pointer) {
    const auto& doc = document();
    nlohmann::json::json_pointer ptr;
    try {
        ptr = nlohmann::json::json_pointer(pointer);
    } catch (const nlohmann::json::exception& e) {
        throw PermanentError("invalid JSON pointer '" + pointer + "': " + e.what());
    }
    try {
        if (!doc.contains(ptr)) return nullptr;
        return &doc.at(ptr);
    } catch (const nlohmann::json::exception& e) {
        // e.g. an array index too large to represent: this payload has no such value.
        throw PermanentError("JSON pointer '" + pointer + "' cannot be resolved: " + e.what());
    }
}

}  // namespace exo
