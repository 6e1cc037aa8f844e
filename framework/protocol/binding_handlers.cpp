#include "protocol/binding_handlers.hpp"

#include "protocol/failure_matrix.hpp"

namespace exo {

BindingHandlers::BindingHandlers(const std::vector<BindingConfig>& bindings,
                                 const HandlerRegistry& registry)
    : bindings_(bindings) {
    for (const auto& b : bindings_) {
        auto handler = registry.create(b.handler, b.options);
        if (auto* batch = dynamic_cast<BatchHandler*>(handler.get()))
            batch_handlers_.emplace(b.topic, batch);
        if (const auto* outside = dynamic_cast<const OutsideTransaction*>(handler.get()))
            outside_.emplace(b.topic, outside);
        handlers_.emplace(b.topic, std::move(handler));
    }
}

BatchHandler* BindingHandlers::batch_handler(const BindingConfig& binding) const {
    const auto found = batch_handlers_.find(binding.topic);
    return found == batch_handlers_.end() ? nullptr : found->second;
}

const OutsideTransaction* BindingHandlers::outside(const BindingConfig& binding) const {
    const auto found = outside_.find(binding.topic);
    return found == outside_.end() ? nullptr : found->second;
}

void BindingHandlers::prepare(pqxx::connection& connection) {
    for (const auto& b : bindings_) {
        try {
            handlers_.at(b.topic)->prepare(connection);
        } catch (const std::exception& e) {
            if (classify(e) == Failure::postgres_down) throw;
            throw HandlerPrepareError("handler '" + b.handler + "' (topic " + b.topic +
                                      ") failed in prepare(): " + e.what() +
                                      "; fix the handler's statements or apply its migration");
        } catch (...) {
            throw HandlerPrepareError("handler '" + b.handler + "' (topic " + b.topic +
                                      ") threw a non-std::exception in prepare(); fix the handler");
        }
    }
}

}  // namespace exo
