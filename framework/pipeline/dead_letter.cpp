#include "pipeline/dead_letter.hpp"

#include "core/text.hpp"

namespace exo {

OutgoingRecord make_dead_letter(const PendingRecord& pending, const std::string& dlq_topic,
                                const std::string& consumer_group, const std::string& error,
                                const std::string& idempotency_key, DeadLetterValue value) {
    const Record& r = pending.record;
    OutgoingRecord out;
    out.topic = dlq_topic;
    out.key = r.key;
    if (value == DeadLetterValue::original) out.value = r.value;
    out.headers = r.headers;
    out.headers.push_back({"exo-error", printable_text(error, kMaxDeadLetterReasonBytes)});
    out.headers.push_back({"exo-attempts", std::to_string(pending.attempts)});
    out.headers.push_back({"exo-original-topic", r.topic.value});
    out.headers.push_back({"exo-original-partition", std::to_string(r.partition.value)});
    out.headers.push_back({"exo-original-offset", std::to_string(r.offset.value)});
    out.headers.push_back({"exo-consumer-group", consumer_group});
    if (!idempotency_key.empty()) out.headers.push_back({"exo-idempotency-key", idempotency_key});
    if (value == DeadLetterValue::omitted)
        out.headers.push_back({"exo-value-omitted", std::to_string(r.value.size())});
    return out;
}

}  // namespace exo
