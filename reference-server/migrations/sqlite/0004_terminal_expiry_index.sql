-- The sweeper reads records by `expires_at` only among terminal ones (`state <> 'in_flight'`: an
-- in-flight record is reclaimed by the in-flight TTL, never swept by its retention). Indexing only
-- those, a claim's insert writes no index entry for it, and the completion writes one once,
-- instead of the insert writing one and the completion moving it.
DROP INDEX idempotency_records_expires_at;
CREATE INDEX idempotency_records_expires_at ON idempotency_records (expires_at)
  WHERE state <> 'in_flight';
