//! The runner: drives each check's steps against the target (through an embedded proxy where faults
//! apply), evaluates assertions into graded verdicts and emits [`RunEvent`]s.
//!
//! Layout: [`options`] (what to run), `select` (which checks, capabilities), `env` (what every
//! check shares), `context` (the per-check context, `CheckRun`: the only way a check sends a
//! request, its evidence, the contract's reading of a status), `steps` (a scenario's requests,
//! barrier, retries, hooks), `procedures` (checks written in Rust), `assert` (the assertion
//! vocabulary, one file per kind), `check` (one check end to end, above them all), `observe` (list
//! counts, counters), `proxy` (one embedded proxy per faulted check). Grading is the engine's
//! ([`crate::engine`]), shared with `idemspec client`.

mod assert;
mod check;
mod context;
mod env;
mod observe;
mod options;
mod procedures;
mod proxy;
mod quiet;
mod select;
mod steps;

pub use crate::engine::EventSink;
pub use options::{RunError, RunOptions, Target, Unreachable};

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use idemspec_scenarios::catalogue;

use crate::client::RequestSpec;
use crate::engine::RunRecord;
use crate::hooks::{HookRunner, ProfileHooks};
use crate::model::RunReport;
use crate::nemesis::{NemesisHooks, TargetProcess};
use crate::reference::ReferenceServer;
use env::Env;
use idemspec_scenarios::scenario::Isolation;
use quiet::Quiet;

/// Runs the selected checks and returns the report; progress goes to `events`
/// (`RunStarted`, then `CheckStarted`/`CheckFinished` per check, then `RunFinished`).
///
/// Checks run `opts.parallelism` at a time (each has its own marker, keys and proxy), except while
/// one disturbs the others: a check that reads the global counters, calls `fail_next` or says
/// `exclusive: true` runs alone, first; one that crashes and restarts the target runs alone until
/// it is back (`quiet.rs`).
///
/// # Errors
/// [`RunError`] for configuration problems, an unknown `--only` id, a reference server or proxy that
/// would not start, or a target no base URL of which answers. Failed checks are not errors.
pub async fn run(opts: RunOptions, events: EventSink) -> Result<RunReport, RunError> {
    let mut record = RunRecord::new(events);
    let builtin = if opts.builtin {
        catalogue::builtin()
    } else {
        Vec::new()
    };
    let selected = select::select(builtin, opts.scenarios, &opts.only, &opts.skip)?;
    let mut target_process = None;
    let (profile, hooks, reference): (_, Arc<dyn HookRunner>, _) = match opts.target {
        Target::Profile(p) if p.process.is_some() => {
            let process = TargetProcess::start(&p).await.map_err(RunError::Target)?;
            let hooks = Arc::new(NemesisHooks::new(
                process.clone(),
                ProfileHooks::new(p.hooks.clone()),
            ));
            target_process = Some(process);
            (*p, hooks, None)
        }
        Target::Profile(p) => {
            let hooks = Arc::new(ProfileHooks::new(p.hooks.clone()));
            (*p, hooks, None)
        }
        Target::Reference(r) => {
            let server = ReferenceServer::start(&r)
                .await
                .map_err(RunError::Reference)?;
            let profile = server.profile()?;
            (profile, server.hooks(), Some(server))
        }
    };
    let env = Arc::new(Env::new(profile, hooks, opts.lockout_bound));
    preflight(&env).await?;
    record.announce(
        &env.profile.name,
        env.contract.preset.name(),
        selected.len(),
    );
    let limits = Limits {
        check: opts.check_timeout,
        run_ends: record.started() + opts.run_timeout,
    };
    let quiet = Quiet::default();
    // The profile's `checks_at_once` is what the target can take; `--jobs` cannot raise it.
    let jobs = env
        .profile
        .checks_at_once
        .as_ref()
        .and_then(|n| n.value.get())
        .map_or(usize::MAX, |n| n as usize)
        .min(opts.parallelism)
        .max(1);
    let mut checks: Vec<_> = selected
        .into_iter()
        .map(Arc::new)
        .enumerate()
        .map(|(i, s)| (i, quiet::isolation(&env, &s), s))
        .collect();
    // Checks alone from start to end run first, one at a time, while nothing else has touched
    // the target; then the checks alone only through a crash, so that every other check (those
    // waiting out the in-flight TTL first) overlaps their wait for the TTL.
    checks.sort_by_key(|(i, isolation, s)| {
        let phase = match isolation {
            Isolation::Alone(_) => 0,
            Isolation::AloneThrough(_) => 1,
            Isolation::Shared if s.waits_out_ttl() => 2,
            Isolation::Shared => 3,
        };
        (phase, *i)
    });
    let (alone, rest): (Vec<_>, Vec<_>) = checks
        .into_iter()
        .partition(|(_, isolation, _)| matches!(isolation, Isolation::Alone(_)));
    let mut outcomes = Vec::new();
    for (i, isolation, s) in alone {
        let at = Scheduled {
            index: i,
            isolation,
        };
        outcomes.push(run_one(env.clone(), &record, &quiet, at, s, limits).await);
    }
    let rest: Vec<_> = futures::stream::iter(rest)
        .map(|(i, isolation, s)| {
            let at = Scheduled {
                index: i,
                isolation,
            };
            let (env, record, quiet) = (env.clone(), &record, quiet.clone());
            async move { run_one(env, record, &quiet, at, s, limits).await }
        })
        .buffer_unordered(jobs)
        .collect()
        .await;
    outcomes.extend(rest);
    outcomes.sort_by_key(|(i, _)| *i);
    let checks: Vec<_> = outcomes.into_iter().map(|(_, o)| o).collect();
    let target_log = target_process
        .as_ref()
        .map(|p| p.log().display().to_string());
    let report = record.finish(checks, target_log);
    if let Some(server) = reference {
        server.shutdown().await;
    }
    if let Some(process) = target_process {
        process.kill().await;
    }
    Ok(report)
}

