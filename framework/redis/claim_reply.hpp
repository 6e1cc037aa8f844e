#pragma once
// What the claim scripts (lua/*.lua) answer, read into plain values. Pure: no I/O
// and no hiredis, so it is unit-tested and fuzzed without a server; ClaimStore
// (claim_store.hpp) sends the scripts, splits each call's reply into one reply per
// key (split_per_key) and hands each of those to parse_claim_reply or
// parse_finish_reply.
//
// Errors: anything but a reply the scripts can give (nil, another shape, an unknown
// status, a token or lease that is not a positive integer) throws RedisReplyError,
// whose message names the script, the Redis key and the reply. An error reply in
// one key's place is a reply the scripts give (a key that is not a claim hash):
// parse_claim_reply answers it as that key's ClaimStatus::failed, so it fails its
// record alone; the finishing scripts' readers still throw for it.
// Thread-safety: the functions share no state.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <exo/types.hpp>
#include "core/fencing_token.hpp"
#include "redis/redis_connection.hpp"  // RedisReply; declares no hiredis type

namespace exo {

enum class ClaimStatus {
    acquired,       // new key: ours, with `token`
    taken_over,     // PROCESSING past its lease: ours, with a higher `token`
    duplicate,      // COMPLETED: `stored_result` holds the handler's result
    conflict,       // PROCESSING by another live owner: retry after `retry_after`
    dead_lettered,  // DEAD_LETTERED earlier: `stored_result` holds the reason
    // The key alone failed (an error reply in its place: WRONGTYPE, an unknown
    // state): `error` says which key and why. Not claimed; the rest of the call is.
    failed,
};

struct ClaimResult {
    ClaimStatus status = ClaimStatus::conflict;
    FencingToken token{0};                     // acquired / taken_over: > 0
    std::string stored_result;                 // duplicate / dead_lettered (may be empty)
    std::string stored_fingerprint;            // duplicate / dead_lettered: empty if none
    std::chrono::milliseconds retry_after{0};  // conflict: remaining lease, > 0
    std::string error;                         // failed: script, Redis key and Redis's error
};

// ok: the script did what was asked. lost: the claim is no longer ours (taken over,
// expired, or Redis flushed): PostgreSQL decides, so callers count and log it.
enum class FinishStatus { ok, lost };

// The reply of one call of a script (named by `script`) on `keys` keys: an array
// with one entry per key, in the order the keys were sent, each the reply for that
// key alone (an error reply there fails that key only). Returns the entries, moved
// out of `reply`. Throws RedisReplyError for an error reply (a bad argument or a
// script error: the whole call failed) or anything but an array of `keys` entries;
// `first_key` labels the message.
std::vector<RedisReply> split_per_key(const char* script, RedisReply reply, std::size_t keys,
                                      const std::string& first_key);

// claim.lua's reply for one key: a two-element array of text (bulk string or
// status) {STATUS, VALUE}, where STATUS is one of
//   ACQUIRED / TAKEN_OVER  VALUE = the fencing token, a decimal integer > 0;
//   DUPLICATE              VALUE = the stored result;
//   DEAD_LETTERED          VALUE = the stored reason;
//   CONFLICT               VALUE = the remaining lease in ms, a decimal integer > 0;
// or an error reply: ClaimStatus::failed, with `error` naming the key and the reply.
// `redis_key` labels the messages. Throws RedisReplyError otherwise.
ClaimResult parse_claim_reply(const RedisReply& reply, const std::string& redis_key);

// The reply of extend.lua, complete.lua or release.lua (named by `script`, for the
// message): the text "OK" or "LOST". Throws RedisReplyError otherwise.
FinishStatus parse_finish_reply(const char* script, const RedisReply& reply,
                                const std::string& redis_key);

}  // namespace exo
