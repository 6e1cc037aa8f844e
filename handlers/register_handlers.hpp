#pragma once
// The handlers this build of `exo` offers. Add yours here.
#include "pipeline/handler_registry.hpp"

namespace exo::handlers {

void register_all(HandlerRegistry& registry);

}  // namespace exo::handlers
