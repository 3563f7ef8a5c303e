//! Runs a scenario's steps: requests (with one barrier for concurrent ones, retries, background
//! requests), waits and hooks. See `docs/design/runner.md` for the loop and where evidence comes from.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemspec_scenarios::profile::KeyUse;
use idemspec_scenarios::scenario::{
    AssertKind, BodyVariant, HookName, Operation, Scenario, Step, Via,
};
use idemspec_scenarios::template::TemplateVars;
use tokio::sync::Barrier;
use tokio::task::JoinHandle;

use super::assert::status_matches;
use super::context::{CheckState, Env, StepResult};
use crate::client::{Exchange, RequestSpec};

/// Default client timeout per request.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after a doomed request starts a non-arming `crash` hook kills the server.
const KILL_AFTER: Duration = Duration::from_millis(300);
/// The header that tags a request with its step (stripped by the proxy before the target).
pub(crate) const STEP_HEADER: &str = "X-Idemspec-Step";

/// Runs every step in order; background steps are awaited at the end.
pub(crate) async fn run_steps(
    env: &Arc<Env>,
    scenario: &Scenario,
    state: &mut CheckState,
    proxy_urls: Option<&[String]>,
) {
    let mut background: Vec<(String, JoinHandle<StepResult>)> = Vec::new();
    let mut kill_during_next = false;
    for step in scenario.steps.iter().map(|s| &s.value) {
        let name = step.name();
        if let Some(d) = step.wait {
            tokio::time::sleep(d.0).await;
            state.results.insert(name, StepResult::default());
            continue;
        }
        if let Some(hook) = step.hook {
            let mut result = StepResult::default();
            if hook == HookName::Crash && !env.hooks.crash_arms() && env.hooks.has(hook) {
                // The kill must land while the next request is being worked on.
                kill_during_next = true;
            } else if let Err(e) = env.hooks.run(hook).await {
                result.problem = Some(e.to_string());
            }
            state.results.insert(name, result);
            continue;
        }
        if step.op == Some(Operation::Delete) && state.list_before_delete.is_none() {
            if let Some(principal) = created_principal(scenario) {
                state.list_before_delete = Some(probe_list(env, state, principal).await);
            }
        }
        let specs = match build_requests(env, state, step, proxy_urls) {
            Ok(specs) => specs,
            Err(problem) => {
                let result = StepResult {
                    problem: Some(problem),
                    ..StepResult::default()
                };
                state.results.insert(name, result);
                continue;
            }
        };
        let task = tokio::spawn(send_step(
            env.clone(),
            specs,
            step.retry.clone(),
            env.contract.clone(),
        ));
        if kill_during_next {
            kill_during_next = false;
            tokio::time::sleep(KILL_AFTER).await;
            if let Err(e) = env.hooks.run(HookName::Crash).await {
                // Recorded on the request step: its outcome cannot be read as a crash.
                let mut result = join(task).await;
                result.problem = Some(e.to_string());
                state.results.insert(name, result);
                continue;
            }
        }
        if step.background {
            background.push((name, task));
        } else {
            state.results.insert(name, join(task).await);
        }
    }
    for (name, task) in background {
        state.results.insert(name, join(task).await);
    }
}

/// The principal a `created` assertion of the scenario counts for (`None`: the scenario has no
/// `created` assertion; `Some(None)`: the default principal).
fn created_principal(scenario: &Scenario) -> Option<Option<&str>> {
    scenario.assertions.iter().find_map(|a| {
        a.value.kinds().into_iter().find_map(|k| match k {
            AssertKind::Created(c) => Some(c.principal.as_deref()),
            _ => None,
        })
    })
}

/// Counts the check's resources before its first delete, to learn whether `list` can see them.
async fn probe_list(env: &Env, state: &CheckState, principal: Option<&str>) -> Result<(), String> {
    let principal = env.principal(principal)?;
    super::observe::count_created(env, principal, &state.marker, state.exchanges())
        .await
        .map(|_| ())
        .map_err(|e| format!("before the first delete, {e}"))
}

async fn join(task: JoinHandle<StepResult>) -> StepResult {
    task.await.unwrap_or_else(|e| StepResult {
        problem: Some(format!("the step's task failed: {e}")),
        ..StepResult::default()
    })
}

