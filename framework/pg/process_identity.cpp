#include "pg/process_identity.hpp"

#include <unistd.h>

namespace exo {

const std::string& process_identity() {
    static const std::string identity = [] {
        char host[256] = {0};
        if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        return std::string(host[0] != '\0' ? host : "unknown-host") + "/" +
               std::to_string(::getpid()) + "/exo-" + EXO_VERSION;
    }();
    return identity;
}

}  // namespace exo
