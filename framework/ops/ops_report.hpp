#pragma once
// How the operator commands print what they found: for people (aligned text)
// and for tools (--json, one JSON document on stdout). Pure: tested without servers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/ops_records.hpp"

namespace exo {

nlohmann::json to_json(const InspectReport& report);
std::string to_text(const InspectReport& report);

nlohmann::json to_json(const std::vector<DeadLetterEntry>& entries);
std::string to_text(const std::vector<DeadLetterEntry>& entries);

nlohmann::json to_json(const std::vector<ReplayResult>& results);
std::string to_text(const std::vector<ReplayResult>& results);

nlohmann::json to_json(const SequenceAdvanceResult& result);
std::string to_text(const SequenceAdvanceResult& result);

}  // namespace exo
