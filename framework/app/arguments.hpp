#pragma once
// Flag parsing for the subcommands: the same parser an application's own
// commands get (exo/command.hpp), so every command reads its flags one way.
#include <exo/command.hpp>

namespace exo {

using Arguments = CommandFlags;

}  // namespace exo
