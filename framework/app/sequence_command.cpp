// `exo sequence advance` (docs/operations.md, "Recovering a strict entity"):
// move a strict entity past sequences that will never apply, audited;
// `exo sequence rewind`: move an entity back below a sequence that jumped, audited.
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

int sequence_move(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors,
                  bool backward) {
    Arguments args(backward ? "sequence rewind" : "sequence advance", argc, argv, 3,
                   {"config", "handler", "entity", "to", "reason", "by"},
                   backward ? std::vector<std::string>{"dry-run", "json", "confirm-rewind"}
                            : std::vector<std::string>{"dry-run", "json"});
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    const SequenceAdvanceRequest request = backward ? rewind_request(args, config, login_name())
                                                    : advance_request(args, config, login_name());
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
    if (sub == "advance") return sequence_move(argc, argv, setup, errors, false);
    if (sub == "rewind") return sequence_move(argc, argv, setup, errors, true);
    throw UsageError("say `advance` or `rewind`" +
                     (sub.empty() ? std::string() : ", not '" + sub + "'") + " (see exo --help)");
}

}  // namespace exo
