#pragma once
// The sections of exo.yaml. Each scalar section is a table of keys (schema.hpp)
// defined in its *_section.cpp: read_config (config_parser.cpp) opens each
// mapping once with the table's names() and reads it with the table;
// config_printer.cpp prints it and config_docs.cpp documents it with the same
// table. `bindings`, a list of mappings with nested key specs, keeps a reader of
// its own and a table of docs rows.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"

namespace exo::config_reading {

// The spellings of every enum exo.yaml holds, used to read and to print them.
extern const Choices<ClaimConfig::Store> kClaimStores;
extern const Choices<RedisDownPolicy> kRedisDownPolicies;
extern const Choices<LogFormat> kLogFormats;
extern const Choices<Ordering> kOrderings;
extern const Choices<KeyReusePolicy> kKeyReusePolicies;
extern const Choices<SequenceMode> kSequenceModes;
extern const Choices<SequenceScope> kSequenceScopes;

}  // namespace exo::config_reading

namespace exo::config_schema {

// kafka_section.cpp: brokers or the mock cluster, the group, librdkafka properties.
const Section<KafkaConfig>& kafka_section();
const Section<MockKafkaConfig>& kafka_mock_section();

// store_sections.cpp: where outcomes are kept.
const Section<RedisConfig>& redis_section();
const Section<PostgresConfig>& postgres_section();
const Section<ClaimConfig>& claim_section();

// process_sections.cpp: how the process runs and how much it says.
const Section<PipelineConfig>& pipeline_section();
const Section<LoggingConfig>& logging_section();

// observability_section.cpp: the HTTP endpoint's address (absent: no endpoint).
const Section<ObservabilityConfig>& observability_section();

// outbox_section.cpp: the relay of emitted records.
const Section<OutboxConfig>& outbox_section();
// The emit limits the producer's message.max.bytes (kafka.properties) sets.
EmitLimits outbox_emit_limits(const KafkaConfig& kafka);

// retention_section.cpp: the pace of retention pruning.
const Section<RetentionConfig>& retention_section();

// bindings_section.cpp: the docs rows of a binding's keys (bindings[].*), and
// "bindings: [...]" as check-config --print writes it, from the same table as the
// reader (read_bindings below).
std::vector<DocRow> binding_doc_rows();
void print_bindings(YAML::Emitter& out, const Config& config);

// Calls f(section, member) for every scalar section and the member of Config it
// fills, in the order the file, the printer and the docs list them: the one
// list of sections read_config, effective_config_yaml and the docs go through.
template <typename F>
void for_each_section(F&& f) {
    f(kafka_section(), &Config::kafka);
    f(redis_section(), &Config::redis);
    f(postgres_section(), &Config::postgres);
    f(claim_section(), &Config::claim);
    f(pipeline_section(), &Config::pipeline);
    f(logging_section(), &Config::logging);
    f(observability_section(), &Config::observability);
    f(outbox_section(), &Config::outbox);
    f(retention_section(), &Config::retention);
}

}  // namespace exo::config_schema

namespace exo::config_reading {

// bindings_section.cpp: `bindings:` of the top-level mapping `top` (required,
// at least one, each topic once). `handlers` are the registered handler names.
std::vector<BindingConfig> read_bindings(const Reader& top,
                                         const std::vector<std::string>& handlers);

}  // namespace exo::config_reading
