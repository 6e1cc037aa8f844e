#include "app/consumer_process.hpp"

#include "protocol/dead_letter_publisher.hpp"

namespace exo {
namespace {

std::unique_ptr<OutboxRelay> relay_for(const Config& config, PipelineStats& stats,
                                       Failpoints& failpoints, const std::string& bootstrap) {
    if (!config.outbox.enabled) return nullptr;
    return std::make_unique<OutboxRelay>(
        config.outbox, config.postgres, config.kafka.group_id, stats, failpoints,
        relay_producer(dead_letter_producer(bootstrap, config.kafka), config.outbox.emit_limits));
}

}  // namespace

ConsumerProcess::ConsumerProcess(const Config& config, const HandlerRegistry& handlers,
                                 Failpoints& failpoints, std::string bootstrap_servers)
    : stats_(config.binding_topics()),
      pruner_(config.retention, config.postgres, config.outbox.retention, config.kafka.group_id,
              stats_),
      relay_(relay_for(config, stats_, failpoints, bootstrap_servers)),
      daemon_(config, handlers, failpoints, std::move(bootstrap_servers), stats_,
              relay_ ? &relay_->doorbell() : nullptr) {}

void ConsumerProcess::run(std::stop_token stop) {
    pruner_.start();
    if (relay_) relay_->start();
    // Stopped however the daemon ends: a fatal Kafka error must not leave their
    // threads running into the destructors.
    struct StopBeside {
        RetentionPruner& pruner;
        OutboxRelay* relay;
        ~StopBeside() {
            pruner.stop();
            if (relay) relay->stop();
        }
    } beside{pruner_, relay_.get()};
    daemon_.run(stop);
}

}  // namespace exo
