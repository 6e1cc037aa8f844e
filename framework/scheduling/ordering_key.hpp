#pragma once
// A record's lane key under its binding's ordering (config.hpp: Ordering;
// docs/design.md#ordering-and-concurrency), decided once when the record is polled.
#include <string>

#include <exo/record.hpp>
#include "config/config.hpp"

namespace exo {

// partition: empty (the whole partition is one lane). key: the Kafka record
// key; none shares the empty lane with empty keys. entity: the sequence entity
// in its stored form (the one the sequence check locks), or empty when it
// cannot be read: such a record fails its key or sequence step anyway and is
// dead-lettered in order with the partition's other unreadable records.
// Never throws.
std::string ordering_key(const BindingConfig& binding, const Record& record);

}  // namespace exo
