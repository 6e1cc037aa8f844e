#pragma once
// "Did you mean": the known word closest to one the user misspelt (a key, a
// choice, a handler name), for config problems to suggest. Pure: no YAML, no I/O.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exo {

// Optimal string alignment distance: Levenshtein plus adjacent transpositions,
// so a dropped letter ("ledgr") and a swapped pair ("strcit") both count as one.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if one is within edit distance 2 (of equally
// close ones, the first).
std::optional<std::string_view> closest(std::string_view word,
                                        const std::vector<std::string_view>& candidates);

// " (did you mean 'x'?)", or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace exo
