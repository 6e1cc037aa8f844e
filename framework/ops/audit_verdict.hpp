#pragma once
// `exo audit` (docs/operations.md): every record of a range of a topic
// accounted for against the group's dedup rows, its dead letters and its
// committed offset. This file is the decision for one record and the tally of a
// run, as values. Pure: tested without servers (tests/audit_verdict_test.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/replayed_record.hpp"  // OriginalCoordinates

namespace exo {

// What became of one record. One vocabulary for the command's counts, its
// problem lines and its JSON.
enum class AuditVerdict {
    applied,        // its key's dedup row names this record: APPLIED
    stale,          // ... STALE (sequence latest mode: an older sequence)
    dead_lettered,  // a dead letter of the group names this record (and, if its key's
                    // row names this record, the row says DEAD_LETTERED)
    duplicate,      // its key's dedup row names another record: a copy of a key decided once
    key_reused,     // ... whose fingerprint differs from this record's: another event under
                    // an applied key, finished as a duplicate and never applied; the audit fails
    not_reached,    // at or past the group's committed offset, and not decided yet
    unaccounted,    // none of these: the audit fails
};
const char* to_string(AuditVerdict verdict);

// The dedup row of a record's key, as the audit reads it.
struct AuditRow {
    std::string key;
    std::string outcome;  // APPLIED, STALE or DEAD_LETTERED
    OriginalCoordinates at;
    // Of the copy the row was written for (core/record_fingerprint.hpp). Empty:
    // unknown (a row written before sql/0013, or under `on_key_reuse: ignore`).
    std::string fingerprint;
};

// Everything known about one record.
struct AuditFacts {
    OriginalCoordinates at;
    std::optional<std::string> key;  // nullopt: its binding derives no key from it
    std::string no_key_reason;       // why not, when key is nullopt
    std::optional<AuditRow> row;     // the dedup row of `key`, if any
    // This record's own fingerprint, computed by the audit as the daemon does
    // (whatever the binding's on_key_reuse: the audit is the independent check).
    // Empty: unknown (no key derived).
    std::string fingerprint;
    bool letter = false;  // a dead letter of the group names `at`
    // The group's committed offset for the record's partition: the next record
    // the group will consume. nullopt: the group committed nothing there.
    std::optional<std::int64_t> committed;
};

struct AuditClassification {
    AuditVerdict verdict;
    std::string why;  // for unaccounted and key_reused (and duplicate: the coordinates its
                      // row names)
};

// The decision, first match wins:
//   row names this record          -> its outcome (DEAD_LETTERED needs the letter, else
//                                     not_reached past the commit, else unaccounted)
//   a letter names this record     -> dead_lettered (a gap timeout, a keyless record, a copy
//                                     dead-lettered before a later copy applied the key)
//   row names another record       -> key_reused when both fingerprints are known and
//                                     differ (naming both and the applied copy), else
//                                     duplicate (unknown on either side is never a reuse)
//   at or past the committed offset -> not_reached
//   otherwise                      -> unaccounted, saying what is missing
// A letter beats key_reused: under `on_key_reuse: dead_letter` the reused copy's
// letter is its account; under log or ignore nothing applied its event.
AuditClassification classify_record(const AuditFacts& facts);

// One line of the problem list: a record no verdict accounts for, a record whose
// key was reused for it (its event never applied), or a dedup row in the range
// whose record is not there.
struct AuditProblem {
    OriginalCoordinates at;
    std::string key;  // "" for a record that derives no key
    std::string why;
    AuditVerdict verdict = AuditVerdict::unaccounted;  // or key_reused
};

// The counts of one run and the problems found, in the order found.
struct AuditTally {
    std::string group;
    std::string topic;
    struct Range {
        int partition = 0;
        std::int64_t from = 0;  // first offset audited
        std::int64_t to = -1;   // last offset audited (inclusive); to < from: empty
        std::optional<std::int64_t> committed;
        // Offsets between the committed offset and the partition's start: records
        // Kafka dropped (retention) before the group consumed them. Reported, not
        // failed on: they are outside any range that can be audited.
        std::int64_t gone_unconsumed = 0;
    };
    std::vector<Range> ranges;
    std::int64_t records = 0;
    std::int64_t applied = 0, stale = 0, dead_lettered = 0, duplicate = 0, key_reused = 0,
                 not_reached = 0, unaccounted = 0;
    std::int64_t rows_without_record = 0;  // dedup rows naming a missing record in the range
    std::vector<AuditProblem> problems;    // the first kMaxListedProblems
    std::int64_t problems_left_off = 0;
    static constexpr std::size_t kMaxListedProblems = 10'000;

    void count(AuditVerdict verdict);
    // Keeps the problem (the first kMaxListedProblems; the rest are counted).
    void add_problem(AuditProblem problem);
    // Everything accounted for: the command exits 0. A reused key's record is
    // not: its event was never applied, so the range was not processed exactly once.
    bool accounted() const {
        return unaccounted == 0 && key_reused == 0 && rows_without_record == 0;
    }
};

// "unaccounted <topic>/<partition>/<offset> key <key>: <why>" ("key reused ..."
// for a key_reused problem), key and why escaped for a terminal (core/text.hpp
// one_line_text).
std::string problem_line(const AuditProblem& problem);
// The summary the text form ends with: the ranges, each count, the verdict.
std::string to_text(const AuditTally& tally);
nlohmann::json to_json(const AuditTally& tally);

}  // namespace exo
