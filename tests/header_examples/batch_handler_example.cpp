// The batch handler exo/batch_handler.hpp describes, with the array parameters
// of exo/sql_arrays.hpp; compiled with the unit tests.
#include <cstdint>
#include <exo/exo.hpp>
#include <exo/sql_arrays.hpp>
#include <map>
#include <string>
#include <vector>

namespace header_examples {

class CounterHandler final : public exo::BatchHandler {
public:
    void prepare(pqxx::connection_base& c) override {
        c.prepare("count",
                  "INSERT INTO counts (id, n) SELECT * FROM unnest($1::text[], $2::bigint[])"
                  " ON CONFLICT (id) DO UPDATE SET n = counts.n + EXCLUDED.n");
    }
    void handle_batch(exo::BatchContext& ctx) override {
        std::map<std::string, std::int64_t> by_id;  // an upsert may not touch a row twice
        const auto records = ctx.records();
        for (std::size_t i = 0; i < records.size(); ++i) {
            const auto& doc = records[i].json();  // not JSON: record i alone is dead-lettered
            if (!doc.contains("id")) ctx.fail(i, exo::PermanentError("no id"));  // record i alone
            by_id[doc["id"].get<std::string>()] += 1;
            records[i].set_result("counted");  // optional, per record
        }
        std::vector<std::string> ids;
        std::vector<std::int64_t> ns;
        for (const auto& [id, n] : by_id) {  // sorted: two batches lock rows in one order
            ids.push_back(id);
            ns.push_back(n);
        }
        ctx.transaction().exec_prepared("count", exo::text_array(ids), exo::int_array(ns));
    }
};

// What Application::handler<H>() accepts, checked at compile time.
void register_counter(exo::Application& app) {
    app.handler<CounterHandler>("counter");
}

}  // namespace header_examples
