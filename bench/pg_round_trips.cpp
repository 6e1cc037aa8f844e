#include "pg_round_trips.hpp"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace exo::bench {
namespace {

std::atomic<std::uint64_t> sends{0};

// The next definition of `name` after this executable's (libpq's), or abort:
// without it no query could be sent at all.
template <class F>
F real(const char* name) {
    void* f = ::dlsym(RTLD_NEXT, name);
    if (f == nullptr) {
        std::fprintf(stderr, "exo_bench: dlsym(RTLD_NEXT, %s) failed: %s\n", name, ::dlerror());
        std::abort();
    }
    return reinterpret_cast<F>(f);
}

}  // namespace

std::uint64_t postgres_sends() {
    return sends.load(std::memory_order_relaxed);
}

}  // namespace exo::bench

extern "C" {

int PQsendQuery(PGconn* conn, const char* query) {
    static auto next = exo::bench::real<int (*)(PGconn*, const char*)>("PQsendQuery");
    exo::bench::sends.fetch_add(1, std::memory_order_relaxed);
    return next(conn, query);
}

int PQsendQueryParams(PGconn* conn, const char* command, int nParams, const Oid* paramTypes,
                      const char* const* paramValues, const int* paramLengths,
                      const int* paramFormats, int resultFormat) {
    static auto next =
        exo::bench::real<int (*)(PGconn*, const char*, int, const Oid*, const char* const*,
                                 const int*, const int*, int)>("PQsendQueryParams");
    exo::bench::sends.fetch_add(1, std::memory_order_relaxed);
    return next(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                resultFormat);
}

int PQsendQueryPrepared(PGconn* conn, const char* stmtName, int nParams,
                        const char* const* paramValues, const int* paramLengths,
                        const int* paramFormats, int resultFormat) {
    static auto next =
        exo::bench::real<int (*)(PGconn*, const char*, int, const char* const*, const int*,
                                 const int*, int)>("PQsendQueryPrepared");
    exo::bench::sends.fetch_add(1, std::memory_order_relaxed);
    return next(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
}

int PQsendPrepare(PGconn* conn, const char* stmtName, const char* query, int nParams,
                  const Oid* paramTypes) {
    static auto next =
        exo::bench::real<int (*)(PGconn*, const char*, const char*, int, const Oid*)>(
            "PQsendPrepare");
    exo::bench::sends.fetch_add(1, std::memory_order_relaxed);
    return next(conn, stmtName, query, nParams, paramTypes);
}

}  // extern "C"
