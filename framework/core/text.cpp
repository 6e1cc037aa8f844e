#include "core/text.hpp"

#include <algorithm>

namespace exo {
namespace {

constexpr std::string_view kBinaryPrefix = "binary:";

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629, table 3-7
// of the Unicode standard), or 0 if there is none. NUL counts as ill-formed.
std::size_t sequence_length(std::string_view s, std::size_t i) noexcept {
    auto byte = [&](std::size_t k) -> unsigned {
        return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100;
    };
    auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
    const unsigned b0 = byte(0);
    if (b0 == 0) return 0;
    if (b0 < 0x80) return 1;
    if (in(b0, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
    if (in(b0, 0xE0, 0xEF)) {
        const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;  // E0: no overlong forms
        const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;  // ED: no surrogates
        return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
    }
    if (in(b0, 0xF0, 0xF4)) {
        const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;  // F0: no overlong forms
        const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;  // F4: nothing above U+10FFFF
        return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
    }
    return 0;  // C0, C1, F5..FF and stray continuation bytes
}

}  // namespace

bool is_postgres_text(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = sequence_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string stored_key(std::string_view value) {
    if (is_postgres_text(value) && value.substr(0, kBinaryPrefix.size()) != kBinaryPrefix)
        return std::string(value);
    return std::string(kBinaryPrefix) + hex_bytes(value);
}

std::string hex_bytes(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes.size());
    for (unsigned char c : bytes) {
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
    return out;
}

std::optional<std::string> bytes_of_hex(std::string_view hex) {
    auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    if (hex.size() % 2 != 0) return std::nullopt;
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int high = digit(hex[i]);
        const int low = digit(hex[i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        out += static_cast<char>(high * 16 + low);
    }
    return out;
}

std::string printable_text(std::string_view s, std::size_t max_bytes) {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
    static constexpr std::string_view kCut = "...";
    std::string out;
    out.reserve(std::min(s.size(), max_bytes) + kCut.size());
    for (std::size_t i = 0; i < s.size() && out.size() <= max_bytes;) {
        const std::size_t n = sequence_length(s, i);
        out += n == 0 ? kReplacement : s.substr(i, n);
        i += n == 0 ? 1 : n;
    }
    if (out.size() <= max_bytes) return out;
    // Cut on a character boundary (never inside a multi-byte sequence), then mark it.
    std::size_t cut = max_bytes > kCut.size() ? max_bytes - kCut.size() : 0;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    if (out.size() + kCut.size() <= max_bytes) out += kCut;
    return out;
}

std::string one_line_text(std::string_view s, std::size_t max_bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    const std::string text = printable_text(s, max_bytes);
    std::string out;
    out.reserve(text.size());
    const auto escape = [&](unsigned code) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 0xF];
    };
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        // printable_text left valid UTF-8: a lead byte says the sequence's length.
        const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        unsigned code = c;
        if (n == 2) code = (c & 0x1Fu) << 6 | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
        if (n == 3)
            code = (c & 0x0Fu) << 12 | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6 |
                   (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
        if (code == '\\') {
            out += "\\\\";
        } else if (code == '\n') {
            out += "\\n";
        } else if (code == '\r') {
            out += "\\r";
        } else if (code == '\t') {
            out += "\\t";
        } else if (n <= 3 &&
                   (code < 0x20 || (code >= 0x7F && code <= 0x9F) || code == 0x061C ||
                    code == 0x200E || code == 0x200F || (code >= 0x2028 && code <= 0x202E) ||
                    (code >= 0x2066 && code <= 0x2069))) {
            escape(code);
        } else {
            out.append(text, i, n);
        }
        i += n;
    }
    return out;
}

}  // namespace exo
