#pragma once
// The flags of `exo dlq list|replay` turned into values. Pure: tested without
// servers. Every error is a UsageError (exit 2) saying what to write instead.
#include <chrono>
#include <string_view>

#include <exo/errors.hpp>
#include "ops/ops_records.hpp"

namespace exo {

class Arguments;

// --since DURATION: "90s", "30m", "12h", "7d", "1500ms" (framework/core/duration_text.hpp).
// A bare number is refused: its unit would be a guess.
std::chrono::milliseconds parse_since(std::string_view text);

// `exo dlq replay`: exactly one of --key, --offset, --all; --topic and
// --partition narrow --offset and --all.
DeadLetterSelection replay_selection(const Arguments& args);
// `exo dlq list`: --topic and --since.
DeadLetterSelection list_selection(const Arguments& args);

}  // namespace exo
