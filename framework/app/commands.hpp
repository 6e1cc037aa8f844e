#pragma once
// The subcommands behind `exo`. Each returns the process exit code and throws
// UsageError (exit 2) for bad flags or config; any other exception is exit 1.
#include <stop_token>

#include "app/app_setup.hpp"

namespace exo {

// `exo inspect` and `exo dlq replay --key`: the group has never seen the key.
inline constexpr int kExitUnknownKey = 3;

int run_command(int argc, char** argv, const AppSetup& setup, std::stop_token stop);
int migrate_command(int argc, char** argv, const AppSetup& setup);
int check_config_command(int argc, char** argv, const AppSetup& setup);
int inspect_command(int argc, char** argv, const AppSetup& setup);
// `exo dlq list|replay`
int dlq_command(int argc, char** argv, const AppSetup& setup);
// `exo sequence advance`
int sequence_command(int argc, char** argv, const AppSetup& setup);
// `exo outbox list|discard|reroute`
int outbox_command(int argc, char** argv, const AppSetup& setup);
int mock_kafka_command(int argc, char** argv, std::stop_token stop);

}  // namespace exo
