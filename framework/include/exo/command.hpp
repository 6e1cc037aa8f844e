#pragma once
// An application's own commands, next to exo's (Application::command): a
// seeding tool, a report, a check, run as `<binary> NAME --flag value ...`
// and listed by `<binary> --help`. The example consumer (handlers/) registers
// its `demo-produce` and `demo-check` this way.
//
// A command gets a CommandContext: its arguments (parsed as flags the way exo's
// own commands parse theirs), the consumer's configuration when it asks for one,
// a PostgreSQL connection with the daemon's session settings, and a stop token
// for SIGTERM/SIGINT. It returns the process exit code. What it throws is
// reported like exo's own commands' errors: UsageError (and OptionError,
// ConfigError) on stderr with exit code 2, anything else with exit code 1, the
// configuration's secrets masked in both.
//
// Example (compiled with the unit tests): tests/header_examples/application_example.cpp.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <stop_token>
#include <string>
#include <vector>

#include <exo/errors.hpp>

namespace exo {

// `--name value`, `--name=value` and switches (`--json`): argv[first..argc)
// parsed against the flags a command takes; a flag may repeat (values kept in
// order). Throws UsageError for an unknown flag, a flag without a value, a
// switch given one (--json=yes), or a word that is not a flag.
class CommandFlags {
public:
    // `command` names the command in errors; `allowed` (flags with a value) and
    // `switches` are the flag names without "--".
    CommandFlags(const std::string& command, int argc, char** argv, int first,
                 const std::vector<std::string>& allowed,
                 const std::vector<std::string>& switches = {});

    std::optional<std::string> get(const std::string& flag) const;  // the last value
    bool has(const std::string& flag) const { return values_.contains(flag); }
    std::string required(const std::string& flag) const;  // throws UsageError if missing
    std::vector<std::string> all(const std::string& flag) const;
    // Throw UsageError for a value that is not a whole number / a number.
    int get_int(const std::string& flag, int fallback) const;
    double get_double(const std::string& flag, double fallback) const;

private:
    std::string command_;
    std::map<std::string, std::vector<std::string>> values_;
};

class CommandContext {
public:
    ~CommandContext();
    CommandContext(const CommandContext&) = delete;
    CommandContext& operator=(const CommandContext&) = delete;

    // The command's name, as registered.
    const std::string& name() const;
    // The command's own arguments: the words after its name, as given.
    const std::vector<std::string>& args() const;
    // args() parsed as flags (CommandFlags: throws UsageError, exit code 2).
    CommandFlags flags(const std::vector<std::string>& options,
                       const std::vector<std::string>& switches = {}) const;

    // Loads the configuration file (exo.yaml) as `exo run` would: every key
    // checked, every binding's handler and options too, and logging set up from
    // it. Throws ConfigError (a UsageError: exit code 2) naming the file, line
    // and YAML path. Call it at most once; the accessors below need it.
    void load_config(const std::string& path);
    // kafka.group_id: the consumer group whose dedup rows, offsets and outbox
    // rows are the consumer's.
    const std::string& group_id() const;
    // A new connection to the configuration's PostgreSQL, with the session
    // settings the daemon uses (statement and lock timeouts, no silent
    // reconnect). Throws pqxx exceptions when PostgreSQL cannot be reached.
    std::unique_ptr<pqxx::connection> connect_postgres() const;

    // Requested on SIGTERM or SIGINT: a long-running command returns soon after.
    std::stop_token stop_token() const;

private:
    struct State;
    friend struct CommandRunner;  // exo's command line: the only place that makes one
    explicit CommandContext(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

// A command: returns the process exit code (0 success, 1 failure, 2 bad usage
// by convention; exo's `inspect` uses 3 for an unknown key).
using CommandFunction = std::function<int(CommandContext& ctx)>;

}  // namespace exo
