#include "config/schema.hpp"

namespace exo::config_schema {

std::string shown_bytes(std::size_t bytes) {
    constexpr std::size_t kMiB = std::size_t{1024} * 1024;
    std::string out = std::to_string(bytes);
    if (bytes >= kMiB && bytes % kMiB == 0) out += " (" + std::to_string(bytes / kMiB) + " MiB)";
    return out;
}

}  // namespace exo::config_schema
