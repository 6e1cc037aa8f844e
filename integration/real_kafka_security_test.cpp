// Against a real Apache Kafka with security on (scripts/kafka.sh start --security): SASL/SCRAM-
// SHA-512 (the user added when the storage is formatted) and TLS (a CA and a broker certificate
// the script makes with openssl). Each case starts a one-node broker of its own in the mode it
// needs; the harness sets up and checks through the broker's INTERNAL plaintext listener, while
// everything exo runs (the daemon's consumer, its dead-letter and outbox producers, `exo dlq`'s
// reader and producer) connects to the secured client listener with the security settings in
// kafka.properties, the password from the environment (${...} in exo.yaml). Tagged real-kafka:
// scripts/integration.sh runs them in its real-kafka part.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "child_process.hpp"
#include "ledger.hpp"
#include "operations_cli.hpp"
#include "pipeline_harness.hpp"
#include "records.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using exo::testing::KafkaUnderTest;
using exo::testing::payment;
using exo::testing::PipelineHarness;
using exo::testing::wait_until;
using exo::testing::ops::exo_cli;
using exo::testing::ops::json_of;
using exo::testing::ops::outcome;

namespace {

// A one-node broker of the case's own, `scripts/kafka.sh start DIR --security MODE`; stopped,
// and DIR deleted, on destruction. While it lives EXO_KAFKA_BOOTSTRAP names its INTERNAL
// plaintext listener, so a PipelineHarness made meanwhile creates its topics, produces and
// reads the group's progress there, never through the listener under test.
class SecureCluster {
public:
    SecureCluster(const std::string& mode, const std::string& log_prefix)
        : script_(exo::testing::required_env("EXO_KAFKA_SCRIPT")),
          dir_(log_prefix + "-kafka"),
          log_prefix_(log_prefix),
          part_bootstrap_(exo::testing::required_env("EXO_KAFKA_BOOTSTRAP")) {
        try {
            const auto done = run("start", {"--security", mode}, 240s);
            REQUIRE_MESSAGE(done.has_value(), "kafka.sh start still runs after 240 s");
            REQUIRE_MESSAGE(done->exit_code == 0, "kafka.sh start failed: " << done->output);
            read_env();
            REQUIRE_MESSAGE(!env("EXO_KAFKA_INTERNAL_BOOTSTRAP").empty(),
                            dir_ << "/kafka.env names no EXO_KAFKA_INTERNAL_BOOTSTRAP");
            ::setenv("EXO_KAFKA_BOOTSTRAP", env("EXO_KAFKA_INTERNAL_BOOTSTRAP").c_str(), 1);
        } catch (...) {
            stop();
            throw;
        }
    }
    SecureCluster(const SecureCluster&) = delete;
    SecureCluster& operator=(const SecureCluster&) = delete;
    ~SecureCluster() { stop(); }

    // A variable of its kafka.env ("" if it has none): EXO_KAFKA_BOOTSTRAP (the secured
    // listener), EXO_KAFKA_SECURITY_PROTOCOL, EXO_KAFKA_SASL_*, EXO_KAFKA_CA...
    std::string env(const std::string& name) const {
        const auto it = env_.find(name);
        return it == env_.end() ? std::string() : it->second;
    }
    const std::string& dir() const { return dir_; }

private:
    void read_env() {
        std::ifstream in(dir_ + "/kafka.env");
        // kafka.sh writes `export NAME='VALUE'`, VALUE without quotes of its own here.
        for (std::string line; std::getline(in, line);) {
            const std::string prefix = "export ";
            const auto eq = line.find("='");
            if (line.rfind(prefix, 0) != 0 || eq == std::string::npos || line.back() != '\'')
                continue;
            env_[line.substr(prefix.size(), eq - prefix.size())] =
                line.substr(eq + 2, line.size() - eq - 3);
        }
    }
    std::optional<exo::testing::FinishedChild> run(const std::string& command,
                                                   std::vector<std::string> args,
                                                   std::chrono::seconds timeout) const {
        args.insert(args.begin(), {command, dir_});
        return exo::testing::run_to_end(script_, args, {},
                                        log_prefix_ + "-kafka-" + command + ".log", timeout);
    }
    void stop() {
        ::setenv("EXO_KAFKA_BOOTSTRAP", part_bootstrap_.c_str(), 1);
        static_cast<void>(run("stop", {}, 120s));
    }

