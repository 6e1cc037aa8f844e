#include "redis/redis_router.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

#include "redis/redis_error.hpp"

namespace exo {

struct RedisRouter::Node {
    ClusterNode address;
    std::unique_ptr<RedisConnection> connection;
};

namespace {

// Rounds of redirections one call may take before its last error is its answer:
// a MOVED, then an ASK, then a few TRYAGAINs while a slot finishes moving.
constexpr int kMaxRounds = 8;

bool is_tryagain(const RedisReply& r) {
    return r.type == RedisReply::Type::error && r.str.rfind("TRYAGAIN", 0) == 0;
}

// The commands of `indices`, each after ASKING when `asking`, pipelined; the
// replies of the commands only.
std::vector<RedisReply> send_commands(RedisConnection& connection,
                                      const std::vector<std::vector<std::string>>& commands,
                                      const std::vector<std::size_t>& indices, bool asking) {
    std::vector<std::vector<std::string>> batch;
    batch.reserve(indices.size() * (asking ? 2 : 1));
    for (std::size_t i : indices) {
        if (asking) batch.push_back({"ASKING"});
        batch.push_back(commands[i]);
    }
    auto replies = connection.pipeline(batch);
    if (!asking) return replies;
    std::vector<RedisReply> out;
    out.reserve(indices.size());
    for (std::size_t i = 1; i < replies.size(); i += 2) out.push_back(std::move(replies[i]));
    return out;
}

}  // namespace

RedisRouter::RedisRouter(RedisConnection& server) : single_(&server) {}

RedisRouter::RedisRouter(RedisOptions server)
    : owned_(std::make_unique<RedisConnection>(std::move(server))), single_(owned_.get()) {}

RedisRouter::RedisRouter(RedisOptions node_options, std::vector<ClusterNode> startup_nodes)
    : cluster_(true),
      node_options_(std::move(node_options)),
      startup_nodes_(std::move(startup_nodes)) {
    if (startup_nodes_.empty())
        throw RedisReplyError("redis.cluster lists no node: give at least one host:port");
    read_slot_map();
}

RedisRouter::~RedisRouter() = default;

bool RedisRouter::connected() const {
    return cluster_ ? !broken_ : single_->connected();
}

std::uint64_t RedisRouter::round_trips() const {
    if (!cluster_) return single_->round_trips();
    std::uint64_t n = 0;
    for (const auto& node : nodes_) n += node->connection->round_trips();
    return n;
}

std::uint64_t RedisRouter::commands_sent() const {
    if (!cluster_) return single_->commands_sent();
    std::uint64_t n = 0;
    for (const auto& node : nodes_) n += node->connection->commands_sent();
    return n;
}

RedisConnection& RedisRouter::connection(const ClusterNode& address) {
    for (auto& node : nodes_)
        if (node->address == address) return *node->connection;
    RedisOptions options = node_options_;
    options.host = address.host;
    options.port = address.port;
    options.db = 0;  // Redis Cluster has database 0 only (the config refuses db with cluster)
    auto node = std::make_unique<Node>();
    node->address = address;
    try {
        node->connection = std::make_unique<RedisConnection>(std::move(options));
    } catch (const RedisIoError&) {
        broken_ = true;
        map_stale_ = true;  // a master that cannot be reached may have been replaced
        throw;
    }
    nodes_.push_back(std::move(node));
    return *nodes_.back()->connection;
}

void RedisRouter::read_slot_map() {
    // The masters known from the last map first (they are the cluster as it
    // is now), then the startup nodes (any of which may be gone).
    std::vector<ClusterNode> candidates = map_.masters();
    for (const auto& node : startup_nodes_)
        if (std::find(candidates.begin(), candidates.end(), node) == candidates.end())
            candidates.push_back(node);
    std::optional<RedisError> last;
    for (const auto& node : candidates) {
        try {
            RedisConnection asked([&] {
                RedisOptions o = node_options_;
                o.host = node.host;
                o.port = node.port;
                o.db = 0;
                return o;
            }());
            SlotMap map = SlotMap::parse(asked.command({"CLUSTER", "SLOTS"}), node.host);
            if (map.covered() == 0)
                throw RedisReplyError("Redis Cluster node " + node.name() +
                                      " serves no slot: is the cluster created "
                                      "(redis-cli --cluster create)?");
            map_ = std::move(map);
            map_stale_ = false;
            return;
        } catch (const RedisReplyError&) {
            throw;  // it answered, and not as a cluster node: asking others will not help
        } catch (const RedisError& e) {
            last = e;
        }
    }
    throw RedisIoError(
        "no Redis Cluster node answered CLUSTER SLOTS (" + std::to_string(candidates.size()) +
        " tried, redis.cluster); last: " + (last ? last->what() : std::string("none")));
}

std::vector<RedisReply> RedisRouter::route(const std::vector<int>& slots, const Send& send) {
    std::vector<std::size_t> all(slots.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (!cluster_) return send(*single_, all, false);

    std::vector<RedisReply> out(slots.size());
    struct Pending {
        std::size_t index;
        std::optional<ClusterNode> ask;  // set: resend there after ASKING
    };
    std::vector<Pending> pending;
    for (std::size_t i : all) pending.push_back({i, std::nullopt});
    for (int round = 0; !pending.empty(); ++round) {
        if (map_stale_) read_slot_map();
        // One group per (node, asking): a node's calls go in one pipeline.
        struct Group {
            ClusterNode node;
            bool asking;
            std::vector<std::size_t> indices;
        };
        std::vector<Group> groups;
        for (const auto& p : pending) {
            const ClusterNode* node = p.ask ? &*p.ask : map_.master(slots[p.index]);
            if (node == nullptr) {
                out[p.index] = {RedisReply::Type::error,
                                "CLUSTERDOWN Hash slot " + std::to_string(slots[p.index]) +
                                    " is served by no master in exo's slot map",
                                0,
                                {}};
                map_stale_ = true;
                continue;
            }
            const bool asking = p.ask.has_value();
            auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
                return x.node == *node && x.asking == asking;
            });
            if (g == groups.end()) g = groups.insert(groups.end(), Group{*node, asking, {}});
            g->indices.push_back(p.index);
        }
        std::vector<Pending> next;
        bool wait = false;
        for (const auto& group : groups) {
            RedisConnection& conn = connection(group.node);
            std::vector<RedisReply> replies;
            try {
                replies = send(conn, group.indices, group.asking);
            } catch (const RedisError&) {
                // The connection is closed now; after a failover the map is wrong too.
                if (!conn.connected()) broken_ = true;
                map_stale_ = true;
                throw;
            }
            for (std::size_t j = 0; j < replies.size(); ++j) {
                const std::size_t i = group.indices[j];
                const bool last_round = round + 1 >= kMaxRounds;
                if (auto redirect = parse_redirect(replies[j]); redirect && !last_round) {
                    if (redirect->kind == Redirect::Kind::moved) {
                        map_stale_ = true;
                        next.push_back({i, std::nullopt});
                    } else {
                        next.push_back({i, redirect->node});
                    }
                } else if (is_tryagain(replies[j]) && !last_round) {
                    wait = true;
                    next.push_back({i, std::nullopt});
                } else {
                    out[i] = std::move(replies[j]);
                }
            }
        }
        // TRYAGAIN: a slot is half moved; migrations move keys in batches, so
        // a few short waits see it done. Bounded by kMaxRounds (under 1 s).
        if (wait) std::this_thread::sleep_for(std::chrono::milliseconds(10 << std::min(round, 4)));
        pending = std::move(next);
    }
    return out;
}

