//! The statements both databases run verbatim (`$N` placeholders work in SQLite and PostgreSQL), and
//! [`store_methods!`], which implements every [`Store`](super::Store) method except the atomic claim
//! for a struct with a `pool` field, given the two statements that differ (node allocation, sweep).

/// The record columns the claim and the lookups return, in the order [`record_from_row!`] reads them.
pub(super) const RECORD_COLUMNS: &str =
    "state, fingerprint, claim_nonce, started_at, expires_at, status, headers, body, compressed";

pub(super) const WORKER_COLUMNS: &str = "id, principal, image, cpu, memory_gb, labels, node_id, \
     lease_id, instance_id, state, reboot_count, created_at";

/// Decodes an idempotency record from a row holding [`RECORD_COLUMNS`].
macro_rules! record_from_row {
    ($row:expr) => {{
        use sqlx::Row as _;
        let row = $row;
        let status: Option<i64> = row.try_get("status")?;
        let headers: Option<String> = row.try_get("headers")?;
        let body: Option<Vec<u8>> = row.try_get("body")?;
        let compressed: i64 = row.try_get("compressed")?;
        let state: String = row.try_get("state")?;
        let response = match (status, headers) {
            (Some(status), Some(headers_json)) => Some($crate::store::StoredResponse {
                status: u16::try_from(status)
                    .map_err(|_| $crate::store::StoreError::Corrupt(format!("status {status}")))?,
                headers_json,
                body: body.unwrap_or_default(),
                compressed: compressed != 0,
            }),
            _ => None,
        };
        $crate::store::IdempotencyRecord {
            state: $crate::store::RecordState::parse(&state)?,
            fingerprint: row.try_get("fingerprint")?,
            nonce: row.try_get("claim_nonce")?,
            started_at: row.try_get("started_at")?,
            expires_at: row.try_get("expires_at")?,
            response,
        }
    }};
}
pub(super) use record_from_row;

/// Decodes a worker from a row holding [`WORKER_COLUMNS`].
macro_rules! worker_from_row {
    ($row:expr) => {{
        use sqlx::Row as _;
        let row = $row;
        let labels: String = row.try_get("labels")?;
        $crate::store::Worker {
            id: row.try_get("id")?,
            principal: row.try_get("principal")?,
            image: row.try_get("image")?,
            cpu: row.try_get("cpu")?,
            memory_gb: row.try_get("memory_gb")?,
            labels: serde_json::from_str(&labels)
                .map_err(|e| $crate::store::StoreError::Corrupt(format!("worker labels: {e}")))?,
            node_id: row.try_get("node_id")?,
            lease_id: row.try_get("lease_id")?,
            instance_id: row.try_get("instance_id")?,
            state: row.try_get("state")?,
            reboot_count: row.try_get("reboot_count")?,
            created_at: row.try_get("created_at")?,
        }
    }};
}
pub(super) use worker_from_row;

