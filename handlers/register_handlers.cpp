#include "handlers/register_handlers.hpp"

#include "handlers/ledger.hpp"

namespace exo::handlers {

void register_all(HandlerRegistry& registry) {
    registry.add("ledger", [] { return std::make_unique<LedgerHandler>(); });
}

}  // namespace exo::handlers
