#include "pipeline/worker_inbox.hpp"

#include <algorithm>

namespace exo {
namespace {

// Subtracts from a per-partition count, forgetting it at zero (partitions come and go).
void take_from(std::map<TopicPartition, std::size_t>& counts, const TopicPartition& tp,
               std::size_t n) {
    auto it = counts.find(tp);
    if (it == counts.end()) return;
    it->second -= std::min(it->second, n);
    if (it->second == 0) counts.erase(it);
}

std::size_t count_of(const std::map<TopicPartition, std::size_t>& counts,
                     const TopicPartition& tp) {
    auto it = counts.find(tp);
    return it == counts.end() ? 0 : it->second;
}

}  // namespace

void WorkerInbox::push(std::vector<PendingRecord> records) {
    if (records.empty()) return;
    {
        std::lock_guard lock(mutex_);
        for (auto& r : records) {
            ++queued_[r.record.topic_partition()];
            lanes_[r.lane()].queue.push_back(std::move(r));
        }
        ++generation_;
    }
    changed_.notify_all();
}

std::size_t WorkerInbox::ready_count(Clock::time_point now, Clock::time_point* next_release) const {
    std::size_t ready = 0;
    for (const auto& [lane, state] : lanes_) {
        if (in_batch_.contains(lane)) continue;
        for (const auto& p : state.parked) {
            if (p.due <= now)
                ++ready;
            else if (next_release && p.due < *next_release)
                *next_release = p.due;
        }
        if (state.queue.empty()) continue;
        if (state.held_until && *state.held_until > now) {
            if (next_release && *state.held_until < *next_release)
                *next_release = *state.held_until;
            continue;
        }
        ready += state.queue.size();
    }
    return ready;
}

bool WorkerInbox::take_lane(LaneState& lane, Clock::time_point now, std::size_t limit,
                            std::vector<PendingRecord>& out) {
    const auto before = out.size();
    // Parked records first: they are older than anything queued.
    for (auto it = lane.parked.begin(); it != lane.parked.end() && out.size() - before < limit;) {
        if (it->due > now) {
            ++it;
            continue;
        }
        take_from(parked_, it->record.record.topic_partition(), 1);
        out.push_back(std::move(it->record));
        it = lane.parked.erase(it);
    }
    if (lane.held_until) {
        if (*lane.held_until > now) return out.size() > before;
        lane.held_until.reset();
    }
    while (!lane.queue.empty() && out.size() - before < limit) {
        take_from(queued_, lane.queue.front().record.topic_partition(), 1);
        out.push_back(std::move(lane.queue.front()));
        lane.queue.pop_front();
    }
    return out.size() > before;
}

void WorkerInbox::collect(std::map<Lane, LaneState>::iterator it) {
    if (it->second.queue.empty() && it->second.parked.empty()) lanes_.erase(it);
}

WorkerInbox::Taken WorkerInbox::take_batch(std::size_t max, std::chrono::milliseconds linger,
                                           std::stop_token stop) {
    std::unique_lock lock(mutex_);

    constexpr auto kUnset = Clock::time_point::max();
    auto linger_end = kUnset;  // set when the first record became ready
    std::size_t ready = 0;
    while (!stop.stop_requested()) {
        auto now = Clock::now();
        auto next_release = kUnset;
        ready = ready_count(now, &next_release);
        if (ready == 0) linger_end = kUnset;  // e.g. dropped by a revoke: wait afresh
        if (ready > 0 && linger_end == kUnset) linger_end = now + linger;
        if (ready >= max || (ready > 0 && now >= linger_end)) break;
        auto wake = std::min(linger_end, next_release);
        auto seen = generation_;
        auto changed = [&] { return generation_ != seen; };
        if (wake == kUnset)
            changed_.wait(lock, stop, changed);
        else
            changed_.wait_until(lock, stop, wake, changed);
    }
    Taken taken;
    if (stop.stop_requested()) return taken;

    // One taker's share of what is ready, so every thread gets some; but never
    // less than a taker's share of `max`: a batch costs its claim round trips,
    // BEGIN and an fsync'd COMMIT whatever its size, and one of a few records
    // each would spend the CPU on that instead of the records.
    const auto takers = static_cast<std::size_t>(takers_);
    const auto share = [&](std::size_t n) { return (n + takers - 1) / takers; };
    const std::size_t limit = std::min(max, std::max<std::size_t>({1, share(ready), share(max)}));
    const auto now = Clock::now();
    BatchOut batch;
    std::vector<std::map<Lane, LaneState>::iterator> visited;
    auto visit = [&](std::map<Lane, LaneState>::iterator it) {
        if (in_batch_.contains(it->first)) return;
        const auto before = taken.records.size();
        if (!take_lane(it->second, now, limit - before, taken.records)) return;
        batch.lanes.insert(it->first);
        batch.records[it->first.partition] += taken.records.size() - before;
        visited.push_back(it);
    };
    // From where the last batch stopped, around: every lane gets its turn.
    auto start = last_lane_ ? lanes_.upper_bound(*last_lane_) : lanes_.begin();
    for (auto it = start; it != lanes_.end() && taken.records.size() < limit; ++it) visit(it);
    for (auto it = lanes_.begin(); it != start && taken.records.size() < limit; ++it) visit(it);
    if (taken.records.empty()) return taken;  // an empty batch is never finished

    last_lane_ = visited.back()->first;
    for (auto it : visited) collect(it);

    taken.id = next_id_++;
    for (const auto& lane : batch.lanes) in_batch_.insert(lane);
    for (const auto& [tp, n] : batch.records) {
        taken_[tp] += n;
        ++batches_holding_[tp];
    }
    batches_.emplace(taken.id, std::move(batch));
    return taken;
}

void WorkerInbox::finish_batch(BatchId id, std::vector<PendingRecord> requeue,
                               const std::map<Lane, Clock::time_point>& hold_until,
                               std::vector<Parked> parked) {
    {
        std::lock_guard lock(mutex_);
        for (auto& p : parked) {
            auto tp = p.record.record.topic_partition();
            if (dropped_during_batch_.contains(tp)) continue;
            auto& list = lanes_[p.record.lane()].parked;
            auto pos = std::find_if(list.begin(), list.end(), [&](const Parked& other) {
                return other.record.record.offset > p.record.record.offset;
            });
            list.insert(pos, std::move(p));
            ++parked_[tp];
        }
        // Push to the front in reverse so the requeued records keep their order.
        for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) {
            auto tp = it->record.topic_partition();
            if (dropped_during_batch_.contains(tp)) continue;
            if (it->stalled) stalled_.insert(it->lane());
            ++queued_[tp];
            lanes_[it->lane()].queue.push_front(std::move(*it));
        }
        for (const auto& [lane, until] : hold_until) {
            // A dropped partition's lane may already hold a re-assignment's records.
            if (dropped_during_batch_.contains(lane.partition)) continue;
            if (auto it = lanes_.find(lane); it != lanes_.end()) it->second.held_until = until;
        }
        if (auto out = batches_.find(id); out != batches_.end()) {
            for (const auto& lane : out->second.lanes) in_batch_.erase(lane);
            for (const auto& [tp, n] : out->second.records) {
                take_from(taken_, tp, n);
                auto holding = batches_holding_.find(tp);
                if (holding != batches_holding_.end() && --holding->second == 0) {
                    batches_holding_.erase(holding);
                    dropped_during_batch_.erase(tp);
                }
            }
            batches_.erase(out);
        }
        ++generation_;
    }
    changed_.notify_all();
}

