//! Runs a scenario's steps through the check's [`CheckRun`]: requests (all of a concurrent step
//! released at one barrier, retries, background requests), waits and hooks. See
//! `docs/design/runner.md` for the loop and where evidence comes from.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{
    HookName, KeySpec, Operation, RetrySpec, StatusPattern, Step, Wait,
};
use tokio::sync::Barrier;
use tokio::task::JoinHandle;

use super::context::reading::{answer_matches, refused, within};
use super::context::{
    twin_step, CheckRun, Needs, Sender, StepMeta, DEFAULT_TIMEOUT, STEP_HEADER, TWIN_AFTER,
};
use crate::http_client::{Exchange, RequestSpec, SentMark};

/// Runs every step in order; background steps are awaited at the end. `needs` says what the
/// assertions want prepared on the way (a list probe before the first DELETE).
pub(crate) async fn run(run: &mut CheckRun, needs: &Needs) {
    let scenario = run.scenario.clone();
    let sender = run.sender.clone();
    let mut background: Vec<(String, JoinHandle<StepMeta>)> = Vec::new();
    let mut kill_during_next = false;
    // The steps a later `wait: {sent: …}` waits for, each with the mark its requests set.
    let mut marks: HashMap<String, SentMark> = scenario
        .steps
        .iter()
        .filter_map(|s| match &s.value.wait {
            Some(Wait::Sent { sent, .. }) => Some((sent.clone(), SentMark::new())),
            _ => None,
        })
        .collect();
    for (index, step) in scenario.steps.iter().map(|s| &s.value).enumerate() {
        if index > 0 && run.share_after == Some(index - 1) {
            run.share();
        }
        let name = step.name();
        if let Some(wait) = &step.wait {
            match wait {
                Wait::For(d) => tokio::time::sleep(d.0).await,
                Wait::Sent { sent, then } => {
                    // Bounded by that request's own timeout: its exchange ending sets the mark.
                    if let Some(mark) = marks.get(sent) {
                        mark.sent().await;
                    }
                    if let Some(then) = then {
                        tokio::time::sleep(then.0).await;
                    }
                }
            }
            run.record_step(name, StepMeta::default());
            continue;
        }
        if let Some(hook) = step.hook {
            let hooks = &run.ctx().hooks;
            let mut meta = StepMeta::default();
            if run.ctx().variant_does(hook) {
                // The request variant makes the failure or the abandoned request itself.
            } else if hook == HookName::Crash && !hooks.crash_arms() && hooks.has(hook) {
                // The kill must land while the next request is being worked on.
                kill_during_next = true;
            } else if let Err(e) = hooks.run(hook).await {
                meta.problem = Some(e.to_string());
            }
            run.record_step(name, meta);
            continue;
        }
        if step.op == Some(Operation::Delete) && run.observed.list_before_delete.is_none() {
            if let Some(principal) = &needs.list_before_delete {
                let probe = probe_list(run, principal.as_deref()).await;
                run.observed.list_before_delete = Some(probe);
            }
        }
        // A step that acts on what a create made, or sends a key an earlier step sent, waits, as a
        // client of the API would, until the long-running operations the check's answers named
        // have settled (a no-op where none did): whether an attempt failed is known only then.
        if step.on.is_some() || scenario.retried_by(index).is_some() {
            if let Err(why) = run.settle().await {
                let meta = StepMeta {
                    problem: Some(why),
                    ..StepMeta::default()
                };
                run.record_step(name, meta);
                continue;
            }
        }
        let specs = match prepare(&sender, step, may_wait(run, index, step)) {
            Ok(mut specs) => {
                if let Some(mark) = marks.get(&name) {
                    for spec in &mut specs {
                        spec.sent = Some(mark.clone());
                    }
                }
                specs
            }
            Err(problem) => {
                // Never sent: a wait for it has nothing to wait for.
                marks.remove(&name);
                let meta = StepMeta {
                    problem: Some(problem),
                    ..StepMeta::default()
                };
                run.record_step(name, meta);
                continue;
            }
        };
        let task = tokio::spawn(send_step(
            sender.clone(),
            specs,
            step.retry.clone(),
            needs.twins.contains(&name),
            run.contract().clone(),
            run.ctx().lockout_bound,
        ));
        if kill_during_next {
            kill_during_next = false;
            tokio::time::sleep(run.ctx().profile.kill_after()).await;
            if let Err(e) = run.ctx().hooks.run(HookName::Crash).await {
                // Recorded on the request step: its outcome cannot be read as a crash.
                let mut meta = join(task).await;
                meta.problem = Some(e.to_string());
                run.record_step(name, meta);
                continue;
            }
        }
        if step.background {
            background.push((name, task));
        } else {
            let meta = join(task).await;
            run.record_step(name, meta);
        }
    }
    for (name, task) in background {
        let meta = join(task).await;
        run.record_step(name, meta);
    }
}

/// Counts the check's resources before its first delete, to learn whether `list` can see them.
async fn probe_list(run: &CheckRun, principal: Option<&str>) -> Result<(), String> {
    run.count(principal)
        .await
        .map(|_| ())
        .map_err(|e| format!("before the first delete, {e}"))
}

