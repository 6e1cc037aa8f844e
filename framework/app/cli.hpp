#pragma once
// `exo` subcommands. Exit codes: 0 success, 1 failure at run time, 2 bad usage
// or configuration (the message names the place and the fix).

namespace exo {

int run_cli(int argc, char** argv);

}  // namespace exo
