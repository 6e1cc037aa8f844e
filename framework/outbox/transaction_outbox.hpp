#pragma once
// One transaction's emitted records on their way to exo_outbox (docs/outbox.md
// docs/design.md#the-guarantee), written in one of two ways:
// - at_commit: gathered from every record and written in ONE statement just
//   before COMMIT. For the optimistic pass, whose records commit or roll back
//   together: a transaction costs one statement for its emits however many
//   records emitted, and its keys are locked in one global order at once.
// - per_record: written right after each record's handler (or run), inside
//   the record's savepoint, so a record rolled back to its savepoint takes its
//   rows with it and a failing write is that record's (the careful pass, the
//   handler kit).
// emitted() tells whoever commits whether to ring the relay's doorbell.
//
// Errors: write_outbox's (pqxx exceptions), from add() or flush().
// Thread-safety: none; the transaction's thread.
#include <string>
#include <vector>

#include <pqxx/transaction_base>

#include <exo/outbox.hpp>

namespace exo {

class TransactionOutbox {
public:
    enum class Write { at_commit, per_record };

    // `tx` and `group` (kafka.group_id) outlive this.
    TransactionOutbox(pqxx::transaction_base& tx, const std::string& group, Write when)
        : tx_(tx), group_(group), when_(when) {}

    // A record's or a run's emits, in emit order. Returns the round trips it
    // made (0 or 1).
    int add(std::vector<OutboxMessage>&& messages);
    // Writes what was gathered (at_commit), in one statement. Returns the
    // round trips it made (0 or 1).
    int flush();
    // Whether any record of the transaction emitted (rolled back or not).
    bool emitted() const { return emitted_; }

private:
    pqxx::transaction_base& tx_;
    const std::string& group_;
    Write when_;
    std::vector<OutboxMessage> gathered_;
    bool emitted_ = false;
};

}  // namespace exo
