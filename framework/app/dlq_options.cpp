#include "app/dlq_options.hpp"

#include "app/arguments.hpp"
#include "core/duration_text.hpp"

namespace exo {
namespace {

std::optional<std::int64_t> offset_flag(const Arguments& args) {
    auto text = args.get("offset");
    if (!text) return std::nullopt;
    bool digits = !text->empty() && text->size() < 19 &&
                  text->find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
        throw UsageError("--offset must be a record offset (a non-negative integer), not '" +
                         *text + "'");
    return std::stoll(*text);
}

}  // namespace

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
    s.topic = args.get("topic");
    if (args.get("partition")) s.partition = args.get_int("partition", 0);
    const int chosen = (s.key ? 1 : 0) + (s.offset ? 1 : 0) + (s.all ? 1 : 0);
    if (chosen != 1)
        throw UsageError(
            "say which dead letters to replay with exactly one of --key K, "
            "--offset N or --all (see exo --help)");
    if (s.key && (s.topic || s.partition))
        throw UsageError(
            "--topic and --partition narrow --offset and --all; a --key names one "
            "dead letter already");
    return s;
}

}  // namespace exo
