#include <exo/errors.hpp>
#include <exo/handler.hpp>
#include <exo/outside_transaction.hpp>
#include "core/payload.hpp"

namespace exo {

const nlohmann::json& HandlerContext::json() {
    try {
        return payload_.document();
    } catch (const PermanentError&) {
        fail_with_current();
    }
}

const std::any& HandlerContext::handed_over() const {
    static const std::any kNothing;
    return handed_over_ != nullptr ? *handed_over_ : kNothing;
}

const nlohmann::json& OutsideContext::json() {
    return payload_.document();  // throws PermanentError: the record's own failure
}

void HandlerContext::fail_with_current() const {
    // In a batch, a bare PermanentError would name no record: exo would run
    // every record alone to find this one.
    if (batch_index_) throw BatchRecordFailed(*batch_index_, std::current_exception());
    throw;
}

}  // namespace exo
