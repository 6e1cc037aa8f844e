#include "redis/redis_connection.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace exo {

void RedisContextDeleter::operator()(redisContext* c) const noexcept {
    redisFree(c);
}

namespace {

struct ReplyDeleter {
    void operator()(void* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<void, ReplyDeleter>;

timeval to_timeval(std::chrono::milliseconds ms) {
    timeval tv{};
    tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
    tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
    return tv;
}

RedisReply copy_reply(const redisReply& r) {
    RedisReply out;
    switch (r.type) {
        case REDIS_REPLY_STRING:
            out.type = RedisReply::Type::string;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_STATUS:
            out.type = RedisReply::Type::status;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ERROR:
            out.type = RedisReply::Type::error;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_INTEGER:
            out.type = RedisReply::Type::integer;
            out.integer = r.integer;
            break;
        case REDIS_REPLY_NIL:
            out.type = RedisReply::Type::nil;
            break;
        case REDIS_REPLY_ARRAY:
            out.type = RedisReply::Type::array;
            out.elements.reserve(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i)
                out.elements.push_back(copy_reply(*r.element[i]));
            break;
        default:
            // hiredis 0.14 speaks RESP2 only; anything else means a broken stream.
            throw RedisError("Redis sent a reply of unknown type " + std::to_string(r.type));
    }
    return out;
}

bool is_noscript(const RedisReply& r) {
    return r.type == RedisReply::Type::error && r.str.rfind("NOSCRIPT", 0) == 0;
}

}  // namespace

RedisConnection::RedisConnection(RedisOptions options) : options_(std::move(options)) {
    connect();
}

void RedisConnection::reconnect() {
    context_.reset();
    connect();
}

std::string RedisConnection::where() const {
    return options_.host + ":" + std::to_string(options_.port);
}

void RedisConnection::connect() {
    const std::string doing = "connecting to " + where();
    std::unique_ptr<redisContext, RedisContextDeleter> ctx(
        options_.connect_timeout.count() > 0
            ? redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                      to_timeval(options_.connect_timeout))
            : redisConnect(options_.host.c_str(), options_.port));
    if (!ctx) throw RedisError("cannot allocate a hiredis context " + doing);
    if (ctx->err != 0) throw_redis_error(*ctx, doing);
    // A timeout turns a hung server into a RedisIoError instead of a hung worker.
    if (options_.command_timeout.count() > 0 &&
        redisSetTimeout(ctx.get(), to_timeval(options_.command_timeout)) != REDIS_OK)
        throw_redis_error(*ctx, doing);
    // Keepalive finds a peer that vanished (a failover, a cut cable) while idle.
    if (redisEnableKeepAlive(ctx.get()) != REDIS_OK) throw_redis_error(*ctx, doing);
    context_ = std::move(ctx);

    auto check = [&](const RedisReply& r, const std::string& what) {
        if (r.type == RedisReply::Type::error) {
            context_.reset();
            throw RedisReplyError("Redis at " + where() + " refused " + what + ": " + r.str +
                                  "; check the redis settings in the config");
        }
    };
    // The message names the user and the config keys, never the password (Redis'
    // own reply, WRONGPASS or NOAUTH, does not quote it either).
    if (!options_.password.empty() && !options_.username.empty())
        check(command({"AUTH", options_.username, options_.password}),
              "AUTH as ACL user '" + options_.username + "' (redis.username, redis.password)");
    else if (!options_.password.empty())
        check(command({"AUTH", options_.password}), "AUTH (redis.password)");
    if (options_.db != 0) check(command({"SELECT", std::to_string(options_.db)}), "SELECT");
}

void RedisConnection::fail(const std::string& doing) {
    // Drop the context before throwing: after any error hiredis' reply stream is
    // out of step, so every later call must throw until reconnect().
    auto dead = std::move(context_);
    throw_redis_error(*dead, doing);
}

RedisReply RedisConnection::command(const std::vector<std::string>& argv) {
    return std::move(pipeline({argv}).front());
}

std::vector<RedisReply> RedisConnection::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
    std::vector<RedisReply> replies;
    if (commands.empty()) return replies;
    for (const auto& cmd : commands)
        if (cmd.empty()) throw std::invalid_argument("RedisConnection: an empty Redis command");
    const std::string doing = "sending " + std::to_string(commands.size()) + " command(s) (" +
                              commands.front().front() + "...) to " + where();
    if (!context_)
        throw RedisIoError("Redis connection to " + where() +
                           " was closed by an earlier error: reconnect() before " + doing);

