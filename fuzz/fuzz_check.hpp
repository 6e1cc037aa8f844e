#pragma once
// What the fuzz targets share: cutting the input into fields, and failing loudly.
// A broken invariant or an exception a function may not throw aborts the process,
// which libFuzzer reports as a crash and saves the input that caused it.
#include <cxxabi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace exo::fuzz {

// Fields of a fuzz input are separated by this byte (ASCII "record separator"):
// rare in text, so seed files stay readable and mutations rarely split a field.
inline constexpr char kSeparator = '\x1e';

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// `input` cut at every kSeparator, into at most `max_fields` fields (the last one
// keeps any further separators).
inline std::vector<std::string_view> split_fields(std::string_view input, std::size_t max_fields) {
    std::vector<std::string_view> fields;
    while (fields.size() + 1 < max_fields) {
        const std::size_t end = input.find(kSeparator);
        if (end == std::string_view::npos) break;
        fields.push_back(input.substr(0, end));
        input.remove_prefix(end + 1);
    }
    fields.push_back(input);
    return fields;
}

// Printable, bounded, for failure messages.
inline std::string shown(std::string_view s, std::size_t max = 200) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size() && i < max; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        }
    }
    if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
    return out + "\"";
}

[[noreturn]] inline void fail(const char* condition, const char* file, int line,
                              const std::string& detail) {
    std::fprintf(stderr, "\n==exo-fuzz== INVARIANT BROKEN at %s:%d: %s\n==exo-fuzz== %s\n", file,
                 line, condition, detail.c_str());
    std::fflush(stderr);
    std::abort();
}

// The dynamic type of an exception, demangled ("exo::RetryableError").
inline std::string type_name(const std::type_info& type) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(
        abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
    return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

// Call from a catch (...) block after the allowed types were caught: reports the
// exception that escaped, with its type and message.
[[noreturn]] inline void fail_unexpected_exception(const char* call, const char* allowed,
                                                   const char* file, int line) {
    std::string detail = std::string(call) + " may throw only " + allowed + ", but threw ";
    try {
        throw;
    } catch (const std::exception& e) {
        detail += type_name(typeid(e)) + ": " + shown(e.what(), 400);
    } catch (...) {
        const std::type_info* type = abi::__cxa_current_exception_type();
        detail += type != nullptr ? type_name(*type) : std::string("an unknown type");
    }
    fail("no unexpected exception", file, line, detail);
}

}  // namespace exo::fuzz

// FUZZ_CHECK(condition, detail): abort with `detail` (a std::string expression,
// evaluated only on failure) when `condition` is false.
#define FUZZ_CHECK(condition, detail)                                                  \
    do {                                                                               \
        if (!(condition)) ::exo::fuzz::fail(#condition, __FILE__, __LINE__, (detail)); \
    } while (false)

// In a catch (...) block: an exception other than `allowed` escaped `call`.
#define FUZZ_UNEXPECTED_EXCEPTION(call, allowed) \
    ::exo::fuzz::fail_unexpected_exception(call, allowed, __FILE__, __LINE__)
