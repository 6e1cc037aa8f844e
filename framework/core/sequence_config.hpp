#pragma once
// A binding's sequence check (bindings[].sequence): the vocabulary shared by the
// config, sequence extraction (core/key_derivation.hpp) and the decision
// (core/sequence_decision.hpp).
#include <chrono>
#include <string>

namespace exo {

enum class SequenceMode { latest, strict };

struct SequenceConfig {
    std::string entity_pointer;  // JSON pointer to the entity id (string or integer)
    std::string value_pointer;   // JSON pointer to the sequence number (integer)
    SequenceMode mode = SequenceMode::latest;
    // strict mode: how long a gap is held before dead-lettering
    std::chrono::milliseconds gap_timeout{60000};
};

}  // namespace exo
