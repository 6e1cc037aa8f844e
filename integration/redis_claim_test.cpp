// The claim scripts of docs/design.md#redis-claim-record-and-scripts, every branch, against a real
// Redis. Each test uses its own group and keys, so tests can share one server.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/embedded_file.hpp"
#include "ops/claim_view.hpp"
#include "redis/claim_store.hpp"
#include "redis/redis_connection.hpp"
#include "redis/redis_router.hpp"
#include "support.hpp"

using namespace std::chrono_literals;

namespace {

using exo::ClaimStatus;
using exo::FinishStatus;
using exo::StoredOutcome;

constexpr auto kLease = 10'000ms;
constexpr auto kShortLease = 150ms;
constexpr auto kTtl = 60'000ms;
const std::string kPrefix = "exo-test";

struct Claims {
    exo::RedisConnection redis{exo::testing::redis_options()};
    std::string group = exo::testing::unique_name("claims");
    exo::ClaimStore a{redis, kPrefix, group, "owner-a"};
    exo::ClaimStore b{redis, kPrefix, group, "owner-b"};
    std::string key = exo::testing::unique_name("key");

    ~Claims() {
        try {
            redis.command({"DEL", a.redis_key(key)});
        } catch (...) {  // a test that killed the connection cleans up nothing
        }
    }

    exo::ClaimResult claim(exo::ClaimStore& s, std::chrono::milliseconds lease = kLease) {
        return s.claim({key}, lease).at(0);
    }
    exo::ClaimResult acquire(exo::ClaimStore& s, std::chrono::milliseconds lease = kLease) {
        auto r = claim(s, lease);
        REQUIRE(r.status == ClaimStatus::acquired);
        return r;
    }
    FinishStatus complete(exo::ClaimStore& s, exo::FencingToken token, std::string result,
                          StoredOutcome state = StoredOutcome::applied) {
        return s.complete({{key, token, std::move(result), state}}, kTtl).at(0);
    }
    FinishStatus extend(exo::ClaimStore& s, exo::FencingToken token,
                        std::chrono::milliseconds lease = kLease) {
        return s.extend({{key, token}}, lease).at(0);
    }
    FinishStatus release(exo::ClaimStore& s, exo::FencingToken token) {
        return s.release({{key, token}}).at(0);
    }
    // The raw hash, to prove a LOST call changed nothing.
    std::map<std::string, std::string> record() {
        auto r = redis.command({"HGETALL", a.redis_key(key)});
        REQUIRE(r.type == exo::RedisReply::Type::array);
        std::map<std::string, std::string> out;
        for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
            out[r.elements[i].str] = r.elements[i + 1].str;
        return out;
    }
    long long pttl() { return redis.command({"PTTL", a.redis_key(key)}).integer; }
    long long lease_until() { return std::stoll(record()["lease_until"]); }
    // Waits until Redis's clock, the one the scripts judge leases by, reaches `until`.
    void wait_for_redis_time(long long until) {
        exo::testing::wait_until(
            "Redis time (ms) to reach " + std::to_string(until), 10s,
            [&] {
                auto t = redis.command({"TIME"});
                REQUIRE(t.elements.size() == 2);
                return std::stoll(t.elements[0].str) * 1000 + std::stoll(t.elements[1].str) / 1000;
            },
            [&](long long now) { return now >= until; });
    }
};

}  // namespace

