//! Long-running operations (`operations.*.operation`): which answers name one, whether two
//! answers name the same one, and waiting until every operation a check started has settled,
//! so that what it counts behind the API is what the operations did.

use std::time::{Duration, Instant};

use idemspec_scenarios::profile::{LongRunningOperation, PollAt};
use idemspec_scenarios::scenario::Operation;

use super::CheckRun;
use crate::http_client::{Exchange, RequestSpec};

/// How often a pending operation is polled, unless its answer's `Retry-After` asks for longer.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How long one poll may take.
const POLL_TIMEOUT: Duration = Duration::from_secs(10);

/// The operation `e` names, where its answer names one: a 2xx to a request of an operation whose
/// profile says it answers with a long-running operation, carrying the reference where it says.
pub(crate) fn named_operation(run: &CheckRun, e: &Exchange) -> Option<String> {
    let (_, long) = long_running_of(run, e)?;
    reference(long, e)
}

/// Whether `a` and `b` are answers naming one operation (in whatever state each saw it), with
/// one status: the same answer, as a replay of a running operation is.
pub(crate) fn same_operation(run: &CheckRun, a: &Exchange, b: &Exchange) -> bool {
    a.status.is_some()
        && a.status == b.status
        && named_operation(run, a).is_some_and(|r| named_operation(run, b).as_ref() == Some(&r))
}

/// The operation kind and long-running description of the request `e` answered, if it has one.
fn long_running_of<'a>(
    run: &'a CheckRun,
    e: &Exchange,
) -> Option<(Operation, &'a LongRunningOperation)> {
    if !e.is_success() {
        return None;
    }
    let op = run.sender.operation_of(&e.evidence.request.step)?;
    let long = run.ctx().profile.operations.long_running_of(op)?;
    Some((op, &long.value))
}

/// Where `e` names its operation, as `long` says.
fn reference(long: &LongRunningOperation, e: &Exchange) -> Option<String> {
    let found = match &long.poll {
        PollAt::Json(path) => path.first(e.json.as_deref()?)?.as_str()?.to_owned(),
        PollAt::Header(name) => e.header(name)?.to_owned(),
    };
    (!found.is_empty()).then_some(found)
}

/// The path and query to poll for `reference` on `base_url`: an absolute URL's, or the reference
/// itself (with a leading `/`), both from the host's root, so without the base URL's own path
/// where they start with it (`https://h/compute/v1` and `…/compute/v1/projects/p/operations/o`).
fn poll_path(reference: &str, base_url: &str) -> String {
    let from_root = match reference.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/".into(), |i| rest[i..].to_owned()),
        None if reference.starts_with('/') => reference.to_owned(),
        None => format!("/{reference}"),
    };
    let base_path = base_url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].trim_end_matches('/')))
        .unwrap_or_default();
    match from_root.strip_prefix(base_path) {
        Some(rest) if !base_path.is_empty() && rest.starts_with('/') => rest.to_owned(),
        _ => from_root,
    }
}

impl CheckRun {
    /// Waits until every operation the check's answers named so far has settled (done or failed,
    /// as the profile says), polling each as the principal that started it (through its session,
    /// as every request of the check goes: `ApiCtx::send`), straight to the target, and remembers
    /// which failed ([`CheckRun::mark_failed_operations`]).
    ///
    /// # Errors
    /// Which operation did not settle within its bound, or could not be polled, naming the step
    /// that started it.
    pub(crate) async fn settle(&self) -> Result<(), String> {
        // Most profiles declare none: no copy of the exchanges for them, before every count and
        // every step that acts on a created resource.
        if self.ctx().profile.operations.long_running().is_empty() {
            return Ok(());
        }
        let (exchanges, _) = self.paired();
        let mut pending: Vec<(String, String, String, Operation, &LongRunningOperation)> =
            Vec::new();
        for e in &exchanges {
            let Some((op, long)) = long_running_of(self, e) else {
                continue;
            };
            let Some(reference) = reference(long, e) else {
                continue;
            };
            let known = self
                .settled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains_key(&reference);
            if !known && !pending.iter().any(|(r, ..)| *r == reference) {
                let step = e.evidence.request.step.clone();
                let principal = e.evidence.request.principal.clone();
                pending.push((reference, step, principal, op, long));
            }
        }
        for (reference, step, principal, op, long) in pending {
            let failed = self
                .wait_for(&reference, &step, &principal, op, long)
                .await?;
            self.settled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(reference, failed);
        }
        Ok(())
    }

