#include "calibration.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>

#include "redis/redis_connection.hpp"

namespace exo::bench {

Calibration calibrate(const BenchOptions& options, int iterations) {
    using Clock = std::chrono::steady_clock;
    Calibration c;
    {
        pqxx::connection conn(options.postgres_uri);
        conn.prepare("bench_ping", "SELECT 1");
        pqxx::nontransaction tx(conn);
        for (int i = 0; i < 100; ++i) tx.exec_prepared("bench_ping");
        auto start = Clock::now();
        for (int i = 0; i < iterations; ++i) tx.exec_prepared("bench_ping");
        c.postgres_round_trip_us =
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iterations;
        auto backend = tx.exec("SELECT pg_backend_pid()")[0][0].as<int>();
        std::ifstream stat("/proc/" + std::to_string(backend) + "/stat");
        std::string text;
        std::getline(stat, text);
        // "pid (comm) state ppid ...": the parent of a backend is the postmaster.
        auto close = text.rfind(')');
        if (close != std::string::npos) {
            std::istringstream rest(text.substr(close + 2));
            std::string state;
            rest >> state >> c.servers.postmaster_pid;
        }
    }
    {
        RedisOptions redis_options;
        redis_options.host = options.redis_host;
        redis_options.port = options.redis_port;
        redis_options.command_timeout = std::chrono::milliseconds(2000);
        RedisConnection redis(redis_options);
        for (int i = 0; i < 100; ++i) redis.command({"PING"});
        auto start = Clock::now();
        for (int i = 0; i < iterations; ++i) redis.command({"PING"});
        c.redis_round_trip_us =
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iterations;
        auto info = redis.command({"INFO", "server"}).str;
        auto at = info.find("process_id:");
        if (at != std::string::npos) c.servers.redis_pid = std::atoi(info.c_str() + at + 11);
    }
    c.servers.kafka_pid = options.broker_pid;  // the real broker, when one is given
    return c;
}

}  // namespace exo::bench
