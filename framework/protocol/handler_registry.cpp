#include "protocol/handler_registry.hpp"

#include <exo/errors.hpp>

namespace exo {

void HandlerRegistry::add(const std::string& name, HandlerFactory factory) {
    if (name.empty()) throw UsageError("a handler needs a non-empty name");
    if (!factories_.emplace(name, std::move(factory)).second)
        throw UsageError("handler '" + name + "' is registered twice");
}

std::vector<std::string> HandlerRegistry::names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : factories_) out.push_back(name);
    return out;
}

std::unique_ptr<Handler> HandlerRegistry::create(const std::string& name,
                                                 const HandlerOptions& options) const {
    auto it = factories_.find(name);
    if (it == factories_.end()) throw UsageError("no handler named '" + name + "' is registered");
    auto handler = it->second(options);
    if (!handler) throw UsageError("the factory of handler '" + name + "' returned no handler");
    return handler;
}

}  // namespace exo