    // Append only buffers: the first redisGetReply writes all of them at once.
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& cmd : commands) {
        argv.clear();
        lengths.clear();
        for (const auto& arg : cmd) {
            argv.push_back(arg.data());
            lengths.push_back(arg.size());
        }
        if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                                   lengths.data()) != REDIS_OK)
            fail(doing);
    }
    ++round_trips_;
    commands_sent_ += commands.size();
    replies.reserve(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) {
        void* raw = nullptr;
        if (redisGetReply(context_.get(), &raw) != REDIS_OK) fail(doing);
        ReplyPtr reply(raw);
        if (!reply) {
            context_.reset();
            throw RedisIoError("Redis gave no reply " + doing + "; reconnect() and retry");
        }
        try {
            replies.push_back(copy_reply(*static_cast<const redisReply*>(reply.get())));
        } catch (...) {
            context_.reset();  // the rest of the replies are unread
            throw;
        }
    }
    return replies;
}

const std::string& RedisConnection::load_script(const std::string& script) {
    RedisReply r = command({"SCRIPT", "LOAD", script});
    if (r.type != RedisReply::Type::string)
        throw RedisReplyError("Redis at " + where() + " did not load a Lua script: " +
                              (r.type == RedisReply::Type::error ? r.str : "unexpected reply") +
                              "; the script is broken or Redis refuses scripts");
    script_shas_.emplace_back(script, std::move(r.str));
    return script_shas_.back().second;
}

std::vector<RedisReply> RedisConnection::eval_many(
    const std::string& script, const std::vector<std::vector<std::string>>& calls) {
    if (calls.empty()) return {};
    // The sha is a hash of the text, so it stays valid across reconnects and on
    // another server; only the server's cache can forget it (NOSCRIPT below).
    auto cached = std::find_if(script_shas_.begin(), script_shas_.end(),
                               [&](const auto& entry) { return entry.first == script; });
    const std::string sha = cached != script_shas_.end() ? cached->second : load_script(script);

    auto evalsha = [&](const std::vector<std::string>& call) {
        std::vector<std::string> cmd{"EVALSHA", sha};
        cmd.insert(cmd.end(), call.begin(), call.end());
        return cmd;
    };
    std::vector<std::vector<std::string>> commands;
    commands.reserve(calls.size());
    for (const auto& call : calls) commands.push_back(evalsha(call));
    std::vector<RedisReply> replies = pipeline(commands);

    // NOSCRIPT (SCRIPT FLUSH, a restart, a failover) means that call did not run.
    // Reload and re-run only those, in the same round trip: Redis runs a
    // connection's commands in order, so the EVALSHAs find the script just loaded.
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < replies.size(); ++i)
        if (is_noscript(replies[i])) missing.push_back(i);
    if (missing.empty()) return replies;

    commands.clear();
    commands.push_back({"SCRIPT", "LOAD", script});
    for (std::size_t i : missing) commands.push_back(evalsha(calls[i]));
    std::vector<RedisReply> retried = pipeline(commands);
    const RedisReply& loaded = retried.front();
    if (loaded.type != RedisReply::Type::string || loaded.str != sha)
        throw RedisReplyError(
            "Redis at " + where() + " did not reload a Lua script: " +
            (loaded.type == RedisReply::Type::error ? loaded.str : "unexpected reply") +
            "; the calls that answered NOSCRIPT did not run: retry them");
    for (std::size_t j = 0; j < missing.size(); ++j)
        replies[missing[j]] = std::move(retried[j + 1]);
    return replies;
}

}  // namespace exo
