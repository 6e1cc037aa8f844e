-- The lean outbox (docs/outbox.md, "What a row costs"): which rows are still to
-- publish lives in a small table of its own, so publishing a row deletes a
-- narrow row of that table instead of updating the whole exo_outbox row.
--
-- Before, marking a row sent was `UPDATE exo_outbox SET sent_at`: sent_at was
-- in the pending index's predicate and in an index of its own, so the update
-- was never HOT and wrote a new copy of the row (value and headers included)
-- and a new entry in each of its five indexes (47 us a row, fsync on). Writing
-- a row maintained the same five, two of them with random inserts into
-- indexes as large as the whole retention (the random message_id uuid, and
-- (group, topic, ordering_key, seq)).

-- One row per exo_outbox row still to publish, deleted when Kafka acknowledged
-- it (or `exo outbox discard|reroute` took it out). Written by the trigger
-- below in the statement that inserts the exo_outbox row, so a committed row
-- is pending from the moment it is visible. The relay's skip scan walks the unit index
-- (one descent per pending unit, each unit's rows in seq order; the name of
-- the partial index it replaces); heads are locked, marked and looked up by id.
CREATE TABLE exo_outbox_pending (
    id             bigint NOT NULL PRIMARY KEY,  -- the exo_outbox row
    consumer_group text   NOT NULL,
    topic          text   NOT NULL,
    ordering_key   bytea  NOT NULL,
    seq            bigint NOT NULL
);
DROP INDEX exo_outbox_pending_unit;
ALTER TABLE exo_outbox_pending ADD CONSTRAINT exo_outbox_pending_unit
    UNIQUE (consumer_group, topic, ordering_key, seq);

-- Every row inserted into exo_outbox is pending: one INSERT per statement over
-- its new rows (a statement trigger with a transition table, not a trigger per
-- row). A trigger rather than the writer's own statement, so the writer of an
-- older exo still running during the upgrade, which knows nothing of this
-- table, writes rows the relay publishes too.
CREATE FUNCTION exo_outbox_pending_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO exo_outbox_pending (id, consumer_group, topic, ordering_key, seq)
        SELECT id, consumer_group, topic, ordering_key, seq FROM exo_outbox_new;
    RETURN NULL;
END $$;
CREATE TRIGGER exo_outbox_pending_insert AFTER INSERT ON exo_outbox
    REFERENCING NEW TABLE AS exo_outbox_new
    FOR EACH STATEMENT EXECUTE FUNCTION exo_outbox_pending_insert();

-- Rows written before this migration: the pending ones stay pending, so the
-- relay publishes them after it, each unit in seq order as before.
INSERT INTO exo_outbox_pending (id, consumer_group, topic, ordering_key, seq)
    SELECT id, consumer_group, topic, ordering_key, seq FROM exo_outbox
    WHERE sent_at IS NULL;

-- Nothing looks a row up by its exo-outbox-id (it is read with the row and sent
-- as the header): the column stays, its unique index goes. Nothing needs the
-- seq of a unit's sent rows either: the pending rows' unit index above keeps a
-- unit's pending seqs unique, and exo_outbox_keys numbers them.
ALTER TABLE exo_outbox DROP CONSTRAINT exo_outbox_message_id_key;
ALTER TABLE exo_outbox DROP CONSTRAINT exo_outbox_unit_seq;
-- Retention keeps sent rows outbox.retention_days after they were written
-- (created_at), found through the group's index (appended to in time order,
-- like the pruner's other (group, time) indexes): a row is sent when it has
-- no exo_outbox_pending row.
DROP INDEX exo_outbox_sent_at;
ALTER TABLE exo_outbox DROP COLUMN sent_at;
CREATE INDEX exo_outbox_group_created_at ON exo_outbox (consumer_group, created_at);