    const std::string script_, dir_, log_prefix_, part_bootstrap_;
    std::map<std::string, std::string> env_;
};

// The environment variable exo.yaml takes the SASL password from, as a deployment would.
constexpr const char* kPasswordVariable = "EXO_TEST_KAFKA_PASSWORD";

// Writes the harness's config with the cluster's secured listener as kafka.bootstrap_servers
// and `security` (librdkafka properties) added to kafka.properties; returns its path.
std::string write_secure_config(PipelineHarness& h, const SecureCluster& cluster,
                                const std::map<std::string, std::string>& security,
                                const std::string& name) {
    for (const auto& [key, value] : security) h.mutable_config().kafka.properties[key] = value;
    std::string yaml = h.config_yaml();
    const std::string internal = "bootstrap_servers: \"" + h.bootstrap() + "\"";
    const auto at = yaml.find(internal);
    REQUIRE_MESSAGE(at != std::string::npos, "the harness's config names no " << internal);
    yaml.replace(at, internal.size(),
                 "bootstrap_servers: \"" + cluster.env("EXO_KAFKA_BOOTSTRAP") + "\"");
    const std::string path = "/tmp/" + h.schema() + "-" + name + ".yaml";
    std::ofstream(path) << yaml;
    return path;
}

// The settings a user writes for the cluster: its protocol, the SCRAM user and mechanism (the
// password from kPasswordVariable), the CA.
std::map<std::string, std::string> client_settings(const SecureCluster& cluster) {
    std::map<std::string, std::string> out{
        {"security.protocol", cluster.env("EXO_KAFKA_SECURITY_PROTOCOL")}};
    if (!cluster.env("EXO_KAFKA_SASL_USERNAME").empty()) {
        out["sasl.mechanisms"] = cluster.env("EXO_KAFKA_SASL_MECHANISM");
        out["sasl.username"] = cluster.env("EXO_KAFKA_SASL_USERNAME");
        out["sasl.password"] = std::string("${") + kPasswordVariable + "}";
    }
    if (!cluster.env("EXO_KAFKA_CA").empty()) out["ssl.ca.location"] = cluster.env("EXO_KAFKA_CA");
    return out;
}

// An `exo run` child process, the password in its environment; its log beside it.
struct Daemon {
    Daemon(const PipelineHarness& h, const std::string& config, const std::string& name,
           const std::string& password)
        : log_file("/tmp/" + h.schema() + "-" + name + ".log"),
          child(exo::testing::exo_binary(), {"run", "--config", config},
                {{kPasswordVariable, password}}, log_file) {}
    // SIGTERM, then its exit status (fails the case if it still runs after 60 s).
    int terminate() {
        child.signal(SIGTERM);
        return exit_status(60s);
    }
    // Its exit status once it ends by itself; fails the case if it still runs after `limit`.
    int exit_status(std::chrono::seconds limit) {
        const auto status = child.wait(limit);
        REQUIRE_MESSAGE(status.has_value(), "the daemon still runs after "
                                                << limit.count() << " s; its log: " << log());
        return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
    }
    std::string log() const {
        std::ifstream in(log_file);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    const std::string log_file;
    exo::testing::ChildProcess child;  // after log_file, which it writes to
};

std::string wrong_password() {
    return "wrong-" + exo::testing::unique_name("pw");
}

}  // namespace

TEST_CASE(
    "on Apache Kafka with SASL/SCRAM-SHA-512 over TLS, a daemon given the user, its password "
    "and the CA applies every payment exactly once, and its outbox emits, dead letters and "
    "`exo dlq replay` go through the same secured listener" *
    doctest::test_suite("real-kafka")) {
    SecureCluster cluster("scram+tls", "/tmp/" + exo::testing::unique_name("rk_scram_tls"));
    REQUIRE(cluster.env("EXO_KAFKA_SECURITY_PROTOCOL") == "SASL_SSL");
    const std::string password = cluster.env("EXO_KAFKA_SASL_PASSWORD");
    REQUIRE(!password.empty());

    // Exactly once, the ledger's emits published by the outbox relay's producer.
    {
        PipelineHarness h({.name = "rk_sec", .partitions = 3, .kafka = KafkaUnderTest::apache});
        const auto w = exo::generate_payments(
            {.count = 1500, .accounts = 30, .duplicate_ratio = 0.15, .partitions = 3, .seed = 41});
        const auto config = write_secure_config(h, cluster, client_settings(cluster), "secure");
        h.produce(w);
        Daemon d(h, config, "d", password);
        REQUIRE(h.wait_until_consumed(120s));
        wait_until(
            "the outbox relay to publish every row", 120s,
            [&] { return h.count("SELECT count(*) FROM exo_outbox_pending"); },
            [](std::int64_t n) { return n == 0; });
        CHECK(d.terminate() == 0);
        h.check_exactly_once(w);
        // The cluster is the case's own: ledger.applied holds this harness's emits only.
        const std::string applied = exo::handlers::kDefaultAppliedTopic;
        std::int64_t in_kafka = 0;
        for (int p = 0; p < 2; ++p)
            in_kafka += exo::testing::partition_end(h.bootstrap(), applied, p);
        std::set<std::string> ids;
        for (const auto& r :
             exo::testing::read_topic(h.bootstrap(), applied, static_cast<std::size_t>(in_kafka)))
            ids.insert(exo::testing::header(r, "exo-outbox-id"));
        CHECK(ids.size() == w.unique_events);
        CHECK(d.log().find(password) == std::string::npos);
    }

    // A dead letter through the dead-letter producer, read back and replayed by `exo dlq`.
    PipelineHarness h({.name = "rk_sec_dlq", .partitions = 1, .kafka = KafkaUnderTest::apache});
    h.produce({payment("ok-1", "acc-1", 50, 1), payment("big-2", "acc-2", 500, 1)});
    const auto settings = client_settings(cluster);
    const std::string fixed = write_secure_config(h, cluster, settings, "fixed");
    h.mutable_config().bindings[0].options = exo::testing::handler_options({{"max_amount", "100"}});
    const std::string refusing = write_secure_config(h, cluster, settings, "refusing");
    {
        Daemon d(h, refusing, "refusing", password);
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(d.terminate() == 0);
    }
    REQUIRE(outcome(h, "big-2") == "DEAD_LETTERED");
    const auto letters = exo::testing::read_topic(h.bootstrap(), h.topic() + ".dlq", 1);
    REQUIRE(letters.size() == 1);
    CHECK(exo::testing::header(letters[0], "exo-idempotency-key") == "big-2");
    const std::map<std::string, std::string> env{{kPasswordVariable, password}};
    const auto listed = json_of(exo_cli({"dlq", "list", "--config", fixed, "--json"}, env));
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["key"] == "big-2");
    auto replay = exo_cli({"dlq", "replay", "--config", fixed, "--key", "big-2", "--json"}, env);
    CHECK(replay.exit_code == 0);
    CHECK(json_of(replay)[0]["status"] == "replayed");
    {
        Daemon d(h, fixed, "fixed", password);
        REQUIRE(h.wait_until_consumed(90s));
        CHECK(d.terminate() == 0);
    }
    CHECK(h.balances() == std::map<std::string, std::int64_t>{{"acc-1", 50}, {"acc-2", 500}});
    CHECK(outcome(h, "big-2") == "APPLIED");
}

