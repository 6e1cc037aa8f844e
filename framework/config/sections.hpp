#pragma once
// The section readers: each turns one mapping of exo.yaml into its plain struct
// (config.hpp), recording every problem in the Reader's context. read_config
// (config_parser.cpp) opens each mapping once, with the keys listed here.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/yaml_reader.hpp"

namespace exo::config_reading {

// The keys each top-level section accepts.
extern const Keys kKafkaKeys;
extern const Keys kRedisKeys;
extern const Keys kPostgresKeys;
extern const Keys kClaimKeys;
extern const Keys kPipelineKeys;
extern const Keys kLoggingKeys;
extern const Keys kObservabilityKeys;
extern const Keys kOutboxKeys;
extern const Keys kRetentionKeys;

// A key that is on or off: true | false.
extern const Choices<bool> kSwitch;

// kafka_section.cpp: brokers or the mock cluster, the group, librdkafka properties.
KafkaConfig read_kafka(const Reader& kafka);

// store_sections.cpp: where outcomes are kept.
RedisConfig read_redis(const Reader& redis);
PostgresConfig read_postgres(const Reader& postgres);
ClaimConfig read_claim(const Reader& claim);

// process_sections.cpp: how the process runs.
PipelineConfig read_pipeline(const Reader& pipeline);
LoggingConfig read_logging(const Reader& logging);

// observability_section.cpp: the HTTP endpoint's address (absent: no endpoint).
ObservabilityConfig read_observability(const Reader& observability);

// outbox_section.cpp: the relay of emitted records; `kafka` for the producer's
// message.max.bytes.
OutboxConfig read_outbox(const Reader& outbox, const KafkaConfig& kafka);

// retention_section.cpp: the pace of retention pruning.
RetentionConfig read_retention(const Reader& retention);

// bindings_section.cpp: `bindings:` of the top-level mapping `top` (required,
// at least one, each topic once). `handlers` are the registered handler names.
std::vector<BindingConfig> read_bindings(const Reader& top,
                                         const std::vector<std::string>& handlers);

}  // namespace exo::config_reading
