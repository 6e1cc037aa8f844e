#include "runtime/sessions/postgres_session.hpp"

#include <pqxx/nontransaction>

#include "pg/session.hpp"
#include "runtime/sessions/record_connection.hpp"

namespace exo {

PostgresSession::PostgresSession(const PostgresConfig& config,
                                 std::function<void(pqxx::connection&)> prepare,
                                 spdlog::logger& log, std::string application_name)
    : config_(config),
      prepare_(std::move(prepare)),
      log_(log),
      application_name_(std::move(application_name)) {}

pqxx::connection& PostgresSession::connection() {
    if (connection_ && connection_->is_open()) return *connection_;
    connection_.reset();
    auto fresh = open_postgres_session(config_);
    if (!application_name_.empty()) {
        // A name that came with the startup packet (the uri, PGAPPNAME) is the user's.
        pqxx::nontransaction tx(*fresh);
        tx.exec_params(
            "SELECT set_config('application_name', $1, false) WHERE NOT EXISTS "
            "(SELECT 1 FROM pg_settings WHERE name = 'application_name' AND source = 'client')",
            application_name_);
    }
    prepare_record_connection(*fresh);
    prepare_(*fresh);
    connection_ = std::move(fresh);
    if (prepare_failing_) log_.info("handlers prepared again");
    prepare_failing_ = false;
    return *connection_;
}

int PostgresSession::failed() {
    return ++failures_;
}

void PostgresSession::answered() {
    failures_ = 0;
    if (down_logged_) log_.info("PostgreSQL is reachable again");
    down_logged_ = false;
}

}  // namespace exo
