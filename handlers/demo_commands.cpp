#include "demo_commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "demo_kafka.hpp"
#include "payments_workload.hpp"

namespace exo::demo {
namespace {

std::string read_bootstrap_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UsageError("cannot read bootstrap file " + path);
    std::string s;
    std::getline(in, s);
    if (s.empty()) throw UsageError("bootstrap file " + path + " is empty");
    return s;
}

std::string bootstrap_from(const CommandFlags& flags) {
    if (auto b = flags.get("bootstrap")) return *b;
    if (auto f = flags.get("bootstrap-file")) return read_bootstrap_file(*f);
    throw UsageError("--bootstrap or --bootstrap-file is required");
}

int demo_produce(CommandContext& ctx) {
    const auto flags = ctx.flags({"bootstrap", "bootstrap-file", "topic", "count", "accounts",
                                  "duplicate-ratio", "seed", "partitions", "expected-file"});
    WorkloadOptions o;
    o.count = flags.get_int("count", 2000);
    o.accounts = flags.get_int("accounts", 20);
    o.duplicate_ratio = flags.get_double("duplicate-ratio", 0.1);
    o.seed = static_cast<std::uint64_t>(flags.get_int("seed", 42));
    o.partitions = flags.get_int("partitions", 4);
    const std::string topic = flags.get("topic").value_or("payments");
    const std::string expected_file = flags.required("expected-file");
    const auto workload = generate_payments(o);

    std::vector<DemoRecord> records;
    for (const auto& m : workload.messages)
        records.push_back({topic, m.partition, m.payment.account_id, m.payment.json()});
    produce_all(bootstrap_from(flags), records);

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

int demo_check(CommandContext& ctx) {
    const auto flags =
        ctx.flags({"config", "bootstrap", "bootstrap-file", "expected-file", "timeout"});
    ctx.load_config(flags.required("config"));
    std::ifstream in(flags.required("expected-file"));
    if (!in) throw UsageError("cannot read --expected-file");
    const auto expected = nlohmann::json::parse(in);
    const std::string topic = expected.at("topic");
    const std::string bootstrap = bootstrap_from(flags);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(flags.get_int("timeout", 120));
    const auto stop = ctx.stop_token();
    const std::string& group = ctx.group_id();

    std::optional<std::int64_t> lag;
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
        lag = consumer_lag(bootstrap, group, topic);
        if (lag == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (lag != 0) {
        std::cout << "FAIL: group '" << group << "' did not consume all of '" << topic
                  << "' in time (lag " << (lag ? std::to_string(*lag) : "unknown") << ")\n";
        return 1;
    }

    auto c = ctx.connect_postgres();
    pqxx::nontransaction tx(*c);
    std::map<std::string, std::int64_t> actual;
    for (const auto& row : tx.exec("SELECT account_id, balance FROM accounts"))
        actual[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    auto entries = tx.exec("SELECT count(*) FROM ledger_entries")[0][0].as<std::int64_t>();
    auto outcomes = tx.exec_params(
        "SELECT outcome, count(*) FROM exo_processed WHERE consumer_group = $1 GROUP BY 1 "
        "ORDER BY 1",
        group);

    std::cout << "\nconsumed: " << expected["produced"] << " records (" << expected["unique_events"]
              << " unique payments, " << expected["duplicates"]
              << " duplicates); committed offsets reached the end\n";
    std::cout << "dedup rows by outcome:";
    for (const auto& row : outcomes) std::cout << " " << row[0].c_str() << "=" << row[1].c_str();
    std::cout << "\nledger_entries: " << entries << " (expected " << expected["unique_events"]
              << ")\n\n";
    std::cout << "account      expected    actual\n";
    bool ok = entries == expected["unique_events"].get<std::int64_t>();
    for (const auto& [account, value] : expected["balances"].items()) {
        auto want = value.get<std::int64_t>();
        auto got = actual.contains(account) ? actual[account] : 0;
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
            "SELECT (SELECT count(*) FROM exo_outbox WHERE topic = 'ledger.applied'),"
            " (SELECT count(*) FROM exo_outbox_pending WHERE topic = 'ledger.applied')")[0];
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
}

}  // namespace

void register_demo_commands(Application& app) {
    app.command("demo-produce",
                "(--bootstrap SERVERS | --bootstrap-file FILE) --expected-file FILE\n"
                "[--topic payments] [--count 2000] [--accounts 20] [--duplicate-ratio 0.1] "
                "[--seed 42] [--partitions 4]",
                "produce sample payments (with duplicates) and write the expected result",
                demo_produce);
    app.command("demo-check",
                "--config FILE (--bootstrap SERVERS | --bootstrap-file FILE) --expected-file FILE\n"
                "[--timeout 120]",
                "wait until the group consumed everything, compare balances", demo_check);
}

}  // namespace exo::demo
