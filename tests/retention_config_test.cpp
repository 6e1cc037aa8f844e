// The `retention:` section: the pace of retention pruning (no servers).
#include <doctest/doctest.h>

#include "support/config_text.hpp"

using namespace exo;
using namespace exo::testing::config_text;
using namespace std::chrono_literals;

TEST_CASE("the retention section sets the pruner's pace, with defaults when absent") {
    const auto c = parse(std::string(kMinimal) +
                         "retention:\n  chunk_rows: 2000\n  max_rows_per_second: 0\n"
                         "  interval_ms: 5000\n");
    CHECK(c.retention.chunk_rows == 2000);
    CHECK(c.retention.max_rows_per_second == 0);
    CHECK(c.retention.interval == 5000ms);
    const auto d = parse(kMinimal);
    CHECK(d.retention.chunk_rows == 5000);
    CHECK(d.retention.max_rows_per_second == 25000);
    CHECK(d.retention.interval == 60000ms);
}

TEST_CASE("bad retention values are all reported with their path") {
    const auto errors = errors_of(std::string(kMinimal) +
                                  "retention:\n  chunk_rows: 10\n  max_rows_per_second: -1\n"
                                  "  interval_ms: 0\n  chunk_row: 5\n");
    CHECK(errors.find("retention.chunk_rows") != std::string::npos);
    CHECK(errors.find("retention.max_rows_per_second") != std::string::npos);
    CHECK(errors.find("retention.interval_ms") != std::string::npos);
    CHECK(errors.find("did you mean 'chunk_rows'") != std::string::npos);
}
