#pragma once
// A consumer built on exo: the user's main() names its handlers, migrations and
// commands of its own, and hands over the command line. Every `exo` command
// then works on that binary (run, migrate, check-config, inspect, dlq, ...),
// and so do the application's (`<binary> --help` lists them all).
//
// Example (compiled with the unit tests): tests/header_examples/application_example.cpp;
// handlers/main.cpp is the example consumer's.
//
// Lifecycle: configure first (handler(), migration...(), command()), then call
// main() once. Registration errors (an empty or repeated name) throw UsageError
// at once; main() reports everything else on stderr and returns the exit code:
// 0 success, 1 run-time failure, 2 bad usage or configuration.
#include <concepts>
#include <memory>
#include <string>
#include <utility>

#include <exo/command.hpp>
#include <exo/handler.hpp>
#include <exo/options.hpp>

namespace exo {

class Application {
public:
    Application();
    ~Application();
    Application(const Application&) = delete;
    Application& operator=(const Application&) = delete;

    // Registers a handler under the name bindings use in exo.yaml. `factory` is
    // called once per worker and binding with that binding's options.
    Application& handler(std::string name, HandlerFactory factory);
    // H is built from the binding's options if it has such a constructor, else
    // default-constructed.
    template <class H>
    requires std::derived_from<H, Handler> Application& handler(std::string name) {
        return handler(std::move(name),
                       [](const HandlerOptions& options) -> std::unique_ptr<Handler> {
                           if constexpr (std::constructible_from<H, const HandlerOptions&>)
                               return std::make_unique<H>(options);
                           else
                               return std::make_unique<H>();
                       });
    }

    // The application's own migrations, applied by `migrate` after exo's, all in
    // name order. migrations_dir() reads the *.sql files of `dir` (relative to
    // the working directory) when a command needs them; migration() registers a
    // text compiled into the binary. Names must be unique.
    Application& migrations_dir(std::string dir);
    Application& migration(std::string name, std::string sql);

    // Adds the command `name`: `<binary> NAME ARGS...` calls `run` with a
    // CommandContext (exo/command.hpp: its flags, the configuration if it loads
    // one, PostgreSQL, a stop token) and exits with what it returns. --help
    // lists it after exo's own commands as "NAME USAGE" (USAGE: its flags, e.g.
    // "--config FILE [--limit N]"), then `summary` (what it does); both may
    // span lines. Throws UsageError for an empty name, one starting with '-' or
    // holding whitespace, one of exo's own commands, or a repeated one.
    Application& command(std::string name, std::string usage, std::string summary,
                         CommandFunction run);

    // Runs the command in argv; returns the process exit code.
    int main(int argc, char** argv);

private:
    struct Setup;
    std::unique_ptr<Setup> setup_;
};

}  // namespace exo
