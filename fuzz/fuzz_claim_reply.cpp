// Fuzzes the reading of the claim scripts' replies (redis/claim_reply.hpp).
//
// Input: one reply in a line-per-element form of RESP (so seeds are readable and
// no length prefix has to match): each line, without its "\r\n" or "\n", is
//   +TEXT  a status          $TEXT  a bulk string (the rest of the line)
//   -TEXT  an error          :N     an integer
//   *N     an array of the next N elements (N capped at 8; fewer if the input ends)
//   anything else: nil
// Arrays nest at most 6 deep and a reply has at most 128 elements.
//
// Invariants:
//   - parse_claim_reply and parse_finish_reply throw nothing but RedisReplyError,
//     whose message names the script and the Redis key;
//   - parse_claim_reply accepts exactly a two-element array of text whose status
//     is ACQUIRED, TAKEN_OVER, DUPLICATE, DEAD_LETTERED or CONFLICT, with a
//     positive decimal int64 as the token or lease, or a three-element array of
//     text whose status is DUPLICATE or DEAD_LETTERED (the third element is the
//     stored fingerprint); it then returns that status, a token > 0 (ACQUIRED /
//     TAKEN_OVER), a retry_after > 0 (CONFLICT), or the stored text and
//     fingerprint, empty when the reply has none (DUPLICATE / DEAD_LETTERED);
//   - parse_finish_reply accepts exactly the text "OK" (ok) and "LOST" (lost);
//   - split_per_key accepts exactly an array of as many entries as keys, and
//     returns those entries; it throws nothing but RedisReplyError naming the
//     script and the first key.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "redis/claim_reply.hpp"
#include "redis/redis_error.hpp"

namespace {

using exo::RedisReply;
using exo::fuzz::shown;

const std::string kRedisKey = "exo:fuzz-group:evt-1";
constexpr int kMaxDepth = 6;
constexpr std::size_t kMaxArray = 8;
constexpr std::size_t kMaxElements = 128;

class ReplyReader {
public:
    explicit ReplyReader(std::string_view input) : rest_(input) {}

    RedisReply read(int depth = 0) {
        ++elements_;
        std::string_view line = next_line();
        RedisReply r;
        if (line.empty()) return r;  // nil
        const char kind = line.front();
        const std::string_view text = line.substr(1);
        switch (kind) {
            case '+':
                r.type = RedisReply::Type::status;
                r.str = std::string(text);
                break;
            case '$':
                r.type = RedisReply::Type::string;
                r.str = std::string(text);
                break;
            case '-':
                r.type = RedisReply::Type::error;
                r.str = std::string(text);
                break;
            case ':':
                r.type = RedisReply::Type::integer;
                std::from_chars(text.data(), text.data() + text.size(), r.integer);
                break;
            case '*': {
                r.type = RedisReply::Type::array;
                std::size_t n = 0;
                std::from_chars(text.data(), text.data() + text.size(), n);
                for (std::size_t i = 0; i < n && i < kMaxArray && !rest_.empty() &&
                                        depth < kMaxDepth && elements_ < kMaxElements;
                     ++i)
                    r.elements.push_back(read(depth + 1));
                break;
            }
            default:
                break;
        }
        return r;
    }

private:
    std::string_view next_line() {
        const std::size_t end = std::min(rest_.find('\n'), rest_.size());
        std::string_view line = rest_.substr(0, end);
        rest_.remove_prefix(std::min(end + 1, rest_.size()));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        return line;
    }

