#pragma once
// Where each Redis call goes: the one place exo knows about Redis Cluster.
// hiredis 0.14 has no cluster support, so this is exo's own, kept small.
//
// A single server is the same code path with one node: every call goes to its
// connection, no slot is looked at. With redis.cluster, the router reads the
// slot map (CLUSTER SLOTS) from the first startup node that answers, sends each
// call to its slot's master (one pipeline per node, so a batch costs one round
// trip per node it touches), and follows the cluster's corrections:
//   MOVED  the slot has a new master (a failover, a finished reshard): the map is
//          read again and the call resent;
//   ASK    the slot is being migrated and this key is already on the target:
//          the call is resent there once, after ASKING, without changing the map;
//   TRYAGAIN  a migration holds some of the call's keys on each side: resent
//          after a short wait, until the slot has moved.
// After a bounded number of rounds the last error reply is returned as the
// call's answer (the caller retries the batch). Scripts are loaded on every
// master it talks to: each node's connection loads them on first use and again
// on NOSCRIPT (RedisConnection::eval_many).
//
// Failover: a master that dies closes its connection (RedisIoError), after which
// connected() is false: the owner drops the router and builds a new one after
// its backoff, which reads the slot map again, by then naming the promoted replica.
//
// Thread-safety: none; one per worker, like a RedisConnection.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/cluster_slots.hpp"
#include "redis/redis_connection.hpp"

namespace exo {

class RedisRouter {
public:
    // A single server through `server`, borrowed: it must outlive the router.
    explicit RedisRouter(RedisConnection& server);
    // A single server through a connection of its own. Throws like RedisConnection's constructor.
    explicit RedisRouter(RedisOptions server);
    // A cluster: `node_options` (credentials, timeouts; host and port are
    // ignored) for every node, and the nodes to ask for the slot map first.
    // Throws RedisIoError when no startup node answers, RedisReplyError when the
    // one that answers is not a cluster node or serves no slot.
    RedisRouter(RedisOptions node_options, std::vector<ClusterNode> startup_nodes);
    RedisRouter(const RedisRouter&) = delete;
    RedisRouter& operator=(const RedisRouter&) = delete;
    ~RedisRouter();

    bool cluster() const { return cluster_; }

    // EVALSHA of `script` for each of `calls` (as RedisConnection::eval_many takes
    // them), calls[i] sent to the master of slots[i] (ignored for a single
    // server). Replies in order; error replies are returned. Every key of a call
    // must hash to its slot: Redis refuses the call otherwise (CROSSSLOT).
    // Throws what RedisConnection::eval_many throws; after a RedisIoError some
    // calls may have run, and connected() is false.
    std::vector<RedisReply> eval_many(const std::string& script,
                                      const std::vector<std::vector<std::string>>& calls,
                                      const std::vector<int>& slots);
    // `commands`, all about `key`, pipelined to its node. Replies in order. Throws
    // like eval_many.
    std::vector<RedisReply> pipeline_for_key(const std::string& key,
                                             const std::vector<std::vector<std::string>>& commands);

    // False once an I/O or protocol failure closed a connection: rebuild the router.
    bool connected() const;
    // Round trips and commands sent so far, over every node (for the benchmark).
    std::uint64_t round_trips() const;
    std::uint64_t commands_sent() const;
    // The slot map read last (cluster only): for tests and `exo inspect`.
    const SlotMap& slot_map() const { return map_; }

private:
    struct Node;
    // Sends units `indices` to `connection`; `asking`: each after ASKING.
    using Send = std::function<std::vector<RedisReply>(
        RedisConnection& connection, const std::vector<std::size_t>& indices, bool asking)>;
    std::vector<RedisReply> route(const std::vector<int>& slots, const Send& send);
    RedisConnection& connection(const ClusterNode& node);
    void read_slot_map();  // throws like the cluster constructor

    bool cluster_ = false;
    RedisOptions node_options_;
    std::vector<ClusterNode> startup_nodes_;
    // Single server: the connection, owned (owned_) or borrowed.
    std::unique_ptr<RedisConnection> owned_;
    RedisConnection* single_ = nullptr;
    // Cluster: one connection per node reached so far.
    std::vector<std::unique_ptr<Node>> nodes_;
    SlotMap map_;
    bool map_stale_ = false;
    bool broken_ = false;  // an I/O failure closed a node's connection
};

}  // namespace exo
