#include "scheduling/worker_inbox.hpp"

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

// Adds or takes away one record's share of a partition's parked load,
// forgetting the partition at zero.
void add_load(std::map<TopicPartition, ParkedLoad>& loads, const TopicPartition& tp,
              std::size_t bytes) {
    auto& l = loads[tp];
    ++l.records;
    l.bytes += bytes;
}
void take_load(std::map<TopicPartition, ParkedLoad>& loads, const TopicPartition& tp,
               ParkedLoad taken) {
    auto it = loads.find(tp);
    if (it == loads.end()) return;
    it->second.records -= std::min(it->second.records, taken.records);
    it->second.bytes -= std::min(it->second.bytes, taken.bytes);
    if (it->second.records == 0) loads.erase(it);
}

}  // namespace

std::deque<WorkerInbox::LaneState::Spilled>::iterator WorkerInbox::lower_spilled(
    std::deque<LaneState::Spilled>& spilled, Offset offset) {
    return std::lower_bound(spilled.begin(), spilled.end(), offset,
                            [](const LaneState::Spilled& s, Offset o) { return s.offset < o; });
}

bool WorkerInbox::must_spill(const Lane& lane, const LaneState& state,
                             Clock::time_point now) const {
    return held_lane_cap_ > 0 && !lane.key.empty() && state.queue.size() >= held_lane_cap_ &&
           held_or_stalled(lane, state, now);
}

void WorkerInbox::push(std::vector<PendingRecord> records) {
    if (records.empty()) return;
    {
        std::lock_guard lock(mutex_);
        const auto now = Clock::now();
        std::set<Lane> touched;
        for (auto& r : records) {
            const auto tp = r.record.topic_partition();
            auto [it, _] = lanes_.try_emplace(r.lane());
            touched.insert(it->first);
            auto& state = it->second;
            auto& spilled = state.spilled;
            // Delivered again outside a read-again window: if spilled, it stays
            // spilled once; else it was handed over before the spill began and
            // goes through (as a duplicate of itself), not into the spilled ones,
            // which must stay records only a read-again window brings back.
            const bool redelivered = !spilled.empty() && r.record.offset <= spilled.back().offset;
            if (redelivered) {
                auto pos = lower_spilled(spilled, r.record.offset);
                if (pos != spilled.end() && pos->offset == r.record.offset) continue;
            }
            // Behind spilled records of its key, or beyond a held key's cap.
            if (!redelivered && (!spilled.empty() || must_spill(it->first, state, now))) {
                spilled.push_back({r.record.offset});
                ++spilled_[tp];
                continue;
            }
            enqueue(state, tp, std::move(r));
        }
        for (const auto& lane : touched) refresh(lane, now);
        ++generation_;
    }
    changed_.notify_all();
}

void WorkerInbox::enqueue(LaneState& state, const TopicPartition& tp, PendingRecord r) {
    r.bytes = memory_bytes(r.record);
    ++queued_[tp];
    queued_bytes_[tp] += r.bytes;
    state.queued_bytes += r.bytes;
    state.queue.push_back(std::move(r));
}

std::vector<FinishedOffset> WorkerInbox::push_rereads(std::vector<PendingRecord> records,
                                                      std::uint64_t window) {
    std::vector<FinishedOffset> gone;
    if (records.empty()) return gone;
    {
        std::lock_guard lock(mutex_);
        const auto now = Clock::now();
        std::set<Lane> touched;
        for (auto& r : records) {
            auto it = lanes_.find(r.lane());
            if (it == lanes_.end()) continue;
            touched.insert(it->first);
            auto& state = it->second;
            auto& spilled = state.spilled;
            const auto tp = r.record.topic_partition();
            // Re-reads come in offset order: a spilled record of this lane older
            // than this one that the window has not delivered is not in Kafka
            // any more.
            while (!spilled.empty() && spilled.front().offset < r.record.offset &&
                   spilled.front().seen_in != window) {
                gone.push_back({tp, spilled.front().offset});
                spilled.pop_front();
                take_from(spilled_, tp, 1);
            }
            auto pos = lower_spilled(spilled, r.record.offset);
            if (pos == spilled.end() || pos->offset != r.record.offset) continue;  // handed over
            pos->seen_in = window;
            // An older spilled record of its key stays (its lane was held when it
            // came again), or the lane must spill again: it stays spilled too.
            if (pos != spilled.begin() || must_spill(it->first, state, now)) continue;
            spilled.pop_front();
            take_from(spilled_, tp, 1);
            enqueue(state, tp, std::move(r));
        }
        for (const auto& lane : touched) refresh(lane, now);
        ++generation_;
    }
    changed_.notify_all();
    return gone;
}

