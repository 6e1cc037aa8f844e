// exo/application.hpp's and exo/command.hpp's example: a consumer's main(),
// with a handler, its migrations and a command of its own. Compiled with the
// unit tests (as a function: the test binary has its own main()).
#include <exo/exo.hpp>
#include <iostream>
#include <pqxx/pqxx>

#include "handler_example.hpp"

namespace header_examples {

// `<binary> greetings-count --config exo.yaml [--name N]`: how many greetings
// the consumer wrote (for N).
int greetings_count(exo::CommandContext& ctx) {
    const auto flags = ctx.flags({"config", "name"});
    ctx.load_config(flags.required("config"));  // ConfigError: exit code 2
    auto connection = ctx.connect_postgres();
    pqxx::nontransaction tx(*connection);
    const auto name = flags.get("name");
    const auto count =
        name ? tx.exec_params("SELECT count(*) FROM greetings WHERE name = $1", *name)[0][0]
             : tx.exec("SELECT count(*) FROM greetings")[0][0];
    std::cout << count.as<long>() << " greetings\n";
    return 0;
}

int application_main(int argc, char** argv) {  // a consumer's int main(int argc, char** argv)
    exo::Application app;
    app.handler<GreetingHandler>("greeting");  // or app.handler("name", factory)
    app.migrations_dir("sql");                 // or app.migration("0001_x.sql", sql_text)
    app.command("greetings-count", "--config FILE [--name N]",
                "count the greetings written (for one name)", greetings_count);
    return app.main(argc, argv);
}

}  // namespace header_examples