    /// Marks each of `exchanges` whose operation was seen settle failed
    /// ([`Exchange::operation_failed`]).
    pub(crate) fn mark_failed_operations(&self, exchanges: &mut [Exchange]) {
        let failed: Vec<String> = self
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, failed)| **failed)
            .map(|(reference, _)| reference.clone())
            .collect();
        if failed.is_empty() {
            return;
        }
        for e in exchanges {
            if let Some(reference) = named_operation(self, e).filter(|r| failed.contains(r)) {
                e.operation_failed = Some(reference);
            }
        }
    }

    /// Polls `reference` until `long` says it is done or failed, or its bound passes; true when
    /// it failed. Polls come every [`POLL_EVERY`], or as late as an answer's `Retry-After` asks,
    /// never past the bound.
    async fn wait_for(
        &self,
        reference: &str,
        step: &str,
        principal: &str,
        op: Operation,
        long: &LongRunningOperation,
    ) -> Result<bool, String> {
        let ctx = self.ctx();
        let who = ctx.principal(Some(principal))?;
        let base_url = ctx.pick(&ctx.profile.base_urls.value).to_owned();
        let path = poll_path(reference, &base_url);
        let started = Instant::now();
        let field = format!("operations.{}.operation", op.name());
        loop {
            let spec = RequestSpec {
                step: "operation".into(),
                base_url: base_url.clone(),
                origin: base_url.clone(),
                method: "GET".into(),
                path: path.clone(),
                principal: who.name.clone(),
                headers: who.headers.clone().into_iter().collect(),
                key: None,
                body: None,
                timeout: POLL_TIMEOUT,
                via_proxy: false,
                sent: None,
            };
            let ex = ctx.send(spec, self.marker()).await;
            let json = ex.json.as_deref();
            if ex.is_success() {
                if long.failed.as_ref().is_some_and(|f| f.holds(json)) {
                    return Ok(true);
                }
                if long.done.holds(json) {
                    return Ok(false);
                }
            }
            let left = long.bound().saturating_sub(started.elapsed());
            if left.is_zero() {
                let last = match ex.status {
                    Some(_) => format!("answered {}", ex.describe()),
                    None => format!("got no answer: {}", ex.describe()),
                };
                return Err(format!(
                    "the operation `{reference}` that `{step}` started did not settle within {} \
                     (its last poll, GET {path}, {last}; `{field}` says when it is done: {})",
                    humantime::format_duration(long.bound()),
                    long.done.describe()
                ));
            }
            let wait = ex
                .retry_after()
                .map_or(POLL_EVERY, |asked| asked.max(POLL_EVERY));
            tokio::time::sleep(wait.min(left)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::poll_path;

    #[test]
    fn an_absolute_reference_is_polled_by_its_path() {
        let root = "http://127.0.0.1:1";
        assert_eq!(
            poll_path(
                "https://compute.example/v1/projects/p/operations/op-1?x=1",
                root
            ),
            "/v1/projects/p/operations/op-1?x=1"
        );
        assert_eq!(poll_path("/ops/1", root), "/ops/1");
        assert_eq!(poll_path("ops/1", root), "/ops/1");
        assert_eq!(poll_path("https://host", root), "/");
        // A base URL with a path of its own: the reference's copy of it is not sent twice.
        let prefixed = "http://127.0.0.1:1/compute/v1/";
        assert_eq!(
            poll_path(
                "https://c.example/compute/v1/projects/p/operations/o",
                prefixed
            ),
            "/projects/p/operations/o"
        );
        assert_eq!(poll_path("/other/o", prefixed), "/other/o");
    }
}
