-- Which process wrote each dedup row, for `exo inspect`: "<host>/<pid>/exo-<version>",
-- computed once per process (framework/pg/process_identity.hpp) and written by the
-- dedup insert itself, so no caller can forget it. NULL for rows written before this
-- migration, and by anything that is not exo.
ALTER TABLE exo_processed ADD COLUMN applied_by text;
