#pragma once
// Copies a librdkafka message into a Record, so the Record outlives the message
// (librdkafka wants its messages destroyed before the consumer closes). Shared by
// the daemon's consumer and the tools' topic reader.
#include <librdkafka/rdkafka.h>

#include <exo/record.hpp>

namespace exo {

Record copy_record(const rd_kafka_message_t& m);

}  // namespace exo
