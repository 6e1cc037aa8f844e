// exo/testing.hpp's example: the handler test kit on handler_example.cpp's
// handler. Compiled with the unit tests; run, it needs a PostgreSQL at `uri`.
#include <exo/testing.hpp>
#include <memory>
#include <string>

#include "handler_example.hpp"
#include "testing_example.hpp"

namespace header_examples {

// A test body: CHECKs written as plain bools, so this file needs no test framework.
bool greeting_kit_example(const std::string& uri) {  // e.g. postgresql://user@localhost/test
    using exo::testing::Outcome;
    exo::testing::HandlerKit kit(
        uri, std::make_unique<GreetingHandler>(exo::testing::handler_options({})),
        {.key = "json:/id", .migrations = {{"0001_greetings.sql", kGreetingsMigration}}});
    bool ok = kit.deliver({.value = R"({"id": "g1", "name": "Ada"})"}) == Outcome::applied;
    ok = ok && kit.deliver({.value = R"({"id": "g1", "name": "Ada"})"}) == Outcome::duplicate;
    return ok && kit.query_value<long>("SELECT count(*) FROM greetings") == 1;
}

}  // namespace header_examples
