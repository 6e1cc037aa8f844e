#include "redis/claim_store.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/embedded_file.hpp"
#include "redis/cluster_slots.hpp"

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

// One group of keys for eval_groups: the keys, the arguments common to its
// calls, and `per_key`: the same number of arguments for each key, in key
// order. Borrowed: the vectors outlive the call.
struct ScriptGroup {
    const std::vector<std::string>& keys;
    const std::vector<std::string>& common;
    const std::vector<std::string>& per_key;
};

// The reply for each key of each group of `script` (named by `name`): per
// group, one EVALSHA per ClaimStore::max_keys_per_call keys, every group's calls
// pipelined in one round trip per node. On a cluster a call holds the keys of
// one slot only (Redis refuses a script whose keys span slots), in batch order;
// on a single server the keys in order. A call is {N, its N keys..., its
// group's common..., the per-key arguments of its keys...}, as lua/*.lua take
// them. A call that failed as a whole (split_per_key) is reported in its
// group's `failed`, after every other call's replies are read. Throws what
// RedisRouter::eval_many throws.
std::vector<PerKeyReplies> eval_groups(RedisRouter& router, const std::string& script,
                                       const char* name, const std::vector<ScriptGroup>& groups) {
    struct Call {
        std::size_t group;
        std::vector<std::size_t> members;  // indices into the group's keys
    };
    std::vector<Call> plan;
    std::vector<int> slots;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        const auto& keys = groups[g].keys;
        auto add_calls = [&](const std::vector<std::size_t>& indices, int slot) {
            for (std::size_t begin = 0; begin < indices.size();
                 begin += ClaimStore::max_keys_per_call) {
                const std::size_t end =
                    std::min(indices.size(), begin + ClaimStore::max_keys_per_call);
                plan.push_back({g, {indices.begin() + begin, indices.begin() + end}});
                slots.push_back(slot);
            }
        };
        if (!router.cluster()) {
            std::vector<std::size_t> all(keys.size());
            for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
            add_calls(all, 0);
        } else {
            std::map<int, std::vector<std::size_t>> by_slot;  // ordered: calls in a stable order
            for (std::size_t i = 0; i < keys.size(); ++i)
                by_slot[key_hash_slot(keys[i])].push_back(i);
            for (const auto& [slot, indices] : by_slot) add_calls(indices, slot);
        }
    }
    std::vector<std::vector<std::string>> calls;
    calls.reserve(plan.size());
    for (const auto& [g, indices] : plan) {
        const auto& group = groups[g];
        const std::size_t stride =
            group.keys.empty() ? 0 : group.per_key.size() / group.keys.size();
        std::vector<std::string> call;
        call.reserve(1 + indices.size() * (1 + stride) + group.common.size());
        call.push_back(std::to_string(indices.size()));
        for (std::size_t i : indices) call.push_back(group.keys[i]);
        call.insert(call.end(), group.common.begin(), group.common.end());
        for (std::size_t i : indices)
            call.insert(call.end(), group.per_key.begin() + i * stride,
                        group.per_key.begin() + (i + 1) * stride);
        calls.push_back(std::move(call));
    }
    auto replies = router.eval_many(script, calls, slots);
    std::vector<PerKeyReplies> out(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g)
        out[g].replies.resize(groups[g].keys.size());  // nil until answered: nothing is known
    for (std::size_t c = 0; c < replies.size(); ++c) {
        const auto& [g, indices] = plan[c];
        const auto& keys = groups[g].keys;
        try {
            auto split =
                split_per_key(name, std::move(replies[c]), indices.size(), keys[indices[0]]);
            for (std::size_t j = 0; j < indices.size(); ++j)
                out[g].replies[indices[j]] = std::move(split[j]);
        } catch (const RedisReplyError& e) {
            if (!out[g].failed) out[g].failed = e;
        }
    }
    return out;
}

// eval_groups for one group.
PerKeyReplies eval_per_key(RedisRouter& router, const std::string& script, const char* name,
                           const std::vector<std::string>& keys,
                           const std::vector<std::string>& common,
                           const std::vector<std::string>& per_key) {
    return std::move(eval_groups(router, script, name, {{keys, common, per_key}}).front());
}

