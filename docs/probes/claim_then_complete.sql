-- pgbench script: leasebroker's claim, then its completion, each its own commit, on a copy of the
-- idempotency_records table (docs/BENCHMARKS.md, "would a HOT completion help?"). Create the copy
-- first (the columns, primary key and index of reference-server/migrations/postgres/0001_init.sql):
--   CREATE TABLE hot_t (principal TEXT NOT NULL, endpoint TEXT NOT NULL, idem_key TEXT NOT NULL,
--     fingerprint TEXT NOT NULL, state TEXT NOT NULL, claim_nonce TEXT NOT NULL,
--     started_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, status BIGINT, headers TEXT,
--     body BYTEA, compressed BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (principal, endpoint, idem_key));
--   CREATE INDEX hot_t_exp ON hot_t (expires_at);
-- For the HOT-eligible variant, replace `expires_at = 3000` with
-- `expires_at = GREATEST(expires_at, 1500)` (the value stays as the claim wrote it).
--   pgbench -h 127.0.0.1 -U postgres -n -c 16 -j 2 -T 8 -f docs/probes/claim_then_complete.sql test
\set k random(1, 1000000000)
INSERT INTO hot_t (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) VALUES ('alice', 'POST /v1/workers', 'k' || :k || '-' || :client_id, 'abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd', 'in_flight', 'nonce-nonce-nonce-nonce-nonce-nonce1', 1000, 2000) ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET idem_key = EXCLUDED.idem_key;
UPDATE hot_t SET state = 'completed', status = 201, headers = '{"content-type":"application/json","location":"/v1/workers/w-123456"}', body = convert_to(repeat('x', 300), 'UTF8'), compressed = 0, expires_at = 3000 WHERE principal = 'alice' AND endpoint = 'POST /v1/workers' AND idem_key = 'k' || :k || '-' || :client_id AND state = 'in_flight' AND started_at = 1000;