std::vector<FinishedOffset> WorkerInbox::forget_unread_spilled(const TopicPartition& tp, Offset end,
                                                               std::uint64_t window) {
    std::vector<FinishedOffset> gone;
    {
        std::lock_guard lock(mutex_);
        for (auto it = lanes_.lower_bound(Lane{tp});
             it != lanes_.end() && it->first.partition == tp;) {
            auto& spilled = it->second.spilled;
            std::erase_if(spilled, [&](const LaneState::Spilled& s) {
                if (s.offset >= end || s.seen_in == window) return false;
                gone.push_back({tp, s.offset});
                return true;
            });
            auto next = std::next(it);
            collect(it);
            it = next;
        }
        take_from(spilled_, tp, gone.size());
        ++generation_;
    }
    changed_.notify_all();
    return gone;
}

void WorkerInbox::refresh(const Lane& lane, Clock::time_point now) {
    auto it = lanes_.find(lane);
    if (it == lanes_.end() || in_batch_.contains(lane)) {
        ready_.erase(lane);
        return;
    }
    auto& state = it->second;
    const bool held = is_held(state, now);
    bool ready = false;
    std::optional<Clock::time_point> next;
    const auto later = [&](Clock::time_point t) {
        if (!next || t < *next) next = t;
    };
    for (const auto& p : state.parked) {
        // Sorted: the rest are younger still, and wait for the hold (its end is below).
        if (held && behind_held_head(state, p)) break;
        if (p.due <= now)
            ready = true;
        else
            later(p.due);
    }
    if (!state.queue.empty()) {
        if (held)
            later(*state.held_until);
        else
            ready = true;
    }
    if (ready)
        ready_.insert(lane);
    else
        ready_.erase(lane);
    // One entry no later than `next` is enough: reached, it refreshes the lane,
    // which schedules what comes after.
    if (next && (!state.wake || *next < *state.wake)) {
        state.wake = next;
        due_.emplace(*next, lane);
    }
}

void WorkerInbox::advance(Clock::time_point now) {
    while (!due_.empty() && due_.top().first <= now) {
        const auto [at, lane] = due_.top();
        due_.pop();
        auto it = lanes_.find(lane);
        if (it == lanes_.end()) continue;  // gone since: stale
        if (it->second.wake && *it->second.wake <= now) it->second.wake.reset();
        refresh(lane, now);
    }
}

std::size_t WorkerInbox::ready_count(Clock::time_point now, Clock::time_point* next_release,
                                     Clock::time_point* ready_since) {
    advance(now);
    if (next_release && !due_.empty() && due_.top().first < *next_release)
        *next_release = due_.top().first;
    std::size_t ready = 0;
    const auto since = [&](Clock::time_point t) {
        if (ready_since && t < *ready_since) *ready_since = t;
    };
    for (const auto& lane : ready_) {
        const auto& state = lanes_.at(lane);
        const bool held = is_held(state, now);
        for (const auto& p : state.parked) {
            if (held && behind_held_head(state, p)) break;  // counted when the hold ends
            if (p.due <= now) {
                ++ready;
                since(p.due);
            }
        }
        if (state.queue.empty() || held) continue;
        ready += state.queue.size();
        since(state.queue.front().polled_at);  // a lane's queue is in poll order
    }
    return ready;
}

