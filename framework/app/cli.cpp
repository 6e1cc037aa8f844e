#include "app/cli.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iostream>

#include <exo/errors.hpp>
#include "app/commands.hpp"
#include "app/signals.hpp"
#include "app/user_commands.hpp"

namespace exo {
namespace {

// {}: the application's own commands (Application::command).
constexpr const char* kHelp = R"(exo: a Kafka consumer whose handlers have an exactly-once effect.

Usage:
  exo run --config FILE          run the daemon until SIGTERM/SIGINT (exit 0 after a clean drain)
  exo migrate --config FILE      apply exo's migrations, then the application's (idempotent)
  exo check-config --config FILE [--print]
                                 validate the configuration and every binding's handler options;
                                 --print: the effective configuration as YAML, defaults filled in,
                                 secrets masked as "*****"
  exo inspect --config FILE --key KEY [--json]
                                 a key's dedup row, Redis claim, sequence and replay (exit 3: unknown key)
  exo dlq list --config FILE [--topic T] [--since DURATION] [--json]
                                 dead letters (and replays not processed yet) with reason and origin
  exo dlq replay --config FILE (--key KEY | --offset N [--topic T] [--partition P] | --all [--topic T]
                 | --entity E [--topic T]) [--dry-run] [--json] [--trust-unverified]
                                 process dead-lettered records once more, exactly once
                                 (docs/operations.md); running it again finishes a crashed replay;
                                 --entity: a strict entity's dead letters in sequence order;
                                 a letter whose key and value are not those exo recorded writing
                                 is refused (--trust-unverified: replay one it has no record of,
                                 written before exo recorded them)
  exo sequence advance --config FILE [--handler H] --entity E --to N --reason TEXT [--by NAME]
                       [--dry-run] [--json]
                                 move a strict entity past sequences that will never apply
                                 (a poison), audited in exo_sequence_advances; never backwards
  exo sequence rewind --config FILE [--handler H] --entity E --to N --reason TEXT [--by NAME]
                      (--confirm-rewind | --dry-run) [--json]
                                 move an entity back below a sequence that jumped (one record's
                                 absurd sequence made the rest STALE), audited in
                                 exo_sequence_advances; refused while a record of it is applying
  exo outbox list --config FILE [--limit N] [--json]
                                 emitted rows of the group that keep failing to publish (their key
                                 waits behind them), and rows no group's relay publishes
  exo outbox discard --config FILE --id N [--json]
  exo outbox reroute --config FILE --id N --topic T [--json]
                                 take such a row out of its key's way: delete it, or move it to
                                 topic T (a new row); the key's later rows are published next
  exo audit --config FILE --topic T [--partition P] [--from OFFSET|TIME] [--to OFFSET|TIME]
            [--chunk N] [--json]
                                 account for every record of a range: applied, stale, duplicate,
                                 dead-lettered (its letter present) or not reached by the group's
                                 committed offset; lists the rest and dedup rows whose record is
                                 missing (exit 4: not everything accounted for); TIME: UTC, as
                                 2026-11-28T20:00:00Z; --chunk: records per lookup (5000)
  exo mock-kafka [--brokers N] [--topic NAME:PARTITIONS]... [--bootstrap-file FILE]
                                 run librdkafka's mock cluster as a standalone broker until SIGTERM
{}  exo --help | --version

Exit codes: 0 success, 1 run-time failure, 2 bad usage or configuration, 3 unknown key,
4 audit found records or dedup rows not accounted for.
Failpoints for crash tests: EXO_FAILPOINTS=after_pg_commit=kill[@N] (replay: replay_after_ticket,
replay_after_claim_forgotten, replay_after_produce).
)";

constexpr const char* kExoCommands[] = {"run",     "migrate",    "check-config", "config-docs",
                                        "inspect", "dlq",        "sequence",     "outbox",
                                        "audit",   "mock-kafka", "help",         "--help",
                                        "-h",      "version",    "--version"};

std::string help(const AppSetup& setup) {
    std::string text = kHelp;
    return text.replace(text.find("{}"), 2, commands_help(setup.commands));
}

const UserCommand* find_command(const AppSetup& setup, const std::string& name) {
    for (const auto& c : setup.commands)
        if (c.name == name) return &c;
    return nullptr;
}

}  // namespace

bool is_exo_command(const std::string& name) {
    return std::find(std::begin(kExoCommands), std::end(kExoCommands), name) !=
           std::end(kExoCommands);
}

int run_cli(int argc, char** argv, const AppSetup& setup) {
    // Before any thread exists, so every thread inherits the blocked signals.
    std::stop_source stop;
    SignalWatcher signals(stop);
    if (argc < 2) {
        std::cerr << help(setup);
        return 2;
    }
    std::string command = argv[1];
    // Every command's failure is printed through it: the one place that masks
    // secrets and escapes control characters on the way to the terminal.
    ErrorOutput errors;
    try {
        if (command == "--help" || command == "-h" || command == "help") {
            std::cout << help(setup);
            return 0;
        }
        if (command == "--version" || command == "version") {
            std::cout << "exo " << EXO_VERSION << "\n";
            return 0;
        }
        if (command == "run") return run_command(argc, argv, setup, errors, stop.get_token());
        if (command == "migrate") return migrate_command(argc, argv, setup, errors);
        if (command == "check-config") return check_config_command(argc, argv, setup, errors);
        if (command == "config-docs") return config_docs_command(argc, argv);
        if (command == "inspect") return inspect_command(argc, argv, setup, errors);
        if (command == "dlq") return dlq_command(argc, argv, setup, errors);
        if (command == "sequence") return sequence_command(argc, argv, setup, errors);
        if (command == "outbox") return outbox_command(argc, argv, setup, errors);
        if (command == "audit") return audit_command(argc, argv, setup, errors);
        if (command == "mock-kafka") return mock_kafka_command(argc, argv, stop.get_token());
        if (const auto* own = find_command(setup, command))
            return CommandRunner::run(*own, argc, argv, setup, errors, stop.get_token());
        std::cerr << "exo: unknown command '" << errors.shown(command) << "'\n\n" << help(setup);
        return 2;
    } catch (const UsageError& e) {
        errors.print(command, e.what());
        return 2;
    } catch (const std::exception& e) {
        errors.print(command, std::string("failed: ") + e.what());
        return 1;
    }
}

}  // namespace exo
