#include "ops/audit_queries.hpp"

#include <pqxx/pqxx>

#include <exo/sql_arrays.hpp>

namespace exo {
namespace {

AuditRow row_of(const pqxx::row& r) {
    return {r[0].as<std::string>(),
            r[1].as<std::string>(),
            {r[2].as<std::string>(), r[3].as<int>(), r[4].as<std::int64_t>()},
            r[5].is_null() ? std::string() : r[5].as<std::string>()};
}

}  // namespace

std::vector<AuditRow> find_audit_rows(pqxx::connection& connection, const std::string& group,
                                      const std::vector<std::string>& keys) {
    std::vector<AuditRow> out;
    if (keys.empty()) return out;
    pqxx::read_transaction tx(connection);
    auto result = tx.exec_params(
        "SELECT idempotency_key, outcome, topic, kafka_partition, kafka_offset, fingerprint"
        " FROM exo_processed"
        " WHERE consumer_group = $1 AND idempotency_key = ANY($2::text[])",
        group, text_array(keys));
    out.reserve(result.size());
    for (const auto& r : result) out.push_back(row_of(r));
    return out;
}

void scan_audit_rows(pqxx::connection& connection, const std::string& group,
                     const std::string& topic, int partition, std::int64_t from, std::int64_t to,
                     std::size_t page, const std::function<void(const AuditRow&)>& each) {
    pqxx::read_transaction tx(connection);
    // Quoted by the connection, not bound: DECLARE takes no parameters.
    tx.exec0(
        "DECLARE exo_audit_rows NO SCROLL CURSOR FOR"
        " SELECT idempotency_key, outcome, topic, kafka_partition, kafka_offset, fingerprint"
        " FROM exo_processed"
        " WHERE consumer_group = " +
        tx.quote(group) + " AND topic = " + tx.quote(topic) +
        " AND kafka_partition = " + std::to_string(partition) + " AND kafka_offset BETWEEN " +
        std::to_string(from) + " AND " + std::to_string(to) + " ORDER BY kafka_offset");
    const std::string fetch = "FETCH " + std::to_string(page) + " FROM exo_audit_rows";
    for (;;) {
        auto result = tx.exec(fetch);
        for (const auto& r : result) each(row_of(r));
        if (result.size() < page) break;
    }
    tx.exec0("CLOSE exo_audit_rows");
}

}  // namespace exo
