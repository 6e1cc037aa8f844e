-- What exo wrote to a dead-letter topic (docs/operations.md, "Security"): one row
-- per dead-lettered record, written in the dead-letter step's transaction after
-- Kafka acknowledged the letter (committed with its DEAD_LETTERED dedup row, or
-- alone for a letter without one: a strict sequence's gap timeout, a keyless
-- record). `exo dlq replay` re-produces a letter only if the SHA-256 of its key,
-- value and headers is the one written here: anyone who can produce to a dead-letter
-- topic can write a letter that looks like exo's, with a value of their choice.
-- Keyed by the record's coordinates, not its key: letters without a dedup row
-- (or without a key) are found by their coordinates too. A dead letter produced
-- again (at least once: a commit that failed after Kafka's acknowledgement) writes
-- its digest again.
CREATE TABLE exo_dead_letters (
    consumer_group   text        NOT NULL,
    topic            text        NOT NULL,
    kafka_partition  integer     NOT NULL,
    kafka_offset     bigint      NOT NULL,
    idempotency_key  text,        -- NULL: the record derived none
    letter_sha256    text        NOT NULL,  -- dead_letter_digest() of the letter's key, value and headers
    written_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, kafka_partition, kafka_offset)
);
-- Retention deletes a group's rows by age (postgres.dedup_retention_days, as the
-- dedup rows whose letters they vouch for), through this index like the pruner's
-- other (group, time) indexes. A letter older than that is replayed only with
-- --trust-unverified.
CREATE INDEX exo_dead_letters_written_at ON exo_dead_letters (consumer_group, written_at);
