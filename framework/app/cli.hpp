#pragma once
// `exo` subcommands. Exit codes: 0 success, 1 failure at run time, 2 bad usage
// or configuration (the message names the place and the fix).

#include "app/app_setup.hpp"

namespace exo {

int run_cli(int argc, char** argv, const AppSetup& setup);

}  // namespace exo
