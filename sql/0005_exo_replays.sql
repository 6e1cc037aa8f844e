-- Replay tickets of `exo dlq replay` (docs/operations.md). Replaying a dead letter
-- moves its DEAD_LETTERED dedup row here in one statement, so the key is new to the
-- daemon again, and then re-produces the record. The ticket is the durable memory
-- that a replay was asked for: a replay that crashed before Kafka acknowledged the
-- re-produced record is finished by running it again, which finds the ticket.
--   finished: exo_processed has a row for the key again (any outcome)
--   pending:  no row, produced_at NULL (produce it, again if need be)
--   sent:     no row, produced_at set (the daemon has not processed it yet)
CREATE TABLE exo_replays (
    consumer_group   text        NOT NULL,
    idempotency_key  text        NOT NULL,
    -- The dead-lettered row as it was: where the record came from and why it failed.
    topic            text        NOT NULL,
    kafka_partition  integer     NOT NULL,
    kafka_offset     bigint      NOT NULL,
    reason           text,
    dead_lettered_at timestamptz NOT NULL,
    dead_lettered_by text,
    requested_at     timestamptz NOT NULL DEFAULT now(),
    requested_by     text        NOT NULL,
    produced_at      timestamptz,
    produced_to      text,        -- "<topic>/<partition>/<offset>" of the re-produced record
    PRIMARY KEY (consumer_group, idempotency_key)
);
