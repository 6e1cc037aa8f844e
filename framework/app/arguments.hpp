#pragma once
// Minimal `--flag value` parsing for the subcommands; unknown flags are errors.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <exo/errors.hpp>

namespace exo {

class Arguments {
public:
    // `allowed`: flag names without "--"; a flag may repeat (values kept in order).
    // `switches`: flags that take no value (e.g. --print), read with has().
    // Throws UsageError for an unknown flag or a flag without a value (a switch
    // written with one, --print=yes, is an unknown flag).
    Arguments(const std::string& command, int argc, char** argv, int first,
              const std::vector<std::string>& allowed,
              const std::vector<std::string>& switches = {});

    bool has(const std::string& flag) const { return values_.contains(flag); }
    std::optional<std::string> get(const std::string& flag) const;
    std::string required(const std::string& flag) const;  // throws UsageError if missing
    std::vector<std::string> all(const std::string& flag) const;
    int get_int(const std::string& flag, int fallback) const;
    double get_double(const std::string& flag, double fallback) const;

private:
    std::string command_;
    std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace exo
