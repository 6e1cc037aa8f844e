#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include "core/payload.hpp"

namespace exo {

const nlohmann::json& HandlerContext::json() {
    try {
        return payload_.document();
    } catch (const PermanentError&) {
        fail_with_current();
    }
}

void HandlerContext::fail_with_current() const {
    // In a batch, a bare PermanentError would name no record: exo would run
    // every record alone to find this one.
    if (batch_index_) throw BatchRecordFailed(*batch_index_, std::current_exception());
    throw;
}

}  // namespace exo
