// Sequence-based optimistic concurrency, the decision alone:
// core/sequence_decision.hpp. No servers.
#include <doctest/doctest.h>

#include <optional>
#include <ostream>

#include "core/sequence_decision.hpp"

using namespace exo;

namespace exo {
// So a failing CHECK prints the verdict's name.
inline std::ostream& operator<<(std::ostream& os, SequenceVerdict v) {
    switch (v) {
        case SequenceVerdict::apply:
            return os << "apply";
        case SequenceVerdict::stale:
            return os << "stale";
        case SequenceVerdict::gap:
            return os << "gap";
    }
    return os << "?";
}
}  // namespace exo

namespace {

constexpr auto kLatest = SequenceMode::latest;
constexpr auto kStrict = SequenceMode::strict;
constexpr std::optional<std::int64_t> kNewEntity = std::nullopt;

}  // namespace

TEST_SUITE("decide_sequence in latest mode") {
    TEST_CASE("a new entity applies whatever its first sequence is") {
        CHECK(decide_sequence(kLatest, kNewEntity, 0) == SequenceVerdict::apply);
        CHECK(decide_sequence(kLatest, kNewEntity, 1) == SequenceVerdict::apply);
        CHECK(decide_sequence(kLatest, kNewEntity, 57) == SequenceVerdict::apply);
    }

    TEST_CASE("a newer sequence applies, even skipping some") {
        CHECK(decide_sequence(kLatest, 5, 6) == SequenceVerdict::apply);
        CHECK(decide_sequence(kLatest, 5, 500) == SequenceVerdict::apply);
    }

    TEST_CASE("an equal sequence is stale") {
        CHECK(decide_sequence(kLatest, 5, 5) == SequenceVerdict::stale);
        CHECK(decide_sequence(kLatest, 0, 0) == SequenceVerdict::stale);
    }

    TEST_CASE("an older sequence is stale") {
        CHECK(decide_sequence(kLatest, 5, 4) == SequenceVerdict::stale);
        CHECK(decide_sequence(kLatest, 5, 0) == SequenceVerdict::stale);
    }

    TEST_CASE("latest mode never reports a gap") {
        for (std::int64_t incoming = 0; incoming < 20; ++incoming) {
            CHECK(decide_sequence(kLatest, 3, incoming) != SequenceVerdict::gap);
            CHECK(decide_sequence(kLatest, kNewEntity, incoming) != SequenceVerdict::gap);
        }
    }
}

TEST_SUITE("decide_sequence in strict mode") {
    TEST_CASE("a new entity applies sequence 1") {
        CHECK(decide_sequence(kStrict, kNewEntity, 1) == SequenceVerdict::apply);
    }

    TEST_CASE("a new entity whose first sequence is above 1 waits for a gap") {
        CHECK(decide_sequence(kStrict, kNewEntity, 2) == SequenceVerdict::gap);
        CHECK(decide_sequence(kStrict, kNewEntity, 100) == SequenceVerdict::gap);
    }

    TEST_CASE("a new entity with sequence 0 is stale") {
        CHECK(decide_sequence(kStrict, kNewEntity, 0) == SequenceVerdict::stale);
    }

    TEST_CASE("exactly last + 1 applies") {
        CHECK(decide_sequence(kStrict, 1, 2) == SequenceVerdict::apply);
        CHECK(decide_sequence(kStrict, 41, 42) == SequenceVerdict::apply);
    }

    TEST_CASE("beyond last + 1 is a gap") {
        CHECK(decide_sequence(kStrict, 1, 3) == SequenceVerdict::gap);
        CHECK(decide_sequence(kStrict, 41, 1000) == SequenceVerdict::gap);
    }

    TEST_CASE("at or below last is stale") {
        CHECK(decide_sequence(kStrict, 5, 5) == SequenceVerdict::stale);
        CHECK(decide_sequence(kStrict, 5, 4) == SequenceVerdict::stale);
        CHECK(decide_sequence(kStrict, 5, 1) == SequenceVerdict::stale);
        CHECK(decide_sequence(kStrict, 5, 0) == SequenceVerdict::stale);
    }

    TEST_CASE("a stream applied in order is accepted to the end, and replayed as stale") {
        std::optional<std::int64_t> last;
        for (std::int64_t s = 1; s <= 10; ++s) {
            REQUIRE(decide_sequence(kStrict, last, s) == SequenceVerdict::apply);
            last = s;
        }
        for (std::int64_t s = 1; s <= 10; ++s)
            CHECK(decide_sequence(kStrict, last, s) == SequenceVerdict::stale);
        CHECK(decide_sequence(kStrict, last, 11) == SequenceVerdict::apply);
    }
}
