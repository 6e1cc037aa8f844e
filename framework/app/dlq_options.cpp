#include "app/dlq_options.hpp"

#include "app/arguments.hpp"
#include "core/duration_text.hpp"

#include <set>

namespace exo {
namespace {

std::optional<std::int64_t> non_negative(const Arguments& args, const std::string& flag,
                                         const char* what) {
    auto text = args.get(flag);
    if (!text) return std::nullopt;
    bool digits = !text->empty() && text->size() < 19 &&
                  text->find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
        throw UsageError("--" + flag + " must be " + what + " (a non-negative integer), not '" +
                         *text + "'");
    return std::stoll(*text);
}

std::optional<std::int64_t> offset_flag(const Arguments& args) {
    return non_negative(args, "offset", "a record offset");
}

// The handler whose sequences move: --handler, or the only one with a sequence.
std::string sequenced_handler(const Arguments& args, const Config& config) {
    std::set<std::string> handlers;
    for (const auto& b : config.bindings)
        if (b.sequence) handlers.insert(b.handler);
    std::string list;
    for (const auto& h : handlers) list += (list.empty() ? "" : ", ") + h;
    if (handlers.empty())
        throw UsageError("no binding of this config has a sequence: there is nothing to advance");
    auto handler = args.get("handler");
    if (!handler) {
        if (handlers.size() == 1) return *handlers.begin();
        throw UsageError("say which handler's entity to advance with --handler (one of: " + list +
                         ")");
    }
    if (!handlers.contains(*handler))
        throw UsageError(
            "--handler '" + *handler +
            "' has no binding with a sequence in this config (handlers with one: " + list + ")");
    return *handler;
}

// The flags both moves share; `why` completes "--reason is required: say ".
SequenceAdvanceRequest move_request(const Arguments& args, const Config& config,
                                    const std::string& login, const char* to_hint,
                                    const char* why) {
    SequenceAdvanceRequest rq;
    const std::string handler = sequenced_handler(args, config);
    // The row the handler's entities have in this group: every sequenced
    // binding of one handler has the same scope (the config refuses others).
    for (const auto& b : config.bindings)
        if (b.sequence && b.handler == handler) {
            rq.handler = sequence_owner(handler, b.sequence->scope, config.kafka.group_id);
            break;
        }
    rq.entity = args.required("entity");
    if (rq.entity.empty()) throw UsageError("--entity needs the entity as exo stores it");
    auto to = non_negative(args, "to", "the sequence to move to");
    if (!to) throw UsageError(std::string("--to is required: ") + to_hint);
    rq.to = *to;
    rq.reason = args.get("reason").value_or("");
    if (rq.reason.find_first_not_of(" \t\n") == std::string::npos)
        throw UsageError(std::string("--reason is required: say ") + why +
                         " (it is kept in exo_sequence_advances)");
    rq.by = args.get("by").value_or(login);
    if (rq.by.empty()) rq.by = "unknown";
    rq.dry_run = args.has("dry-run");
    return rq;
}

}  // namespace

SequenceAdvanceRequest advance_request(const Arguments& args, const Config& config,
                                       const std::string& login) {
    return move_request(args, config, login, "the last sequence that will never apply",
                        "why these sequences will never apply");
}

SequenceAdvanceRequest rewind_request(const Arguments& args, const Config& config,
                                      const std::string& login) {
    auto rq = move_request(args, config, login,
                           "the last sequence the entity really applied, below the one that "
                           "jumped",
                           "why the entity's sequence is wrong");
    // A rewind lets sequences above --to apply again: asked for in so many words.
    if (!rq.dry_run && !args.has("confirm-rewind"))
        throw UsageError("a rewind lets records of sequences above " + std::to_string(rq.to) +
                         " apply again (those whose keys were never applied): add "
                         "--confirm-rewind to do it, or --dry-run to see the move");
    rq.backward = true;
    return rq;
}

std::chrono::milliseconds parse_since(std::string_view text) {
    auto ms = with_unit_as_ms(text);
    if (!ms || *ms <= 0)
        throw UsageError(
            "--since must be a positive duration with a unit (e.g. 90s, 30m, 12h, 7d), "
            "not '" +
            std::string(text) + "'");
    return std::chrono::milliseconds(*ms);
}

DeadLetterSelection list_selection(const Arguments& args) {
    DeadLetterSelection s;
    s.topic = args.get("topic");
    if (auto since = args.get("since")) s.since = parse_since(*since);
    return s;
}

DeadLetterSelection replay_selection(const Arguments& args) {
    DeadLetterSelection s;
    s.key = args.get("key");
    s.offset = offset_flag(args);
    s.all = args.has("all");
    s.entity = args.get("entity");
    s.topic = args.get("topic");
    if (args.get("partition")) s.partition = args.get_int("partition", 0);
    const int chosen = (s.key ? 1 : 0) + (s.offset ? 1 : 0) + (s.all ? 1 : 0) + (s.entity ? 1 : 0);
    if (chosen != 1)
        throw UsageError(
            "say which dead letters to replay with exactly one of --key K, "
            "--offset N, --entity E or --all (see exo --help)");
    if (s.key && (s.topic || s.partition))
        throw UsageError(
            "--topic and --partition narrow --offset, --entity and --all; a --key names one "
            "dead letter already");
    if (s.entity && s.entity->empty())
        throw UsageError("--entity needs the entity as exo stores it (see exo inspect)");
    return s;
}

}  // namespace exo
