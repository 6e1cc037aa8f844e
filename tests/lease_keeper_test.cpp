// The lease keeper's hold / abandon contract (pipeline/lease_keeper.hpp), without
// Redis: a lease of an hour means no renewal is ever due during a test.
#include <doctest/doctest.h>

#include <spdlog/spdlog.h>

#include <chrono>

#include "config/config.hpp"
#include "metrics/pipeline_stats.hpp"
#include "pipeline/lease_keeper.hpp"

using namespace exo;

namespace {

struct Keeper {
    Config config = [] {
        Config c;
        c.claim.lease = std::chrono::hours(1);
        return c;
    }();
    PipelineStats stats;
    LeaseKeeper keeper{config, "owner", stats, spdlog::default_logger()->clone("lease-test")};
};

const std::vector<TokenRequest> kClaims = {{"k1", FencingToken{1}}, {"k2", FencingToken{2}}};

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
}
