#include "pipeline/postgres_session.hpp"

#include "pg/session.hpp"
#include "pipeline/record_connection.hpp"

namespace exo {

PostgresSession::PostgresSession(const PostgresConfig& config,
                                 std::function<void(pqxx::connection&)> prepare,
                                 spdlog::logger& log)
    : config_(config), prepare_(std::move(prepare)), log_(log) {}

pqxx::connection& PostgresSession::connection() {
    if (connection_ && connection_->is_open()) return *connection_;
    connection_.reset();
    auto fresh = open_postgres_session(config_);
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
