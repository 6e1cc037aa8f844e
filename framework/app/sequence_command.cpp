// `exo sequence advance` (docs/operations.md, "Recovering a strict entity"):
// move a strict entity past sequences that will never apply, audited.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "app/dlq_options.hpp"
#include "ops/ops_report.hpp"
#include "ops/sequence_advance.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

// Who runs the command, for the audit row when --by is not given.
std::string login_name() {
    for (const char* name : {"SUDO_USER", "USER", "LOGNAME"})
        if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr)
        return pw->pw_name;
    return "";
}

int sequence_advance(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("sequence advance", argc, argv, 3,
                   {"config", "handler", "entity", "to", "reason", "by"}, {"dry-run", "json"});
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    const SequenceAdvanceRequest request = advance_request(args, config, login_name());
    auto pg = open_postgres_session(config.postgres);
    const SequenceAdvanceResult result = advance_sequence(*pg, request);
    if (args.has("json"))
        std::cout << to_json(result).dump(2) << "\n";
    else
        std::cout << to_text(result);
    return 0;
}

}  // namespace

int sequence_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    const std::string sub = argc >= 3 ? argv[2] : "";
    if (sub == "advance") return sequence_advance(argc, argv, setup, errors);
    throw UsageError("say `advance`" + (sub.empty() ? std::string() : ", not '" + sub + "'") +
                     " (see exo --help)");
}

}  // namespace exo