bool WorkerInbox::take_lane(LaneState& lane, Clock::time_point now, std::size_t limit,
                            std::vector<PendingRecord>& out) {
    const auto before = out.size();
    const bool held = is_held(lane, now);
    // Due parked records first, in offset order; while the lane is held, only
    // those older than the record holding it: a younger one would overtake it.
    for (auto it = lane.parked.begin(); it != lane.parked.end() && out.size() - before < limit;) {
        if (held && behind_held_head(lane, *it)) break;  // sorted: the rest are younger still
        if (it->due > now) {
            ++it;
            continue;
        }
        take_from(parked_, it->record.record.topic_partition(), 1);
        out.push_back(std::move(it->record));
        it = lane.parked.erase(it);
    }
    if (held) return out.size() > before;
    lane.held_until.reset();
    while (!lane.queue.empty() && out.size() - before < limit) {
        const auto& front = lane.queue.front();
        take_from(queued_, front.record.topic_partition(), 1);
        take_from(queued_bytes_, front.record.topic_partition(), front.bytes);
        lane.queued_bytes -= std::min(lane.queued_bytes, front.bytes);
        out.push_back(std::move(lane.queue.front()));
        lane.queue.pop_front();
    }
    return out.size() > before;
}

void WorkerInbox::collect(std::map<Lane, LaneState>::iterator it) {
    const auto& state = it->second;
    if (state.queue.empty() && state.parked.empty() && state.spilled.empty()) erase_lane(it);
}

std::map<Lane, WorkerInbox::LaneState>::iterator WorkerInbox::erase_lane(
    std::map<Lane, LaneState>::iterator it) {
    ready_.erase(it->first);
    return lanes_.erase(it);
}

