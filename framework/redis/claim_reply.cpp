#include "redis/claim_reply.hpp"

#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

namespace exo {

namespace {

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

// One bad reply throws for the whole batch although the other keys of its call
// and the other calls of its pipeline did run (but for claim.lua's per-key error
// replies, which fail their key alone). Retrying the batch is safe: a re-claim by the same
// owner is re-entrant, a repeated complete answers OK, and a repeated release answers LOST, which
// callers only count.
[[noreturn]] void bad_reply(const char* script, const std::string& redis_key, const RedisReply& r) {
    if (r.type == RedisReply::Type::error)
        throw RedisReplyError(std::string(script) + " on key '" + redis_key +
                              "' answered with an error: " + r.str +
                              "; that call did not complete: put the batch back and retry");
    throw RedisReplyError(std::string(script) + " on key '" + redis_key +
                          "' gave an unexpected reply " + describe(r) +
                          "; is another version of exo using the same keys?");
}

// A call's whole reply may hold a thousand entries: the message shows its start.
std::string describe_briefly(const RedisReply& r) {
    constexpr std::size_t kMax = 300;
    std::string out = describe(r);
    if (out.size() > kMax) out = out.substr(0, kMax) + "...";
    return out;
}

std::optional<std::int64_t> parse_int(const std::string& s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

}  // namespace

std::vector<RedisReply> split_per_key(const char* script, RedisReply r, std::size_t keys,
                                      const std::string& first_key) {
    const std::string call =
        std::string(script) + " on " + std::to_string(keys) + " key(s) from '" + first_key + "'";
    if (r.type == RedisReply::Type::error)
        throw RedisReplyError(call + " answered with an error: " + r.str +
                              "; that call did not complete: put the batch back and retry");
    if (r.type != RedisReply::Type::array || r.elements.size() != keys)
        throw RedisReplyError(call + " gave an unexpected reply " + describe_briefly(r) +
                              " instead of one entry per key; is another version of exo using "
                              "the same Redis?");
    return std::move(r.elements);
}

ClaimResult parse_claim_reply(const RedisReply& r, const std::string& redis_key) {
    if (r.type == RedisReply::Type::error) {
        // claim.lua put this key's error in its place and claimed the others:
        // the key fails alone (its record), the call is not an outage.
        ClaimResult failed;
        failed.status = ClaimStatus::failed;
        failed.error = "claim.lua on key '" + redis_key + "' answered with an error: " + r.str;
        return failed;
    }
    // Three elements: DUPLICATE / DEAD_LETTERED with the stored fingerprint
    // (claim.lua of this exo); two: any answer (a script loaded by an older exo).
    if (r.type != RedisReply::Type::array || r.elements.size() < 2 || r.elements.size() > 3 ||
        !is_text(r.elements[0]) || !is_text(r.elements[1]) ||
        (r.elements.size() == 3 && !is_text(r.elements[2])))
        bad_reply("claim.lua", redis_key, r);
    const std::string& status = r.elements[0].str;
    const std::string& value = r.elements[1].str;
    if (r.elements.size() == 3 && status != "DUPLICATE" && status != "DEAD_LETTERED")
        bad_reply("claim.lua", redis_key, r);
    ClaimResult out;
    if (status == "ACQUIRED" || status == "TAKEN_OVER") {
        auto token = parse_int(value);
        if (!token || *token <= 0) bad_reply("claim.lua", redis_key, r);
        out.status = status == "ACQUIRED" ? ClaimStatus::acquired : ClaimStatus::taken_over;
        out.token = FencingToken{*token};
    } else if (status == "DUPLICATE" || status == "DEAD_LETTERED") {
        out.status = status == "DUPLICATE" ? ClaimStatus::duplicate : ClaimStatus::dead_lettered;
        out.stored_result = value;
        if (r.elements.size() == 3) out.stored_fingerprint = r.elements[2].str;
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

FinishStatus parse_finish_reply(const char* script, const RedisReply& r,
                                const std::string& redis_key) {
    if (is_text(r)) {
        if (r.str == "OK") return FinishStatus::ok;
        if (r.str == "LOST") return FinishStatus::lost;
    }
    bad_reply(script, redis_key, r);
}

}  // namespace exo
