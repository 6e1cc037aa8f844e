// Reading the claim scripts' replies: redis/claim_reply.hpp. No servers.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis/claim_reply.hpp"
#include "redis/redis_error.hpp"

using namespace exo;
using std::chrono::milliseconds;

namespace {

const std::string kKey = "exo:payments:evt-1";

RedisReply text(std::string s, RedisReply::Type type = RedisReply::Type::string) {
    RedisReply r;
    r.type = type;
    r.str = std::move(s);
    return r;
}

RedisReply integer(long long v) {
    RedisReply r;
    r.type = RedisReply::Type::integer;
    r.integer = v;
    return r;
}

RedisReply array(std::vector<RedisReply> elements) {
    RedisReply r;
    r.type = RedisReply::Type::array;
    r.elements = std::move(elements);
    return r;
}

RedisReply claim_reply(std::string status, std::string value) {
    return array({text(std::move(status)), text(std::move(value))});
}

RedisReply error_reply(std::string message) {
    return text(std::move(message), RedisReply::Type::error);
}

// The RedisReplyError message parse_claim_reply raises for `reply`.
std::string claim_error_of(const RedisReply& reply) {
    try {
        parse_claim_reply(reply, kKey);
    } catch (const RedisReplyError& e) {
        return e.what();
    }
    FAIL("expected a RedisReplyError");
    return {};
}

std::string finish_error_of(const RedisReply& reply) {
    try {
        parse_finish_reply("complete.lua", reply, kKey);
    } catch (const RedisReplyError& e) {
        return e.what();
    }
    FAIL("expected a RedisReplyError");
    return {};
}

}  // namespace