/// Implements the [`Store`](super::Store) methods whose SQL is the same on both databases.
///
/// `$allocate` claims a free node for `$1` (allocation id) at `$2` (now) and returns `node_id`;
/// `$sweep_failed` deletes up to `$2` failed records with `expires_at < $1`, returning `principal, endpoint,
/// idem_key, claim_nonce`; `$sweep` deletes up to `$2` terminal records with `expires_at < $1` (never an in-flight one: the
/// in-flight TTL, not retention, decides when a retry may take it over and resume it).
macro_rules! store_methods {
    (allocate = $allocate:expr, sweep = $sweep:expr, sweep_failed = $sweep_failed:expr $(,)?) => {
        fn find_record<'a>(
            &'a self,
            scope: &'a $crate::store::Scope,
        ) -> futures::future::BoxFuture<'a, Result<Option<$crate::store::IdempotencyRecord>, $crate::store::StoreError>> {
            Box::pin(async move {
                let sql = format!(
                    "SELECT {} FROM idempotency_records WHERE principal = $1 AND endpoint = $2 AND idem_key = $3",
                    $crate::store::shared::RECORD_COLUMNS
                );
                let row = sqlx::query(&sql)
                    .bind(&scope.principal)
                    .bind(&scope.endpoint)
                    .bind(&scope.key)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(match row {
                    Some(row) => Some($crate::store::shared::record_from_row!(&row)),
                    None => None,
                })
            })
        }

        fn overwrite_record<'a>(
            &'a self,
            scope: &'a $crate::store::Scope,
            fingerprint: &'a str,
            nonce: &'a str,
            now: i64,
            expires_at: i64,
        ) -> futures::future::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
            Box::pin(async move {
                sqlx::query(
                    "INSERT INTO idempotency_records \
                       (principal, endpoint, idem_key, fingerprint, state, claim_nonce, started_at, expires_at) \
                     VALUES ($1, $2, $3, $4, 'in_flight', $7, $5, $6) \
                     ON CONFLICT (principal, endpoint, idem_key) DO UPDATE SET \
                       fingerprint = EXCLUDED.fingerprint, state = 'in_flight', started_at = EXCLUDED.started_at, \
                       claim_nonce = EXCLUDED.claim_nonce, \
                       expires_at = EXCLUDED.expires_at, status = NULL, headers = NULL, body = NULL, compressed = 0",
                )
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(fingerprint)
                .bind(now)
                .bind(expires_at)
                .bind(nonce)
                .execute(&self.pool)
                .await?;
                Ok(())
            })
        }

        fn take_over<'a>(
            &'a self,
            scope: &'a $crate::store::Scope,
            expected_state: $crate::store::RecordState,
            expected_started_at: i64,
            fingerprint: &'a str,
            nonce: &'a str,
            now: i64,
            expires_at: i64,
        ) -> futures::future::BoxFuture<'a, Result<bool, $crate::store::StoreError>> {
            Box::pin(async move {
                let done = sqlx::query(
                    "UPDATE idempotency_records SET state = 'in_flight', fingerprint = $1, started_at = $2, \
                       expires_at = $3, status = NULL, headers = NULL, body = NULL, compressed = 0, claim_nonce = $9 \
                     WHERE principal = $4 AND endpoint = $5 AND idem_key = $6 AND state = $7 AND started_at = $8",
                )
                .bind(fingerprint)
                .bind(now.max(expected_started_at + 1))
                .bind(expires_at)
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(expected_state.as_str())
                .bind(expected_started_at)
                .bind(nonce)
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() == 1)
            })
        }

        fn complete<'a>(
            &'a self,
            scope: &'a $crate::store::Scope,
            started_at: i64,
            response: &'a $crate::store::StoredResponse,
            expires_at: i64,
        ) -> futures::future::BoxFuture<'a, Result<bool, $crate::store::StoreError>> {
            Box::pin(async move {
                let done = sqlx::query(
                    "UPDATE idempotency_records SET state = 'completed', status = $1, headers = $2, body = $3, \
                       compressed = $4, expires_at = $5 \
                     WHERE principal = $6 AND endpoint = $7 AND idem_key = $8 AND state = 'in_flight' AND started_at = $9",
                )
                .bind(i64::from(response.status))
                .bind(&response.headers_json)
                .bind(&response.body)
                .bind(i64::from(response.compressed))
                .bind(expires_at)
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(started_at)
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() == 1)
            })
        }

        fn fail<'a>(
            &'a self,
            scope: &'a $crate::store::Scope,
            started_at: i64,
        ) -> futures::future::BoxFuture<'a, Result<bool, $crate::store::StoreError>> {
            Box::pin(async move {
                let done = sqlx::query(
                    "UPDATE idempotency_records SET state = 'failed' \
                     WHERE principal = $1 AND endpoint = $2 AND idem_key = $3 AND state = 'in_flight' AND started_at = $4",
                )
                .bind(&scope.principal)
                .bind(&scope.endpoint)
                .bind(&scope.key)
                .bind(started_at)
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() == 1)
            })
        }

        fn sweep(&self, now: i64, batch: i64) -> futures::future::BoxFuture<'_, Result<u64, $crate::store::StoreError>> {
            Box::pin(async move {
                let done = sqlx::query($sweep).bind(now).bind(batch).execute(&self.pool).await?;
                Ok(done.rows_affected())
            })
        }

        fn sweep_failed(
            &self,
            now: i64,
            batch: i64,
        ) -> futures::future::BoxFuture<'_, Result<Vec<$crate::store::FailedRecord>, $crate::store::StoreError>> {
            Box::pin(async move {
                let rows = sqlx::query_as::<_, (String, String, String, String)>($sweep_failed)
                    .bind(now)
                    .bind(batch)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows
                    .into_iter()
                    .map(|(principal, endpoint, key, nonce)| $crate::store::FailedRecord {
                        scope: $crate::store::Scope { principal, endpoint, key },
                        nonce,
                    })
                    .collect())
            })
        }

        fn release_leftovers<'a>(
            &'a self,
            allocation_id: &'a str,
            lease_id: &'a str,
            boot_id: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<bool, $crate::store::StoreError>> {
            Box::pin(async move {
                let mut tx = self.pool.begin().await?;
                let held = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM workers WHERE lease_id = $1")
                    .bind(lease_id)
                    .fetch_one(&mut *tx)
                    .await?;
                if held > 0 {
                    return Ok(false);
                }
                let mut released = 0;
                for (sql, id) in [
                    ("DELETE FROM leases WHERE lease_id = $1", lease_id),
                    ("UPDATE nodes SET allocation_id = NULL, allocated_at = NULL WHERE allocation_id = $1", allocation_id),
                    ("DELETE FROM boots WHERE boot_id = $1", boot_id),
                    ("UPDATE hypervisor_instances SET state = 'terminated' WHERE tag = $1 AND state = 'running'", boot_id),
                ] {
                    released += sqlx::query(sql).bind(id).execute(&mut *tx).await?.rows_affected();
                }
                tx.commit().await?;
                Ok(released > 0)
            })
        }

        fn seed_nodes(&self, pool_size: i64) -> futures::future::BoxFuture<'_, Result<(), $crate::store::StoreError>> {
            Box::pin(async move {
                // One statement for any pool size. `WHERE true` keeps SQLite's parser from reading
                // `ON CONFLICT` as a join constraint of the SELECT.
                sqlx::query(
                    "WITH RECURSIVE n(x) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT x + 1 FROM n WHERE x < $1) \
                     INSERT INTO nodes (node_id) SELECT x FROM n WHERE true ON CONFLICT (node_id) DO NOTHING",
                )
                .bind(pool_size)
                .execute(&self.pool)
                .await?;
                Ok(())
            })
        }

        fn allocate_node<'a>(
            &'a self,
            allocation_id: &'a str,
            now: i64,
        ) -> futures::future::BoxFuture<'a, Result<Option<i64>, $crate::store::StoreError>> {
            Box::pin(async move {
                let existing = || async {
                    sqlx::query_scalar::<_, i64>("SELECT node_id FROM nodes WHERE allocation_id = $1")
                        .bind(allocation_id)
                        .fetch_optional(&self.pool)
                        .await
                };
                if let Some(node_id) = existing().await? {
                    return Ok(Some(node_id));
                }
                match sqlx::query_scalar::<_, i64>($allocate)
                    .bind(allocation_id)
                    .bind(now)
                    .fetch_optional(&self.pool)
                    .await
                {
                    Ok(node_id) => Ok(node_id),
                    // A concurrent caller with the same allocation id won the UNIQUE constraint: return its node.
                    Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(existing().await?),
                    Err(e) => Err(e.into()),
                }
            })
        }

        fn ensure_lease<'a>(
            &'a self,
            lease_id: &'a str,
            node_id: i64,
            principal: &'a str,
            now: i64,
        ) -> futures::future::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
            Box::pin(async move {
                sqlx::query(
                    "INSERT INTO leases (lease_id, node_id, principal, created_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (lease_id) DO NOTHING",
                )
                .bind(lease_id)
                .bind(node_id)
                .bind(principal)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(())
            })
        }

        fn find_boot<'a>(
            &'a self,
            boot_id: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<Option<$crate::store::BootRow>, $crate::store::StoreError>> {
            Box::pin(async move {
                let row = sqlx::query_as::<_, (String, Option<String>)>(
                    "SELECT state, instance_id FROM boots WHERE boot_id = $1",
                )
                .bind(boot_id)
                .fetch_optional(&self.pool)
                .await?;
                Ok(row.map(|(state, instance_id)| $crate::store::BootRow { state, instance_id }))
            })
        }

        fn insert_pending_boot<'a>(
            &'a self,
            boot_id: &'a str,
            worker_id: &'a str,
            node_id: i64,
            now: i64,
        ) -> futures::future::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
            Box::pin(async move {
                sqlx::query(
                    "INSERT INTO boots (boot_id, worker_id, node_id, state, created_at) \
                     VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT (boot_id) DO NOTHING",
                )
                .bind(boot_id)
                .bind(worker_id)
                .bind(node_id)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(())
            })
        }

        fn complete_boot<'a>(
            &'a self,
            boot_id: &'a str,
            instance_id: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
            Box::pin(async move {
                sqlx::query("UPDATE boots SET state = 'done', instance_id = $1 WHERE boot_id = $2")
                    .bind(instance_id)
                    .bind(boot_id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            })
        }

        fn hypervisor_record_instance<'a>(
            &'a self,
            instance_id: &'a str,
            tag: &'a str,
            node_id: i64,
            now: i64,
        ) -> futures::future::BoxFuture<'a, Result<String, $crate::store::StoreError>> {
            Box::pin(async move {
                // At most one running instance per tag (a partial unique index, migration 0002).
                sqlx::query(
                    "INSERT INTO hypervisor_instances (instance_id, tag, node_id, state, created_at) \
                     VALUES ($1, $2, $3, 'running', $4) \
                     ON CONFLICT (tag) WHERE state = 'running' DO NOTHING",
                )
                .bind(instance_id)
                .bind(tag)
                .bind(node_id)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(sqlx::query_scalar::<_, String>(
                    "SELECT instance_id FROM hypervisor_instances WHERE tag = $1 AND state = 'running'",
                )
                .bind(tag)
                .fetch_one(&self.pool)
                .await?)
            })
        }

        fn hypervisor_list_by_tag<'a>(
            &'a self,
            tag: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<Vec<String>, $crate::store::StoreError>> {
            Box::pin(async move {
                Ok(sqlx::query_scalar::<_, String>(
                    "SELECT instance_id FROM hypervisor_instances WHERE tag = $1 ORDER BY created_at, instance_id",
                )
                .bind(tag)
                .fetch_all(&self.pool)
                .await?)
            })
        }

        fn insert_worker<'a>(
            &'a self,
            worker: &'a $crate::store::NewWorker,
        ) -> futures::future::BoxFuture<'a, Result<$crate::store::Worker, $crate::store::StoreError>> {
            Box::pin(async move {
                let labels = serde_json::to_string(&worker.labels)
                    .map_err(|e| $crate::store::StoreError::Corrupt(format!("worker labels: {e}")))?;
                sqlx::query(
                    "INSERT INTO workers (id, principal, image, cpu, memory_gb, labels, node_id, lease_id, \
                       boot_id, instance_id, state, reboot_count, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'running', 0, $11) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(&worker.id)
                .bind(&worker.principal)
                .bind(&worker.image)
                .bind(worker.cpu)
                .bind(worker.memory_gb)
                .bind(labels)
                .bind(worker.node_id)
                .bind(&worker.lease_id)
                .bind(&worker.boot_id)
                .bind(&worker.instance_id)
                .bind(worker.created_at)
                .execute(&self.pool)
                .await?;
                let sql = format!("SELECT {} FROM workers WHERE id = $1", $crate::store::shared::WORKER_COLUMNS);
                let row = sqlx::query(&sql).bind(&worker.id).fetch_one(&self.pool).await?;
                Ok($crate::store::shared::worker_from_row!(&row))
            })
        }

        fn get_worker<'a>(
            &'a self,
            principal: &'a str,
            id: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<Option<$crate::store::Worker>, $crate::store::StoreError>> {
            Box::pin(async move {
                let sql = format!(
                    "SELECT {} FROM workers WHERE principal = $1 AND id = $2",
                    $crate::store::shared::WORKER_COLUMNS
                );
                let row = sqlx::query(&sql).bind(principal).bind(id).fetch_optional(&self.pool).await?;
                Ok(match row {
                    Some(row) => Some($crate::store::shared::worker_from_row!(&row)),
                    None => None,
                })
            })
        }

        fn list_workers<'a>(
            &'a self,
            principal: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<Vec<$crate::store::Worker>, $crate::store::StoreError>> {
            Box::pin(async move {
                let sql = format!(
                    "SELECT {} FROM workers WHERE principal = $1 ORDER BY created_at, id",
                    $crate::store::shared::WORKER_COLUMNS
                );
                let rows = sqlx::query(&sql).bind(principal).fetch_all(&self.pool).await?;
                let mut workers = Vec::with_capacity(rows.len());
                for row in &rows {
                    workers.push($crate::store::shared::worker_from_row!(row));
                }
                Ok(workers)
            })
        }

        fn delete_worker<'a>(
            &'a self,
            principal: &'a str,
            id: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<bool, $crate::store::StoreError>> {
            Box::pin(async move {
                let mut tx = self.pool.begin().await?;
                // The DELETE comes first so exactly one of two concurrent deletes sees the row.
                let gone = sqlx::query_as::<_, (i64, String, String)>(
                    "DELETE FROM workers WHERE principal = $1 AND id = $2 RETURNING node_id, lease_id, instance_id",
                )
                .bind(principal)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((node_id, lease_id, instance_id)) = gone else {
                    return Ok(false);
                };
                sqlx::query("DELETE FROM leases WHERE lease_id = $1")
                    .bind(&lease_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("UPDATE nodes SET allocation_id = NULL, allocated_at = NULL WHERE node_id = $1")
                    .bind(node_id)
                    .execute(&mut *tx)
                    .await?;
                // Forget our boot row too, so a later create that reuses the sub-keys (after the record's
                // retention window) boots a new instance instead of adopting the terminated one.
                sqlx::query("DELETE FROM boots WHERE worker_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("UPDATE hypervisor_instances SET state = 'terminated' WHERE instance_id = $1")
                    .bind(&instance_id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(true)
            })
        }

        fn reboot_worker<'a>(
            &'a self,
            principal: &'a str,
            id: &'a str,
            reboot_id: &'a str,
            now: i64,
        ) -> futures::future::BoxFuture<'a, Result<Option<$crate::store::Worker>, $crate::store::StoreError>> {
            Box::pin(async move {
                let mut tx = self.pool.begin().await?;
                // Lock the worker row first (a write), then apply the reboot once per reboot id.
                let touched = sqlx::query("UPDATE workers SET state = state WHERE principal = $1 AND id = $2")
                    .bind(principal)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                if touched.rows_affected() == 0 {
                    return Ok(None);
                }
                let inserted = sqlx::query(
                    "INSERT INTO reboots (reboot_id, worker_id, created_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (reboot_id) DO NOTHING",
                )
                .bind(reboot_id)
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                if inserted.rows_affected() == 1 {
                    sqlx::query("UPDATE workers SET reboot_count = reboot_count + 1 WHERE id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                let sql = format!("SELECT {} FROM workers WHERE id = $1", $crate::store::shared::WORKER_COLUMNS);
                let row = sqlx::query(&sql).bind(id).fetch_one(&mut *tx).await?;
                let worker = $crate::store::shared::worker_from_row!(&row);
                tx.commit().await?;
                Ok(Some(worker))
            })
        }

        fn stats(&self) -> futures::future::BoxFuture<'_, Result<$crate::store::Stats, $crate::store::StoreError>> {
            Box::pin(async move {
                let (workers, nodes_allocated, leases, boots, pending_boots, reboots) =
                    sqlx::query_as::<_, (i64, i64, i64, i64, i64, i64)>(
                        "SELECT (SELECT COUNT(*) FROM workers), \
                                (SELECT COUNT(*) FROM nodes WHERE allocation_id IS NOT NULL), \
                                (SELECT COUNT(*) FROM leases), \
                                (SELECT COUNT(*) FROM hypervisor_instances), \
                                (SELECT COUNT(*) FROM boots WHERE state = 'pending'), \
                                (SELECT COUNT(*) FROM reboots)",
                    )
                    .fetch_one(&self.pool)
                    .await?;
                let mut records = $crate::store::RecordCounts::default();
                let by_state = sqlx::query_as::<_, (String, i64)>(
                    "SELECT state, COUNT(*) FROM idempotency_records GROUP BY state",
                )
                .fetch_all(&self.pool)
                .await?;
                for (state, count) in by_state {
                    match $crate::store::RecordState::parse(&state)? {
                        $crate::store::RecordState::InFlight => records.in_flight = count,
                        $crate::store::RecordState::Completed => records.completed = count,
                        $crate::store::RecordState::Failed => records.failed = count,
                    }
                }
                Ok($crate::store::Stats {
                    workers,
                    nodes_allocated,
                    leases,
                    boots,
                    pending_boots,
                    reboots,
                    idempotency_records: records,
                })
            })
        }
    };
}
pub(super) use store_methods;
