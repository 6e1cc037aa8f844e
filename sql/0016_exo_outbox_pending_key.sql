-- exo_outbox_pending's primary key becomes (consumer_group, id), in place of two
-- indexes, (id) and exo_outbox_pending_oldest (consumer_group, id): one index
-- entry less per emitted record (about 80 bytes of WAL each, scripts/bench.sh
-- --pg-costs; docs/performance.md, "The outbox relay's claim"). Every reader of
-- a pending row by id knows its group: the relay (its own group's rows), the
-- operator commands (through the exo_outbox row's group) and retention (the
-- exo_outbox row's group: a pending row always has its exo_outbox row's group,
-- the trigger of sql/0010_exo_outbox_lean.sql copies it). The relay's round of
-- the oldest rows reads the group's range of this key in id order, as it read
-- exo_outbox_pending_oldest.
--
-- An older exo still running during the upgrade looks pending rows up by id
-- alone: a scan of exo_outbox_pending, which holds the backlog only. Its rows
-- and the upgraded daemons' are the same rows, so nothing else changes.
ALTER TABLE exo_outbox_pending DROP CONSTRAINT exo_outbox_pending_pkey;
DROP INDEX exo_outbox_pending_oldest;
ALTER TABLE exo_outbox_pending ADD CONSTRAINT exo_outbox_pending_pkey
    PRIMARY KEY (consumer_group, id);