TEST_SUITE("claim replies") {
    TEST_CASE("ACQUIRED gives the claim with its fencing token") {
        const ClaimResult r = parse_claim_reply(claim_reply("ACQUIRED", "1700000000123"), kKey);
        CHECK(r.status == ClaimStatus::acquired);
        CHECK(r.token == FencingToken{1700000000123});
    }

    TEST_CASE("TAKEN_OVER gives the claim with its fencing token") {
        const ClaimResult r = parse_claim_reply(claim_reply("TAKEN_OVER", "42"), kKey);
        CHECK(r.status == ClaimStatus::taken_over);
        CHECK(r.token == FencingToken{42});
    }

    TEST_CASE("DUPLICATE gives the stored result, even an empty one") {
        ClaimResult r = parse_claim_reply(claim_reply("DUPLICATE", "{\"ok\":true}"), kKey);
        CHECK(r.status == ClaimStatus::duplicate);
        CHECK(r.stored_result == "{\"ok\":true}");
        r = parse_claim_reply(claim_reply("DUPLICATE", ""), kKey);
        CHECK(r.status == ClaimStatus::duplicate);
        CHECK(r.stored_result.empty());
    }

    TEST_CASE("DUPLICATE and DEAD_LETTERED give the stored fingerprint when claim.lua sends one") {
        ClaimResult r =
            parse_claim_reply(array({text("DUPLICATE"), text("r"), text("ab12")}), kKey);
        CHECK(r.status == ClaimStatus::duplicate);
        CHECK(r.stored_result == "r");
        CHECK(r.stored_fingerprint == "ab12");
        r = parse_claim_reply(array({text("DEAD_LETTERED"), text("why"), text("")}), kKey);
        CHECK(r.status == ClaimStatus::dead_lettered);
        CHECK(r.stored_fingerprint.empty());
        // A claim.lua loaded by an older exo answers without one.
        CHECK(parse_claim_reply(claim_reply("DUPLICATE", "r"), kKey).stored_fingerprint.empty());
        CHECK_THROWS_AS(parse_claim_reply(array({text("DUPLICATE"), text("r"), integer(1)}), kKey),
                        RedisReplyError);
    }

    TEST_CASE("DEAD_LETTERED gives the stored reason") {
        const ClaimResult r = parse_claim_reply(claim_reply("DEAD_LETTERED", "bad amount"), kKey);
        CHECK(r.status == ClaimStatus::dead_lettered);
        CHECK(r.stored_result == "bad amount");
    }

    TEST_CASE("CONFLICT gives the remaining lease to wait") {
        const ClaimResult r = parse_claim_reply(claim_reply("CONFLICT", "2500"), kKey);
        CHECK(r.status == ClaimStatus::conflict);
        CHECK(r.retry_after == milliseconds(2500));
    }

    TEST_CASE("status replies are read like bulk strings") {
        const ClaimResult r = parse_claim_reply(array({text("ACQUIRED", RedisReply::Type::status),
                                                       text("7", RedisReply::Type::status)}),
                                                kKey);
        CHECK(r.status == ClaimStatus::acquired);
        CHECK(r.token == FencingToken{7});
    }

    TEST_CASE("a claim reply that is not a two-element array is refused") {
        CHECK_THROWS_AS(parse_claim_reply(array({}), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED")}), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED"), text("1"), text("2")}), kKey),
                        RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(text("ACQUIRED"), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(integer(1), kKey), RedisReplyError);
    }

    TEST_CASE("a claim reply whose elements are not text is refused") {
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED"), integer(5)}), kKey),
                        RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({integer(1), text("5")}), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED"), RedisReply{}}), kKey),
                        RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED"), array({text("5")})}), kKey),
                        RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(array({text("ACQUIRED"), error_reply("5")}), kKey),
                        RedisReplyError);
    }

    TEST_CASE("a token that is not a positive decimal integer is refused") {
        for (const char* token :
             {"", "0", "-1", "abc", "12x", " 12", "+12", "1.5", "99999999999999999999", "0x10"}) {
            CAPTURE(token);
            CHECK_THROWS_AS(parse_claim_reply(claim_reply("ACQUIRED", token), kKey),
                            RedisReplyError);
            CHECK_THROWS_AS(parse_claim_reply(claim_reply("TAKEN_OVER", token), kKey),
                            RedisReplyError);
        }
    }

    TEST_CASE("a remaining lease that is not a positive integer is refused") {
        for (const char* ms : {"", "0", "-5", "soon", "10ms"}) {
            CAPTURE(ms);
            CHECK_THROWS_AS(parse_claim_reply(claim_reply("CONFLICT", ms), kKey), RedisReplyError);
        }
    }

    TEST_CASE("an unknown claim status is refused, naming the key and the reply") {
        const std::string message = claim_error_of(claim_reply("RESERVED", "1"));
        CHECK(message.find("claim.lua") != std::string::npos);
        CHECK(message.find(kKey) != std::string::npos);
        CHECK(message.find("RESERVED") != std::string::npos);
        CHECK_THROWS_AS(parse_claim_reply(claim_reply("acquired", "1"), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_claim_reply(claim_reply("", "1"), kKey), RedisReplyError);
    }

    TEST_CASE("an error in one key's place fails that key alone, naming the key and the error") {
        const auto r = parse_claim_reply(
            error_reply("WRONGTYPE Operation against a key holding the wrong kind of value"), kKey);
        CHECK(r.status == ClaimStatus::failed);
        CHECK(r.error.find("claim.lua") != std::string::npos);
        CHECK(r.error.find(kKey) != std::string::npos);
        CHECK(r.error.find("WRONGTYPE") != std::string::npos);
        // The finishing scripts keep refusing it: their callers only settle claims.
        CHECK_THROWS_AS(parse_finish_reply("complete.lua", error_reply("WRONGTYPE x"), kKey),
                        RedisReplyError);
    }

    TEST_CASE("a nil claim reply is refused") {
        CHECK(claim_error_of(RedisReply{}).find("nil") != std::string::npos);
    }

    TEST_CASE("OK and LOST are the finish statuses") {
        CHECK(parse_finish_reply("extend.lua", text("OK"), kKey) == FinishStatus::ok);
        CHECK(parse_finish_reply("release.lua", text("LOST"), kKey) == FinishStatus::lost);
        CHECK(parse_finish_reply("complete.lua", text("OK", RedisReply::Type::status), kKey) ==
              FinishStatus::ok);
        CHECK(parse_finish_reply("complete.lua", text("LOST", RedisReply::Type::status), kKey) ==
              FinishStatus::lost);
    }

    TEST_CASE("any other finish reply is refused, naming the script") {
        CHECK(finish_error_of(text("DONE")).find("complete.lua") != std::string::npos);
        CHECK_THROWS_AS(parse_finish_reply("extend.lua", text("ok"), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_finish_reply("extend.lua", text(""), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_finish_reply("extend.lua", integer(1), kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_finish_reply("extend.lua", RedisReply{}, kKey), RedisReplyError);
        CHECK_THROWS_AS(parse_finish_reply("extend.lua", array({text("OK")}), kKey),
                        RedisReplyError);
        CHECK(finish_error_of(error_reply("OK")).find("answered with an error") !=
              std::string::npos);
    }

    TEST_CASE("a multi-key reply is split into one reply per key, in order") {
        auto replies =
            split_per_key("claim.lua",
                          array({claim_reply("ACQUIRED", "1"), error_reply("WRONGTYPE x"),
                                 claim_reply("DUPLICATE", "r")}),
                          3, kKey);
        REQUIRE(replies.size() == 3);
        CHECK(parse_claim_reply(replies[0], kKey).token == FencingToken{1});
        CHECK(parse_claim_reply(replies[2], kKey).stored_result == "r");
        // An error in one key's place fails that key alone, as its own reply.
        const auto failed = parse_claim_reply(replies[1], kKey);
        CHECK(failed.status == ClaimStatus::failed);
        CHECK(failed.error.find("WRONGTYPE x") != std::string::npos);
    }

    TEST_CASE("a multi-key error reply fails the whole call, naming the script and first key") {
        try {
            split_per_key("complete.lua", error_reply("ERR complete.lua: ttl_ms must be"), 2, kKey);
            FAIL("an error reply was split");
        } catch (const RedisReplyError& e) {
            const std::string message = e.what();
            CHECK(message.find("complete.lua on 2 key(s)") != std::string::npos);
            CHECK(message.find(kKey) != std::string::npos);
            CHECK(message.find("ttl_ms must be") != std::string::npos);
            CHECK(message.find("retry") != std::string::npos);
        }
    }

    TEST_CASE("a multi-key reply without exactly one entry per key is refused") {
        CHECK_THROWS_AS(split_per_key("extend.lua", array({text("OK")}), 2, kKey), RedisReplyError);
        CHECK_THROWS_AS(split_per_key("extend.lua", array({text("OK"), text("OK")}), 1, kKey),
                        RedisReplyError);
        CHECK_THROWS_AS(split_per_key("extend.lua", text("OK"), 1, kKey), RedisReplyError);
        CHECK_THROWS_AS(split_per_key("extend.lua", RedisReply{}, 1, kKey), RedisReplyError);
    }

    TEST_CASE("a refused multi-key reply of many entries is shown only in part") {
        std::vector<RedisReply> many(1000, text("OK"));
        try {
            split_per_key("release.lua", array(std::move(many)), 999, kKey);
            FAIL("1000 entries were split into 999");
        } catch (const RedisReplyError& e) {
            CHECK(std::string(e.what()).size() < 600);
        }
    }
}
