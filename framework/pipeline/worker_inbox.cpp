#include "pipeline/worker_inbox.hpp"

#include <algorithm>

namespace exo {

void WorkerInbox::push(std::vector<PendingRecord> records) {
    if (records.empty()) return;
    {
        std::lock_guard lock(mutex_);
        for (auto& r : records) {
            auto tp = r.record.topic_partition();
            queues_[tp].push_back(std::move(r));
        }
        ++generation_;
    }
    changed_.notify_all();
}

std::size_t WorkerInbox::ready_count(Clock::time_point now, Clock::time_point* next_release) const {
    std::size_t ready = 0;
    for (const auto& [tp, parked] : parked_) {
        if (in_batch(tp)) continue;
        for (const auto& p : parked) {
            if (p.due <= now)
                ++ready;
            else if (next_release && p.due < *next_release)
                *next_release = p.due;
        }
    }
    for (const auto& [tp, q] : queues_) {
        if (q.empty() || in_batch(tp)) continue;
        auto held = held_until_.find(tp);
        if (held != held_until_.end() && held->second > now) {
            if (next_release && held->second < *next_release) *next_release = held->second;
            continue;
        }
        ready += q.size();
    }
    return ready;
}

std::vector<PendingRecord> WorkerInbox::take_batch(std::size_t max,
                                                   std::chrono::milliseconds linger,
                                                   std::stop_token stop) {
    std::unique_lock lock(mutex_);
    constexpr auto kUnset = Clock::time_point::max();
    auto linger_end = kUnset;  // set when the first record became ready
    while (!stop.stop_requested()) {
        auto now = Clock::now();
        auto next_release = kUnset;
        std::size_t ready = ready_count(now, &next_release);
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
    std::vector<PendingRecord> batch;
    if (stop.stop_requested()) return batch;

    auto now = Clock::now();
    // A partition in the other batch still out is left alone: its records
    // may yet be requeued in front of what is queued.
    std::set<TopicPartition> with_work;
    for (const auto& [tp, q] : queues_)
        if (!q.empty() && !in_batch(tp)) with_work.insert(tp);
    for (const auto& [tp, parked] : parked_)
        if (!parked.empty() && !in_batch(tp)) with_work.insert(tp);
    std::vector<TopicPartition> order(with_work.begin(), with_work.end());
    if (order.empty()) return batch;
    std::set<TopicPartition> taken;
    std::rotate(order.begin(), order.begin() + static_cast<long>(rotation_++ % order.size()),
                order.end());
    for (const auto& tp : order) {
        // Parked records first: they are older than anything queued.
        if (auto pk = parked_.find(tp); pk != parked_.end()) {
            auto& list = pk->second;
            for (auto it = list.begin(); it != list.end() && batch.size() < max;) {
                if (it->due > now) {
                    ++it;
                    continue;
                }
                batch.push_back(std::move(it->record));
                it = list.erase(it);
                taken.insert(tp);
            }
        }
        auto held = held_until_.find(tp);
        if (held != held_until_.end()) {
            if (held->second > now) continue;
            held_until_.erase(held);
        }
        auto& q = queues_[tp];
        while (!q.empty() && batch.size() < max) {
            batch.push_back(std::move(q.front()));
            q.pop_front();
            taken.insert(tp);
        }
        if (batch.size() >= max) break;
    }
    if (!batch.empty()) {  // an empty batch is never finished
        in_batch_.insert(taken.begin(), taken.end());
        batches_taken_.push_back(std::move(taken));
    }
    return batch;
}

void WorkerInbox::finish_batch(std::vector<PendingRecord> requeue,
                               const std::map<TopicPartition, Clock::time_point>& hold_until,
                               std::vector<Parked> parked) {
    {
        std::lock_guard lock(mutex_);
        for (auto& p : parked) {
            auto tp = p.record.record.topic_partition();
            if (dropped_during_batch_.contains(tp)) continue;
            auto& list = parked_[tp];
            auto pos = std::find_if(list.begin(), list.end(), [&](const Parked& other) {
                return other.record.record.offset > p.record.record.offset;
            });
            list.insert(pos, std::move(p));
        }
        // Push to the front in reverse so the requeued records keep their order.
        for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) {
            auto tp = it->record.topic_partition();
            if (dropped_during_batch_.contains(tp)) continue;
            if (it->stalled) stalled_.insert(tp);
            queues_[tp].push_front(std::move(*it));
        }
        for (const auto& [tp, until] : hold_until)
            if (!dropped_during_batch_.contains(tp)) held_until_[tp] = until;
        if (!batches_taken_.empty()) {
            for (const auto& tp : batches_taken_.front()) {
                in_batch_.erase(tp);
                dropped_during_batch_.erase(tp);
            }
            batches_taken_.pop_front();
        }
        ++generation_;
    }
    changed_.notify_all();
}

bool WorkerInbox::drop_partitions(const std::vector<TopicPartition>& partitions,
                                  Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (const auto& tp : partitions) {
        queues_.erase(tp);
        parked_.erase(tp);
        held_until_.erase(tp);
        stalled_.erase(tp);
        if (in_batch_.contains(tp)) dropped_during_batch_.insert(tp);
    }
    return changed_.wait_until(lock, deadline, [&] {
        return std::none_of(partitions.begin(), partitions.end(),
                            [&](const TopicPartition& tp) { return in_batch_.contains(tp); });
    });
}

std::size_t WorkerInbox::queued(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    auto it = queues_.find(tp);
    return it == queues_.end() ? 0 : it->second.size();
}

std::size_t WorkerInbox::parked(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    auto it = parked_.find(tp);
    return it == parked_.end() ? 0 : it->second.size();
}

std::size_t WorkerInbox::queued_total() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [_, q] : queues_) n += q.size();
    for (const auto& [_, p] : parked_) n += p.size();
    return n;
}

bool WorkerInbox::batch_in_progress() const {
    std::lock_guard lock(mutex_);
    return !in_batch_.empty();
}

std::size_t WorkerInbox::stalled_partitions() const {
    std::lock_guard lock(mutex_);
    return stalled_.size();
}

bool WorkerInbox::stalled(const TopicPartition& tp) const {
    std::lock_guard lock(mutex_);
    return stalled_.count(tp) != 0;
}

void WorkerInbox::clear_stalled(const TopicPartition& tp) {
    std::lock_guard lock(mutex_);
    stalled_.erase(tp);
}

}  // namespace exo
