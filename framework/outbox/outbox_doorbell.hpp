#pragma once
// Wakes this process's outbox relay after a transaction that wrote outbox rows
// committed. It replaces the NOTIFY the writer used to send inside the
// emitting transaction: PostgreSQL queues a NOTIFY under one database-wide
// lock held through the commit's WAL flush, so every emitting commit of the
// database waited for the one before it (docs/outbox.md#the-relay, "Waking
// the relay").
//
// An eventfd: ring() adds to its counter from any thread and never blocks;
// the relay waits on fd() beside its PostgreSQL socket and clear()s it before
// each round, so the rings of many commits make one round, and a ring after
// the clear is never lost (the next wait returns at once).
//
// Lifecycle: owned by the relay; whoever rings it (the workers) must be gone
// before it is.
namespace exo {

class OutboxDoorbell {
public:
    OutboxDoorbell();  // throws std::system_error when the kernel gives no eventfd
    OutboxDoorbell(const OutboxDoorbell&) = delete;
    OutboxDoorbell& operator=(const OutboxDoorbell&) = delete;
    ~OutboxDoorbell();

    // Thread-safe; never blocks, never throws.
    void ring() noexcept;
    // Forgets the rings so far (the relay, before it looks for rows).
    void clear() noexcept;
    // Readable while rung.
    int fd() const { return fd_; }

private:
    int fd_;
};

}  // namespace exo
