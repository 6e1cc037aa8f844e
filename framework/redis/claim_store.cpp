#include "redis/claim_store.hpp"

#include <algorithm>
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

std::string final_state_name(StoredOutcome s) {
    return s == StoredOutcome::dead_lettered ? "DEAD_LETTERED" : "COMPLETED";
}

void require_positive(std::chrono::milliseconds d, const char* what) {
    if (d.count() <= 0)
        throw std::invalid_argument(std::string("ClaimStore: ") + what + " must be positive, got " +
                                    std::to_string(d.count()) + " ms");
}

// The replies of a batch's calls, one per key. A key of a call that failed as
// a whole has a nil entry there, and `failed` says why (the first such call).
struct PerKeyReplies {
    std::vector<RedisReply> replies;
    std::optional<RedisReplyError> failed;

    // For the scripts whose callers need no more than "nothing is known".
    std::vector<RedisReply> all_or_throw() && {
        if (failed) throw RedisReplyError(*failed);
        return std::move(replies);
    }
};

// The reply for each of `keys` of `script` (named by `name`): one EVALSHA per
// ClaimStore::max_keys_per_call keys, all pipelined in one round trip. A call is
// {N, its N keys..., common..., the per-key arguments of its keys...}, as
// lua/*.lua take them; `per_key` holds the same number of arguments for each key,
// in key order. A call that failed as a whole (split_per_key) is reported in
// `failed`, after every other call's replies are read. Throws what
// RedisConnection::eval_many throws.
PerKeyReplies eval_per_key(RedisConnection& redis, const std::string& script, const char* name,
                           const std::vector<std::string>& keys,
                           const std::vector<std::string>& common,
                           const std::vector<std::string>& per_key) {
    const std::size_t stride = keys.empty() ? 0 : per_key.size() / keys.size();
    std::vector<std::vector<std::string>> calls;
    for (std::size_t begin = 0; begin < keys.size(); begin += ClaimStore::max_keys_per_call) {
        const std::size_t end = std::min(keys.size(), begin + ClaimStore::max_keys_per_call);
        std::vector<std::string> call;
        call.reserve(1 + (end - begin) * (1 + stride) + common.size());
        call.push_back(std::to_string(end - begin));
        call.insert(call.end(), keys.begin() + begin, keys.begin() + end);
        call.insert(call.end(), common.begin(), common.end());
        call.insert(call.end(), per_key.begin() + begin * stride, per_key.begin() + end * stride);
        calls.push_back(std::move(call));
    }
    auto replies = redis.eval_many(script, calls);
    PerKeyReplies out;
    out.replies.reserve(keys.size());
    for (std::size_t c = 0; c < replies.size(); ++c) {
        const std::size_t begin = c * ClaimStore::max_keys_per_call;
        const std::size_t count = std::min(keys.size() - begin, ClaimStore::max_keys_per_call);
        try {
            for (auto& reply : split_per_key(name, std::move(replies[c]), count, keys[begin]))
                out.replies.push_back(std::move(reply));
        } catch (const RedisReplyError& e) {
            if (!out.failed) out.failed = e;
            out.replies.resize(out.replies.size() + count);  // nil: nothing is known
        }
    }
    return out;
}

// The Redis key and the token of each claim, in order: extend.lua's and
// release.lua's keys and per-key arguments.
std::pair<std::vector<std::string>, std::vector<std::string>> keys_and_tokens(
    std::string_view prefix, std::string_view group, const std::vector<TokenRequest>& claims) {
    std::pair<std::vector<std::string>, std::vector<std::string>> out;
    out.first.reserve(claims.size());
    out.second.reserve(claims.size());
    for (const auto& c : claims) {
        out.first.push_back(claim_key(prefix, group, c.key));
        out.second.push_back(std::to_string(c.token.value));
    }
    return out;
}

std::vector<FinishStatus> parse_finish_replies(const char* script,
                                               const std::vector<RedisReply>& replies,
                                               const std::vector<std::string>& redis_keys) {
    std::vector<FinishStatus> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_finish_reply(script, replies[i], redis_keys[i]));
    return out;
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
    return claim_key(key_prefix_, group_, idempotency_key);
}