/// Sends a step's requests: all at once behind one barrier, or (with `retry`) one at a time until a
/// status in `until` or the time limit.
async fn send_step(
    env: Arc<Env>,
    specs: Vec<RequestSpec>,
    retry: Option<idemspec_scenarios::scenario::RetrySpec>,
    contract: idemspec_scenarios::profile::Contract,
) -> StepResult {
    let started = Instant::now();
    let mut result = StepResult {
        retried: retry.is_some(),
        ..StepResult::default()
    };
    if let Some(retry) = retry {
        let spec = specs
            .into_iter()
            .next()
            .expect("a retried step has one request");
        let limit = super::assert::within(&retry.within, &contract);
        loop {
            let exchange = env.client.send(spec.clone()).await;
            let done = exchange
                .status
                .is_some_and(|s| retry.until.iter().any(|p| status_matches(*p, s, &contract)));
            if exchange.is_success() && result.succeeded_after.is_none() {
                result.succeeded_after = Some(started.elapsed());
            }
            result.exchanges.push(exchange);
            if done || started.elapsed() + retry.every.0 > limit {
                break;
            }
            tokio::time::sleep(retry.every.0).await;
        }
        return result;
    }
    let barrier = Arc::new(Barrier::new(specs.len()));
    let tasks: Vec<JoinHandle<Exchange>> = specs
        .into_iter()
        .map(|spec| {
            let env = env.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                env.client.send(spec).await
            })
        })
        .collect();
    for task in tasks {
        match task.await {
            Ok(exchange) => {
                if exchange.is_success() && result.succeeded_after.is_none() {
                    result.succeeded_after = Some(started.elapsed());
                }
                result.exchanges.push(exchange);
            }
            Err(e) => result.problem = Some(format!("a request task failed: {e}")),
        }
    }
    result
}

/// Renders a request step into one request per `concurrency`.
fn build_requests(
    env: &Env,
    state: &CheckState,
    step: &Step,
    proxy_urls: Option<&[String]>,
) -> Result<Vec<RequestSpec>, String> {
    let op = step.op.expect("validated: a request step has an op");
    let principal = env.principal(step.principal.as_deref())?;
    let ops = &env.profile.operations;
    let vars = TemplateVars {
        marker: &state.marker,
        variant: match step.body {
            BodyVariant::Default => 1,
            BodyVariant::Alt => 2,
        },
    };
    let uuid = || uuid::Uuid::new_v4().to_string();
    let target_id = || -> Result<String, String> {
        let on = step.on.as_deref().unwrap_or_default();
        let created = state.result(on);
        created
            .first_success()
            .and_then(|e| env.created_id(e))
            .ok_or_else(|| format!("step `{on}` created no resource with an id to act on"))
    };
    let missing = |what: &str| format!("the target profile has no `operations.{what}`");
    let (method, path, body, content_type, send_key) = match op {
        Operation::Create => (
            ops.create.method.clone(),
            ops.create.path.render(&vars, uuid),
            Some(ops.create.body.render(&vars, uuid)),
            Some(ops.create.content_type.clone()),
            true,
        ),
        Operation::List => (
            "GET".into(),
            ops.list.path.render(&vars, uuid),
            None,
            None,
            false,
        ),
        Operation::Get => {
            let get = ops.get.as_ref().ok_or_else(|| missing("get"))?;
            (
                "GET".into(),
                get.path.value.replace("{id}", &target_id()?),
                None,
                None,
                false,
            )
        }
        Operation::Delete => {
            let del = ops.delete.as_ref().ok_or_else(|| missing("delete"))?;
            let path = del.path.value.replace("{id}", &target_id()?);
            (
                del.method.clone(),
                path,
                None,
                None,
                del.key == KeyUse::Send,
            )
        }
        Operation::Action => {
            let act = ops.action.as_ref().ok_or_else(|| missing("action"))?;
            let path = act.path.value.replace("{id}", &target_id()?);
            let body = act.body.as_ref().map(|b| b.render(&vars, uuid));
            let ct = body.as_ref().map(|_| "application/json".to_owned());
            (act.method.clone(), path, body, ct, true)
        }
    };
    let key = if send_key {
        step.key
            .as_ref()
            .and_then(|k| state.key_value(k, &env.contract))
    } else {
        None
    };
    let via_proxy = step.via == Via::Proxy && proxy_urls.is_some();
    let timeout = step.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
    let name = step.name();
    let mut specs = Vec::with_capacity(step.concurrency as usize);
    for _ in 0..step.concurrency {
        let base = match (via_proxy, proxy_urls) {
            (true, Some(urls)) => env.pick(urls),
            _ => env.pick(&env.profile.base_urls.value),
        };
        let mut headers: Vec<(String, String)> = principal
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if let Some(ct) = &content_type {
            headers.push(("Content-Type".into(), ct.clone()));
        }
        if let Some(k) = &key {
            headers.push((env.contract.header.clone(), k.clone()));
        }
        if via_proxy {
            headers.push((STEP_HEADER.into(), name.clone()));
        }
        specs.push(RequestSpec {
            step: name.clone(),
            base_url: base.to_owned(),
            method: method.clone(),
            path: path.clone(),
            principal: principal.name.clone(),
            headers,
            key: key.clone(),
            body: body.clone(),
            timeout,
            via_proxy,
        });
    }
    Ok(specs)
}

/// Sends the first request of `step` once (for procedures); a step that cannot be built is
/// recorded as an exchange with that error.
pub(crate) async fn send_one(
    env: &Env,
    state: &CheckState,
    step: &Step,
    proxy_urls: Option<&[String]>,
) -> Exchange {
    match build_requests(env, state, step, proxy_urls) {
        Ok(mut specs) => env.client.send(specs.remove(0)).await,
        Err(problem) => Exchange::failed(&step.name(), problem),
    }
}