std::vector<RedisReply> RedisRouter::eval_many(const std::string& script,
                                               const std::vector<std::vector<std::string>>& calls,
                                               const std::vector<int>& slots) {
    if (slots.size() != calls.size())
        throw std::invalid_argument("RedisRouter::eval_many: one slot per call");
    return route(slots,
                 [&](RedisConnection& conn, const std::vector<std::size_t>& indices, bool asking) {
                     if (!asking) {
                         std::vector<std::vector<std::string>> subset;
                         subset.reserve(indices.size());
                         for (std::size_t i : indices) subset.push_back(calls[i]);
                         return conn.eval_many(script, subset);
                     }
                     // EVAL with the text, not EVALSHA: a NOSCRIPT reload would lose the ASKING.
                     std::vector<std::vector<std::string>> evals(calls.size());
                     for (std::size_t i : indices) {
                         evals[i] = {"EVAL", script};
                         evals[i].insert(evals[i].end(), calls[i].begin(), calls[i].end());
                     }
                     return send_commands(conn, evals, indices, true);
                 });
}

std::vector<RedisReply> RedisRouter::pipeline_for_key(
    const std::string& key, const std::vector<std::vector<std::string>>& commands) {
    const std::vector<int> slots(commands.size(), cluster_ ? key_hash_slot(key) : 0);
    return route(slots,
                 [&](RedisConnection& conn, const std::vector<std::size_t>& indices, bool asking) {
                     return send_commands(conn, commands, indices, asking);
                 });
}

}  // namespace exo
