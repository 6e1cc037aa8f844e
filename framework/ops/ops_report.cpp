#include "ops/ops_report.hpp"

#include <sstream>

#include "core/text.hpp"

namespace exo {
namespace {

// Every text value of the text format goes through here: keys, topics, reasons
// and results are a record's or a handler's bytes, and a newline or terminal
// escape in one must not forge a line or drive the operator's terminal. The
// JSON format needs nothing: nlohmann escapes control characters itself.
std::string shown(std::string_view text) {
    return one_line_text(text);
}

using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

std::string or_dash(const std::optional<std::string>& v) {
    return v ? shown(*v) : "-";
}

json to_json(const DedupRow& r) {
    return {{"outcome", r.outcome},
            {"processed_at", r.processed_at},
            {"topic", r.topic},
            {"partition", r.partition},
            {"offset", r.offset},
            {"fencing_token", r.fencing_token},
            {"result", or_null(r.result)},
            {"applied_by", or_null(r.applied_by)},
            {"fingerprint", or_null(r.fingerprint)}};
}

json to_json(const ClaimView& c) {
    return {{"redis_key", c.redis_key}, {"state", c.state},
            {"owner", c.owner},         {"token", c.token},
            {"result", c.result},       {"lease_until_ms", or_null(c.lease_until_ms)},
            {"ttl_ms", c.ttl_ms}};
}

json to_json(const SequenceView& s) {
    return {{"handler", s.handler},
            {"entity", or_null(s.entity)},
            {"last_sequence", or_null(s.last_sequence)},
            {"note", s.note}};
}

json to_json(const ReplayTicket& t) {
    return {{"topic", t.topic},
            {"partition", t.partition},
            {"offset", t.offset},
            {"reason", t.reason},
            {"dead_lettered_at", t.dead_lettered_at},
            {"requested_at", t.requested_at},
            {"produced_at", or_null(t.produced_at)},
            {"produced_to", or_null(t.produced_to)},
            {"finished_outcome", or_null(t.finished_outcome)}};
}

template <typename T>
json optional_json(const std::optional<T>& v) {
    return v ? to_json(*v) : json(nullptr);
}

// `value` is shown() already (or_dash, numbers, exo's own words and shown() parts).
void line(std::ostringstream& out, const char* name, const std::string& value) {
    out << "  " << name << ": " << value << "\n";
}

}  // namespace

json to_json(const InspectReport& r) {
    return {{"group", r.group},
            {"key", r.key},
            {"known", r.known()},
            {"row", optional_json(r.row)},
            {"claim_store", r.claims_in_redis ? "redis" : "postgres"},
            {"claim", optional_json(r.claim)},
            {"claim_error", or_null(r.claim_error)},
            {"sequence", optional_json(r.sequence)},
            {"replay", optional_json(r.replay)}};
}

std::string to_text(const InspectReport& r) {
    std::ostringstream out;
    out << "key " << shown(r.key) << " (group " << shown(r.group) << ")\n";
    if (r.row) {
        const auto& d = *r.row;
        out << "dedup row (PostgreSQL):\n";
        line(out, "outcome", shown(d.outcome));
        line(out, "processed at", shown(d.processed_at));
        line(out, "from",
             shown(d.topic) + "/" + std::to_string(d.partition) + "/" + std::to_string(d.offset) +
                 " (topic/partition/offset)");
        line(out, "fencing token", std::to_string(d.fencing_token));
        line(out, "result", or_dash(d.result));
        line(out, "applied by", or_dash(d.applied_by));
        line(out, "fingerprint", or_dash(d.fingerprint));
    } else {
        out << "dedup row (PostgreSQL): none\n";
    }
    if (!r.claims_in_redis) {
        out << "claim: none kept (claim.store is postgres: Redis is not used, the dedup row is "
               "the only record of the key)\n";
    } else if (r.claim) {
        const auto& c = *r.claim;
        out << "claim (Redis " << shown(c.redis_key) << "):\n";
        line(out, "state", shown(c.state));
        line(out, "owner", shown(c.owner));
        line(out, "token", shown(c.token));
        if (!c.result.empty()) line(out, "result", shown(c.result));
        if (c.lease_until_ms)
            line(out, "lease until (Redis ms)", std::to_string(*c.lease_until_ms));
        line(out, "ttl", c.ttl_ms < 0 ? "none" : std::to_string(c.ttl_ms) + " ms");
    } else if (r.claim_error) {
        out << "claim (Redis): unknown, Redis could not be asked: " << shown(*r.claim_error)
            << "\n";
    } else {
        out << "claim (Redis): none (never claimed, expired or flushed; the dedup row decides)\n";
    }
    if (r.sequence) {
        const auto& s = *r.sequence;
        out << "sequence (handler " << shown(s.handler) << "):\n";
        line(out, "entity", or_dash(s.entity));
        line(out, "last sequence",
             s.last_sequence ? std::to_string(*s.last_sequence) : std::string("-"));
        if (!s.note.empty()) line(out, "note", shown(s.note));
    }
    if (r.replay) {
        const auto& t = *r.replay;
        out << "replay:\n";
        line(out, "dead-lettered from",
             shown(t.topic) + "/" + std::to_string(t.partition) + "/" + std::to_string(t.offset) +
                 " at " + shown(t.dead_lettered_at));
        line(out, "reason", shown(t.reason));
        line(out, "requested at", shown(t.requested_at));
        line(out, "produced",
             t.produced_at ? shown(*t.produced_at) + " to " + or_dash(t.produced_to)
                           : std::string("not yet: run the replay again"));
        line(out, "state",
             t.finished_outcome ? "finished, outcome " + shown(*t.finished_outcome)
                                : std::string("waiting for the daemon"));
    }
    if (!r.known()) out << "unknown key: no dedup row and no replay in this group\n";
    return out.str();
}

json to_json(const std::vector<DeadLetterEntry>& entries) {
    json out = json::array();
    for (const auto& e : entries)
        out.push_back({{"key", e.key.empty() ? json(nullptr) : json(e.key)},
                       {"state", to_string(e.state)},
                       {"topic", e.topic},
                       {"partition", e.partition},
                       {"offset", e.offset},
                       {"reason", e.reason},
                       {"dead_lettered_at", e.dead_lettered_at},
                       {"dead_lettered_by", or_null(e.dead_lettered_by)}});
    return out;
}

std::string to_text(const std::vector<DeadLetterEntry>& entries) {
    std::ostringstream out;
    for (const auto& e : entries)
        out << shown(e.dead_lettered_at) << "  " << to_string(e.state) << "  " << shown(e.topic)
            << "/" << e.partition << "/" << e.offset << "  key "
            << (e.key.empty() ? "-" : shown(e.key)) << "\n    reason: " << shown(e.reason) << "\n";
    out << entries.size() << " dead letter(s)\n";
    return out.str();
}

json to_json(const std::vector<ReplayResult>& results) {
    json out = json::array();
    for (const auto& r : results)
        out.push_back({{"key", r.key},
                       {"status", to_string(r.status)},
                       {"detail", r.detail},
                       {"produced_to", r.produced_to}});
    return out;
}

std::string to_text(const std::vector<ReplayResult>& results) {
    std::ostringstream out;
    for (const auto& r : results) {
        out << to_string(r.status) << " " << shown(r.key) << ": " << shown(r.detail);
        if (!r.produced_to.empty()) out << " -> " << shown(r.produced_to);
        out << "\n";
    }
    if (results.empty()) out << "nothing to replay\n";
    return out.str();
}

json to_json(const SequenceAdvanceResult& r) {
    return {{"handler", r.handler},          {"entity", r.entity},
            {"from", or_null(r.from)},       {"to", r.to},
            {"status", to_string(r.status)}, {"audit_id", or_null(r.audit_id)}};
}

std::string to_text(const SequenceAdvanceResult& r) {
    std::ostringstream out;
    const std::string from = r.from ? std::to_string(*r.from) : std::string("none");
    const std::string what =
        "entity '" + shown(r.entity) + "' of handler '" + shown(r.handler) + "'";
    switch (r.status) {
        case SequenceAdvanceResult::Status::advanced:
            out << "advanced " << what << " from " << from << " to " << r.to << " (audit row "
                << r.audit_id.value_or(0) << " in exo_sequence_advances)\n"
                << "sequences " << (r.from ? *r.from + 1 : 1) << " to " << r.to
                << " were skipped: they are STALE if they ever arrive\n"
                << "replay the later ones: exo dlq replay --entity " << shown(r.entity) << "\n";
            break;
        case SequenceAdvanceResult::Status::would_advance:
            out << "would advance " << what << " from " << from << " to " << r.to
                << ", skipping sequences " << (r.from ? *r.from + 1 : 1) << " to " << r.to
                << " (dry run: nothing changed)\n";
            break;
        case SequenceAdvanceResult::Status::rewound:
            out << "rewound " << what << " from " << from << " to " << r.to << " (audit row "
                << r.audit_id.value_or(0) << " in exo_sequence_advances)\n"
                << "sequences " << r.to + 1 << " and above apply again, except keys "
                << "already applied (their dedup rows still fence them)\n";
            break;
        case SequenceAdvanceResult::Status::would_rewind:
            out << "would rewind " << what << " from " << from << " to " << r.to
                << " (dry run: nothing changed)\n";
            break;
        case SequenceAdvanceResult::Status::unchanged:
            out << what << " is already at " << r.to << ": nothing changed\n";
            break;
    }
    return out.str();
}

}  // namespace exo
