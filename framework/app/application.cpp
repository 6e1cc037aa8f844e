#include <exo/application.hpp>

#include "app/app_setup.hpp"
#include "app/cli.hpp"

namespace exo {

struct Application::Setup : AppSetup {};

std::vector<Migration> AppSetup::all_migrations() const {
    std::vector<Migration> out = migrations;
    for (const auto& dir : migration_dirs)
        for (auto& m : read_migrations_dir(dir)) out.push_back(std::move(m));
    return out;
}

Application::Application() : setup_(std::make_unique<Setup>()) {}
Application::~Application() = default;

Application& Application::handler(std::string name, HandlerFactory factory) {
    setup_->handlers.add(std::move(name), std::move(factory));
    return *this;
}

Application& Application::command(std::string name, std::string usage, std::string summary,
                                  CommandFunction run) {
    check_command_name(name, setup_->commands);
    if (!run) throw UsageError("command '" + name + "' has no function to run");
    setup_->commands.push_back(
        {std::move(name), std::move(usage), std::move(summary), std::move(run)});
    return *this;
}

Application& Application::migrations_dir(std::string dir) {
    setup_->migration_dirs.push_back(std::move(dir));
    return *this;
}

Application& Application::migration(std::string name, std::string sql) {
    setup_->migrations.push_back({std::move(name), std::move(sql)});
    return *this;
}

int Application::main(int argc, char** argv) {
    return run_cli(argc, argv, *setup_);
}

}  // namespace exo
