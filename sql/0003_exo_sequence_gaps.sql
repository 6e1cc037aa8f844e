-- Strict sequences (docs/design.md section 4): when a record was first seen
-- waiting for a missing predecessor, in server time. Kept in PostgreSQL, not in
-- a process, so gap_timeout is measured across rebalances, restarts and group
-- members: a record that keeps moving between members still times out.
-- Written only in a committed transaction; deleted when the record is
-- dead-lettered for its gap; pruned with the dedup rows' retention.
CREATE TABLE exo_sequence_gaps (
    consumer_group  text        NOT NULL,
    idempotency_key text        NOT NULL,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);
CREATE INDEX exo_sequence_gaps_first_seen ON exo_sequence_gaps (first_seen);
