#pragma once
// Files compiled into the binary at build time (cmake/EmbedFiles.cmake):
// Lua scripts, SQL migrations and the default configs.
#include <string_view>
#include <vector>

namespace exo {

struct EmbeddedFile {
    std::string_view name;      // file name without directory, e.g. "claim.lua"
    std::string_view contents;  // exact bytes of the file
};

}  // namespace exo

namespace exo::embedded::lua {
const std::vector<exo::EmbeddedFile>& files();  // sorted by name
}
namespace exo::embedded::sql {
const std::vector<exo::EmbeddedFile>& files();  // sorted by name
}
namespace exo::embedded::config {
const std::vector<exo::EmbeddedFile>& files();  // sorted by name
}