namespace {

// Appends `part` with '%' and ':' percent-encoded; the runs between them in one go.
// (A plain loop: find_first_of("%:") calls memchr on the set for every character.)
void append_key_part(std::string& out, std::string_view part) {
    std::size_t run = 0;  // start of the characters not yet appended
    for (std::size_t i = 0; i < part.size(); ++i) {
        const char c = part[i];
        if (c != '%' && c != ':') continue;
        out.append(part.data() + run, i - run);
        out += c == '%' ? "%25" : "%3A";
        run = i + 1;
    }
    out.append(part.data() + run, part.size() - run);
}

}  // namespace

std::string claim_key_part(std::string_view part) {
    std::string out;
    out.reserve(part.size());
    append_key_part(out, part);
    return out;
}

std::string claim_key(std::string_view prefix, std::string_view group, std::string_view key) {
    std::string out;
    out.reserve(prefix.size() + group.size() + key.size() + 2);
    append_key_part(out, prefix);
    out += ':';
    append_key_part(out, group);
    out += ':';
    append_key_part(out, key);
    return out;
}

std::vector<ClaimResult> ClaimStore::claim(const std::vector<std::string>& keys,
                                           std::chrono::milliseconds lease) {
    require_positive(lease, "lease");
    std::vector<std::string> redis_keys;
    redis_keys.reserve(keys.size());
    for (const auto& key : keys) redis_keys.push_back(redis_key(key));
    auto batch = eval_per_key(redis_, claim_script_, "claim.lua", redis_keys,
                              {owner_, std::to_string(lease.count())}, {});
    if (batch.failed) {
        // The caller learns no token, so the other calls' claims would stay
        // PROCESSING, ours, for a lease: give them back first. Best effort: a
        // claim left behind only costs its key one lease of CONFLICTs.
        std::vector<TokenRequest> acquired;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (batch.replies[i].type != RedisReply::Type::array) continue;  // nil or an error
            try {
                const auto r = parse_claim_reply(batch.replies[i], redis_keys[i]);
                if (r.status == ClaimStatus::acquired || r.status == ClaimStatus::taken_over)
                    acquired.push_back({keys[i], r.token});
            } catch (const RedisReplyError&) {  // not a claim of ours
            }
        }
        try {
            release(acquired);
        } catch (const RedisError&) {  // they expire after their lease
        }
        throw RedisReplyError(*batch.failed);
    }
    std::vector<ClaimResult> out;
    out.reserve(batch.replies.size());
    for (std::size_t i = 0; i < batch.replies.size(); ++i)
        out.push_back(parse_claim_reply(batch.replies[i], redis_keys[i]));
    return out;
}

std::vector<FinishStatus> ClaimStore::extend(const std::vector<TokenRequest>& claims,
                                             std::chrono::milliseconds lease) {
    require_positive(lease, "lease");
    const auto [redis_keys, tokens] = keys_and_tokens(key_prefix_, group_, claims);
    auto replies = eval_per_key(redis_, extend_script_, "extend.lua", redis_keys,
                                {owner_, std::to_string(lease.count())}, tokens)
                       .all_or_throw();
    return parse_finish_replies("extend.lua", replies, redis_keys);
}

std::vector<FinishStatus> ClaimStore::complete(const std::vector<CompleteRequest>& requests,
                                               std::chrono::milliseconds ttl) {
    require_positive(ttl, "ttl");
    std::vector<std::string> redis_keys;
    std::vector<std::string> per_key;
    redis_keys.reserve(requests.size());
    per_key.reserve(4 * requests.size());
    for (const auto& r : requests) {
        redis_keys.push_back(redis_key(r.key));
        per_key.push_back(std::to_string(r.token.value));
        per_key.push_back(r.result);
        per_key.push_back(final_state_name(r.outcome));
        per_key.push_back(r.fingerprint);
    }
    auto replies = eval_per_key(redis_, complete_script_, "complete.lua", redis_keys,
                                {owner_, std::to_string(ttl.count())}, per_key)
                       .all_or_throw();
    return parse_finish_replies("complete.lua", replies, redis_keys);
}

std::vector<FinishStatus> ClaimStore::release(const std::vector<TokenRequest>& claims) {
    const auto [redis_keys, tokens] = keys_and_tokens(key_prefix_, group_, claims);
    auto replies =
        eval_per_key(redis_, release_script_, "release.lua", redis_keys, {owner_}, tokens)
            .all_or_throw();
    return parse_finish_replies("release.lua", replies, redis_keys);
}

}  // namespace exo
