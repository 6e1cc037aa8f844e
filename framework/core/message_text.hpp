#pragma once
// How a message for the user quotes what they wrote and lists what they may
// write instead: config problems and handler option errors read alike.
#include <string>
#include <string_view>
#include <vector>

namespace exo {

// 'text'
inline std::string in_quotes(std::string_view s) {
    return "'" + std::string(s) + "'";
}

// The words with `separator` between them: join({"a", "b"}, ", ") is "a, b".
inline std::string join(const std::vector<std::string_view>& words, std::string_view separator) {
    std::string out;
    for (std::string_view w : words) {
        if (!out.empty()) out += separator;
        out += w;
    }
    return out;
}

}  // namespace exo
