-- Retention pruning (docs/design.md section 4.2) deletes each group's expired
-- rows oldest first, a chunk per transaction. Keyed by the group first, so one
-- group's pruner never walks another group's rows (kept for that group's own
-- retention, or left by a group that no longer runs) to find its own.
-- These replace the indexes on the timestamp alone: an insert still maintains
-- one index on the column.
CREATE INDEX exo_processed_group_processed_at ON exo_processed (consumer_group, processed_at);
DROP INDEX exo_processed_processed_at;
CREATE INDEX exo_sequence_gaps_group_first_seen ON exo_sequence_gaps (consumer_group, first_seen);
DROP INDEX exo_sequence_gaps_first_seen;
