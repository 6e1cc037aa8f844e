#pragma once
// A per-record handler: exo/handler.hpp's example (handler_example.cpp).
#include <exo/exo.hpp>
#include <string>

namespace header_examples {

class GreetingHandler final : public exo::Handler {
public:
    // The binding's `options:` from exo.yaml (a default constructor works too).
    explicit GreetingHandler(const exo::HandlerOptions& o);
    // Once per PostgreSQL connection (each worker has one; again after a reconnect).
    void prepare(pqxx::connection_base& c) override;
    // Per new record, inside the transaction. Never commit here, and never
    // catch a database error and go on.
    void handle(exo::HandlerContext& ctx) override;

private:
    std::string greeting_;
};

// Its table, as the application's migration.
inline constexpr const char* kGreetingsMigration =
    "CREATE TABLE greetings (name text NOT NULL, greeting text NOT NULL)";

}  // namespace header_examples
