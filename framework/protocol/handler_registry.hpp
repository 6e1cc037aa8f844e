#pragma once
// Handler names (as bindings use them in exo.yaml) to factories. Filled once by
// the composition root before the config is parsed, read-only afterwards.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <exo/handler.hpp>

namespace exo {

class HandlerRegistry {
public:
    // Throws UsageError if the name is taken or empty.
    void add(const std::string& name, HandlerFactory factory);
    std::vector<std::string> names() const;
    bool contains(const std::string& name) const { return factories_.contains(name); }
    // The factory's handler for one binding. Throws UsageError for an unknown
    // name or a factory that returns nothing; OptionError passes through.
    std::unique_ptr<Handler> create(const std::string& name, const HandlerOptions& options) const;

private:
    std::map<std::string, HandlerFactory> factories_;
};

}  // namespace exo
