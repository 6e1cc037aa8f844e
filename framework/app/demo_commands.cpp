// `exo demo-produce` and `exo demo-check`: the README's demo, against the
// daemon's embedded mock cluster. Produce sample payments with duplicates and
// write the exactly-once expectation; then wait until the group consumed
// everything and compare PostgreSQL with it.
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "kafka/group_progress.hpp"
#include "kafka/producer.hpp"
#include "kafka/rdkafka_handles.hpp"
#include "pg/session.hpp"
#include "workload/payments_workload.hpp"

namespace exo {
namespace {

std::string bootstrap_from(const Arguments& args) {
    if (auto b = args.get("bootstrap")) return *b;
    if (auto f = args.get("bootstrap-file")) return read_bootstrap_file(*f);
    throw UsageError("--bootstrap or --bootstrap-file is required");
}

}  // namespace

int demo_produce_command(int argc, char** argv) {
    Arguments args("demo-produce", argc, argv, 2,
                   {"bootstrap", "bootstrap-file", "topic", "count", "accounts", "duplicate-ratio",
                    "seed", "partitions", "expected-file"});
    WorkloadOptions o;
    o.count = args.get_int("count", 2000);
    o.accounts = args.get_int("accounts", 20);
    o.duplicate_ratio = args.get_double("duplicate-ratio", 0.1);
    o.seed = static_cast<std::uint64_t>(args.get_int("seed", 42));
    o.partitions = args.get_int("partitions", 4);
    std::string topic = args.get("topic").value_or("payments");
    std::string expected_file = args.required("expected-file");
    auto workload = generate_payments(o);

    KafkaProducer producer(ProducerOptions{bootstrap_from(args), {}});
    for (const auto& m : workload.messages)
        producer.produce(
            OutgoingRecord{topic, m.partition, m.payment.account_id, m.payment.json(), {}});
    producer.flush(std::chrono::seconds(60));

    nlohmann::json expected{{"topic", topic},
                            {"produced", workload.messages.size()},
                            {"unique_events", workload.unique_events},
                            {"duplicates", workload.duplicates},
                            {"balances", workload.expected_balances}};
    std::ofstream(expected_file) << expected.dump(2) << "\n";
    std::cout << "produced " << workload.messages.size() << " payments to '" << topic << "' ("
              << workload.unique_events << " unique, " << workload.duplicates << " duplicates, "
              << workload.expected_balances.size() << " accounts)\n";
    return 0;
}

int demo_check_command(int argc, char** argv, const AppSetup& setup, std::stop_token stop) {
    Arguments args("demo-check", argc, argv, 2,
                   {"config", "bootstrap", "bootstrap-file", "expected-file", "timeout"});
    return run_with_config(args.required("config"), setup.handlers, [&](Config& config) {
        std::ifstream in(args.required("expected-file"));
        if (!in) throw UsageError("cannot read --expected-file");
        auto expected = nlohmann::json::parse(in);
        std::string topic = expected.at("topic");
        std::string bootstrap = bootstrap_from(args);
        auto deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(args.get_int("timeout", 120));

        std::optional<std::int64_t> lag;
        while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
            lag = group_lag(bootstrap, config.kafka.group_id, topic);
            if (lag == 0) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        if (lag != 0) {
            std::cout << "FAIL: group '" << config.kafka.group_id << "' did not consume all of '"
                      << topic << "' in time (lag " << (lag ? std::to_string(*lag) : "unknown")
                      << ")\n";
            return 1;
        }

        auto c = open_postgres_session(config.postgres);
        pqxx::nontransaction tx(*c);
        std::map<std::string, std::int64_t> actual;
        for (const auto& row : tx.exec("SELECT account_id, balance FROM accounts"))
            actual[row[0].as<std::string>()] = row[1].as<std::int64_t>();
        auto entries = tx.exec("SELECT count(*) FROM ledger_entries")[0][0].as<std::int64_t>();
        auto outcomes = tx.exec_params(
            "SELECT outcome, count(*) FROM exo_processed WHERE consumer_group = $1 GROUP BY 1 "
            "ORDER BY "
            "1",
            config.kafka.group_id);

        std::cout << "\nconsumed: " << expected["produced"] << " records ("
                  << expected["unique_events"] << " unique payments, " << expected["duplicates"]
                  << " duplicates); committed offsets reached the end\n";
        std::cout << "dedup rows by outcome:";
        for (const auto& row : outcomes)
            std::cout << " " << row[0].c_str() << "=" << row[1].c_str();
        std::cout << "\nledger_entries: " << entries << " (expected " << expected["unique_events"]
                  << ")\n\n";
        std::cout << "account      expected    actual\n";
        bool ok = entries == expected["unique_events"].get<std::int64_t>();
        for (const auto& [account, value] : expected["balances"].items()) {
            auto want = value.get<std::int64_t>();
            auto got = actual.count(account) ? actual[account] : 0;
            ok = ok && want == got;
            std::cout << fmt::format("{:<10} {:>10} {:>9}{}\n", account, want, got,
                                     want == got ? "" : "   <-- MISMATCH");
        }
        ok = ok && actual.size() == expected["balances"].size();
        // The ledger emits one ledger.applied record per applied payment through
        // the outbox: each once, all published by the relay (pending 0).
        const auto unique = expected["unique_events"].get<std::int64_t>();
        std::int64_t emitted = 0, pending = 0;
        while (!stop.stop_requested()) {
            const auto row = tx.exec(
                "SELECT count(*), count(*) FILTER (WHERE sent_at IS NULL) FROM exo_outbox"
                " WHERE topic = 'ledger.applied'")[0];
            emitted = row[0].as<std::int64_t>();
            pending = row[1].as<std::int64_t>();
            if (pending == 0 || std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        std::cout << "\nledger.applied (outbox): " << emitted << " emitted (expected " << unique
                  << "), " << emitted - pending << " published, " << pending << " pending\n";
        ok = ok && emitted == unique && pending == 0;
        std::cout << "\n"
                  << (ok ? "OK: every payment applied exactly once, and announced once on "
                           "ledger.applied"
                         : "FAIL: mismatch")
                  << "\n";
        return ok ? 0 : 1;
    });
}

}  // namespace exo
