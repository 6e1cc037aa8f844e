// outbox: the relay that publishes the records handlers emit (docs/outbox.md).
#include "config/sections.hpp"

namespace exo::config_reading {

const Keys kOutboxKeys = {"enabled", "batch_size", "poll_interval_ms", "retention_days"};

namespace {

const Choices<bool> kSwitch = {{"true", true}, {"false", false}};

}  // namespace

OutboxConfig read_outbox(const Reader& outbox) {
    OutboxConfig out;
    outbox.read("enabled", out.enabled, kSwitch);
    // One produce and one UPDATE of this many rows per round; the relay holds
    // their row locks while Kafka acknowledges them.
    outbox.read("batch_size", out.batch_size, Bounds{1, 10000});
    outbox.read("poll_interval_ms", out.poll_interval, kPositiveMs);
    outbox.read_days("retention_days", out.retention, Bounds{0, kMaxDays});
    return out;
}

}  // namespace exo::config_reading
