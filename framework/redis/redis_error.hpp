#pragma once
// Every hiredis failure is translated here, in one place (redis-plus-plus's
// errors.cpp). All derive from DependencyError: the pipeline puts the batch back
// and retries once Redis answers again (or, with on_redis_down: postgres_only,
// goes on without claims).
#include <string>

#include <exo/errors.hpp>

struct redisContext;

namespace exo {

class RedisError : public DependencyError {
public:
    using DependencyError::DependencyError;
};
// Connection refused, reset, or timed out: reconnect and retry.
class RedisIoError : public RedisError {
public:
    using RedisError::RedisError;
};
// Redis answered with an error reply where none was expected (e.g. a script bug,
// OOM, READONLY replica): the outcome of that command is known to be "not done".
class RedisReplyError : public RedisError {
public:
    using RedisError::RedisError;
};

// Throws the RedisError matching the context's err/errstr. Precondition: c.err != 0.
[[noreturn]] void throw_redis_error(const redisContext& c, const std::string& doing);

}  // namespace exo