/// How long a check may take: its own deadline, and what is left of the run's.
#[derive(Debug, Clone, Copy)]
struct Limits {
    check: Duration,
    run_ends: Instant,
}

/// Where a check stands in the run: its catalogue position and how it shares the target.
#[derive(Debug, Clone, Copy)]
struct Scheduled {
    index: usize,
    isolation: Isolation,
}

/// Runs one check between its `CheckStarted` and `CheckFinished` events, once it holds the quiet
/// lock as its isolation asks (its time and deadline start then, not while it waits).
async fn run_one(
    env: Arc<Env>,
    record: &RunRecord,
    quiet: &Quiet,
    at: Scheduled,
    scenario: Arc<idemspec_scenarios::scenario::Scenario>,
    limits: Limits,
) -> (usize, crate::model::CheckOutcome) {
    let hold = quiet.hold(at.isolation).await;
    record.check_started(&scenario.id.value);
    let left = limits.run_ends.saturating_duration_since(Instant::now());
    let outcome = check::run_check(env, scenario, limits.check.min(left), hold, at.isolation).await;
    record.check_finished(&outcome);
    (at.index, outcome)
}

/// Asks each base URL for each principal's list. A transport failure means the target is
/// unreachable; an answer other than 2xx means the profile does not work with it (wrong path or
/// credentials) — both stop the run before any check could report a verdict it did not earn.
async fn preflight(env: &Env) -> Result<(), RunError> {
    let list = &env.profile.operations.list;
    let vars = idemspec_scenarios::template::TemplateVars {
        marker: "preflight",
        variant: 1,
    };
    for url in &env.profile.base_urls.value {
        for principal in &env.profile.principals.value {
            let ex = env
                .client
                .send(RequestSpec {
                    step: "preflight".into(),
                    base_url: url.trim_end_matches('/').to_owned(),
                    method: "GET".into(),
                    path: list.path.render(&vars, || uuid::Uuid::new_v4().to_string()),
                    principal: principal.name.clone(),
                    headers: principal.headers.clone().into_iter().collect(),
                    key: None,
                    body: None,
                    timeout: std::time::Duration::from_secs(10),
                    via_proxy: false,
                })
                .await;
            let path = ex.evidence.request.path.clone();
            let reason = match ex.status {
                None => Unreachable::Silent(format!(
                    "GET {path} as principal `{}`: {}",
                    principal.name,
                    ex.describe()
                )),
                Some(status @ 200..=299) => match observe::unreadable_list(list, &ex) {
                    None => continue,
                    Some(why) => Unreachable::Unreadable {
                        path,
                        principal: principal.name.clone(),
                        status,
                        why,
                    },
                },
                Some(_) => Unreachable::Answered {
                    path,
                    principal: principal.name.clone(),
                    answer: ex.describe(),
                },
            };
            return Err(RunError::TargetUnreachable {
                url: url.clone(),
                reason,
            });
        }
    }
    Ok(())
}
