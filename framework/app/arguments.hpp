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
    // `switches`: flags that take no value (--json, --dry-run).
    // Throws UsageError for an unknown flag, a flag without a value, or a switch
    // given one (--json=yes).
    Arguments(const std::string& command, int argc, char** argv, int first,
              const std::vector<std::string>& allowed,
              const std::vector<std::string>& switches = {});

    std::optional<std::string> get(const std::string& flag) const;
    bool has(const std::string& flag) const { return values_.count(flag) != 0; }
    std::string required(const std::string& flag) const;  // throws UsageError if missing
    std::vector<std::string> all(const std::string& flag) const;
    int get_int(const std::string& flag, int fallback) const;
    double get_double(const std::string& flag, double fallback) const;

private:
    std::string command_;
    std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace exo
