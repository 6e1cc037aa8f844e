#include "kafka/record_copy.hpp"

namespace exo {

Record copy_record(const rd_kafka_message_t& m) {
    Record r;
    r.topic = Topic{rd_kafka_topic_name(m.rkt)};
    r.partition = Partition{m.partition};
    r.offset = Offset{m.offset};
    if (m.key != nullptr) r.key.emplace(static_cast<const char*>(m.key), m.key_len);
    if (m.payload != nullptr) r.value.assign(static_cast<const char*>(m.payload), m.len);
    rd_kafka_headers_t* headers = nullptr;  // owned by the message
    if (rd_kafka_message_headers(&m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        r.headers.reserve(rd_kafka_header_cnt(headers));
        const char* name = nullptr;
        const void* value = nullptr;
        std::size_t size = 0;
        for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                                RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
            RecordHeader h{name, std::nullopt};
            if (value != nullptr) h.value.emplace(static_cast<const char*>(value), size);
            r.headers.push_back(std::move(h));
        }
    }
    rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    r.timestamp_ms = rd_kafka_message_timestamp(&m, &type);  // -1 when not available
    return r;
}

}  // namespace exo
