-- The outbox per consumer group, claimed per ordering unit (docs/outbox.md,
-- "The relay").

-- Every row belongs to the group whose handler emitted it (the writer stores
-- kafka.group_id), and only that group's relays publish it, with that group's
-- brokers and credentials. Rows written before this migration: while only one
-- group has ever processed a record here (min = max over exo_processed's
-- primary key, two index probes), their pending rows and counters belong to
-- it; otherwise they get the group '' that no relay claims: `exo outbox list`
-- shows them and `exo outbox reroute` hands each to the group of its config.
-- Sent rows keep '' (they are only kept for inspection). The column's default
-- is dropped after the fast ADD COLUMN, so a writer must name the group.
ALTER TABLE exo_outbox ADD COLUMN consumer_group text NOT NULL DEFAULT '';
ALTER TABLE exo_outbox ALTER COLUMN consumer_group DROP DEFAULT;
ALTER TABLE exo_outbox_keys ADD COLUMN consumer_group text NOT NULL DEFAULT '';
ALTER TABLE exo_outbox_keys ALTER COLUMN consumer_group DROP DEFAULT;
WITH legacy AS (SELECT (SELECT min(consumer_group) FROM exo_processed) AS name
                WHERE (SELECT min(consumer_group) FROM exo_processed)
                    = (SELECT max(consumer_group) FROM exo_processed))
UPDATE exo_outbox SET consumer_group = legacy.name FROM legacy WHERE sent_at IS NULL;
WITH legacy AS (SELECT (SELECT min(consumer_group) FROM exo_processed) AS name
                WHERE (SELECT min(consumer_group) FROM exo_processed)
                    = (SELECT max(consumer_group) FROM exo_processed))
UPDATE exo_outbox_keys SET consumer_group = legacy.name FROM legacy;

-- The unit of order is now (group, topic, key): each group numbers its own
-- rows, so two groups emitting to one key never wait for each other.
ALTER TABLE exo_outbox DROP CONSTRAINT exo_outbox_topic_ordering_key_seq_key;
ALTER TABLE exo_outbox ADD CONSTRAINT exo_outbox_unit_seq
    UNIQUE (consumer_group, topic, ordering_key, seq);
ALTER TABLE exo_outbox_keys DROP CONSTRAINT exo_outbox_keys_pkey;
ALTER TABLE exo_outbox_keys ADD PRIMARY KEY (consumer_group, topic, ordering_key);

-- The relay's only scan: the pending units of a group, one index descent each
-- (a skip scan), and each unit's pending rows in seq order. It replaces the
-- scan of every pending row by id that made a round linear in the backlog.
DROP INDEX exo_outbox_pending;
DROP INDEX exo_outbox_pending_key;
CREATE INDEX exo_outbox_pending_unit ON exo_outbox (consumer_group, topic, ordering_key, seq)
    WHERE sent_at IS NULL;

-- Units whose head row failed to publish (a produce() error or a failed
-- delivery report): the unit waits until next_attempt_at (backoff per unit),
-- while every other unit goes on. Written only by the relays (holding the
-- unit's head row locked) and by `exo outbox discard|reroute`; emitting
-- transactions never touch it, so it never makes a handler wait. The row is
-- deleted once the unit publishes again.
CREATE TABLE exo_outbox_units (
    consumer_group  text        NOT NULL,
    topic           text        NOT NULL,
    ordering_key    bytea       NOT NULL,
    failures        integer     NOT NULL,  -- in a row
    next_attempt_at timestamptz NOT NULL,
    failed_id       bigint      NOT NULL,  -- the exo_outbox row that failed last
    reason          text        NOT NULL,  -- librdkafka's error, for the operator
    first_failed_at timestamptz NOT NULL DEFAULT now(),
    last_failed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, ordering_key)
);
