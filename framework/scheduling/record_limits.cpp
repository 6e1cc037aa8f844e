#include "scheduling/record_limits.hpp"

#include <string>
#include <vector>

#include "core/text.hpp"
#include "scheduling/pending_record.hpp"

namespace exo {

static_assert(kRecordOverheadBytes >= sizeof(PendingRecord),
              "kRecordOverheadBytes must cover a PendingRecord held in a queue");

std::size_t memory_bytes(const Record& record) {
    std::size_t bytes = kRecordOverheadBytes + record.value.size();
    if (record.key) bytes += record.key->size();
    for (const auto& h : record.headers)
        bytes += kHeaderOverheadBytes + h.name.size() + (h.value ? h.value->size() : 0);
    return bytes;
}

bool refuse_excess_headers(PendingRecord& pending, std::size_t max_headers) {
    auto& r = pending.record;
    if (r.headers.size() <= max_headers) return false;
    const std::string key =
        r.key ? "Kafka key '" + printable_text(*r.key, 256) + "'" : std::string("no Kafka key");
    pending.dead_letter = DeadLetterVerdict{
        "the record has " + std::to_string(r.headers.size()) +
            " headers, more than pipeline.max_headers_per_record (" + std::to_string(max_headers) +
            "); " + key + ": its headers are left out",
        /*record_key=*/false};
    pending.headers_omitted = r.headers.size();
    std::vector<RecordHeader>().swap(r.headers);  // clear() would keep the capacity
    return true;
}

}  // namespace exo