// The Redis key and the token of each claim, in order: extend.lua's and
// release.lua's keys and per-key arguments.
std::pair<std::vector<std::string>, std::vector<std::string>> keys_and_tokens(
    const ClaimStore& store, const std::vector<TokenRequest>& claims) {
    std::pair<std::vector<std::string>, std::vector<std::string>> out;
    out.first.reserve(claims.size());
    out.second.reserve(claims.size());
    for (const auto& c : claims) {
        out.first.push_back(store.redis_key(c.key));
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
    : ClaimStore(std::make_unique<RedisRouter>(redis), std::move(key_prefix), std::move(group),
                 std::move(owner)) {}

ClaimStore::ClaimStore(std::unique_ptr<RedisRouter> own_router, std::string key_prefix,
                       std::string group, std::string owner)
    : ClaimStore(*own_router, std::move(key_prefix), std::move(group), std::move(owner)) {
    own_router_ = std::move(own_router);
}

ClaimStore::ClaimStore(RedisRouter& router, std::string key_prefix, std::string group,
                       std::string owner)
    : router_(router),
      key_prefix_(std::move(key_prefix)),
      group_(std::move(group)),
      owner_(std::move(owner)),
      claim_script_(embedded_script("claim.lua")),
      extend_script_(embedded_script("extend.lua")),
      complete_script_(embedded_script("complete.lua")),
      release_script_(embedded_script("release.lua")) {}

std::string ClaimStore::redis_key(const std::string& idempotency_key) const {
    return claim_key(key_layout(router_), key_prefix_, group_, idempotency_key);
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

namespace {

// Like append_key_part, and '{' and '}' too: in the cluster layout no part may
// open a hash tag before exo's, or close it early.
void append_cluster_key_part(std::string& out, std::string_view part) {
    for (const char c : part) {
        switch (c) {
            case '%':
                out += "%25";
                break;
            case ':':
                out += "%3A";
                break;
            case '{':
                out += "%7B";
                break;
            case '}':
                out += "%7D";
                break;
            default:
                out += c;
        }
    }
}

}  // namespace

int claim_bucket(std::string_view key) {
    return crc16(key) % cluster_buckets;
}

std::string cluster_hash_tag(std::string_view group, int bucket) {
    std::string out;
    out.reserve(group.size() + 6);
    out += '{';
    append_cluster_key_part(out, group);
    out += ':';
    out += static_cast<char>('0' + bucket / 10);
    out += static_cast<char>('0' + bucket % 10);
    out += '}';
    return out;
}

std::string claim_key(KeyLayout layout, std::string_view prefix, std::string_view group,
                      std::string_view key) {
    if (layout == KeyLayout::single) return claim_key(prefix, group, key);
    std::string out;
    out.reserve(prefix.size() + group.size() + key.size() + 8);
    append_cluster_key_part(out, prefix);
    out += ':';
    out += cluster_hash_tag(group, claim_bucket(key));
    out += ':';
    append_cluster_key_part(out, key);
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
    auto batch = eval_per_key(router_, claim_script_, "claim.lua", redis_keys,
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
    return std::move(extend_owned({{owner_, claims}}, lease).front());
}

std::vector<std::vector<FinishStatus>> ClaimStore::extend_owned(
    const std::vector<OwnedClaims>& owned, std::chrono::milliseconds lease) {
    require_positive(lease, "lease");
    const auto lease_ms = std::to_string(lease.count());
    std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> keys(owned.size());
    std::vector<std::vector<std::string>> common(owned.size());
    std::vector<ScriptGroup> groups;
    groups.reserve(owned.size());
    for (std::size_t o = 0; o < owned.size(); ++o) {
        keys[o] = keys_and_tokens(*this, owned[o].claims);
        common[o] = {owned[o].owner, lease_ms};
        groups.push_back({keys[o].first, common[o], keys[o].second});
    }
    auto replies = eval_groups(router_, extend_script_, "extend.lua", groups);
    std::vector<std::vector<FinishStatus>> out;
    out.reserve(owned.size());
    for (std::size_t o = 0; o < owned.size(); ++o)
        out.push_back(parse_finish_replies("extend.lua", std::move(replies[o]).all_or_throw(),
                                           keys[o].first));
    return out;
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
    auto replies = eval_per_key(router_, complete_script_, "complete.lua", redis_keys,
                                {owner_, std::to_string(ttl.count())}, per_key)
                       .all_or_throw();
    return parse_finish_replies("complete.lua", replies, redis_keys);
}

std::vector<FinishStatus> ClaimStore::release(const std::vector<TokenRequest>& claims) {
    const auto [redis_keys, tokens] = keys_and_tokens(*this, claims);
    auto replies =
        eval_per_key(router_, release_script_, "release.lua", redis_keys, {owner_}, tokens)
            .all_or_throw();
    return parse_finish_replies("release.lua", replies, redis_keys);
}

}  // namespace exo
