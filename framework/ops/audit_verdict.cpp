#include "ops/audit_verdict.hpp"

#include <fmt/format.h>

#include "core/record_fingerprint.hpp"
#include "core/text.hpp"

namespace exo {
namespace {

bool same(const OriginalCoordinates& a, const OriginalCoordinates& b) {
    return a.topic == b.topic && a.partition == b.partition && a.offset == b.offset;
}

bool past_commit(const AuditFacts& f) {
    return !f.committed || f.at.offset >= *f.committed;
}

std::string quoted_key(const AuditFacts& f) {
    return "key '" + f.key.value_or("") + "'";
}

}  // namespace

const char* to_string(AuditVerdict verdict) {
    switch (verdict) {
        case AuditVerdict::applied:
            return "applied";
        case AuditVerdict::stale:
            return "stale";
        case AuditVerdict::dead_lettered:
            return "dead_lettered";
        case AuditVerdict::duplicate:
            return "duplicate";
        case AuditVerdict::key_reused:
            return "key_reused";
        case AuditVerdict::not_reached:
            return "not_reached";
        case AuditVerdict::unaccounted:
            return "unaccounted";
    }
    return "unaccounted";
}

AuditClassification classify_record(const AuditFacts& f) {
    if (f.row && same(f.row->at, f.at)) {
        if (f.row->outcome == "APPLIED") return {AuditVerdict::applied, ""};
        if (f.row->outcome == "STALE") return {AuditVerdict::stale, ""};
        if (f.row->outcome == "DEAD_LETTERED") {
            if (f.letter) return {AuditVerdict::dead_lettered, ""};
            // Past the commit the daemon may still be sending the letter.
            if (past_commit(f)) return {AuditVerdict::not_reached, ""};
            return {AuditVerdict::unaccounted,
                    "its dedup row says DEAD_LETTERED but the dead-letter topic holds no letter "
                    "of this record"};
        }
        return {AuditVerdict::unaccounted,
                "its dedup row has an outcome exo does not write: '" + f.row->outcome + "'"};
    }
    if (f.letter) return {AuditVerdict::dead_lettered, ""};
    if (f.row) {
        const auto& r = *f.row;
        // Unknown on either side is never a reuse, as in the daemon
        // (core/record_fingerprint.hpp key_reuse_verdict).
        if (!r.fingerprint.empty() && !f.fingerprint.empty() && r.fingerprint != f.fingerprint)
            return {AuditVerdict::key_reused,
                    key_reuse_reason(f.fingerprint,
                                     {r.fingerprint, r.at.topic, r.at.partition, r.at.offset}) +
                        "; this record's event was never applied and no dead letter holds it"};
        return {AuditVerdict::duplicate, "its dedup row names " + to_text(r.at)};
    }
    if (past_commit(f)) return {AuditVerdict::not_reached, ""};
    if (!f.key)
        return {AuditVerdict::unaccounted,
                "it derives no key (" + f.no_key_reason +
                    ") and the dead-letter topic holds no letter of it, yet the group committed "
                    "past it"};
    return {AuditVerdict::unaccounted,
            quoted_key(f) +
                " has no dedup row and the dead-letter topic holds no letter of this record, yet "
                "the group committed past it (a row deleted, or pruned by retention?)"};
}

void AuditTally::count(AuditVerdict verdict) {
    ++records;
    switch (verdict) {
        case AuditVerdict::applied:
            ++applied;
            break;
        case AuditVerdict::stale:
            ++stale;
            break;
        case AuditVerdict::dead_lettered:
            ++dead_lettered;
            break;
        case AuditVerdict::duplicate:
            ++duplicate;
            break;
        case AuditVerdict::key_reused:
            ++key_reused;
            break;
        case AuditVerdict::not_reached:
            ++not_reached;
            break;
        case AuditVerdict::unaccounted:
            ++unaccounted;
            break;
    }
}

void AuditTally::add_problem(AuditProblem problem) {
    if (problems.size() < kMaxListedProblems)
        problems.push_back(std::move(problem));
    else
        ++problems_left_off;
}

std::string problem_line(const AuditProblem& p) {
    const char* label = p.verdict == AuditVerdict::key_reused ? "key reused " : "unaccounted ";
    return label + one_line_text(to_text(p.at)) +
           (p.key.empty() ? std::string(" (no key)") : " key " + one_line_text(p.key)) + ": " +
           one_line_text(p.why) + "\n";
}

std::string to_text(const AuditTally& t) {
    std::string out =
        "audit of topic " + one_line_text(t.topic) + " for group " + one_line_text(t.group) + "\n";
    for (const auto& r : t.ranges) {
        out += fmt::format("  partition {}: offsets {}..{}, committed offset {}\n", r.partition,
                           r.from, r.to,
                           r.committed ? std::to_string(*r.committed) : std::string("none"));
        if (r.gone_unconsumed > 0)
            out += fmt::format(
                "  WARNING: partition {}: {} record(s) below its first offset were never consumed "
                "by the group (its committed offset is behind them): Kafka dropped them first\n",
                r.partition, r.gone_unconsumed);
    }
    out += fmt::format(
        "{} record(s): {} applied, {} stale, {} duplicate, {} key reused (never applied), {} "
        "dead-lettered, {} not reached yet, {} unaccounted\n",
        t.records, t.applied, t.stale, t.duplicate, t.key_reused, t.dead_lettered, t.not_reached,
        t.unaccounted);
    out +=
        fmt::format("{} dedup row(s) in the range without their record\n", t.rows_without_record);
    if (t.problems_left_off > 0)
        out += fmt::format("({} more problem(s) not listed)\n", t.problems_left_off);
    out += t.accounted() ? "every record is accounted for\n"
                         : "NOT everything is accounted for: see the lines above\n";
    return out;
}

nlohmann::json to_json(const AuditTally& t) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const auto& r : t.ranges)
        ranges.push_back({{"partition", r.partition},
                          {"from", r.from},
                          {"to", r.to},
                          {"committed", r.committed ? nlohmann::json(*r.committed) : nullptr},
                          {"gone_unconsumed", r.gone_unconsumed}});
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : t.problems)
        problems.push_back(
            {{"topic", p.at.topic},
             {"partition", p.at.partition},
             {"offset", p.at.offset},
             {"key", p.key.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.key)},
             {"why", p.why},
             {"verdict", to_string(p.verdict)}});
    return {{"group", t.group},
            {"topic", t.topic},
            {"ranges", ranges},
            {"records", t.records},
            {"applied", t.applied},
            {"stale", t.stale},
            {"duplicate", t.duplicate},
            {"key_reused", t.key_reused},
            {"dead_lettered", t.dead_lettered},
            {"not_reached", t.not_reached},
            {"unaccounted", t.unaccounted},
            {"rows_without_record", t.rows_without_record},
            {"problems", problems},
            {"problems_left_off", t.problems_left_off},
            {"accounted", t.accounted()}};
}

}  // namespace exo
