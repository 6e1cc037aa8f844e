// The lease keeper's hold / abandon contract, how the renewer judges a
// renewal's LOST, and that one renewal serves every keeper that is due
// (runtime/sessions/lease_keeper.hpp), without Redis: a lease of an hour means no
// renewal is ever due, and a Redis that answers on cue stands in for extend.lua.
#include <doctest/doctest.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "runtime/sessions/lease_keeper.hpp"

using namespace exo;
using namespace std::chrono_literals;

namespace {

struct Keeper {
    RedisConfig redis;  // never reached: a lease of an hour is not renewed within a test
    PipelineStats stats;
    LeaseRenewer renewer{redis, std::chrono::hours(1), "group", stats,
                         spdlog::default_logger()->clone("lease-test")};
    LeaseKeeper keeper{renewer, "owner"};
};

const std::vector<TokenRequest> kClaims = {{"k1", FencingToken{1}}, {"k2", FencingToken{2}}};

// extend.lua's stand-in: the first renewal waits for the test's answer (it is
// in flight meanwhile); every later one answers OK at once.
class CuedRedis {
public:
    LeaseRenewer::Extend extend() {
        return [this](const std::vector<OwnedClaims>& owned) {
            std::unique_lock lock(mutex_);
            calls_.push_back(owned);
            std::vector<std::vector<FinishStatus>> ok;
            for (const auto& o : owned) ok.emplace_back(o.claims.size(), FinishStatus::ok);
            if (++renewals_ > 1) return ok;
            changed_.notify_all();
            changed_.wait_for(lock, 30s, [&] { return answer_.has_value(); });
            if (!answer_) return ok;
            return std::vector<std::vector<FinishStatus>>{*answer_};
        };
    }
    // Whether the first renewal went out (generous deadline: it is due after 10 ms).
    bool renewal_in_flight() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 30s, [&] { return renewals_ > 0; });
    }
    void answer(std::vector<FinishStatus> statuses) {
        {
            std::lock_guard lock(mutex_);
            answer_ = std::move(statuses);
        }
        changed_.notify_all();
    }
    // Every renewal's request so far.
    std::vector<std::vector<OwnedClaims>> calls() {
        std::lock_guard lock(mutex_);
        return calls_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int renewals_ = 0;
    std::optional<std::vector<FinishStatus>> answer_;
    std::vector<std::vector<OwnedClaims>> calls_;
};

// Holds `claims`, lets their first renewal go out, runs `meanwhile` (the worker)
// before Redis answers `answer`, and returns leases_lost once the keeper is gone:
// its destructor joins the thread after the answer was judged.
std::uint64_t leases_lost(const std::vector<TokenRequest>& claims,
                          const std::function<void(LeaseKeeper&)>& meanwhile,
                          std::vector<FinishStatus> answer) {
    const auto lease = 30ms;  // a renewal every 10 ms
    PipelineStats stats;
    CuedRedis redis;
    {
        LeaseRenewer renewer(lease, stats, spdlog::default_logger()->clone("lease-test"),
                             redis.extend());
        LeaseKeeper keeper(renewer, "owner");
        keeper.start_batch();
        keeper.hold(claims);
        REQUIRE(redis.renewal_in_flight());
        meanwhile(keeper);
        redis.answer(std::move(answer));
        // The renewer's destructor (after the keeper's) joins its thread once
        // the answer was judged; the keeper stays until then.
        while (redis.calls().size() < 2 && stats.lease_renewals < claims.size())
            std::this_thread::sleep_for(1ms);
    }
    CHECK(stats.lease_renewals >= claims.size());
    return stats.leases_lost;
}

}  // namespace

TEST_SUITE("lease keeper") {
    TEST_CASE_FIXTURE(Keeper, "claims held are the claims renewed") {
        keeper.start_batch();
        keeper.hold(kClaims);
        CHECK(keeper.held().size() == 2);
        keeper.clear();
        CHECK(keeper.held().empty());
    }

    TEST_CASE_FIXTURE(Keeper,
                      "an abandon during the claim step sticks: the hold after it renews nothing") {
        keeper.start_batch();
        keeper.abandon();      // the poll thread: a revoke's drain deadline passed
        keeper.hold(kClaims);  // the worker, right after its claim step
        CHECK(keeper.held().empty());
        keeper.hold(kClaims);  // and again after the transaction
        CHECK(keeper.held().empty());
    }

    TEST_CASE_FIXTURE(Keeper, "an abandon lasts only until the next batch") {
        keeper.start_batch();
        keeper.hold(kClaims);
        keeper.abandon();
        CHECK(keeper.held().empty());
        keeper.start_batch();
        keeper.hold(kClaims);
        CHECK(keeper.held().size() == 2);
    }

    TEST_CASE("a renewal answered LOST for a claim still held is a lease lost") {
        CHECK(leases_lost(kClaims, [](LeaseKeeper&) {}, {FinishStatus::lost, FinishStatus::ok}) ==
              1);
    }

    TEST_CASE(
        "a renewal answered LOST after the worker let go of the claim (completed or released "
        "it) is no lease lost") {
        CHECK(leases_lost(kClaims, [](LeaseKeeper& k) { k.clear(); },
                          {FinishStatus::lost, FinishStatus::lost}) == 0);
    }

    TEST_CASE(
        "a renewal answered LOST counts only the claims still held, not those let go of "
        "meanwhile") {
        CHECK(leases_lost(kClaims, [](LeaseKeeper& k) { k.hold({kClaims[1]}); },
                          {FinishStatus::lost, FinishStatus::lost}) == 1);
    }

    TEST_CASE(
        "a renewal answered LOST for a key held again under a new token meanwhile is no lease "
        "lost") {
        CHECK(leases_lost({kClaims[0]},
                          [](LeaseKeeper& k) {
                              k.clear();                          // released after a failure
                              k.hold({{"k1", FencingToken{7}}});  // claimed again: its next try
                          },
                          {FinishStatus::lost}) == 0);
    }

    TEST_CASE("a renewal answered LOST for claims abandoned meanwhile is no lease lost") {
        CHECK(leases_lost(kClaims, [](LeaseKeeper& k) { k.abandon(); },
                          {FinishStatus::lost, FinishStatus::lost}) == 0);
    }

    TEST_CASE("one renewal round trip serves every keeper that is due, each under its own owner") {
        const auto lease = 30ms;  // a renewal every 10 ms
        PipelineStats stats;
        CuedRedis redis;
        {
            LeaseRenewer renewer(lease, stats, spdlog::default_logger()->clone("lease-test"),
                                 redis.extend());
            LeaseKeeper a(renewer, "owner-a");
            LeaseKeeper b(renewer, "owner-b");
            LeaseKeeper idle(renewer, "owner-idle");  // holds nothing: not renewed
            a.start_batch();
            b.start_batch();
            a.hold({kClaims[0]});
            b.hold({kClaims[1]});
            REQUIRE(redis.renewal_in_flight());
            redis.answer({});
        }
        const auto calls = redis.calls();
        REQUIRE(!calls.empty());
        // Held at the same moment, due together: one request names both owners.
        const auto& first = calls.front();
        REQUIRE(first.size() == 2);
        CHECK(first[0].owner == "owner-a");
        CHECK(first[0].claims.size() == 1);
        CHECK(first[0].claims[0].key == "k1");
        CHECK(first[1].owner == "owner-b");
        CHECK(first[1].claims[0].key == "k2");
    }
}
