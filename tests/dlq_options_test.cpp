// The flags of `exo inspect` and `exo dlq list|replay`: app/dlq_options.hpp and
// the switches of app/arguments.hpp. No servers.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include <exo/errors.hpp>
#include "app/arguments.hpp"
#include "app/dlq_options.hpp"

using namespace exo;
using namespace std::chrono_literals;

namespace {

// argv for `exo dlq replay <args...>`; the strings live as long as this object.
class Argv {
public:
    Argv(std::initializer_list<std::string> args) : strings_{"exo", "dlq", "replay"} {
        strings_.insert(strings_.end(), args.begin(), args.end());
        for (auto& s : strings_) pointers_.push_back(s.data());
        pointers_.push_back(nullptr);
    }
    Arguments parse() {
        return Arguments("dlq replay", static_cast<int>(strings_.size()), pointers_.data(), 3,
                         {"config", "key", "offset", "topic", "partition", "since", "entity"},
                         {"all", "dry-run", "json"});
    }

private:
    std::vector<std::string> strings_;
    std::vector<char*> pointers_;
};

}  // namespace

TEST_CASE("a switch takes no value and a flag after it is still read") {
    auto args = Argv{"--json", "--key", "k1", "--dry-run"}.parse();
    CHECK(args.has("json"));
    CHECK(args.has("dry-run"));
    CHECK_FALSE(args.has("all"));
    CHECK(args.get("key") == "k1");
    CHECK_THROWS_WITH_AS(Argv{"--json=yes"}.parse(), doctest::Contains("--json takes no value"),
                         UsageError);
}

TEST_CASE("since takes a duration with a unit and refuses a bare number or nonsense") {
    CHECK(parse_since("90s") == 90s);
    CHECK(parse_since("30m") == 30min);
    CHECK(parse_since("2h") == 2h);
    CHECK(parse_since("7d") == 7 * 24h);
    CHECK_THROWS_WITH_AS(parse_since("15"), doctest::Contains("with a unit"), UsageError);
    CHECK_THROWS_AS(parse_since("soon"), UsageError);
    CHECK_THROWS_AS(parse_since("0s"), UsageError);
}

TEST_CASE("replay needs exactly one of --key, --offset, --entity and --all") {
    CHECK(replay_selection(Argv{"--key", "k"}.parse()).key == "k");
    CHECK(replay_selection(Argv{"--entity", "acc-1", "--topic", "t"}.parse()).entity == "acc-1");
    CHECK_THROWS_AS(replay_selection(Argv{"--entity", "acc-1", "--all"}.parse()), UsageError);
    CHECK_THROWS_AS(replay_selection(Argv{"--entity", "acc-1", "--key", "k"}.parse()), UsageError);
    CHECK_THROWS_AS(replay_selection(Argv{"--entity", ""}.parse()), UsageError);
    CHECK(replay_selection(Argv{"--offset", "42"}.parse()).offset == 42);
    CHECK(replay_selection(Argv{"--all", "--topic", "t"}.parse()).all);
    CHECK_THROWS_WITH_AS(replay_selection(Argv{}.parse()), doctest::Contains("exactly one"),
                         UsageError);
    CHECK_THROWS_AS(replay_selection(Argv{"--key", "k", "--all"}.parse()), UsageError);
    CHECK_THROWS_AS(replay_selection(Argv{"--offset", "1", "--all"}.parse()), UsageError);
}

TEST_CASE("replay refuses an offset that is not a non-negative integer, and --topic with --key") {
    CHECK_THROWS_WITH_AS(replay_selection(Argv{"--offset", "-1"}.parse()),
                         doctest::Contains("non-negative integer"), UsageError);
    CHECK_THROWS_AS(replay_selection(Argv{"--offset", "12x"}.parse()), UsageError);
    CHECK_THROWS_WITH_AS(replay_selection(Argv{"--key", "k", "--topic", "t"}.parse()),
                         doctest::Contains("narrow --offset, --entity and --all"), UsageError);
    auto s = replay_selection(Argv{"--offset", "7", "--topic", "t", "--partition", "2"}.parse());
    CHECK(s.topic == "t");
    CHECK(s.partition == 2);
}

