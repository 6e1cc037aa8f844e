#pragma once
// The flags of `exo dlq list|replay` and `exo sequence advance` turned into values. Pure: tested
// without servers. Every error is a UsageError (exit 2) saying what to write instead.
#include <chrono>
#include <string_view>

#include <exo/errors.hpp>
#include "config/config.hpp"
#include "ops/ops_records.hpp"

namespace exo {

class CommandFlags;
using Arguments = CommandFlags;  // app/arguments.hpp

// --since DURATION: "90s", "30m", "12h", "7d", "1500ms" (framework/core/duration_text.hpp).
// A bare number is refused: its unit would be a guess.
std::chrono::milliseconds parse_since(std::string_view text);

// `exo dlq replay`: exactly one of --key, --offset, --entity, --all; --topic
// and --partition narrow the last three.
DeadLetterSelection replay_selection(const Arguments& args);
// `exo dlq list`: --topic and --since.
DeadLetterSelection list_selection(const Arguments& args);

// `exo sequence advance`: --handler (optional when one handler of `config` has
// a sequence; else one of those), --entity, --to, a non-blank --reason, --by
// (default `login`), --dry-run.
SequenceAdvanceRequest advance_request(const Arguments& args, const Config& config,
                                       const std::string& login);
// `exo sequence rewind`: the same flags, and --confirm-rewind unless --dry-run.
// The request's handler is what exo_sequences calls it (sequence_owner()).
SequenceAdvanceRequest rewind_request(const Arguments& args, const Config& config,
                                      const std::string& login);

}  // namespace exo
