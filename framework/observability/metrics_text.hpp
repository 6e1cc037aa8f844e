#pragma once
// /metrics: the pipeline's counters and the daemon's state in the Prometheus
// text exposition format 0.0.4. Names follow Prometheus' rules: exo_ prefix,
// base units (seconds), counters end in _total. Pure: a scrape renders what
// the atomics and the last DaemonStatus say at that moment.
#include <string>

#include "metrics/pipeline_stats.hpp"
#include "observability/daemon_status.hpp"

namespace exo {

// The Content-Type of the text format.
inline constexpr const char* kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_metrics(const PipelineStats& stats, const DaemonStatus& status, bool ready,
                           const std::string& version);

// A label value with \, " and newline escaped, as the text format requires.
std::string escape_label_value(const std::string& value);

}  // namespace exo
