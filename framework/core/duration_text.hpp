#pragma once
// Durations are written in whole milliseconds (exo.yaml's *_ms keys, handler
// options): what to tell someone who wrote "5s" instead. Pure: no I/O.
#include <optional>
#include <string>
#include <string_view>

namespace exo {

// "5s" -> 5000: the whole milliseconds that a number with a unit (ms, s, m,
// min, h, d; a space before the unit is allowed) stands for. nullopt for a bare
// number, another unit, or a value that is no whole number of milliseconds.
std::optional<long long> with_unit_as_ms(std::string_view text);

// "expected a duration in whole milliseconds (e.g. 1500), got '5s'", followed by
// "; write 5000" when with_unit_as_ms finds what was meant.
std::string not_whole_milliseconds(std::string_view text);

}  // namespace exo
