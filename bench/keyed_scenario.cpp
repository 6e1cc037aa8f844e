#include "keyed_scenario.hpp"

#include <pqxx/pqxx>

#include "config_overrides.hpp"

namespace exo::bench {

PipelineScenario keyed_scenario(BenchWorld& world, const Isolation& iso, const KeyedWorkload& w,
                                const KeyedScenarioSpec& spec, const BenchOptions& o,
                                const ServerProcesses& servers) {
    {
        pqxx::connection c(iso.uri);
        pqxx::nontransaction tx(c);
        tx.exec(kKeyedTablesSql);
    }
    auto config = world.pipeline_config(iso, w.topic);
    auto& b = config.bindings.at(0);
    b.handler = "keyed_wait";
    b.key = ledger_key_source();  // json /eventId
    b.sequence.reset();
    if (o.keyed_batch_size > 0) config.pipeline.batch_size = o.keyed_batch_size;
    std::vector<ConfigOverride> overrides;
    if (spec.concurrent)
        overrides.push_back(
            {"pipeline.concurrency", std::to_string(keyed_concurrency(o, spec.wait))});
    if (spec.wait == KeyedWait::outside)
        overrides.push_back({"pipeline.outside_threads", std::to_string(o.keyed_outside_threads)});
    if (spec.key_ordering) overrides.push_back({"bindings[0].ordering", "key"});
    overrides.insert(overrides.end(), o.keyed_config.begin(), o.keyed_config.end());
    if (!overrides.empty()) config = apply_config_overrides(config, overrides);

    PipelineScenario s{spec.name, config, nullptr, 0, 1.0, servers};
    const auto wait = std::chrono::microseconds(o.keyed_wait_us);
    s.own_work = PipelineScenario::OwnWork{
        w.topic, w.records.size(),
        [mode = spec.wait, wait](HandlerRegistry& registry) {
            registry.add("keyed_wait",
                         [mode, wait](const HandlerOptions&) -> std::unique_ptr<Handler> {
                             if (mode == KeyedWait::outside)
                                 return std::make_unique<KeyedOutsideWaitHandler>(wait);
                             return std::make_unique<KeyedWaitHandler>(mode, wait);
                         });
        },
        [&w](const Isolation& i) { return check_keyed(i, w); }};
    return s;
}

}  // namespace exo::bench
