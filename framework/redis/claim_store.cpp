#include "redis/claim_store.hpp"

#include <charconv>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/embedded_file.hpp"

namespace exo {

namespace {

std::string embedded_script(std::string_view name) {
    for (const auto& f : embedded::lua::files())
        if (f.name == name) return std::string(f.contents);
    // Only a broken build gets here: cmake embeds every lua/*.lua.
    throw std::logic_error("the Lua script " + std::string(name) +
                           " is not embedded in this binary: rebuild exo");
}

std::string final_state_name(FinalState s) {
    return s == FinalState::completed ? "COMPLETED" : "DEAD_LETTERED";
}

void require_positive(std::chrono::milliseconds d, const char* what) {
    if (d.count() <= 0)
        throw std::invalid_argument(std::string("ClaimStore: ") + what + " must be positive, got " +
                                    std::to_string(d.count()) + " ms");
}

bool is_text(const RedisReply& r) {
    return r.type == RedisReply::Type::string || r.type == RedisReply::Type::status;
}

std::string describe(const RedisReply& r) {
    switch (r.type) {
        case RedisReply::Type::string:
            return "\"" + r.str + "\"";
        case RedisReply::Type::status:
            return "status " + r.str;
        case RedisReply::Type::error:
            return "error " + r.str;
        case RedisReply::Type::integer:
            return "integer " + std::to_string(r.integer);
        case RedisReply::Type::nil:
            return "nil";
        case RedisReply::Type::array: {
            std::string out = "[";
            for (const auto& e : r.elements) out += (out.size() > 1 ? ", " : "") + describe(e);
            return out + "]";
        }
    }
    return "?";
}

// One bad reply throws for the whole batch although the other calls of its
// pipeline did run. Retrying the batch is safe: a re-claim by the same owner is
// re-entrant, a repeated complete answers OK, and a repeated release answers LOST,
// which callers only count.
[[noreturn]] void bad_reply(const char* script, const std::string& redis_key, const RedisReply& r) {
    if (r.type == RedisReply::Type::error)
        throw RedisReplyError(std::string(script) + " on key '" + redis_key +
                              "' answered with an error: " + r.str +
                              "; that call did not complete: put the batch back and retry");
    throw RedisReplyError(std::string(script) + " on key '" + redis_key +
                          "' gave an unexpected reply " + describe(r) +
                          "; is another version of exo using the same keys?");
}

std::optional<std::int64_t> parse_int(const std::string& s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

ClaimResult parse_claim(const RedisReply& r, const std::string& redis_key) {
    if (r.type != RedisReply::Type::array || r.elements.size() != 2 || !is_text(r.elements[0]) ||
        !is_text(r.elements[1]))
        bad_reply("claim.lua", redis_key, r);
    const std::string& status = r.elements[0].str;
    const std::string& value = r.elements[1].str;
    ClaimResult out;
    if (status == "ACQUIRED" || status == "TAKEN_OVER") {
        auto token = parse_int(value);
        if (!token || *token <= 0) bad_reply("claim.lua", redis_key, r);
        out.status = status == "ACQUIRED" ? ClaimStatus::acquired : ClaimStatus::taken_over;
        out.token = FencingToken{*token};
    } else if (status == "DUPLICATE" || status == "DEAD_LETTERED") {
        out.status = status == "DUPLICATE" ? ClaimStatus::duplicate : ClaimStatus::dead_lettered;
        out.stored_result = value;
    } else if (status == "CONFLICT") {
        auto ms = parse_int(value);
        if (!ms || *ms <= 0) bad_reply("claim.lua", redis_key, r);
        out.status = ClaimStatus::conflict;
        out.retry_after = std::chrono::milliseconds{*ms};
    } else {
        bad_reply("claim.lua", redis_key, r);
    }
    return out;
}

FinishStatus parse_finish(const char* script, const RedisReply& r, const std::string& redis_key) {
    if (is_text(r)) {
        if (r.str == "OK") return FinishStatus::ok;
        if (r.str == "LOST") return FinishStatus::lost;
    }
    bad_reply(script, redis_key, r);
}

}  // namespace

ClaimStore::ClaimStore(RedisConnection& redis, std::string key_prefix, std::string group,
                       std::string owner)
    : redis_(redis),
      key_prefix_(std::move(key_prefix)),
      group_(std::move(group)),
      owner_(std::move(owner)),
      claim_script_(embedded_script("claim.lua")),
      extend_script_(embedded_script("extend.lua")),
      complete_script_(embedded_script("complete.lua")),
      release_script_(embedded_script("release.lua")) {}

std::string ClaimStore::redis_key(const std::string& idempotency_key) const {
    return key_prefix_ + ":" + group_ + ":" + idempotency_key;
}

std::vector<ClaimResult> ClaimStore::claim(const std::vector<std::string>& keys,
                                           std::chrono::milliseconds lease) {
    require_positive(lease, "lease");
    std::vector<std::vector<std::string>> calls;
    calls.reserve(keys.size());
    for (const auto& key : keys)
        calls.push_back({"1", redis_key(key), owner_, std::to_string(lease.count())});
    const auto replies = redis_.eval_many(claim_script_, calls);
    std::vector<ClaimResult> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_claim(replies[i], calls[i][1]));
    return out;
}

std::vector<FinishStatus> ClaimStore::extend(const std::vector<TokenRequest>& claims,
                                             std::chrono::milliseconds lease) {
    require_positive(lease, "lease");
    std::vector<std::vector<std::string>> calls;
    calls.reserve(claims.size());
    for (const auto& c : claims)
        calls.push_back({"1", redis_key(c.key), owner_, std::to_string(c.token.value),
                         std::to_string(lease.count())});
    const auto replies = redis_.eval_many(extend_script_, calls);
    std::vector<FinishStatus> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_finish("extend.lua", replies[i], calls[i][1]));
    return out;
}

std::vector<FinishStatus> ClaimStore::complete(const std::vector<CompleteRequest>& requests,
                                               std::chrono::milliseconds ttl) {
    require_positive(ttl, "ttl");
    std::vector<std::vector<std::string>> calls;
    calls.reserve(requests.size());
    for (const auto& r : requests)
        calls.push_back({"1", redis_key(r.key), owner_, std::to_string(r.token.value), r.result,
                         std::to_string(ttl.count()), final_state_name(r.state)});
    const auto replies = redis_.eval_many(complete_script_, calls);
    std::vector<FinishStatus> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_finish("complete.lua", replies[i], calls[i][1]));
    return out;
}

std::vector<FinishStatus> ClaimStore::release(const std::vector<TokenRequest>& claims) {
    std::vector<std::vector<std::string>> calls;
    calls.reserve(claims.size());
    for (const auto& c : claims)
        calls.push_back({"1", redis_key(c.key), owner_, std::to_string(c.token.value)});
    const auto replies = redis_.eval_many(release_script_, calls);
    std::vector<FinishStatus> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_finish("release.lua", replies[i], calls[i][1]));
    return out;
}

}  // namespace exo
