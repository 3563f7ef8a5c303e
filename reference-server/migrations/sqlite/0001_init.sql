-- The idempotency records: one row per (principal, endpoint, key).
-- Times are milliseconds since the Unix epoch; `started_at` doubles as the claim token.
CREATE TABLE idempotency_records (
    principal   TEXT    NOT NULL,
    endpoint    TEXT    NOT NULL,
    idem_key    TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    claim_nonce TEXT    NOT NULL,
    started_at  BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL,
    status      BIGINT,
    headers     TEXT,
    body        BLOB,
    compressed  BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (principal, endpoint, idem_key)
);
CREATE INDEX idempotency_records_expires_at ON idempotency_records (expires_at);

-- The node pool. `allocation_id` is the sub-key of the create that holds the node.
CREATE TABLE nodes (
    node_id       BIGINT PRIMARY KEY,
    allocation_id TEXT UNIQUE,
    allocated_at  BIGINT
);

CREATE TABLE leases (
    lease_id   TEXT   PRIMARY KEY,
    node_id    BIGINT NOT NULL,
    principal  TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE workers (
    id           TEXT   PRIMARY KEY,
    principal    TEXT   NOT NULL,
    image        TEXT   NOT NULL,
    cpu          BIGINT NOT NULL,
    memory_gb    BIGINT NOT NULL,
    labels       TEXT   NOT NULL,
    node_id      BIGINT NOT NULL,
    lease_id     TEXT   NOT NULL,
    boot_id      TEXT   NOT NULL,
    instance_id  TEXT   NOT NULL,
    state        TEXT   NOT NULL,
    reboot_count BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL
);
CREATE INDEX workers_principal ON workers (principal, created_at);

-- Our side of the two-phase boot: `pending` is committed before the hypervisor is called.
CREATE TABLE boots (
    boot_id     TEXT   PRIMARY KEY,
    worker_id   TEXT   NOT NULL,
    node_id     BIGINT NOT NULL,
    state       TEXT   NOT NULL,
    instance_id TEXT,
    created_at  BIGINT NOT NULL
);

-- The simulated hypervisor's own state: an external system, so it survives our crashes.
CREATE TABLE hypervisor_instances (
    instance_id TEXT   PRIMARY KEY,
    tag         TEXT   NOT NULL,
    node_id     BIGINT NOT NULL,
    state       TEXT   NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX hypervisor_instances_tag ON hypervisor_instances (tag);

CREATE TABLE reboots (
    reboot_id  TEXT   PRIMARY KEY,
    worker_id  TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
