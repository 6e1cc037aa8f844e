-- The audit trail of `exo sequence advance` (docs/operations.md, "Recovering a
-- strict entity"): an operator moved an entity's last sequence past sequences
-- that will never apply (a poison record at the head of a strict entity), so
-- the ones after it can. One row per move, never updated or pruned: it is the
-- only record that those sequences were skipped on purpose, by whom and why.
CREATE TABLE exo_sequence_advances (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    handler       text        NOT NULL,
    entity        text        NOT NULL,
    from_sequence bigint,                 -- NULL: the entity had no sequence yet
    to_sequence   bigint      NOT NULL,
    reason        text        NOT NULL,
    advanced_by   text        NOT NULL,   -- who: --by, else the login name
    advanced_from text        NOT NULL,   -- which process: "<host>/<pid>/exo-<version>"
    advanced_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exo_sequence_advances_entity ON exo_sequence_advances (handler, entity);