TEST_CASE(
    "on Apache Kafka with SASL/SCRAM-SHA-512, a daemon with a wrong password exits non-zero "
    "within a minute with an error naming the user and the mechanism, never the password, and "
    "`exo dlq list` says the same" *
    doctest::test_suite("real-kafka")) {
    SecureCluster cluster("scram", "/tmp/" + exo::testing::unique_name("rk_scram"));
    REQUIRE(cluster.env("EXO_KAFKA_SECURITY_PROTOCOL") == "SASL_PLAINTEXT");
    PipelineHarness h({.name = "rk_bad_pw", .partitions = 2, .kafka = KafkaUnderTest::apache});
    h.produce({payment("p-1", "acc-1", 10, 0)});
    const auto config = write_secure_config(h, cluster, client_settings(cluster), "wrong");
    const std::string wrong = wrong_password();

    // Before: librdkafka logged the refusal and retried forever; the daemon never ended.
    Daemon d(h, config, "wrong", wrong);
    CHECK(d.exit_status(60s) == 1);
    const auto log = d.log();
    INFO("the daemon's log: " << log);
    CHECK(log.find("SASL authentication error") != std::string::npos);
    CHECK(log.find("sasl.username=exo") != std::string::npos);
    CHECK(log.find("sasl.mechanisms=SCRAM-SHA-512") != std::string::npos);
    CHECK(log.find("check sasl.username and sasl.password") != std::string::npos);
    CHECK(log.find(wrong) == std::string::npos);
    CHECK(log.find(cluster.env("EXO_KAFKA_SASL_PASSWORD")) == std::string::npos);
    CHECK(h.count("SELECT count(*) FROM exo_processed") == 0);

    // Before: the reader timed out ("Local: Timed out"), naming no setting.
    const auto listed = exo_cli({"dlq", "list", "--config", config}, {{kPasswordVariable, wrong}});
    INFO("exo dlq list: " << listed.output);
    CHECK(listed.exit_code == 1);
    CHECK(listed.output.find("sasl.username=exo") != std::string::npos);
    CHECK(listed.output.find(wrong) == std::string::npos);
}

