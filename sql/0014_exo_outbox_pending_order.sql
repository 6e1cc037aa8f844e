-- The relay's common round (no unit of the group parked: outbox_rows.cpp,
-- claim_oldest_rows) takes the group's oldest pending rows in id order. Without
-- this index PostgreSQL reads them through exo_outbox_pending_unit and sorts the
-- group's whole backlog per round (6,590 index pages for 200,000 pending rows),
-- or walks the primary key past every other group's pending rows. One more
-- index entry per emit, deleted with its row when the relay marks it sent.
CREATE INDEX exo_outbox_pending_oldest ON exo_outbox_pending (consumer_group, id);
