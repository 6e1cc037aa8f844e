#include "scheduling/ordering_key.hpp"

#include <exo/errors.hpp>
#include "core/key_derivation.hpp"
#include "core/payload.hpp"

namespace exo {

std::string ordering_key(const BindingConfig& binding, const Record& record) {
    switch (binding.ordering) {
        case Ordering::partition:
            return {};
        case Ordering::key:
            return record.key.value_or(std::string{});
        case Ordering::entity:
            if (!binding.sequence) return {};  // refused by the config parser
            try {
                JsonPayload payload(record.value);
                return extract_sequence(*binding.sequence, payload).entity;
            } catch (const PermanentError&) {
                return {};
            }
    }
    return {};
}

}  // namespace exo
