#pragma once
// Moved to the public headers; kept so internal includes read as before.
#include <exo/types.hpp>
