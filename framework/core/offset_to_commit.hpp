#pragma once
// Where a partition's consumption may be committed: the next offset to read,
// i.e. the last finished offset + 1. What the offset tracker computes and the
// consumer commits: one type for both.
#include <exo/types.hpp>

namespace exo {

struct OffsetToCommit {
    TopicPartition partition;
    Offset next;  // the next offset to read: last finished + 1
};

}  // namespace exo
