#include "redis/redis_error.hpp"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstring>

namespace exo {

// hiredis 0.14 reports everything through c.err/c.errstr:
//  - REDIS_ERR_IO: a failed syscall (refused, reset, and also a timeout, which
//    shows as EAGAIN from a socket with SO_RCVTIMEO/SO_SNDTIMEO);
//  - REDIS_ERR_EOF: the server closed the connection;
//  - REDIS_ERR_OTHER: before a connection exists, name resolution and socket
//    set-up failures; otherwise misuse of the context;
//  - REDIS_ERR_PROTOCOL / REDIS_ERR_OOM: the reply stream cannot be trusted.
// In every case the context is unusable afterwards: RedisConnection drops it.
void throw_redis_error(const redisContext& c, const std::string& doing) {
    const std::string errstr = c.errstr[0] != '\0' ? c.errstr : "no description";
    const bool connected = (c.flags & REDIS_CONNECTED) != 0;
    const bool io =
        c.err == REDIS_ERR_IO || c.err == REDIS_ERR_EOF || (c.err == REDIS_ERR_OTHER && !connected);
    // Commands already written may have run: callers retry only what is safe to
    // repeat (the claim scripts are: a re-claim by the same owner is re-entrant).
    const std::string next =
        connected ? "; the connection is closed: reconnect() and retry (commands already "
                    "sent may or may not have run)"
                  : "; Redis cannot be reached: retry later";

    if (c.err == REDIS_ERR_IO && errstr == std::strerror(EAGAIN))
        throw RedisIoError("Redis timed out " + doing + " (no reply within command_timeout)" +
                           next);
    if (c.err == REDIS_ERR_EOF)
        throw RedisIoError("Redis closed the connection " + doing + ": " + errstr + next);
    if (io) throw RedisIoError("Redis I/O error " + doing + ": " + errstr + next);
    const char* what = c.err == REDIS_ERR_PROTOCOL ? "protocol error"
                       : c.err == REDIS_ERR_OOM    ? "out of memory in hiredis"
                                                   : "error";
    throw RedisError(std::string("Redis ") + what + " " + doing + ": " + errstr + next);
}

}  // namespace exo
