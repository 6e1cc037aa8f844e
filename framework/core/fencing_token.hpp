#pragma once
// The Redis claim's fencing token: handed out by the claim script, strictly
// increasing per idempotency key (derived from Redis server time, so it
// survives a flush), and written with the dedup row. No handler sees it.
#include <cstdint>

#include <exo/types.hpp>

namespace exo {

using FencingToken = StrongValue<struct FencingTokenTag, std::int64_t>;

}  // namespace exo
