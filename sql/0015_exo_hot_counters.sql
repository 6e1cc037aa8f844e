-- exo_sequences and exo_outbox_keys are counters: a row per entity / per
-- outbox unit, updated by most transactions that touch it (last_sequence,
-- last_seq, updated_at), never an indexed column. Such an update can stay on
-- its page (a HOT update: no new primary-key entry, less WAL) only if the page
-- has room; at the default fillfactor 100 the pages are full once written, and
-- only 1 update in 6-14 was HOT (scripts/bench.sh --pg-costs). New pages keep
-- 30% free from now on; existing pages are not rewritten.
ALTER TABLE exo_sequences SET (fillfactor = 70);
ALTER TABLE exo_outbox_keys SET (fillfactor = 70);