TEST_SUITE("redis claim") {
    TEST_CASE_FIXTURE(Claims, "a claim on a new key is acquired with a positive token") {
        auto r = claim(a);
        CHECK(r.status == ClaimStatus::acquired);
        CHECK(r.token.value > 0);
        auto rec = record();
        CHECK(rec["state"] == "PROCESSING");
        CHECK(rec["owner"] == "owner-a");
        CHECK(rec["token"] == std::to_string(r.token.value));
        CHECK(a.redis_key(key) == kPrefix + ":" + group + ":" + key);
    }

    TEST_CASE_FIXTURE(Claims, "the redis key of a processing claim expires after several leases") {
        acquire(a, 30'000ms);
        CHECK(pttl() > 60'000);
        CHECK(pttl() <= 120'000);
    }

    TEST_CASE_FIXTURE(Claims,
                      "one renewal for several owners extends each owner's claims under its own "
                      "owner and answers LOST for a claim named under another") {
        const auto other = exo::testing::unique_name("key");
        const auto held_a = acquire(a);
        const auto held_b = b.claim({other}, kShortLease).at(0);
        REQUIRE(held_b.status == ClaimStatus::acquired);
        const auto held_b_until = redis.command({"HGET", a.redis_key(other), "lease_until"}).str;
        // Any store renews for any owner: the lease renewer's is not one of them.
        exo::ClaimStore renewer{redis, kPrefix, group, "renewer"};
        const auto statuses =
            renewer.extend_owned({{"owner-a", {{key, held_a.token}}},
                                  {"owner-b", {{other, held_b.token}}},
                                  {"owner-a", {{other, held_b.token}}}},  // b's claim, named as a's
                                 kLease);
        REQUIRE(statuses.size() == 3);
        CHECK(statuses[0] == std::vector{FinishStatus::ok});
        CHECK(statuses[1] == std::vector{FinishStatus::ok});
        CHECK(statuses[2] == std::vector{FinishStatus::lost});
        // b's short lease now runs the long one from the renewal.
        const auto until = [&] {
            return std::stoll(redis.command({"HGET", a.redis_key(other), "lease_until"}).str);
        };
        CHECK(until() > std::stoll(held_b_until) + kLease.count() / 2);
        CHECK(renewer.extend_owned({}, kLease).empty());
        redis.command({"DEL", a.redis_key(other)});
    }

    TEST_CASE_FIXTURE(Claims, "the same owner claiming again gets the same token back") {
        auto first = acquire(a);
        auto again = claim(a);
        CHECK(again.status == ClaimStatus::acquired);
        CHECK(again.token == first.token);
    }

    TEST_CASE_FIXTURE(Claims, "a re-claim by the same owner renews its lease") {
        auto first = acquire(a, kShortLease);
        const auto lease_until = std::stoll(record()["lease_until"]);
        std::this_thread::sleep_for(20ms);
        CHECK(claim(a, kLease).token == first.token);
        CHECK(std::stoll(record()["lease_until"]) >= lease_until + kLease.count() - 1000);
        CHECK(pttl() > kShortLease.count() * 4);
    }

    TEST_CASE_FIXTURE(Claims, "another owner within the lease gets a conflict with the time left") {
        acquire(a);
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::conflict);
        CHECK(r.retry_after > 0ms);
        CHECK(r.retry_after <= kLease);
        CHECK(record()["owner"] == "owner-a");
    }

    TEST_CASE_FIXTURE(Claims, "another owner after the lease takes over with a higher token") {
        auto first = acquire(a, kShortLease);
        wait_for_redis_time(lease_until());
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::taken_over);
        CHECK(r.token > first.token);
        CHECK(record()["owner"] == "owner-b");
        CHECK(claim(a).status == ClaimStatus::conflict);
    }

    TEST_CASE_FIXTURE(Claims,
                      "the owner that was taken over from loses extend, complete and release") {
        auto old = acquire(a, kShortLease);
        wait_for_redis_time(lease_until());
        auto now = claim(b);
        REQUIRE(now.status == ClaimStatus::taken_over);
        auto before = record();
        CHECK(extend(a, old.token) == FinishStatus::lost);
        CHECK(complete(a, old.token, "late") == FinishStatus::lost);
        CHECK(release(a, old.token) == FinishStatus::lost);
        CHECK(record() == before);
        CHECK(complete(b, now.token, "done") == FinishStatus::ok);
    }

    TEST_CASE_FIXTURE(Claims, "completing with the current token makes later claims duplicates") {
        auto mine = acquire(a);
        CHECK(complete(a, mine.token, R"({"balance":42})") == FinishStatus::ok);
        auto rec = record();
        CHECK(rec["state"] == "COMPLETED");
        CHECK(rec["token"] == std::to_string(mine.token.value));
        // lease_until stays behind (complete.lua: one HSET), read only while PROCESSING.
        CHECK(rec.count("fp") == 1);  // none given: "" is "none" to claim.lua
        CHECK(rec["fp"].empty());
        exo::RedisRouter router(redis);
        const auto view = exo::read_claim(router, a.redis_key(key));
        REQUIRE(view);
        CHECK_FALSE(view->lease_until_ms);  // exo inspect shows no lease for a settled claim
        CHECK(pttl() > 0);
        CHECK(pttl() <= kTtl.count());
        for (auto* store : {&a, &b}) {
            auto r = claim(*store);
            CHECK(r.status == ClaimStatus::duplicate);
            CHECK(r.stored_result == R"({"balance":42})");
        }
    }

    TEST_CASE_FIXTURE(Claims, "an empty result is stored and returned as empty") {
        auto mine = acquire(a);
        REQUIRE(complete(a, mine.token, "") == FinishStatus::ok);
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::duplicate);
        CHECK(r.stored_result.empty());
    }

    TEST_CASE_FIXTURE(Claims, "a complete repeated by its owner after success is still ok") {
        auto mine = acquire(a);
        REQUIRE(complete(a, mine.token, "first") == FinishStatus::ok);
        CHECK(complete(a, mine.token, "second") == FinishStatus::ok);
        CHECK(claim(a).stored_result == "first");
        CHECK(complete(a, mine.token, "other", StoredOutcome::dead_lettered) == FinishStatus::lost);
    }

    TEST_CASE_FIXTURE(Claims, "a wrong token or owner is lost and changes nothing") {
        auto mine = acquire(a);
        auto wrong = exo::FencingToken{mine.token.value + 1};
        auto before = record();
        auto ttl_before = pttl();

        CHECK(complete(a, wrong, "x") == FinishStatus::lost);
        CHECK(extend(a, wrong, 100'000ms) == FinishStatus::lost);
        CHECK(release(a, wrong) == FinishStatus::lost);
        CHECK(complete(b, mine.token, "x") == FinishStatus::lost);
        CHECK(extend(b, mine.token, 100'000ms) == FinishStatus::lost);
        CHECK(release(b, mine.token) == FinishStatus::lost);

        CHECK(record() == before);
        CHECK(pttl() <= ttl_before);
    }

    TEST_CASE_FIXTURE(Claims, "complete, extend and release of a missing key are lost") {
        exo::FencingToken token{12345};
        CHECK(complete(a, token, "x") == FinishStatus::lost);
        CHECK(extend(a, token) == FinishStatus::lost);
        CHECK(release(a, token) == FinishStatus::lost);
        CHECK(redis.command({"EXISTS", a.redis_key(key)}).integer == 0);
    }

    TEST_CASE_FIXTURE(Claims, "extend and release of a completed claim are lost") {
        auto mine = acquire(a);
        REQUIRE(complete(a, mine.token, "done") == FinishStatus::ok);
        auto before = record();
        CHECK(extend(a, mine.token) == FinishStatus::lost);
        CHECK(release(a, mine.token) == FinishStatus::lost);
        CHECK(record() == before);
    }

    TEST_CASE_FIXTURE(Claims, "extend keeps another owner out after the original lease") {
        auto mine = acquire(a, kShortLease);
        const auto original = lease_until();
        CHECK(extend(a, mine.token, kLease) == FinishStatus::ok);
        CHECK(pttl() > 60'000 - 1'000);
        wait_for_redis_time(original);
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::conflict);
        CHECK(r.retry_after > kShortLease);
    }

    TEST_CASE_FIXTURE(Claims, "a dead-lettered claim answers dead-lettered with the reason") {
        auto mine = acquire(a);
        CHECK(complete(a, mine.token, "payload is not JSON", StoredOutcome::dead_lettered) ==
              FinishStatus::ok);
        CHECK(record()["state"] == "DEAD_LETTERED");
        for (auto* store : {&a, &b}) {
            auto r = claim(*store);
            CHECK(r.status == ClaimStatus::dead_lettered);
            CHECK(r.stored_result == "payload is not JSON");
        }
    }

    TEST_CASE_FIXTURE(Claims, "release deletes the claim so the next claim is acquired at once") {
        auto mine = acquire(a);
        CHECK(release(a, mine.token) == FinishStatus::ok);
        CHECK(redis.command({"EXISTS", a.redis_key(key)}).integer == 0);
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::acquired);
        CHECK(r.token > mine.token);
    }

    TEST_CASE_FIXTURE(Claims, "tokens keep increasing after redis forgets the key") {
        auto first = acquire(a);
        redis.command({"DEL", a.redis_key(key)});  // what FLUSHALL does to this key
        auto second = acquire(b);
        CHECK(second.token > first.token);
        REQUIRE(release(b, second.token) == FinishStatus::ok);
        auto third = acquire(a);
        CHECK(third.token > second.token);
    }

    TEST_CASE_FIXTURE(Claims, "a token above the clock still grows by one on takeover") {
        // A token handed out by a server whose clock ran ahead (before a failover).
        const long long ahead = 4'000'000'000'000'000;  // year 2096 in microseconds
        redis.command({"HSET", a.redis_key(key), "state", "PROCESSING", "owner", "owner-a", "token",
                       std::to_string(ahead), "lease_until", "0"});
        auto r = claim(b);
        CHECK(r.status == ClaimStatus::taken_over);
        CHECK(r.token.value == ahead + 1);
    }

    TEST_CASE_FIXTURE(Claims, "claims still work after redis forgets its scripts") {
        auto mine = acquire(a);  // loads claim.lua
        REQUIRE(redis.command({"SCRIPT", "FLUSH"}).type == exo::RedisReply::Type::status);
        auto before = redis.round_trips();
        auto r = claim(a);
        CHECK(r.status == ClaimStatus::acquired);
        CHECK(r.token == mine.token);
        // The NOSCRIPT answer, then SCRIPT LOAD with the retried call in one round trip.
        CHECK(redis.round_trips() == before + 2);

        REQUIRE(redis.command({"SCRIPT", "FLUSH"}).type == exo::RedisReply::Type::status);
        CHECK(complete(a, mine.token, "done") == FinishStatus::ok);
        CHECK(claim(b).status == ClaimStatus::duplicate);
    }

    TEST_CASE_FIXTURE(Claims, "a batch of 100 claims costs one round trip") {
        std::vector<std::string> keys;
        keys.reserve(100);
        for (int i = 0; i < 100; ++i) keys.push_back(key + "-" + std::to_string(i));
        acquire(a);  // load the script first: the batch alone is then measured
        auto before = redis.round_trips();
        auto results = a.claim(keys, kLease);
        CHECK(redis.round_trips() == before + 1);
        REQUIRE(results.size() == 100);
        for (const auto& r : results) CHECK(r.status == ClaimStatus::acquired);

        std::vector<exo::CompleteRequest> done;
        for (std::size_t i = 0; i < keys.size(); ++i)
            done.push_back({keys[i], results[i].token, "r" + std::to_string(i)});
        before = redis.round_trips();
        auto finished = a.complete(done, kTtl);
        CHECK(redis.round_trips() <= before + 2);  // + SCRIPT LOAD of complete.lua
        for (auto f : finished) CHECK(f == FinishStatus::ok);

        auto again = b.claim(keys, kLease);
        for (std::size_t i = 0; i < keys.size(); ++i) {
            CHECK(again[i].status == ClaimStatus::duplicate);
            CHECK(again[i].stored_result == "r" + std::to_string(i));
        }
        for (const auto& k : keys) redis.command({"DEL", a.redis_key(k)});
    }

    TEST_CASE_FIXTURE(Claims, "a batch answers every key as a call with that key alone would") {
        const std::string fresh = key + "-new", done = key + "-duplicate",
                          dead = key + "-dead-lettered", busy = key + "-conflict",
                          stale = key + "-takeover", mine = key + "-mine";
        const std::vector<std::string> keys{fresh, done, dead, busy, stale, mine, fresh};
        auto finish = [&](const std::string& k, std::string result, StoredOutcome state) {
            auto c = a.claim({k}, kLease).at(0);
            REQUIRE(c.status == ClaimStatus::acquired);
            REQUIRE(a.complete({{k, c.token, std::move(result), state}}, kTtl).at(0) ==
                    FinishStatus::ok);
        };
        finish(done, "stored result", StoredOutcome::applied);
        finish(dead, "stored reason", StoredOutcome::dead_lettered);
        REQUIRE(b.claim({busy}, kLease).at(0).status == ClaimStatus::acquired);
        const auto old = b.claim({stale}, kShortLease).at(0);
        const auto held = a.claim({mine}, kLease).at(0);
        wait_for_redis_time(
            std::stoll(redis.command({"HGET", a.redis_key(stale), "lease_until"}).str));

        const auto rt = redis.round_trips();
        const auto sent = redis.commands_sent();
        const auto r = a.claim(keys, kLease);
        CHECK(redis.round_trips() == rt + 1);
        CHECK(redis.commands_sent() == sent + 1);  // one EVALSHA for all seven
        REQUIRE(r.size() == keys.size());
        CHECK(r[0].status == ClaimStatus::acquired);
        CHECK(r[0].token.value > 0);
        CHECK(r[1].status == ClaimStatus::duplicate);
        CHECK(r[1].stored_result == "stored result");
        CHECK(r[2].status == ClaimStatus::dead_lettered);
        CHECK(r[2].stored_result == "stored reason");
        CHECK(r[3].status == ClaimStatus::conflict);
        CHECK(r[3].retry_after > 0ms);
        CHECK(r[3].retry_after <= kLease);
        CHECK(r[4].status == ClaimStatus::taken_over);
        CHECK(r[4].token > old.token);
        CHECK(r[5].status == ClaimStatus::acquired);
        CHECK(r[5].token == held.token);
        // The same key twice: the second sees the first's claim (re-entrant).
        CHECK(r[6].status == ClaimStatus::acquired);
        CHECK(r[6].token == r[0].token);
        CHECK(redis.command({"HGET", a.redis_key(stale), "owner"}).str == "owner-a");
        CHECK(redis.command({"HGET", a.redis_key(busy), "owner"}).str == "owner-b");

        // The finishing scripts, each key with its own token and outcome.
        const exo::FencingToken wrong{r[5].token.value + 1};
        CHECK(
            a.extend({{fresh, r[0].token}, {mine, wrong}, {stale, r[4].token}, {busy, r[3].token}},
                     kLease) == std::vector<FinishStatus>{FinishStatus::ok, FinishStatus::lost,
                                                          FinishStatus::ok, FinishStatus::lost});
        CHECK(a.complete({{fresh, r[0].token, "fresh result"},
                          {stale, r[4].token, "why", StoredOutcome::dead_lettered},
                          {mine, wrong, "x"},
                          {fresh, r[0].token, "again"},
                          {key + "-missing", r[0].token, "x"}},
                         kTtl) == std::vector<FinishStatus>{FinishStatus::ok, FinishStatus::ok,
                                                            FinishStatus::lost, FinishStatus::ok,
                                                            FinishStatus::lost});
        CHECK(a.release(
                  {{mine, wrong}, {mine, held.token}, {fresh, r[0].token}, {mine, held.token}}) ==
              std::vector<FinishStatus>{FinishStatus::lost, FinishStatus::ok, FinishStatus::lost,
                                        FinishStatus::lost});
        const auto after = b.claim({fresh, stale, mine}, kLease);
        CHECK(after[0].status == ClaimStatus::duplicate);
        CHECK(after[0].stored_result == "fresh result");
        CHECK(after[1].status == ClaimStatus::dead_lettered);
        CHECK(after[1].stored_result == "why");
        CHECK(after[2].status == ClaimStatus::acquired);
        for (const auto& k : keys) redis.command({"DEL", a.redis_key(k)});
    }

    TEST_CASE_FIXTURE(Claims, "a batch of 2500 keys is three script calls in one round trip") {
        static_assert(exo::ClaimStore::max_keys_per_call == 1000);
        std::vector<std::string> keys;
        keys.reserve(2500);
        for (int i = 0; i < 2500; ++i) keys.push_back(key + "-" + std::to_string(i));
        acquire(a);  // load claim.lua first: the batch alone is then measured
        auto rt = redis.round_trips();
        auto sent = redis.commands_sent();
        const auto claimed = a.claim(keys, kLease);
        CHECK(redis.round_trips() == rt + 1);
        CHECK(redis.commands_sent() == sent + 3);
        REQUIRE(claimed.size() == keys.size());
        std::vector<exo::CompleteRequest> done;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            REQUIRE(claimed[i].status == ClaimStatus::acquired);
            done.push_back({keys[i], claimed[i].token, "r" + std::to_string(i)});
        }
        for (const auto& k : {keys.front(), keys[999], keys[1000], keys[2000], keys.back()})
            CHECK(redis.command({"HGET", a.redis_key(k), "owner"}).str == "owner-a");

        CHECK(complete(a, acquire(a).token, "loads complete.lua") == FinishStatus::ok);
        rt = redis.round_trips();
        sent = redis.commands_sent();
        const auto finished = a.complete(done, kTtl);
        CHECK(redis.round_trips() == rt + 1);
        CHECK(redis.commands_sent() == sent + 3);
        REQUIRE(finished.size() == keys.size());
        for (auto f : finished) REQUIRE(f == FinishStatus::ok);

        // Every key got its own result back, in order across the calls.
        const auto again = b.claim(keys, kLease);
        REQUIRE(again.size() == keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            REQUIRE(again[i].status == ClaimStatus::duplicate);
            REQUIRE(again[i].stored_result == "r" + std::to_string(i));
        }
        std::vector<std::string> del{"DEL"};
        for (const auto& k : keys) del.push_back(a.redis_key(k));
        redis.command(del);
    }

    TEST_CASE_FIXTURE(Claims, "a key in error in the middle of a batch fails alone") {
        const std::string first = key + "-first", bad = key + "-bad", last = key + "-last";
        redis.command({"SET", a.redis_key(bad), "not a hash"});

        // The script answers the other keys in place around the error.
        const std::string claim_lua = [] {
            for (const auto& f : exo::embedded::lua::files())
                if (f.name == "claim.lua") return std::string(f.contents);
            return std::string();
        }();
        auto raw = redis.eval_many(claim_lua, {{"3", a.redis_key(first), a.redis_key(bad),
                                                a.redis_key(last), "owner-a", "10000"}});
        REQUIRE(raw.size() == 1);
        REQUIRE(raw[0].elements.size() == 3);
        CHECK(raw[0].elements[0].elements.at(0).str == "ACQUIRED");
        CHECK(raw[0].elements[1].type == exo::RedisReply::Type::error);
        CHECK(raw[0].elements[1].str.find("WRONGTYPE") != std::string::npos);
        CHECK(raw[0].elements[2].elements.at(0).str == "ACQUIRED");
        const auto field_of = [&](const std::string& k, const char* field) {
            return redis.command({"HGET", a.redis_key(k), field}).str;
        };
        const auto forget = [&] { redis.command({"DEL", a.redis_key(first), a.redis_key(last)}); };

        // ClaimStore answers that key alone as failed, naming it and the error...
        forget();
        const auto round_trips = redis.round_trips();
        const auto claimed = a.claim({first, bad, last}, kLease);
        CHECK(redis.round_trips() == round_trips + 1);  // nothing sent again
        REQUIRE(claimed.size() == 3);
        CHECK(claimed[0].status == ClaimStatus::acquired);
        CHECK(claimed[1].status == ClaimStatus::failed);
        CHECK(claimed[1].error.find("claim.lua on key '" + a.redis_key(bad) + "'") !=
              std::string::npos);
        CHECK(claimed[1].error.find("WRONGTYPE") != std::string::npos);
        CHECK(claimed[2].status == ClaimStatus::acquired);
        // ...the keys around it are claimed, with their tokens...
        CHECK(field_of(first, "owner") == "owner-a");
        CHECK(field_of(last, "owner") == "owner-a");
        CHECK(field_of(first, "token") == std::to_string(claimed[0].token.value));
        // ...and the connection stays open: an error reply is not an outage.
        CHECK(redis.connected());
        forget();
        redis.command({"DEL", a.redis_key(bad)});
        redis.command({"HSET", a.redis_key(bad), "state", "SOMETHING_ELSE"});
        const auto unknown = a.claim({first, bad, last}, kLease);
        CHECK(unknown[1].status == ClaimStatus::failed);
        CHECK(unknown[1].error.find("unknown state") != std::string::npos);
        CHECK(field_of(first, "owner") == "owner-a");
        CHECK(field_of(last, "owner") == "owner-a");
        // Claiming again is re-entrant: the same tokens.
        const auto first_token = field_of(first, "token"), last_token = field_of(last, "token");
        redis.command({"DEL", a.redis_key(bad)});
        const auto retried = a.claim({first, bad, last}, kLease);
        CHECK(std::to_string(retried[0].token.value) == first_token);
        CHECK(retried[1].status == ClaimStatus::acquired);
        CHECK(std::to_string(retried[2].token.value) == last_token);

        // The same for the finishing scripts: the keys around the error are done.
        redis.command({"DEL", a.redis_key(bad)});
        redis.command({"SET", a.redis_key(bad), "not a hash"});
        CHECK_THROWS_AS(
            a.extend({{first, retried[0].token}, {bad, retried[1].token}, {last, retried[2].token}},
                     kLease),
            exo::RedisReplyError);
        CHECK_THROWS_AS(a.complete({{first, retried[0].token, "one"},
                                    {bad, retried[1].token, "two"},
                                    {last, retried[2].token, "three"}},
                                   kTtl),
                        exo::RedisReplyError);
        CHECK(field_of(first, "result") == "one");
        CHECK(field_of(last, "result") == "three");
        CHECK_THROWS_AS(a.release({{first, retried[0].token}, {bad, retried[1].token}}),
                        exo::RedisReplyError);
        for (const auto& k : {first, bad, last}) redis.command({"DEL", a.redis_key(k)});
    }

    TEST_CASE_FIXTURE(Claims, "an empty batch costs no round trip") {
        auto before = redis.round_trips();
        CHECK(a.claim({}, kLease).empty());
        CHECK(a.complete({}, kTtl).empty());
        CHECK(redis.round_trips() == before);
    }

    TEST_CASE_FIXTURE(Claims,
                      "a key's error reply fails that key's claim, naming the script and key, "
                      "and throws from the finishing scripts") {
        redis.command({"SET", a.redis_key(key), "not a hash"});
        const auto r = claim(a);
        CHECK(r.status == ClaimStatus::failed);
        CHECK(r.error.find("claim.lua") != std::string::npos);
        CHECK(r.error.find(a.redis_key(key)) != std::string::npos);
        CHECK(r.error.find("WRONGTYPE") != std::string::npos);
        CHECK_THROWS_AS(extend(a, exo::FencingToken{1}), exo::RedisReplyError);
        CHECK(redis.connected());
    }

    TEST_CASE_FIXTURE(Claims, "a claim record in an unknown state fails that key's claim") {
        redis.command({"HSET", a.redis_key(key), "state", "SOMETHING_ELSE"});
        CHECK(claim(a).status == ClaimStatus::failed);
    }

    TEST_CASE_FIXTURE(Claims,
                      "a claim call that fails as a whole gives back what the batch's other "
                      "calls acquired, and keeps the connection") {
        // A user that may touch only keys starting with 'a': the call holding a
        // 'b' key is refused as a whole (NOPERM), the call before it runs.
        const std::string user = exo::testing::unique_name("claimuser");
        REQUIRE(redis
                    .command({"ACL", "SETUSER", user, "on", ">pw", "~" + a.redis_key("a") + "*",
                              "+@all"})
                    .type == exo::RedisReply::Type::status);
        exo::RedisConnection limited{exo::testing::redis_options()};
        REQUIRE(limited.command({"AUTH", user, "pw"}).type == exo::RedisReply::Type::status);
        exo::ClaimStore store{limited, kPrefix, group, "owner-a"};
        std::vector<std::string> keys;
        for (std::size_t i = 0; i < exo::ClaimStore::max_keys_per_call; ++i)
            keys.push_back("a" + key + "-" + std::to_string(i));
        keys.push_back("b" + key);  // the second call
        try {
            store.claim(keys, kLease);
            FAIL("a claim call refused as a whole did not throw");
        } catch (const exo::RedisReplyError& e) {
            CHECK(std::string(e.what()).find("NOPERM") != std::string::npos);
        }
        // The first call's 1,000 claims were released, not left PROCESSING for a lease.
        std::vector<std::string> exists{"EXISTS"};
        for (std::size_t i = 0; i + 1 < keys.size(); ++i) exists.push_back(a.redis_key(keys[i]));
        CHECK(redis.command(exists).integer == 0);
        CHECK(limited.connected());
        redis.command({"ACL", "DELUSER", user});
    }

    TEST_CASE_FIXTURE(Claims, "a lease or ttl of zero is rejected before anything is sent") {
        auto before = redis.round_trips();
        CHECK_THROWS_AS(a.claim({key}, 0ms), std::invalid_argument);
        CHECK_THROWS_AS(a.extend({{key, exo::FencingToken{1}}}, 0ms), std::invalid_argument);
        CHECK_THROWS_AS(a.complete({{key, exo::FencingToken{1}, "r"}}, 0ms), std::invalid_argument);
        CHECK(redis.round_trips() == before);
    }
}

TEST_SUITE("redis connection") {
    TEST_CASE("connecting to a closed port throws a redis io error") {
        auto options = exo::testing::redis_options();
        options.port = 1;  // privileged and unused on test machines
        options.connect_timeout = 500ms;
        CHECK_THROWS_AS(exo::RedisConnection{options}, exo::RedisIoError);
    }

    TEST_CASE("a killed connection throws redis io errors until reconnect") {
        exo::RedisConnection victim{exo::testing::redis_options()};
        exo::RedisConnection killer{exo::testing::redis_options()};
        auto id = victim.command({"CLIENT", "ID"});
        REQUIRE(id.type == exo::RedisReply::Type::integer);
        REQUIRE(killer.command({"CLIENT", "KILL", "ID", std::to_string(id.integer)}).integer == 1);

        CHECK_THROWS_AS(victim.command({"PING"}), exo::RedisIoError);
        CHECK_THROWS_AS(victim.command({"PING"}), exo::RedisIoError);  // still dead
        victim.reconnect();
        auto pong = victim.command({"PING"});
        CHECK(pong.type == exo::RedisReply::Type::status);
        CHECK(pong.str == "PONG");
    }

    TEST_CASE("a command slower than the command timeout throws a redis io error") {
        auto options = exo::testing::redis_options();
        options.command_timeout = 100ms;
        exo::RedisConnection redis{options};
        auto list = exo::testing::unique_name("never-pushed");
        auto started = std::chrono::steady_clock::now();
        CHECK_THROWS_AS(redis.command({"BLPOP", list, "5"}), exo::RedisIoError);
        CHECK(std::chrono::steady_clock::now() - started < 2s);
        redis.reconnect();
        CHECK(redis.command({"PING"}).str == "PONG");
    }

    TEST_CASE("a pipeline returns error replies in place instead of throwing") {
        exo::RedisConnection redis{exo::testing::redis_options()};
        auto key = exo::testing::unique_name("pipeline");
        auto before = redis.round_trips();
        auto replies =
            redis.pipeline({{"SET", key, "v"}, {"INCR", key}, {"GET", key}, {"DEL", key}});
        CHECK(redis.round_trips() == before + 1);
        REQUIRE(replies.size() == 4);
        CHECK(replies[0].type == exo::RedisReply::Type::status);
        CHECK(replies[1].type == exo::RedisReply::Type::error);
        CHECK(replies[2].type == exo::RedisReply::Type::string);
        CHECK(replies[2].str == "v");
        CHECK(replies[3].integer == 1);
    }

    TEST_CASE("binary-safe arguments and replies survive the round trip") {
        exo::RedisConnection redis{exo::testing::redis_options()};
        auto key = exo::testing::unique_name("binary");
        const std::string value("a\0b\r\nc", 6);
        redis.command({"SET", key, value});
        CHECK(redis.command({"GET", key}).str == value);
        redis.command({"DEL", key});
    }

    TEST_CASE("a wrong password is a reply error at connect") {
        auto options = exo::testing::redis_options();
        options.password = "definitely-not-the-password";
        CHECK_THROWS_AS(exo::RedisConnection{options}, exo::RedisReplyError);
    }

    TEST_CASE("a database number is selected at connect") {
        auto options = exo::testing::redis_options();
        options.db = 3;
        exo::RedisConnection redis{options};
        auto key = exo::testing::unique_name("db");
        redis.command({"SET", key, "in-db-3"});
        exo::RedisConnection db0{exo::testing::redis_options()};
        CHECK(db0.command({"EXISTS", key}).integer == 0);
        redis.command({"DEL", key});
    }
}

TEST_CASE(
    "a completed claim of group 'g' and key 'eu:42' is not a duplicate for group 'g:eu' and "
    "key '42'") {
    exo::RedisConnection redis{exo::testing::redis_options()};
    const std::string group = exo::testing::unique_name("billing");
    exo::ClaimStore first{redis, kPrefix, group, "owner-a"};
    exo::ClaimStore second{redis, kPrefix, group + ":eu", "owner-b"};
    auto got = first.claim({"eu:42"}, kLease).at(0);
    REQUIRE(got.status == ClaimStatus::acquired);
    REQUIRE(first.complete({{"eu:42", got.token, "applied", StoredOutcome::applied}}, kTtl).at(0) ==
            FinishStatus::ok);
    // Before claim keys were escaped, both were "<prefix>:<group>:eu:42".
    CHECK(second.claim({"42"}, kLease).at(0).status == ClaimStatus::acquired);
    CHECK(first.redis_key("eu:42") != second.redis_key("42"));
    redis.command({"DEL", first.redis_key("eu:42"), second.redis_key("42")});
}
