#include "app/audit_options.hpp"

#include "app/arguments.hpp"

#include <algorithm>

namespace exo {
namespace {

// --from / --to: an offset into `offset`, or a time into `time_ms`.
void bound_flag(const Arguments& args, const std::string& flag, std::optional<std::int64_t>& offset,
                std::optional<std::int64_t>& time_ms) {
    auto text = args.get(flag);
    if (!text) return;
    const bool digits = !text->empty() && text->size() < 19 &&
                        text->find_first_not_of("0123456789") == std::string::npos;
    if (digits) {
        offset = std::stoll(*text);
        return;
    }
    time_ms = parse_utc_time(*text);
    if (!time_ms)
        throw UsageError("--" + flag +
                         " must be a record offset (a non-negative integer) or a time in UTC "
                         "(e.g. 2026-11-28T20:00:00Z), not '" +
                         *text + "'");
}

int digits_at(std::string_view s, std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

}  // namespace

std::optional<std::int64_t> parse_utc_time(std::string_view s) {
    // YYYY-MM-DDTHH:MM:SS[.mmm]Z
    if (s.size() != 20 && s.size() != 24) return std::nullopt;
    if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        s.back() != 'Z')
        return std::nullopt;
    const int year = digits_at(s, 0, 4), month = digits_at(s, 5, 2), day = digits_at(s, 8, 2),
              hour = digits_at(s, 11, 2), minute = digits_at(s, 14, 2),
              second = digits_at(s, 17, 2);
    int ms = 0;
    if (s.size() == 24) {
        if (s[19] != '.') return std::nullopt;
        ms = digits_at(s, 20, 3);
    }
    if (year < 1970 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59 || second < 0 || second > 59 || ms < 0)
        return std::nullopt;
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return std::nullopt;
    // Days since 1970-01-01 (the civil-from-days inverse, proleptic Gregorian).
    const int y = year - (month <= 2 ? 1 : 0);
    const int era = y / 400;
    const int yoe = y - era * 400;
    const int doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
    return ((days * 24 + hour) * 60 + minute) * 60'000 + second * 1000 + ms;
}

AuditRequest audit_request(const Arguments& args) {
    AuditRequest rq;
    rq.topic = args.required("topic");
    if (rq.topic.empty()) throw UsageError("--topic needs the name of a topic the config binds");
    if (args.get("partition")) {
        rq.partition = args.get_int("partition", 0);
        if (*rq.partition < 0)
            throw UsageError("--partition must be a partition number (0 or more), not " +
                             std::to_string(*rq.partition));
    }
    bound_flag(args, "from", rq.from, rq.from_time_ms);
    bound_flag(args, "to", rq.to, rq.to_time_ms);
    if (rq.from && rq.to && *rq.from > *rq.to)
        throw UsageError("--from " + std::to_string(*rq.from) + " is after --to " +
                         std::to_string(*rq.to) + ": --to is the last offset audited");
    if (rq.from_time_ms && rq.to_time_ms && *rq.from_time_ms > *rq.to_time_ms)
        throw UsageError("--from " + *args.get("from") + " is after --to " + *args.get("to"));
    if (args.get("chunk")) {
        const int chunk = args.get_int("chunk", 0);
        if (chunk < 1 || chunk > 100'000)
            throw UsageError("--chunk must be between 1 and 100000 records, not " +
                             std::to_string(chunk));
        rq.chunk = static_cast<std::size_t>(chunk);
    }
    rq.json = args.has("json");
    return rq;
}

AuditRange audit_range(const AuditRequest& rq, int partition, std::int64_t low, std::int64_t high,
                       const TimeOffsets& times) {
    const std::string where = "partition " + std::to_string(partition) + " of topic '" + rq.topic +
                              "' holds offsets " +
                              (low < high ? std::to_string(low) + ".." + std::to_string(high - 1)
                                          : std::string("none (it is empty)"));
    AuditRange r{rq.from.value_or(low), rq.to.value_or(high - 1)};
    if (rq.from && (*rq.from < low || *rq.from >= high))
        throw UsageError("--from " + std::to_string(*rq.from) + " is outside the range: " + where +
                         "; choose --from within it (records below the start are gone: "
                         "retention or deletion)");
    if (rq.to && (*rq.to < low || *rq.to >= high))
        throw UsageError("--to " + std::to_string(*rq.to) + " is outside the range: " + where +
                         "; choose --to within it, or leave it out to audit up to the last "
                         "record");
    if (rq.from_time_ms) r.from = std::max(low, times.from.value_or(high));
    if (rq.to_time_ms) r.to = std::min(high, times.after_to.value_or(high)) - 1;
    return r;
}

}  // namespace exo
