#pragma once
// The subcommands behind `exo`. Each returns the process exit code and throws
// UsageError (exit 2) for bad flags or config; any other exception is exit 1.
// `errors`: run_cli's, given to load_config (app/error_output.hpp), and where a
// command writes a failure it survives.
#include <stop_token>

#include "app/app_setup.hpp"
#include "app/error_output.hpp"

namespace exo {

// `exo inspect` and `exo dlq replay --key`: the group has never seen the key.
inline constexpr int kExitUnknownKey = 3;
// `exo audit`: a record or dedup row of the range is not accounted for.
inline constexpr int kExitUnaccounted = 4;

int run_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors,
                std::stop_token stop);
int migrate_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
int check_config_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
// `exo config-docs [--write FILE]`, not in --help (a tool for exo's developers):
// docs/configuration.md's key tables from the config schema, printed, or written
// between FILE's markers.
int config_docs_command(int argc, char** argv);
int inspect_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
// `exo dlq list|replay`
int dlq_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
// `exo sequence advance`
int sequence_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
// `exo outbox list|discard|reroute`
int outbox_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
// `exo audit`
int audit_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors);
int mock_kafka_command(int argc, char** argv, std::stop_token stop);

}  // namespace exo
