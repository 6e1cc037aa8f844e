#include "outbox/outbox_doorbell.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace exo {

OutboxDoorbell::OutboxDoorbell() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0)
        throw std::system_error(errno, std::generic_category(),
                                "outbox relay: cannot create its wake-up eventfd");
}

OutboxDoorbell::~OutboxDoorbell() {
    ::close(fd_);
}

void OutboxDoorbell::ring() noexcept {
    const std::uint64_t one = 1;
    // Fails only when the counter is near 2^64 (EAGAIN): it is rung already.
    [[maybe_unused]] const auto written = ::write(fd_, &one, sizeof one);
}

void OutboxDoorbell::clear() noexcept {
    std::uint64_t rings = 0;
    // Reading resets the counter; EAGAIN: it was not rung.
    [[maybe_unused]] const auto read = ::read(fd_, &rings, sizeof rings);
}

}  // namespace exo