namespace {

// argv for `exo sequence advance <args...>`.
Arguments advance_args(std::vector<std::string> args, std::vector<std::string>& storage,
                       std::vector<char*>& pointers) {
    storage = {"exo", "sequence", "advance"};
    storage.insert(storage.end(), args.begin(), args.end());
    for (auto& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return Arguments("sequence advance", static_cast<int>(storage.size()), pointers.data(), 3,
                     {"handler", "entity", "to", "reason", "by"}, {"dry-run"});
}

Config two_handlers() {
    Config c;
    BindingConfig ledger;
    ledger.topic = "payments";
    ledger.handler = "ledger";
    ledger.sequence = SequenceConfig{"/accountId", "/sequenceId", SequenceMode::strict};
    BindingConfig audit;
    audit.topic = "audit";
    audit.handler = "audit";
    c.bindings = {ledger, audit};
    return c;
}

SequenceAdvanceRequest advance(std::vector<std::string> args, const Config& config) {
    std::vector<std::string> storage;
    std::vector<char*> pointers;
    return advance_request(advance_args(std::move(args), storage, pointers), config, "alice");
}

}  // namespace

TEST_CASE("sequence advance takes the only sequenced handler, a target, a reason and who") {
    auto rq = advance({"--entity", "acc-1", "--to", "5", "--reason", "poison", "--dry-run"},
                      two_handlers());
    CHECK(rq.handler == "ledger");
    CHECK(rq.entity == "acc-1");
    CHECK(rq.to == 5);
    CHECK(rq.reason == "poison");
    CHECK(rq.by == "alice");
    CHECK(rq.dry_run);
    CHECK(advance({"--entity", "e", "--to", "1", "--reason", "r", "--by", "bob"}, two_handlers())
              .by == "bob");
}

TEST_CASE("sequence advance refuses a blank reason, a bad target and a handler without sequence") {
    const Config c = two_handlers();
    CHECK_THROWS_WITH_AS(advance({"--entity", "e", "--to", "1", "--reason", "  "}, c),
                         doctest::Contains("--reason is required"), UsageError);
    CHECK_THROWS_WITH_AS(advance({"--entity", "e", "--reason", "r"}, c),
                         doctest::Contains("--to is required"), UsageError);
    CHECK_THROWS_AS(advance({"--entity", "e", "--to", "-3", "--reason", "r"}, c), UsageError);
    CHECK_THROWS_WITH_AS(
        advance({"--handler", "audit", "--entity", "e", "--to", "1", "--reason", "r"}, c),
        doctest::Contains("handlers with one: ledger"), UsageError);
    Config none;
    none.bindings = {c.bindings[1]};
    CHECK_THROWS_WITH_AS(advance({"--entity", "e", "--to", "1", "--reason", "r"}, none),
                         doctest::Contains("nothing to advance"), UsageError);
}

namespace {

// argv for `exo sequence rewind <args...>`.
SequenceAdvanceRequest rewind(std::vector<std::string> args, const Config& config) {
    std::vector<std::string> storage = {"exo", "sequence", "rewind"};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (auto& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    const Arguments parsed("sequence rewind", static_cast<int>(storage.size()), pointers.data(), 3,
                           {"handler", "entity", "to", "reason", "by"},
                           {"dry-run", "confirm-rewind"});
    return rewind_request(parsed, config, "alice");
}

}  // namespace

TEST_CASE(
    "sequence rewind moves backward only with --confirm-rewind or as a dry run, and a "
    "reason") {
    const Config c = two_handlers();
    CHECK_THROWS_WITH_AS(rewind({"--entity", "acc-1", "--to", "41", "--reason", "jumped"}, c),
                         doctest::Contains("add --confirm-rewind"), UsageError);
    CHECK_THROWS_WITH_AS(
        rewind({"--entity", "acc-1", "--to", "41", "--confirm-rewind", "--reason", " "}, c),
        doctest::Contains("--reason is required: say why the entity's sequence is wrong"),
        UsageError);
    auto rq =
        rewind({"--entity", "acc-1", "--to", "41", "--reason", "jumped", "--confirm-rewind"}, c);
    CHECK(rq.backward);
    CHECK(rq.to == 41);
    CHECK(rq.handler == "ledger");
    CHECK(rq.by == "alice");
    CHECK(
        rewind({"--entity", "acc-1", "--to", "41", "--reason", "jumped", "--dry-run"}, c).dry_run);
    CHECK_FALSE(advance({"--entity", "e", "--to", "1", "--reason", "r"}, c).backward);
}

TEST_CASE("sequence advance and rewind name a group-scoped handler's row handler@group") {
    Config c = two_handlers();
    c.kafka.group_id = "prod";
    c.bindings[0].sequence->scope = SequenceScope::group;
    CHECK(advance({"--entity", "e", "--to", "1", "--reason", "r"}, c).handler == "ledger@prod");
    CHECK(rewind({"--entity", "e", "--to", "1", "--reason", "r", "--dry-run"}, c).handler ==
          "ledger@prod");
    CHECK(advance({"--handler", "ledger", "--entity", "e", "--to", "1", "--reason", "r"}, c)
              .handler == "ledger@prod");
}
