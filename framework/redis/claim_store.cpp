#include "redis/claim_store.hpp"

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
    std::vector<std::vector<std::string>> calls;
    calls.reserve(keys.size());
    for (const auto& key : keys)
        calls.push_back({"1", redis_key(key), owner_, std::to_string(lease.count())});
    const auto replies = redis_.eval_many(claim_script_, calls);
    std::vector<ClaimResult> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_claim_reply(replies[i], calls[i][1]));
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
        out.push_back(parse_finish_reply("extend.lua", replies[i], calls[i][1]));
    return out;
}

std::vector<FinishStatus> ClaimStore::complete(const std::vector<CompleteRequest>& requests,
                                               std::chrono::milliseconds ttl) {
    require_positive(ttl, "ttl");
    std::vector<std::vector<std::string>> calls;
    calls.reserve(requests.size());
    for (const auto& r : requests)
        calls.push_back({"1", redis_key(r.key), owner_, std::to_string(r.token.value), r.result,
                         std::to_string(ttl.count()), final_state_name(r.outcome)});
    const auto replies = redis_.eval_many(complete_script_, calls);
    std::vector<FinishStatus> out;
    out.reserve(replies.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
        out.push_back(parse_finish_reply("complete.lua", replies[i], calls[i][1]));
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
        out.push_back(parse_finish_reply("release.lua", replies[i], calls[i][1]));
    return out;
}

}  // namespace exo
