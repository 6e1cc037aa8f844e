-- The transactional outbox (docs/outbox.md): records a handler emits, written in
-- its transaction and published by the daemon's relay after it committed.

-- One row per emitted record. `seq` numbers the records of one (topic, key) in
-- commit order: it is drawn from exo_outbox_keys under that key's row lock,
-- which the emitting transaction holds until it ends, so the committed rows of
-- a key are numbered 1, 2, 3... without gaps, in the order they committed.
-- Pending: sent_at IS NULL. Sent rows are kept for outbox.retention_days.
CREATE TABLE exo_outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The exo-outbox-id header: the same on every (re-)publication.
    message_id   uuid        NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    topic        text        NOT NULL,
    message_key  bytea,                  -- NULL: a record without a key
    value        bytea       NOT NULL,
    -- [{"name": "...", "value": "<hex>" or null}, ...]
    headers      jsonb       NOT NULL DEFAULT '[]',
    -- sha256 of the key ('' for no key): the ordering unit with topic, short
    -- enough for an index whatever the key's size.
    ordering_key bytea       NOT NULL,
    seq          bigint      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    sent_at      timestamptz,
    UNIQUE (topic, ordering_key, seq)
);
-- The relay's scan of pending rows, and its "is there an earlier pending row
-- of this key" probe.
CREATE INDEX exo_outbox_pending ON exo_outbox (id) WHERE sent_at IS NULL;
CREATE INDEX exo_outbox_pending_key ON exo_outbox (topic, ordering_key, seq)
    WHERE sent_at IS NULL;
-- Retention deletes sent rows by age.
CREATE INDEX exo_outbox_sent_at ON exo_outbox (sent_at) WHERE sent_at IS NOT NULL;

-- The last seq drawn per (topic, ordering key). Only emitting transactions
-- lock these rows (the relay never does), so a slow or failing relay never
-- blocks a handler.
CREATE TABLE exo_outbox_keys (
    topic        text        NOT NULL,
    ordering_key bytea       NOT NULL,
    last_seq     bigint      NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, ordering_key)
);
