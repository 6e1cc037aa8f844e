#pragma once
// The pure half of Redis Cluster routing: which hash slot a key lives in, the
// slot map CLUSTER SLOTS answers, and the MOVED/ASK redirections. No I/O; the
// router (redis_router.hpp) does the talking. Tested in tests/cluster_slots_test.cpp
// against a real server's CLUSTER KEYSLOT answers.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_port.hpp"
#include "redis/redis_connection.hpp"  // RedisReply

namespace exo {

inline constexpr int kClusterSlots = 16384;

// A node of the cluster as exo reaches it.
using ClusterNode = HostPort;

// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
std::uint16_t crc16(std::string_view bytes);

// The hash slot of `key`, as Redis computes it: if the key holds a '{' and, after
// it, a '}' with at least one character between them, only that text (from the
// first '{' to the first '}' after it) is hashed; otherwise the whole key.
int key_hash_slot(std::string_view key);

// Which master serves each slot. Slots no master serves (a cluster being set up,
// or one that lost every copy of a slot) have no node.
class SlotMap {
public:
    SlotMap() { owner_.fill(-1); }  // no slot served
    // Reads a CLUSTER SLOTS reply: [[start, end, [host, port, id...], replicas...], ...].
    // A node whose host is empty is reachable at `asked_host` (Redis answers "" when
    // it does not know its own address: the one we reached it at is right).
    // Throws RedisReplyError, naming what was wrong, for any other shape.
    static SlotMap parse(const RedisReply& cluster_slots, const std::string& asked_host);

    // The master of `slot` (0..16383), or nullptr if none serves it.
    const ClusterNode* master(int slot) const;
    // The distinct masters, in order of their first slot.
    const std::vector<ClusterNode>& masters() const { return nodes_; }
    // Slots some master serves.
    int covered() const;

private:
    std::vector<ClusterNode> nodes_;
    std::array<std::int16_t, kClusterSlots> owner_;  // index into nodes_, -1: none
};

// A MOVED or ASK error reply: "MOVED 3999 127.0.0.1:6381".
struct Redirect {
    enum class Kind { moved, ask } kind = Kind::moved;
    int slot = 0;
    ClusterNode node;
};
// The redirect in `reply`, or nullopt if it is not one (any other reply, or a
// MOVED/ASK whose text cannot be read).
std::optional<Redirect> parse_redirect(const RedisReply& reply);

}  // namespace exo
