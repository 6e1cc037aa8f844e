#pragma once
// `exo` subcommands. Exit codes: 0 success, 1 failure at run time, 2 bad usage
// or configuration (the message names the place and the fix).

#include <string>

#include "app/app_setup.hpp"

namespace exo {

int run_cli(int argc, char** argv, const AppSetup& setup);

// Whether `name` is one of exo's own commands (or --help, --version): an
// application's command may not take it.
bool is_exo_command(const std::string& name);

}  // namespace exo
