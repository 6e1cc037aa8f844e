#pragma once
// A binding's `options:` map from exo.yaml, handed to the handler's factory, so
// one handler class can serve several bindings with different settings:
//
//   bindings:
//     - topic: payments-eu
//       handler: ledger
//       options: { currency: EUR, max_amount: 100000, audit: true, hold_ms: 250 }
//
// Values are YAML scalars, kept as text with the line they were written on; the
// typed accessors convert on request and report a bad or missing value the way
// every config error is reported: "<file>:<line>: bindings[0].options.max_amount:
// expected a whole number, got 'lots'". Reading an option the YAML does not have
// (without a fallback) is such an error too.
//
// Thread-safety: immutable after construction; any thread may read it.
// Errors: every accessor without a fallback throws OptionError when the key is
// missing; all throw OptionError for a value of the wrong type.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <exo/errors.hpp>

namespace exo {

// A bad or missing handler option: the configuration must be fixed (exit code 2).
class OptionError : public UsageError {
public:
    using UsageError::UsageError;
};

class HandlerOptions {
public:
    struct Value {
        std::string text;  // the scalar as written (after ${ENV} expansion)
        int line = 0;      // 1-based line in the config file; 0 if unknown
    };

    // No options (a binding without `options:`).
    HandlerOptions() = default;
    // `source` labels errors (the config file), `path` is the map's YAML path
    // (e.g. "bindings[0].options"), `line` where the map is written (the
    // `options:` key, or the binding when it has none): a missing option is
    // reported there. 0 if unknown.
    HandlerOptions(std::string source, std::string path, std::map<std::string, Value> values,
                   int line = 0);

    bool has(std::string_view key) const;
    std::vector<std::string> keys() const;  // in name order
    bool empty() const { return values_.empty(); }

    std::string string(std::string_view key) const;
    std::string string(std::string_view key, std::string fallback) const;
    // A whole number (decimal, optional sign) that fits std::int64_t.
    std::int64_t integer(std::string_view key) const;
    std::int64_t integer(std::string_view key, std::int64_t fallback) const;
    // A finite decimal number.
    double number(std::string_view key) const;
    double number(std::string_view key, double fallback) const;
    // true/false (also yes/no, on/off, as YAML 1.1 writes them), in any case.
    bool boolean(std::string_view key) const;
    bool boolean(std::string_view key, bool fallback) const;
    // Whole milliseconds, like every *_ms key of exo.yaml (not negative).
    std::chrono::milliseconds milliseconds(std::string_view key) const;
    std::chrono::milliseconds milliseconds(std::string_view key,
                                           std::chrono::milliseconds fallback) const;

    // Throws OptionError "<source>:<line>: <path>.<key>: <message>", the config
    // errors' format, at the key's line (the map's when the key is absent). For a
    // handler's own checks too: o.fail("max_amount", "must be positive, got -5").
    [[noreturn]] void fail(std::string_view key, const std::string& message) const;

private:
    const Value& required(std::string_view key) const;

    std::string source_;
    std::string path_;
    int line_ = 0;
    std::map<std::string, Value, std::less<>> values_;
};

}  // namespace exo
