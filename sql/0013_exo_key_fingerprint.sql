-- The fingerprint of the copy a dedup row was written for (issue 34 part 2,
-- core/record_fingerprint.hpp): the SHA-256 (hex) of the record's value, or for
-- bindings with `key: { hash: ... }` of its canonical JSON minus the excluded
-- fields. A later copy of the key with another fingerprint is a key reused for a
-- different event (the binding's on_key_reuse). NULL: a row written before this
-- migration, never taken for a reuse. Nullable and without a default, so adding
-- it rewrites no row.
ALTER TABLE exo_processed ADD COLUMN fingerprint text;
