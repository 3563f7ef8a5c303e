-- Long-running operations (`--creates async`): a create answers 202 with an operation, and the
-- boot it started runs after the answer. `work` is what the boot needs to run again after a
-- restart (JSON); `record` is the idempotency record whose key a failure releases (JSON, empty for
-- a create without a key); `error` says why it failed (empty otherwise).
CREATE TABLE operations (
    id         TEXT   PRIMARY KEY,
    principal  TEXT   NOT NULL,
    worker_id  TEXT   NOT NULL,
    state      TEXT   NOT NULL,
    error      TEXT   NOT NULL DEFAULT '',
    work       TEXT   NOT NULL,
    record     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX operations_running ON operations (updated_at) WHERE state = 'running';
