#include "outbox/transaction_outbox.hpp"

#include <iterator>

#include "outbox/outbox_writer.hpp"

namespace exo {

int TransactionOutbox::add(std::vector<OutboxMessage>&& messages) {
    if (messages.empty()) return 0;
    emitted_ = true;
    if (when_ == Write::per_record) {
        write_outbox(tx_, group_, messages);
        return 1;
    }
    gathered_.insert(gathered_.end(), std::make_move_iterator(messages.begin()),
                     std::make_move_iterator(messages.end()));
    return 0;
}

int TransactionOutbox::flush() {
    if (gathered_.empty()) return 0;
    write_outbox(tx_, group_, gathered_);
    gathered_.clear();
    return 1;
}

}  // namespace exo
