#include <doctest/doctest.h>

#include "outbox/backlog_pacing.hpp"

using std::chrono::milliseconds;

TEST_CASE("the relay reads its backlog gauges once a second while the reading is cheap") {
    CHECK(exo::next_backlog_reading(milliseconds(0)) == milliseconds(1000));
    CHECK(exo::next_backlog_reading(milliseconds(50)) == milliseconds(1000));
}

TEST_CASE(
    "an expensive backlog reading waits twenty times its own length, so it never takes "
    "more than a twentieth of the relay's session") {
    CHECK(exo::next_backlog_reading(milliseconds(150)) == milliseconds(3000));
    CHECK(exo::next_backlog_reading(milliseconds(4000)) == milliseconds(80000));
}
