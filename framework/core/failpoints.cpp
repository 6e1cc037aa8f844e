#include "core/failpoints.hpp"

#include <csignal>
#include <cstdlib>
#include <sstream>

#include <exo/errors.hpp>

namespace exo {

Failpoints Failpoints::parse(const std::string& spec) {
    Failpoints fp;
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos)
            throw UsageError("EXO_FAILPOINTS: '" + item +
                             "' must look like name=kill[@N] (or stop, cancel)");
        std::string name = item.substr(0, eq);
        std::string action = item.substr(eq + 1);
        int pass = 1;
        if (auto at = action.find('@'); at != std::string::npos) {
            std::string count = action.substr(at + 1);
            bool digits = !count.empty() && count.size() < 9 &&
                          count.find_first_not_of("0123456789") == std::string::npos;
            pass = digits ? std::stoi(count) : 0;
            action = action.substr(0, at);
        }
        if (name.empty()) throw UsageError("EXO_FAILPOINTS: '" + item + "' names no failpoint");
        if ((action != "kill" && action != "stop" && action != "cancel") || pass < 1)
            throw UsageError("EXO_FAILPOINTS: '" + item +
                             "': the action is kill[@N], stop[@N] or cancel[@N], N >= 1");
        fp.armed_[name].on_pass = pass;
        fp.armed_[name].action = action == "kill"   ? Action::kill
                                 : action == "stop" ? Action::stop
                                                    : Action::cancel;
    }
    return fp;
}

Failpoints Failpoints::from_environment() {
    const char* spec = std::getenv("EXO_FAILPOINTS");
    return spec ? parse(spec) : Failpoints{};
}

const Failpoints::Armed* Failpoints::due(const char* name, bool cancel) {
    if (armed_.empty()) return nullptr;
    auto it = armed_.find(name);
    if (it == armed_.end() || (it->second.action == Action::cancel) != cancel) return nullptr;
    return it->second.passes.fetch_add(1) + 1 == it->second.on_pass ? &it->second : nullptr;
}

void Failpoints::hit(const char* name) {
    if (const Armed* armed = due(name, /*cancel=*/false))
        std::raise(armed->action == Action::kill ? SIGKILL : SIGSTOP);
}

bool Failpoints::cancels(const char* name) {
    return due(name, /*cancel=*/true) != nullptr;
}

}  // namespace exo
