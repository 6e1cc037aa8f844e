// exo's allocator: a program that links exo::framework allocates with jemalloc
// when exo is built with EXO_JEMALLOC (the default), through malloc itself, not
// only with the library loaded; built without it (or under a sanitizer), the C
// library's malloc is left alone.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

Mallctl jemalloc_ctl() {
    return reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
}

}  // namespace

#ifdef EXO_JEMALLOC_LINKED
namespace {

// jemalloc's bytes allocated and not freed, refreshed now (its statistics are cached).
std::size_t allocated(Mallctl ctl) {
    std::uint64_t epoch = 1;
    std::size_t length = sizeof epoch;
    REQUIRE(ctl("epoch", &epoch, &length, &epoch, length) == 0);
    std::size_t bytes = 0;
    length = sizeof bytes;
    REQUIRE(ctl("stats.allocated", &bytes, &length, nullptr, 0) == 0);
    return bytes;
}

}  // namespace

TEST_CASE("a program linking exo::framework allocates with jemalloc: malloc's blocks are its") {
    const Mallctl ctl = jemalloc_ctl();
    REQUIRE_MESSAGE(static_cast<bool>(ctl),
                    "jemalloc is not in the process: EXO_JEMALLOC links it");
    constexpr std::size_t kBlock = std::size_t{64} << 20;
    const std::size_t before = allocated(ctl);
    auto* block = static_cast<volatile char*>(std::malloc(kBlock));
    REQUIRE(static_cast<bool>(block));
    block[0] = 1;  // used, so the compiler keeps the malloc/free pair
    block[kBlock - 1] = block[0];
    const std::size_t during = allocated(ctl);
    std::free(const_cast<char*>(block));
    CHECK(during - before >= kBlock);
    CHECK(allocated(ctl) < during);
}
#else
TEST_CASE("built without EXO_JEMALLOC, the process keeps the C library's malloc") {
    CHECK_FALSE(static_cast<bool>(jemalloc_ctl()));
}
#endif