async fn join(task: JoinHandle<StepMeta>) -> StepMeta {
    task.await.unwrap_or_else(|e| StepMeta {
        problem: Some(format!("the step's task failed: {e}")),
        ..StepMeta::default()
    })
}

/// Sends `spec`; if it is not answered within [`TWIN_AFTER`], sends its twin (see [`twin_step`])
/// beside it, with what is left of its timeout, and waits for both. Returns the attempt's exchange
/// and the twin's, if one was sent (both are recorded).
async fn send_with_twin(sender: &Sender, spec: &RequestSpec) -> (Exchange, Option<Exchange>) {
    let attempt = sender.send(spec.clone());
    tokio::pin!(attempt);
    tokio::select! {
        biased;
        exchange = &mut attempt => return (exchange, None),
        () = tokio::time::sleep(TWIN_AFTER) => {}
    }
    let mut twin = spec.clone();
    twin.step = twin_step(&spec.step);
    twin.timeout = spec.timeout.saturating_sub(TWIN_AFTER);
    if twin.timeout.is_zero() {
        return (attempt.await, None);
    }
    for (name, value) in &mut twin.headers {
        if name.eq_ignore_ascii_case(STEP_HEADER) {
            value.clone_from(&twin.step);
        }
    }
    let (exchange, twin) = tokio::join!(attempt, sender.send(twin));
    (exchange, Some(twin))
}

/// How much longer than its own timeout a request of `step` (the `index`th) may be held: under a
/// contract that declares a wait (`in_flight_wait`), a request whose key may be in flight — sent
/// by an earlier step, or more than once at one barrier — may wait that long (the wait and its
/// slack) before the API answers it; zero otherwise.
fn may_wait(run: &CheckRun, index: usize, step: &Step) -> Duration {
    let Some(wait) = &run.contract().in_flight_wait else {
        return Duration::ZERO;
    };
    let named = step.key.as_ref().and_then(KeySpec::name).is_some();
    let shared = step.concurrency > 1 || run.scenario.retried_by(index).is_some();
    if named && shared {
        wait.limit()
    } else {
        Duration::ZERO
    }
}

/// Renders a request step into one request per `concurrency`, each given `waits` on top of its
/// timeout (see [`may_wait`]).
fn prepare(sender: &Sender, step: &Step, waits: Duration) -> Result<Vec<RequestSpec>, String> {
    let op = step.op.expect("validated: a request step has an op");
    let timeout = step.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0) + waits;
    let request = sender
        .request(&step.name(), op)
        .principal(step.principal.as_deref())
        .key(step.key.as_ref())
        .variant(step.body)
        .on(step.on.as_deref())
        .via(step.via)
        .timeout(Some(timeout));
    (0..step.concurrency).map(|_| request.prepare()).collect()
}

/// Sends a step's requests: all at once behind one barrier, or (with `retry`) one at a time until a
/// status in `until` or the time limit; with `twins` (and `until: [released]`), an attempt still
/// unanswered after [`TWIN_AFTER`] gets its twin, and a twin that was not refused as in flight
/// ends the retries too (the key was free for it).
async fn send_step(
    sender: Sender,
    specs: Vec<RequestSpec>,
    retry: Option<RetrySpec>,
    twins: bool,
    contract: Contract,
    lockout_bound: Duration,
) -> StepMeta {
    let started = Instant::now();
    let mut meta = StepMeta {
        retried: retry.is_some(),
        ..StepMeta::default()
    };
    let note_success = |ok: bool, meta: &mut StepMeta| {
        if ok && meta.succeeded_after.is_none() {
            meta.succeeded_after = Some(started.elapsed());
        }
    };
    if let Some(retry) = retry {
        let spec = specs
            .into_iter()
            .next()
            .expect("a retried step has one request");
        let limit = within(&retry.within, &contract, lockout_bound);
        // `released` also stops at no response: the key was free and the request is being worked,
        // or the API makes it wait (its twin, where `lock_released` asks for one, tells which).
        let released = retry.until.contains(&StatusPattern::Released);
        loop {
            let (exchange, twin) = if released && twins {
                send_with_twin(&sender, &spec).await
            } else {
                (sender.send(spec.clone()).await, None)
            };
            let done = match exchange.status {
                Some(_) => retry
                    .until
                    .iter()
                    .any(|p| answer_matches(*p, &exchange, &contract)),
                // A fast failure (a refused connection, a restarted target's stale keep-alive
                // reset) is no request being worked: try again.
                None => released && exchange.elapsed >= TWIN_AFTER,
            } || twin.as_ref().is_some_and(|t| !refused(t, &contract));
            note_success(exchange.is_success(), &mut meta);
            if done || started.elapsed() + retry.every.0 > limit {
                break;
            }
            tokio::time::sleep(retry.every.0).await;
        }
        return meta;
    }
    let barrier = Arc::new(Barrier::new(specs.len()));
    let tasks: Vec<_> = specs
        .into_iter()
        .map(|spec| {
            let sender = sender.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                sender.send(spec).await
            })
        })
        .collect();
    for task in tasks {
        match task.await {
            Ok(exchange) => note_success(exchange.is_success(), &mut meta),
            Err(e) => meta.problem = Some(format!("a request task failed: {e}")),
        }
    }
    meta
}
