-- Tables of the example `ledger` handler (handlers/ledger.cpp): an application
-- migration, applied by `exo migrate` after the framework's own.
CREATE TABLE accounts (
    account_id text        PRIMARY KEY,
    balance    bigint      NOT NULL DEFAULT 0,   -- minor units
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ledger_entries (
    event_id    text        PRIMARY KEY,          -- the idempotency key: a second insert fails loudly
    account_id  text        NOT NULL REFERENCES accounts (account_id),
    entry_type  text        NOT NULL CHECK (entry_type IN ('CREDIT', 'DEBIT')),
    amount      bigint      NOT NULL CHECK (amount >= 0),
    sequence_id bigint      NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id);
