#include "app/arguments.hpp"

#include <algorithm>

namespace exo {

CommandFlags::CommandFlags(const std::string& command, int argc, char** argv, int first,
                           const std::vector<std::string>& allowed,
                           const std::vector<std::string>& switches)
    : command_(command) {
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0)
            throw UsageError("exo " + command + ": unexpected argument '" + arg +
                             "' (see exo --help)");
        std::string name = arg.substr(2), value;
        if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
            values_[name].push_back("");
            continue;
        }
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            if (std::find(switches.begin(), switches.end(), name) != switches.end())
                throw UsageError("exo " + command + ": --" + name + " takes no value");
        } else {
            if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
                throw UsageError("exo " + command + ": --" + name + " needs a value");
            value = argv[++i];
        }
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
            throw UsageError("exo " + command + ": unknown option --" + name + " (see exo --help)");
        values_[name].push_back(value);
    }
}

std::optional<std::string> CommandFlags::get(const std::string& flag) const {
    auto it = values_.find(flag);
    if (it == values_.end()) return std::nullopt;
    return it->second.back();
}

std::string CommandFlags::required(const std::string& flag) const {
    auto v = get(flag);
    if (!v) throw UsageError("exo " + command_ + ": --" + flag + " is required (see exo --help)");
    return *v;
}

std::vector<std::string> CommandFlags::all(const std::string& flag) const {
    auto it = values_.find(flag);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

int CommandFlags::get_int(const std::string& flag, int fallback) const {
    auto v = get(flag);
    if (!v) return fallback;
    try {
        std::size_t used = 0;
        int n = std::stoi(*v, &used);
        if (used == v->size()) return n;
    } catch (const std::exception&) {
    }
    throw UsageError("exo " + command_ + ": --" + flag + " must be an integer, not '" + *v + "'");
}

double CommandFlags::get_double(const std::string& flag, double fallback) const {
    auto v = get(flag);
    if (!v) return fallback;
    try {
        std::size_t used = 0;
        double d = std::stod(*v, &used);
        if (used == v->size()) return d;
    } catch (const std::exception&) {
    }
    throw UsageError("exo " + command_ + ": --" + flag + " must be a number, not '" + *v + "'");
}

}  // namespace exo
