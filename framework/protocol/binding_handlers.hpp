#pragma once
// One worker's handler instances: one per binding, since bindings that share
// a handler class may differ in options. Each prepares its statements on every
// new connection of the worker.
//
// Thread-safety: none; the worker's thread only (handlers are not shared),
// but for before_transaction(), which the worker's outside threads call.
#include <map>
#include <memory>
#include <string>

#include <pqxx/connection>

#include <exo/batch_handler.hpp>
#include <exo/outside_transaction.hpp>
#include "config/config.hpp"
#include "protocol/handler_registry.hpp"

namespace exo {

class BindingHandlers {
public:
    // One handler per binding; `bindings` outlives this. Throws what
    // HandlerRegistry::create throws.
    BindingHandlers(const std::vector<BindingConfig>& bindings, const HandlerRegistry& registry);

    Handler& handler(const BindingConfig& binding) const { return *handlers_.at(binding.topic); }
    // The binding's handler if it is a BatchHandler, else nullptr.
    BatchHandler* batch_handler(const BindingConfig& binding) const;
    // The binding's handler if it has work outside the transaction, else nullptr.
    const OutsideTransaction* outside(const BindingConfig& binding) const;
    bool any_outside() const { return !outside_.empty(); }

    // Every binding's handler prepares its statements on a new connection.
    // Throws what PostgreSQL throws for a lost connection, HandlerPrepareError
    // (protocol/failure_matrix.hpp) for anything else.
    void prepare(pqxx::connection& connection);

private:
    const std::vector<BindingConfig>& bindings_;
    std::map<std::string, std::unique_ptr<Handler>> handlers_;  // by binding topic
    std::map<std::string, BatchHandler*> batch_handlers_;       // those that are, by topic
    std::map<std::string, const OutsideTransaction*> outside_;  // those that are, by topic
};

}  // namespace exo
