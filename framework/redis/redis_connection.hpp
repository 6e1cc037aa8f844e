#pragma once
// One hiredis connection (redisContext owned by a unique_ptr) with pipelining
// and EVALSHA script caching. Lifecycle: connected in the constructor; after a
// RedisIoError the connection is dead and reconnect() must be called.
// Thread-safety: none; one per worker.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/redis_error.hpp"

struct redisContext;

namespace exo {

struct RedisOptions {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string password;  // empty: no AUTH
    int db = 0;
    std::chrono::milliseconds connect_timeout{2000};  // 0: wait as long as the OS does
    std::chrono::milliseconds command_timeout{2000};  // 0: wait for a reply forever
    // Redis 6+ ACL user (AUTH <username> <password>); empty: AUTH <password>, the
    // default user. Ignored without a password.
    std::string username;
};

// A reply copied out of hiredis (so no redisReply outlives its call).
struct RedisReply {
    enum class Type { string, status, integer, nil, array, error } type = Type::nil;
    std::string str;  // string, status, error
    long long integer = 0;
    std::vector<RedisReply> elements;  // array
};

struct RedisContextDeleter {
    void operator()(redisContext* c) const noexcept;
};

class RedisConnection {
public:
    // Throws RedisIoError if Redis cannot be reached, RedisReplyError if AUTH/SELECT fail.
    explicit RedisConnection(RedisOptions options);
    RedisConnection(const RedisConnection&) = delete;
    RedisConnection& operator=(const RedisConnection&) = delete;

    // Every call below throws RedisIoError when Redis cannot be reached, times out or
    // closes the connection (which is then dead until reconnect()), RedisError on a
    // protocol failure, and std::invalid_argument for an empty command.
    // One command, one round trip. Error replies are returned, not thrown.
    RedisReply command(const std::vector<std::string>& argv);
    // Many commands, one round trip; replies in order. Error replies are returned.
    std::vector<RedisReply> pipeline(const std::vector<std::vector<std::string>>& commands);
    // EVALSHA of `script` (loaded with SCRIPT LOAD on first use and again on NOSCRIPT)
    // for each argument list, pipelined. `calls[i]` is {numkeys-prefixed keys..., args...}
    // exactly as EVALSHA takes them after the sha. Replies in order; error replies
    // are returned, but for NOSCRIPT, which is answered by reloading the script.
    std::vector<RedisReply> eval_many(const std::string& script,
                                      const std::vector<std::vector<std::string>>& calls);

    void reconnect();  // throws like the constructor
    // False once an I/O or protocol failure closed the connection (until
    // reconnect()). An error reply leaves it open and in step.
    bool connected() const { return context_ != nullptr; }
    // Round trips made so far (a pipeline counts once): for the benchmark.
    std::uint64_t round_trips() const { return round_trips_; }
    // Commands sent so far (a pipeline counts each of its commands).
    std::uint64_t commands_sent() const { return commands_sent_; }

private:
    void connect();  // throws like the constructor
    // Drops the context (its reply stream is out of step) and throws via throw_redis_error.
    [[noreturn]] void fail(const std::string& doing);
    const std::string& load_script(const std::string& script);  // SCRIPT LOAD, caches the sha
    std::string where() const;                                  // "host:port", for messages

    RedisOptions options_;
    std::unique_ptr<redisContext, RedisContextDeleter> context_;
    std::vector<std::pair<std::string, std::string>> script_shas_;  // script text -> sha
    std::uint64_t round_trips_ = 0;
    std::uint64_t commands_sent_ = 0;
};

}  // namespace exo
