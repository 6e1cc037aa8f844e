#include "ops/claim_view.hpp"

#include <map>

namespace exo {
namespace {

void throw_if_error(const RedisReply& reply, const std::string& doing) {
    if (reply.type == RedisReply::Type::error)
        throw RedisReplyError("Redis refused " + doing + ": " + reply.str);
}

}  // namespace

std::optional<ClaimView> read_claim(RedisRouter& redis, const std::string& redis_key) {
    auto replies = redis.pipeline_for_key(redis_key, {{"HGETALL", redis_key}, {"PTTL", redis_key}});
    throw_if_error(replies[0], "HGETALL " + redis_key);
    throw_if_error(replies[1], "PTTL " + redis_key);
    if (replies[0].elements.empty()) return std::nullopt;
    std::map<std::string, std::string> fields;
    const auto& e = replies[0].elements;
    for (std::size_t i = 0; i + 1 < e.size(); i += 2) fields[e[i].str] = e[i + 1].str;
    ClaimView view;
    view.redis_key = redis_key;
    view.state = fields["state"];
    view.owner = fields["owner"];
    view.token = fields["token"];
    view.result = fields["result"];
    // A settled claim keeps its last lease_until (complete.lua writes no HDEL):
    // a lease means something only while PROCESSING.
    if (auto it = fields.find("lease_until"); it != fields.end() && view.state == "PROCESSING") {
        try {
            view.lease_until_ms = std::stoll(it->second);
        } catch (const std::exception&) {
            // Shown as missing: the state and owner still tell the story.
        }
    }
    view.ttl_ms = replies[1].integer;
    return view;
}

void forget_claim(RedisRouter& redis, const std::string& redis_key) {
    throw_if_error(redis.pipeline_for_key(redis_key, {{"DEL", redis_key}}).front(),
                   "DEL " + redis_key);
}

}  // namespace exo
