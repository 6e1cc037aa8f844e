// The `exo` binary: exo's command line with the example handlers, built the way
// a team builds its own consumer (docs/handlers.md, "Your own consumer in 5 minutes").
#include <exo/exo.hpp>

#include "demo_commands.hpp"
#include "ledger.hpp"
#include "ledger_migrations.hpp"

int main(int argc, char** argv) {
    exo::Application app;
    app.handler<exo::handlers::LedgerHandler>("ledger");
    app.handler<exo::handlers::LedgerRecordHandler>("ledger_per_record");
    for (const auto& m : exo::handlers::kLedgerMigrations)
        app.migration(std::string(m.name), std::string(m.sql));
    exo::demo::register_demo_commands(app);  // demo-produce, demo-check
    return app.main(argc, argv);
}
