// `exo outbox list|discard|reroute` (docs/outbox.md, "Rows that cannot be
// published"): the rows of the config's group whose publication keeps failing,
// and taking one out of its key's way: dropped, or sent to another topic.
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/arguments.hpp"
#include "app/commands.hpp"
#include "app/config_loading.hpp"
#include "core/text.hpp"
#include "outbox/outbox_admin.hpp"
#include "pg/session.hpp"

namespace exo {
namespace {

nlohmann::json to_json(const OutboxProblemRow& r) {
    return {{"id", r.id},
            {"group", r.group},
            {"topic", r.topic},
            {"key", r.key ? nlohmann::json(*r.key) : nlohmann::json(nullptr)},
            {"exo_outbox_id", r.message_id},
            {"value_bytes", r.value_bytes},
            {"waiting_behind", r.waiting_behind},
            {"failures", r.failures},
            {"reason", r.reason},
            {"first_failed_at", r.first_failed_at},
            {"next_attempt_at", r.next_attempt_at}};
}

// Text values escaped as ops/ops_report.cpp's (core/text.hpp one_line_text): a
// key or a broker's reason must not forge a line or drive the terminal.
std::string to_text(const OutboxProblemRow& r) {
    return "row " + std::to_string(r.id) + "  topic " + one_line_text(r.topic) + "  key " +
           (r.key ? one_line_text(*r.key) : "(none)") + "  " + std::to_string(r.value_bytes) +
           " bytes  " + std::to_string(r.waiting_behind) + " later row(s) waiting" +
           (r.group.empty() ? "  (no group)" : "") + "\n  " +
           (r.failures > 0 ? std::to_string(r.failures) + " failure(s) since " +
                                 one_line_text(r.first_failed_at) + ", next attempt " +
                                 one_line_text(r.next_attempt_at) + ": "
                           : std::string()) +
           one_line_text(r.reason) + "\n";
}

void print(const Arguments& args, const std::vector<OutboxProblemRow>& rows, const char* none) {
    if (args.has("json")) {
        auto out = nlohmann::json::array();
        for (const auto& r : rows) out.push_back(to_json(r));
        std::cout << out.dump(2) << "\n";
        return;
    }
    if (rows.empty()) std::cout << none << "\n";
    for (const auto& r : rows) std::cout << to_text(r);
}

std::int64_t row_id(const Arguments& args) {
    const auto text = args.required("id");
    try {
        std::size_t end = 0;
        const auto id = std::stoll(text, &end);
        if (end == text.size() && id > 0) return id;
    } catch (const std::exception&) {
    }
    throw UsageError("--id takes an outbox row id as `exo outbox list` shows it, not '" + text +
                     "'");
}

int outbox_list(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    Arguments args("outbox list", argc, argv, 3, {"config", "limit"}, {"json"});
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    auto pg = open_postgres_session(config.postgres);
    print(args, list_outbox_problems(*pg, config.kafka.group_id, args.get_int("limit", 100)),
          "no outbox row is failing");
    return 0;
}

int outbox_change(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors, bool reroute) {
    const std::string name = reroute ? "outbox reroute" : "outbox discard";
    Arguments args(name, argc, argv, 3,
                   reroute ? std::vector<std::string>{"config", "id", "topic"}
                           : std::vector<std::string>{"config", "id"},
                   {"json"});
    const auto id = row_id(args);
    const auto topic = reroute ? args.required("topic") : std::string();
    const Config config = load_config(args.required("config"), setup.handlers, errors);
    auto pg = open_postgres_session(config.postgres);
    try {
        const auto row = reroute ? reroute_outbox_row(*pg, config.kafka.group_id, id, topic,
                                                      config.outbox.emit_limits.producer_bytes())
                                 : discard_outbox_row(*pg, config.kafka.group_id, id);
        if (!args.has("json"))
            std::cout << (reroute ? "rerouted to " + topic + " (a new row, published next): "
                                  : std::string("discarded: "));
        print(args, {row}, "");
    } catch (const OutboxAdminRefused& e) {
        errors.print(name, e.what());
        return 1;
    }
    return 0;
}

}  // namespace

int outbox_command(int argc, char** argv, const AppSetup& setup, ErrorOutput& errors) {
    const std::string sub = argc >= 3 ? argv[2] : "";
    if (sub == "list") return outbox_list(argc, argv, setup, errors);
    if (sub == "discard") return outbox_change(argc, argv, setup, errors, false);
    if (sub == "reroute") return outbox_change(argc, argv, setup, errors, true);
    throw UsageError("say `list`, `discard` or `reroute`" +
                     (sub.empty() ? std::string() : ", not '" + sub + "'") + " (see exo --help)");
}

}  // namespace exo