    std::string_view rest_;
    std::size_t elements_ = 0;
};

bool is_text(const RedisReply& r) {
    return r.type == RedisReply::Type::string || r.type == RedisReply::Type::status;
}

// A positive decimal int64 without sign or spaces ("007" included).
std::optional<std::int64_t> positive(const std::string& s) {
    if (s.empty()) return std::nullopt;
    std::int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        if (v > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
        v = v * 10 + (c - '0');
    }
    if (v == 0) return std::nullopt;
    return v;
}

// What parse_claim_reply must return, or nullopt if it must throw.
std::optional<exo::ClaimResult> expected_claim(const RedisReply& r) {
    if (r.type == RedisReply::Type::error) {  // the key alone failed, in its place
        exo::ClaimResult failed;
        failed.status = exo::ClaimStatus::failed;
        return failed;
    }
    if (r.type != RedisReply::Type::array || r.elements.size() < 2 || r.elements.size() > 3)
        return std::nullopt;
    for (const RedisReply& e : r.elements)
        if (!is_text(e)) return std::nullopt;
    const std::string& status = r.elements[0].str;
    const std::string& value = r.elements[1].str;
    const bool stored = status == "DUPLICATE" || status == "DEAD_LETTERED";
    if (r.elements.size() == 3 && !stored) return std::nullopt;
    exo::ClaimResult out;
    if (status == "ACQUIRED" || status == "TAKEN_OVER") {
        const auto token = positive(value);
        if (!token) return std::nullopt;
        out.status =
            status == "ACQUIRED" ? exo::ClaimStatus::acquired : exo::ClaimStatus::taken_over;
        out.token = exo::FencingToken{*token};
    } else if (status == "CONFLICT") {
        const auto ms = positive(value);
        if (!ms) return std::nullopt;
        out.status = exo::ClaimStatus::conflict;
        out.retry_after = std::chrono::milliseconds{*ms};
    } else if (status == "DUPLICATE" || status == "DEAD_LETTERED") {
        out.status =
            status == "DUPLICATE" ? exo::ClaimStatus::duplicate : exo::ClaimStatus::dead_lettered;
        out.stored_result = value;
        if (r.elements.size() == 3) out.stored_fingerprint = r.elements[2].str;
    } else {
        return std::nullopt;
    }
    return out;
}

void check_message(const exo::RedisReplyError& e, const char* script) {
    const std::string_view what = e.what();
    FUZZ_CHECK(what.find(script) != std::string_view::npos &&
                   what.find(kRedisKey) != std::string_view::npos,
               "the error " + shown(what) + " does not name " + script + " and the key");
}

void check_claim(const RedisReply& reply) {
    const std::optional<exo::ClaimResult> expected = expected_claim(reply);
    std::optional<exo::ClaimResult> got;
    try {
        got = exo::parse_claim_reply(reply, kRedisKey);
    } catch (const exo::RedisReplyError& e) {
        check_message(e, "claim.lua");
    } catch (...) {
        FUZZ_UNEXPECTED_EXCEPTION("parse_claim_reply", "exo::RedisReplyError");
    }
    FUZZ_CHECK(got.has_value() == expected.has_value(),
               std::string("parse_claim_reply ") + (got ? "accepted" : "refused") +
                   " a reply it must " + (expected ? "accept" : "refuse"));
    if (!got) return;
    FUZZ_CHECK(got->status == expected->status, "the claim status differs from the reply's");
    switch (got->status) {
        case exo::ClaimStatus::acquired:
        case exo::ClaimStatus::taken_over:
            FUZZ_CHECK(got->token.value > 0 && got->token == expected->token,
                       "the token " + std::to_string(got->token.value) + " for " +
                           shown(reply.elements[1].str));
            break;
        case exo::ClaimStatus::conflict:
            FUZZ_CHECK(got->retry_after.count() > 0 && got->retry_after == expected->retry_after,
                       "retry_after " + std::to_string(got->retry_after.count()) + " for " +
                           shown(reply.elements[1].str));
            break;
        case exo::ClaimStatus::duplicate:
        case exo::ClaimStatus::dead_lettered:
            FUZZ_CHECK(got->stored_result == expected->stored_result,
                       "the stored result " + shown(got->stored_result) + " is not the reply's");
            FUZZ_CHECK(
                got->stored_fingerprint == expected->stored_fingerprint,
                "the stored fingerprint " + shown(got->stored_fingerprint) + " is not the reply's");
            break;
        case exo::ClaimStatus::failed:
            FUZZ_CHECK(got->error.find(kRedisKey) != std::string::npos &&
                           got->error.find(reply.str) != std::string::npos,
                       "the key's error " + shown(got->error) + " does not name the key and " +
                           shown(reply.str));
            break;
    }
}

void check_finish(const RedisReply& reply) {
    static constexpr const char* kScripts[] = {"extend.lua", "complete.lua", "release.lua"};
    for (const char* script : kScripts) {
        std::optional<exo::FinishStatus> got;
        try {
            got = exo::parse_finish_reply(script, reply, kRedisKey);
        } catch (const exo::RedisReplyError& e) {
            check_message(e, script);
        } catch (...) {
            FUZZ_UNEXPECTED_EXCEPTION("parse_finish_reply", "exo::RedisReplyError");
        }
        std::optional<exo::FinishStatus> expected;
        if (is_text(reply) && reply.str == "OK") expected = exo::FinishStatus::ok;
        if (is_text(reply) && reply.str == "LOST") expected = exo::FinishStatus::lost;
        FUZZ_CHECK(got == expected,
                   std::string("parse_finish_reply(") + script + ") answered " +
                       (got ? (*got == exo::FinishStatus::ok ? "ok" : "lost") : "an error") +
                       " to " + shown(reply.str));
    }
}

void check_split(const RedisReply& reply) {
    const std::size_t entries = reply.type == RedisReply::Type::array ? reply.elements.size() : 0;
    for (std::size_t keys : {entries, entries + 1}) {
        std::optional<std::size_t> got;
        try {
            got = exo::split_per_key("claim.lua", reply, keys, kRedisKey).size();
        } catch (const exo::RedisReplyError& e) {
            check_message(e, "claim.lua");
        } catch (...) {
            FUZZ_UNEXPECTED_EXCEPTION("split_per_key", "exo::RedisReplyError");
        }
        const bool accept = reply.type == RedisReply::Type::array && keys == entries;
        FUZZ_CHECK(got.has_value() == accept && (!got || *got == keys),
                   std::string("split_per_key ") + (got ? "accepted" : "refused") + " an " +
                       (reply.type == RedisReply::Type::array ? "array" : "other reply") + " of " +
                       std::to_string(entries) + " entries for " + std::to_string(keys) + " keys");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ReplyReader reader(exo::fuzz::as_text(data, size));
    const RedisReply reply = reader.read();
    check_claim(reply);
    check_finish(reply);
    check_split(reply);
    return 0;
}
