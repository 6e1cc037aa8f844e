#pragma once
// An application's own commands (Application::command, exo/command.hpp): how
// they are registered, listed by --help, and run.
#include <stop_token>
#include <string>
#include <vector>

#include <exo/command.hpp>

namespace exo {

struct AppSetup;
class ErrorOutput;

struct UserCommand {
    std::string name;
    std::string usage;    // its flags, after "exo NAME"; may span lines
    std::string summary;  // what it does; may span lines
    CommandFunction run;
};

// Throws UsageError for a name a command may not have: empty, starting with
// '-', holding whitespace, one of exo's own, or one in `registered` already.
void check_command_name(const std::string& name, const std::vector<UserCommand>& registered);

// --help's lines for `commands`, in registration order, in the layout of exo's own.
std::string commands_help(const std::vector<UserCommand>& commands);

struct CommandRunner {
    // Runs `command` with argv[2..] as its arguments; returns its exit code.
    // What it throws goes to run_cli, which prints it through `errors`; the
    // command's load_config gives `errors` the configuration's secrets.
    static int run(const UserCommand& command, int argc, char** argv, const AppSetup& setup,
                   ErrorOutput& errors, std::stop_token stop);
};

}  // namespace exo
