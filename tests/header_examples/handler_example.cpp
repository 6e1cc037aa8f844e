// The handler exo/handler.hpp describes, compiled with the unit tests so the
// example cannot drift from the API. testing_example.cpp tests it with the kit.
#include "handler_example.hpp"

namespace header_examples {

GreetingHandler::GreetingHandler(const exo::HandlerOptions& o)
    : greeting_(o.string("greeting", "hello")) {}

void GreetingHandler::prepare(pqxx::connection_base& c) {
    c.prepare("greet", "INSERT INTO greetings (name, greeting) VALUES ($1, $2)");
}

void GreetingHandler::handle(exo::HandlerContext& ctx) {
    const auto& doc = ctx.json();  // parsed once; PermanentError if not JSON
    if (!doc.contains("name")) throw exo::PermanentError("no name");  // dead-lettered
    ctx.transaction().exec_prepared("greet", doc["name"].get<std::string>(), greeting_);
    ctx.set_result("greeted");  // optional: stored with the dedup row
    // Published once the transaction commits (exo/outbox.hpp).
    ctx.emit("greetings.sent", doc["name"].get<std::string>(), greeting_,
             {{"event", ctx.idempotency_key()}});
}

}  // namespace header_examples
