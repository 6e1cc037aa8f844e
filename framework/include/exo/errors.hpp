#pragma once
// The error vocabulary handlers and framework share. The class says what the
// pipeline does next, not what went wrong.
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>

namespace exo {

// Try again later: the transaction is rolled back, the claim released, and the
// record retried with backoff up to the binding's max_attempts, then dead-lettered.
class RetryableError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Will never succeed (bad payload, business rule violated): rolled back and
// dead-lettered at once.
class PermanentError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// An infrastructure dependency (Redis, PostgreSQL, Kafka) is unavailable or
// misbehaving. Nothing about the record is known to be wrong: the whole batch
// is put back uncounted (no attempt of any record) and retried with a growing
// backoff until the dependency recovers; the worker reports not ready until a
// batch commits again.
class DependencyError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Bad configuration or usage: the process cannot start. Exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown by BatchHandler::handle_batch() (exo/batch_handler.hpp) to say which
// record of the batch failed: record `index` is treated as if its own handle()
// had thrown `cause` (PermanentError: dead-lettered; anything else: retried),
// and the rest of the batch runs again without it.
class BatchRecordFailed : public std::runtime_error {
public:
    // `cause`: e.g. std::make_exception_ptr(PermanentError("...")), or
    // std::current_exception() inside a catch block. Null counts as retryable.
    BatchRecordFailed(std::size_t index, std::exception_ptr cause);

    std::size_t index() const { return index_; }
    std::exception_ptr cause() const { return cause_; }

private:
    std::size_t index_;
    std::exception_ptr cause_;
};

}  // namespace exo