bool WorkerInbox::drop_partitions(const std::vector<TopicPartition>& partitions,
                                  Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (const auto& tp : partitions) {
        for (auto it = lanes_.lower_bound(Lane{tp});
             it != lanes_.end() && it->first.partition == tp;)
            it = lanes_.erase(it);
        for (auto it = stalled_.lower_bound(Lane{tp}); it != stalled_.end() && it->partition == tp;)
            it = stalled_.erase(it);
        queued_.erase(tp);
        parked_.erase(tp);
        if (partition_in_batch(tp)) dropped_during_batch_.insert(tp);
    }
    ++generation_;
    return changed_.wait_until(lock, deadline, [&] {
        return std::none_of(partitions.begin(), partitions.end(),
                            [&](const TopicPartition& tp) { return partition_in_batch(tp); });
    });
}

std::size_t WorkerInbox::queued(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(queued_, tp);
}

std::size_t WorkerInbox::parked(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(parked_, tp);
}

std::size_t WorkerInbox::in_batch(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(taken_, tp);
}

WorkerInbox::Totals WorkerInbox::totals() const {
    std::lock_guard lock(mutex_);
    Totals t;
    for (const auto& [_, n] : queued_) t.queued += n;
    for (const auto& [_, n] : parked_) t.parked += n;
    for (const auto& [_, n] : taken_) t.in_batch += n;
    const auto now = Clock::now();
    for (const auto& [lane, state] : lanes_) {
        const bool held = (state.held_until && *state.held_until > now) || stalled_.contains(lane);
        if (!held || state.queue.empty()) continue;
        ++t.held_lanes;
        t.waiting_behind_held += state.queue.size() - 1;
        const auto& first_key = state.queue.front().record.key;
        std::set<std::string_view> keys;
        for (auto it = std::next(state.queue.begin()); it != state.queue.end(); ++it)
            if (it->record.key != first_key)
                keys.insert(it->record.key ? std::string_view(*it->record.key)
                                           : std::string_view());
        t.keys_waiting_behind_held += keys.size();
    }
    t.batches_out = batches_.size();
    t.lanes = lanes_.size();
    return t;
}

std::size_t WorkerInbox::in_flight() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [_, queued] : queued_) n += queued;
    for (const auto& [_, taken] : taken_) n += taken;
    return n;
}

bool WorkerInbox::batch_in_progress() const {
    std::lock_guard lock(mutex_);
    return !batches_.empty();
}

std::size_t WorkerInbox::stalled_lanes() const {
    std::lock_guard lock(mutex_);
    return stalled_.size();
}

bool WorkerInbox::stalled(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    auto it = stalled_.lower_bound(Lane{tp});
    return it != stalled_.end() && it->partition == tp;
}

void WorkerInbox::clear_stalled(const Lane& lane) {
    std::lock_guard lock(mutex_);
    stalled_.erase(lane);
}

}  // namespace exo
