#include "app/user_commands.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "app/app_setup.hpp"
#include "app/cli.hpp"
#include "app/config_loading.hpp"
#include "pg/session.hpp"

namespace exo {

struct CommandContext::State {
    const UserCommand& command;
    std::vector<std::string> args;
    const AppSetup& setup;
    ErrorOutput& errors;
    std::stop_token stop;
    std::optional<Config> config;

    const Config& loaded() const {
        if (!config)
            throw std::logic_error("command '" + command.name +
                                   "' reads its configuration before load_config()");
        return *config;
    }
};

CommandContext::CommandContext(std::unique_ptr<State> state) : state_(std::move(state)) {}
CommandContext::~CommandContext() = default;

const std::string& CommandContext::name() const {
    return state_->command.name;
}
const std::vector<std::string>& CommandContext::args() const {
    return state_->args;
}

CommandFlags CommandContext::flags(const std::vector<std::string>& options,
                                   const std::vector<std::string>& switches) const {
    std::vector<char*> argv;
    for (const auto& a : state_->args) argv.push_back(const_cast<char*>(a.c_str()));
    return CommandFlags(name(), static_cast<int>(argv.size()), argv.data(), 0, options, switches);
}

void CommandContext::load_config(const std::string& path) {
    if (state_->config) throw std::logic_error("command '" + name() + "' loaded its config twice");
    state_->config = exo::load_config(path, state_->setup.handlers, state_->errors);
}

const std::string& CommandContext::group_id() const {
    return state_->loaded().kafka.group_id;
}

std::unique_ptr<pqxx::connection> CommandContext::connect_postgres() const {
    return open_postgres_session(state_->loaded().postgres);
}

std::stop_token CommandContext::stop_token() const {
    return state_->stop;
}

void check_command_name(const std::string& name, const std::vector<UserCommand>& registered) {
    if (name.empty()) throw UsageError("a command needs a name");
    if (name.front() == '-' ||
        std::any_of(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c) != 0; }))
        throw UsageError("command name '" + name + "' must not start with '-' or hold whitespace");
    if (is_exo_command(name))
        throw UsageError("command name '" + name + "' is one of exo's own commands");
    for (const auto& c : registered)
        if (c.name == name) throw UsageError("command '" + name + "' is registered twice");
}

std::string commands_help(const std::vector<UserCommand>& commands) {
    // exo's own layout: "  exo NAME USAGE", its continuation lines under USAGE,
    // then the summary at column 33.
    std::ostringstream out;
    for (const auto& c : commands) {
        const std::string lead = "  exo " + c.name + " ";
        std::istringstream usage(c.usage);
        std::string line;
        bool first = true;
        while (std::getline(usage, line)) {
            out << (first ? lead : std::string(lead.size(), ' ')) << line << "\n";
            first = false;
        }
        if (first) out << lead << "\n";
        std::istringstream summary(c.summary);
        while (std::getline(summary, line)) out << std::string(33, ' ') << line << "\n";
    }
    return out.str();
}

int CommandRunner::run(const UserCommand& command, int argc, char** argv, const AppSetup& setup,
                       ErrorOutput& errors, std::stop_token stop) {
    CommandContext ctx(std::make_unique<CommandContext::State>(CommandContext::State{
        command, {argv + std::min(argc, 2), argv + argc}, setup, errors, stop, {}}));
    return command.run(ctx);
}

}  // namespace exo
