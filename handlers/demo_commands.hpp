#pragma once
// The example consumer's own commands, for the README's demo (scripts/demo.sh)
// against the daemon's embedded mock cluster:
//   demo-produce  produces sample payments (payments_workload.hpp) with
//                 duplicates and writes the exactly-once expectation to a file;
//   demo-check    waits until the consumer group consumed everything, then
//                 compares the ledger's tables and its outbox with it.
// Registered with Application::command (exo/command.hpp), as a team adds its
// own tools to its consumer.
#include <exo/application.hpp>

namespace exo::demo {

void register_demo_commands(Application& app);

}  // namespace exo::demo
