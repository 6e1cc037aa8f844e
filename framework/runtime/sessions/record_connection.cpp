#include "runtime/sessions/record_connection.hpp"

#include "outbox/outbox_writer.hpp"
#include "pg/framework_statements.hpp"

namespace exo {

void prepare_record_connection(pqxx::connection_base& connection) {
    prepare_framework_statements(connection);
    prepare_outbox_statements(connection);
}

}  // namespace exo
