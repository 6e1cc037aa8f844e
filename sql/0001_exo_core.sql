-- exo's own tables. Applied by `exo migrate`; the daemon refuses to start
-- until every embedded migration is applied.

-- The correctness fence (docs/design.md section 2): one row per (consumer group,
-- idempotency key), inserted in the same transaction as the handler's effects.
CREATE TABLE exo_processed (
    consumer_group  text        NOT NULL,
    idempotency_key text        NOT NULL,
    fencing_token   bigint      NOT NULL,
    topic           text        NOT NULL,
    kafka_partition integer     NOT NULL,
    kafka_offset    bigint      NOT NULL,
    outcome         text        NOT NULL CHECK (outcome IN ('APPLIED', 'STALE', 'DEAD_LETTERED')),
    result          text,
    processed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);
-- Retention pruning deletes by age.
CREATE INDEX exo_processed_processed_at ON exo_processed (processed_at);

-- Sequence-based optimistic concurrency (docs/design.md section 4): the highest
-- sequence applied per (handler, entity).
CREATE TABLE exo_sequences (
    handler       text   NOT NULL,
    entity        text   NOT NULL,
    last_sequence bigint NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (handler, entity)
);
