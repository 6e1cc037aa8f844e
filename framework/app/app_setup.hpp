#pragma once
// What an Application was given before main(): its handlers, its migrations
// and its own commands.
// The commands read it; nothing changes it once a command runs.
#include <string>
#include <vector>

#include "app/user_commands.hpp"
#include "pg/migrations.hpp"
#include "protocol/handler_registry.hpp"

namespace exo {

struct AppSetup {
    HandlerRegistry handlers;
    std::vector<Migration> migrations;  // registered texts
    std::vector<std::string> migration_dirs;
    std::vector<UserCommand> commands;  // in registration order

    // The registered migrations plus those of every directory, read now.
    // Throws MigrationError for an unreadable directory.
    std::vector<Migration> all_migrations() const;
};

}  // namespace exo