WorkerInbox::Taken WorkerInbox::take_batch(std::size_t max, std::chrono::milliseconds linger,
                                           std::stop_token stop) {
    std::unique_lock lock(mutex_);

    constexpr auto kUnset = Clock::time_point::max();
    std::size_t ready = 0;
    while (!stop.stop_requested()) {
        auto now = Clock::now();
        auto next_release = kUnset;
        auto ready_since = kUnset;
        ready = ready_count(now, &next_release, &ready_since);
        // From the longest-waiting ready record, not from this call: the linger is
        // the most any record waits for company (none ready: wait afresh).
        const auto linger_end = ready > 0 ? std::min(ready_since, now) + linger : kUnset;
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
    advance(now);
    BatchOut batch;
    std::vector<std::map<Lane, LaneState>::iterator> visited;
    auto visit = [&](const Lane& lane) {
        const auto it = lanes_.find(lane);
        const auto before = taken.records.size();
        if (!take_lane(it->second, now, limit - before, taken.records)) return;
        batch.lanes.insert(it->first);
        batch.records[it->first.partition] += taken.records.size() - before;
        for (auto r = taken.records.begin() + static_cast<std::ptrdiff_t>(before);
             r != taken.records.end(); ++r) {
            batch.bytes[it->first.partition] += r->bytes;
            if (r->parked) add_load(batch.parked, it->first.partition, r->bytes);
        }
        visited.push_back(it);
    };
    // From where the last batch stopped, around: every ready lane gets its turn.
    // (ready_ is changed only below, after the walk.)
    auto start = last_lane_ ? ready_.upper_bound(*last_lane_) : ready_.begin();
    for (auto it = start; it != ready_.end() && taken.records.size() < limit; ++it) visit(*it);
    for (auto it = ready_.begin(); it != start && taken.records.size() < limit; ++it) visit(*it);
    if (taken.records.empty()) return taken;  // an empty batch is never finished

    last_lane_ = visited.back()->first;
    for (const auto& lane : batch.lanes) in_batch_.insert(lane);
    for (const auto& lane : batch.lanes) ready_.erase(lane);
    for (auto it : visited) collect(it);

    taken.id = next_id_++;
    for (const auto& [tp, n] : batch.records) taken_[tp] += n;
    for (const auto& [tp, n] : batch.bytes) taken_bytes_[tp] += n;
    batches_.emplace(taken.id, std::move(batch));
    return taken;
}

std::vector<TopicPartition> WorkerInbox::finish_batch(
    BatchId id, std::vector<PendingRecord> requeue,
    const std::map<Lane, Clock::time_point>& hold_until, std::vector<Parked> parked) {
    std::vector<TopicPartition> refused;
    {
        std::lock_guard lock(mutex_);
        auto out = batches_.find(id);
        // What this batch puts back of a partition dropped while it was out is
        // gone with the partition (redelivered to whoever owns it now). Another
        // batch's put-back of the same partition, taken after a re-assignment
        // to this member, is kept: only the batches out at the drop are marked.
        static const std::set<TopicPartition> kNoneDropped;
        // Everything put back belongs to the batch's lanes (a contract): they
        // are all looked at again at the end, out of the batch (named before
        // the records move).
        std::set<Lane> touched;
        for (const auto& r : requeue) touched.insert(r.lane());
        for (const auto& p : parked) touched.insert(p.record.lane());
        for (const auto& [lane, _] : hold_until) touched.insert(lane);
        if (out != batches_.end())
            touched.insert(out->second.lanes.begin(), out->second.lanes.end());
        const auto& dropped = out != batches_.end() ? out->second.dropped : kNoneDropped;
        // The batch's parked places are given back first: those parked again
        // below take theirs again, without a check (a record keeps its place).
        // (A dropped partition's load went with it.)
        if (out != batches_.end())
            for (const auto& [tp, load] : out->second.parked)
                if (!dropped.contains(tp)) take_load(parked_load_, tp, load);
        for (auto& r : requeue) r.parked = false;  // back in its queue: its place is free
        for (auto& p : parked) {
            auto tp = p.record.record.topic_partition();
            if (dropped.contains(tp)) continue;
            if (!p.record.parked) {
                const auto load = parked_load_.contains(tp) ? parked_load_.at(tp) : ParkedLoad{};
                if (auto why = refuse_park(tp, load, park_limits_)) {
                    // A dead letter without a dedup row, as a gap timeout: a
                    // replayed copy may still apply; its gap sighting goes with it.
                    p.record.dead_letter = DeadLetterVerdict{std::move(*why), /*record_key=*/false,
                                                             /*clears_gap=*/true};
                    const auto lane = p.record.lane();
                    const auto offset = p.record.record.offset;
                    auto pos = std::find_if(requeue.begin(), requeue.end(), [&](const auto& r) {
                        return r.lane() == lane && r.record.offset > offset;
                    });
                    requeue.insert(pos, std::move(p.record));
                    refused.push_back(tp);
                    continue;
                }
                p.record.parked = true;
            }
            add_load(parked_load_, tp, p.record.bytes);
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
            if (dropped.contains(tp)) continue;
            if (it->stalled) stalled_.insert(it->lane());
            ++queued_[tp];
            queued_bytes_[tp] += it->bytes;
            auto& lane = lanes_[it->lane()];
            lane.queued_bytes += it->bytes;
            lane.queue.push_front(std::move(*it));
        }
        for (const auto& [lane, until] : hold_until) {
            // A dropped partition's lane may already hold a re-assignment's records.
            if (dropped.contains(lane.partition)) continue;
            auto it = lanes_.find(lane);
            if (it == lanes_.end()) continue;
            // The later of the two: a lane may already be held longer (a record
            // whose dead letter is not recorded yet) than this batch asks.
            auto& held = it->second.held_until;
            held = held ? std::max(*held, until) : until;
        }
        if (out != batches_.end()) {
            for (const auto& lane : out->second.lanes) in_batch_.erase(lane);
            for (const auto& [tp, n] : out->second.records) take_from(taken_, tp, n);
            for (const auto& [tp, n] : out->second.bytes) take_from(taken_bytes_, tp, n);
            batches_.erase(out);
        }
        const auto now = Clock::now();
        for (const auto& lane : touched) refresh(lane, now);
        ++generation_;
    }
    changed_.notify_all();
    return refused;
}

bool WorkerInbox::drop_partitions(const std::vector<TopicPartition>& partitions,
                                  Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (const auto& tp : partitions) {
        for (auto it = lanes_.lower_bound(Lane{tp});
             it != lanes_.end() && it->first.partition == tp;)
            it = erase_lane(it);
        for (auto it = stalled_.lower_bound(Lane{tp}); it != stalled_.end() && it->partition == tp;)
            it = stalled_.erase(it);
        queued_.erase(tp);
        queued_bytes_.erase(tp);
        parked_.erase(tp);
        parked_load_.erase(tp);
        spilled_.erase(tp);
        for (auto& [_, batch] : batches_)
            if (batch.records.contains(tp)) batch.dropped.insert(tp);
    }
    ++generation_;
    // Only the batches out at the drop are waited for: after a deadline passed,
    // the partition may be back and a new batch of it out.
    return changed_.wait_until(lock, deadline, [&] {
        return std::none_of(batches_.begin(), batches_.end(), [&](const auto& out) {
            return std::any_of(partitions.begin(), partitions.end(), [&](const TopicPartition& tp) {
                return out.second.dropped.contains(tp);
            });
        });
    });
}

std::size_t WorkerInbox::queued(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(queued_, tp);
}

std::size_t WorkerInbox::queued_bytes(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(queued_bytes_, tp);
}

std::size_t WorkerInbox::parked(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(parked_, tp);
}

ParkedLoad WorkerInbox::parked_load(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    auto it = parked_load_.find(tp);
    return it == parked_load_.end() ? ParkedLoad{} : it->second;
}

std::size_t WorkerInbox::spilled(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(spilled_, tp);
}

WorkerInbox::HeldKeys WorkerInbox::held_keys(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    HeldKeys out;
    const auto now = Clock::now();
    bool read_again = false;
    for (auto it = lanes_.lower_bound(Lane{tp}); it != lanes_.end() && it->first.partition == tp;
         ++it) {
        const auto& [lane, state] = *it;
        if (lane.key.empty()) continue;  // the partition lane: never spills, always counts
        const bool held = held_or_stalled(lane, state, now);
        if (held) {
            out.queued += state.queue.size();
            out.queued_bytes += state.queued_bytes;
        }
        if (state.spilled.empty()) continue;
        if (held) {
            out.spilled += state.spilled.size();
            continue;
        }
        // Free again: read back once it is short, not at the first record it
        // takes (every read again re-reads the partition from there).
        if (state.queue.size() <= held_lane_cap_ / 2) read_again = true;
    }
    if (read_again)
        for (auto it = lanes_.lower_bound(Lane{tp});
             it != lanes_.end() && it->first.partition == tp; ++it)
            if (!it->second.spilled.empty() &&
                (!out.read_again_from || it->second.spilled.front().offset < *out.read_again_from))
                out.read_again_from = it->second.spilled.front().offset;
    return out;
}

std::size_t WorkerInbox::in_batch(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(taken_, tp);
}

std::size_t WorkerInbox::in_batch_bytes(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return count_of(taken_bytes_, tp);
}

WorkerInbox::Totals WorkerInbox::totals() const {
    std::lock_guard lock(mutex_);
    Totals t;
    for (const auto& [_, n] : queued_) t.queued += n;
    for (const auto& [_, n] : parked_) t.parked += n;
    for (const auto& [_, n] : taken_) t.in_batch += n;
    for (const auto& [_, n] : spilled_) t.spilled += n;
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

std::size_t WorkerInbox::in_flight_bytes() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [_, queued] : queued_bytes_) n += queued;
    for (const auto& [_, taken] : taken_bytes_) n += taken;
    return n;
}

std::size_t WorkerInbox::spilled_total() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [_, spilled] : spilled_) n += spilled;
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