TEST_CASE(
    "on Apache Kafka over TLS, a daemon whose ssl.ca.location names a CA that did not sign the "
    "broker's certificate exits non-zero within a minute with an error naming ssl.ca.location" *
    doctest::test_suite("real-kafka")) {
    SecureCluster cluster("tls", "/tmp/" + exo::testing::unique_name("rk_tls"));
    REQUIRE(cluster.env("EXO_KAFKA_SECURITY_PROTOCOL") == "SSL");
    PipelineHarness h({.name = "rk_bad_ca", .partitions = 2, .kafka = KafkaUnderTest::apache});
    // Another CA, as openssl makes one: valid, but it signed nothing the broker has.
    const std::string other = cluster.dir() + "/other-ca";
    const auto made = exo::testing::run_to_end(
        "/usr/bin/env",
        {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=another CA", "-keyout", other + ".key", "-out", other + ".pem"},
        {}, other + ".log", 60s);
    REQUIRE(made.has_value());
    REQUIRE_MESSAGE(made->exit_code == 0, made->output);
    auto settings = client_settings(cluster);
    settings["ssl.ca.location"] = other + ".pem";
    const auto config = write_secure_config(h, cluster, settings, "other-ca");

    Daemon d(h, config, "other-ca", "");
    CHECK(d.exit_status(60s) == 1);
    const auto log = d.log();
    INFO("the daemon's log: " << log);
    CHECK(log.find("certificate verify failed") != std::string::npos);
    CHECK(log.find("ssl.ca.location=" + other + ".pem") != std::string::npos);
    CHECK(log.find("ssl.ca.location must name the CA") != std::string::npos);
}
