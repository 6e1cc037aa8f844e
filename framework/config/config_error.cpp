// ConfigError (config_parser.hpp): every problem of a config file on one line
// each, made printable, as the message the process exits with.
#include "config/config_parser.hpp"

#include "core/text.hpp"

namespace exo {
namespace {

std::string format_problems(const std::string& source, const std::vector<ConfigProblem>& problems) {
    std::string out;
    for (const ConfigProblem& p : problems) {
        if (!out.empty()) out += '\n';
        out += source;
        if (p.line > 0) out += ":" + std::to_string(p.line);
        out += ": ";
        if (!p.path.empty()) out += p.path + ": ";
        out += p.message;
    }
    return out;
}

// Messages quote the input, which may hold any bytes (a "\0" escape, a binary
// file): made valid UTF-8 without NUL, so what() is not cut short and a
// terminal or log shows every problem.
std::vector<ConfigProblem> printable(std::vector<ConfigProblem> problems) {
    for (auto& p : problems) {
        p.path = printable_text(p.path, 1024);
        p.message = printable_text(p.message, 4096);
    }
    return problems;
}

}  // namespace

ConfigError::ConfigError(const std::string& source, std::vector<ConfigProblem> problems)
    : ConfigError(printable_text(source, 4096), printable(std::move(problems)), Printable{}) {}

ConfigError::ConfigError(std::string source, std::vector<ConfigProblem> problems, Printable)
    : UsageError(format_problems(source, problems)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

}  // namespace exo
