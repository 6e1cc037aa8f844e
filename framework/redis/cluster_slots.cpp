#include "redis/cluster_slots.hpp"

#include <algorithm>
#include <charconv>

#include "redis/redis_error.hpp"

namespace exo {

std::uint16_t crc16(std::string_view bytes) {
    // Bit by bit rather than Redis' 512-byte table: keys are short, and the
    // polynomial (0x1021, initial value 0) is then visible in one line.
    std::uint16_t crc = 0;
    for (unsigned char byte : bytes) {
        crc ^= static_cast<std::uint16_t>(byte << 8);
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

int key_hash_slot(std::string_view key) {
    const auto open = key.find('{');
    if (open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        // "{}" hashes the whole key: an empty tag would put every such key in one slot.
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return crc16(key) & (kClusterSlots - 1);
}

namespace {

[[noreturn]] void bad_slots(const std::string& why) {
    throw RedisReplyError("Redis answered CLUSTER SLOTS with " + why +
                          "; is this a Redis Cluster node (redis.cluster)?");
}

long long slot_number(const RedisReply& r) {
    if (r.type != RedisReply::Type::integer || r.integer < 0 || r.integer >= kClusterSlots)
        bad_slots("a slot that is not a number in 0..16383");
    return r.integer;
}

}  // namespace

SlotMap SlotMap::parse(const RedisReply& reply, const std::string& asked_host) {
    if (reply.type == RedisReply::Type::error) bad_slots("an error: " + reply.str);
    if (reply.type != RedisReply::Type::array) bad_slots("a reply that is not a list");
    SlotMap map;
    for (const RedisReply& range : reply.elements) {
        if (range.type != RedisReply::Type::array || range.elements.size() < 3)
            bad_slots("a slot range without its master");
        const long long first = slot_number(range.elements[0]);
        const long long last = slot_number(range.elements[1]);
        if (last < first) bad_slots("a slot range that ends before it starts");
        const RedisReply& master = range.elements[2];
        if (master.type != RedisReply::Type::array || master.elements.size() < 2 ||
            master.elements[0].type != RedisReply::Type::string ||
            master.elements[1].type != RedisReply::Type::integer)
            bad_slots("a master that is not [host, port, ...]");
        ClusterNode node{master.elements[0].str, static_cast<int>(master.elements[1].integer)};
        if (node.host.empty()) node.host = asked_host;
        auto it = std::find(map.nodes_.begin(), map.nodes_.end(), node);
        const auto index = static_cast<std::int16_t>(it - map.nodes_.begin());
        if (it == map.nodes_.end()) map.nodes_.push_back(std::move(node));
        std::fill(map.owner_.begin() + first, map.owner_.begin() + last + 1, index);
    }
    return map;
}

const ClusterNode* SlotMap::master(int slot) const {
    if (slot < 0 || slot >= kClusterSlots || owner_[static_cast<std::size_t>(slot)] < 0)
        return nullptr;
    return &nodes_[static_cast<std::size_t>(owner_[static_cast<std::size_t>(slot)])];
}

int SlotMap::covered() const {
    return static_cast<int>(
        std::count_if(owner_.begin(), owner_.end(), [](std::int16_t o) { return o >= 0; }));
}

std::optional<Redirect> parse_redirect(const RedisReply& reply) {
    if (reply.type != RedisReply::Type::error) return std::nullopt;
    Redirect out;
    std::string_view rest = reply.str;
    if (rest.rfind("MOVED ", 0) == 0) {
        out.kind = Redirect::Kind::moved;
        rest.remove_prefix(6);
    } else if (rest.rfind("ASK ", 0) == 0) {
        out.kind = Redirect::Kind::ask;
        rest.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    const auto space = rest.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + space, out.slot);
    if (ec != std::errc{} || end != rest.data() + space || out.slot < 0 ||
        out.slot >= kClusterSlots)
        return std::nullopt;
    auto node = parse_host_port(rest.substr(space + 1));
    if (!node) return std::nullopt;
    out.node = std::move(*node);
    return out;
}

}  // namespace exo
