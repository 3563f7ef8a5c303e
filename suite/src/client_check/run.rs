//! A client run end to end: the selection, the canned upstream, the preflight run, each check's
//! situations driven by the engine, and the report.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use idemspec_scenarios::profile::KeyAt;

use super::checks::{self, ClientCheck};
use super::discover::Discovery;
use super::situation::{Observed, Situation};
use super::{canned, command, outcome, ClientError, ClientOptions, Ctx};
use crate::engine::{self, About, EventSink, Finding, Graded, Hold, Judgement, RunRecord};
use crate::model::{CheckOutcome, RunReport};

/// Runs the selected client checks with `options`, sending progress to `events`.
///
/// A preflight run (no faults) comes first: when the command cannot be started, makes no
/// request of the operation, never exits, or fails although every request succeeded, every check
/// is UNKNOWN with that cause and the command's output, and no check runs.
///
/// # Errors
/// [`ClientError`] for a selection that names no check or leaves none, an unusable key header, or
/// a canned upstream that cannot listen.
pub async fn run(options: ClientOptions, events: EventSink) -> Result<RunReport, ClientError> {
    let mut record = RunRecord::new(events);
    let all: Vec<(About, Box<dyn ClientCheck>)> = checks::catalogue()
        .into_iter()
        .map(|c| (c.about(), c))
        .collect();
    let selected = engine::select(all, |(about, _)| &about.id, &options.only, &options.skip)?;
    let contract = options.profile.contract();
    if let KeyAt::Header(name) = &contract.key_at {
        http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::KeyHeader(name.clone()))?;
    }
    let mut canned = None;
    let upstream = match &options.upstream {
        Some(url) => url.clone(),
        None => {
            let server = canned::CannedUpstream::start(&options.profile)
                .await
                .map_err(ClientError::Upstream)?;
            let url = server.url();
            canned = Some(server);
            url
        }
    };
    let ctx = Arc::new(Ctx {
        timeout: options.timeout.unwrap_or(options.profile.timeout()),
        profile: options.profile,
        contract,
        command: options.command,
        upstream,
        canned: canned.is_some(),
    });
    record.announce(
        &ctx.profile.name,
        ctx.contract.preset.name(),
        selected.len(),
    );
    let preflight = ctx.observe(&Situation::new("preflight", Vec::new())).await;
    // A client that persists its keys shares its journal between runs of the command: they run
    // one at a time.
    let permits = if ctx.profile.persists_keys() {
        1
    } else {
        options.parallelism.clamp(1, 1024) as u32
    };
    let shared = Arc::new(Shared {
        blocked: preflight_problem(&ctx, &preflight).map(|why| (why, preflight)),
        limit: tokio::sync::Semaphore::new(permits as usize),
        permits,
    });
    let checks: Vec<ClientRun> = selected
        .into_iter()
        .map(|(about, check)| ClientRun {
            about,
            check,
            shared: shared.clone(),
        })
        .collect();
    // Every check at once: `limit` bounds the runs of the command, which are what costs.
    let checks = engine::drive(checks, ctx.clone(), &record, usize::MAX).await;
    drop(canned);
    Ok(record.finish(checks, None))
}

/// Runs `idemspec client --discover` with `options`' profile, command and timeout (see
/// [`discover`]); each of its runs has a canned upstream of its own, so `upstream`, `only`,
/// `skip` and `parallelism` are not used.
pub async fn discover(options: ClientOptions) -> Discovery {
    let ctx = Ctx {
        timeout: options.timeout.unwrap_or(options.profile.timeout()),
        contract: options.profile.contract(),
        profile: options.profile,
        command: options.command,
        upstream: String::new(),
        canned: true,
    };
    ctx.discover().await
}

/// What every client check of a run shares: why none can run (the preflight's problem and run),
/// and the bound on the command's runs at once.
struct Shared {
    blocked: Option<(String, Observed)>,
    limit: tokio::sync::Semaphore,
    /// `limit`'s permits: a restart takes them all, so no other run of the command (which may
    /// share the client's key journal) overlaps it.
    permits: u32,
}

/// A client check as the engine runs it.
struct ClientRun {
    about: About,
    check: Box<dyn ClientCheck>,
    shared: Arc<Shared>,
}

impl engine::Check for ClientRun {
    type Ctx = Ctx;

    fn about(&self) -> &About {
        &self.about
    }

    /// Every client check runs beside the others: each situation has a proxy of its own.
    fn run(self: Arc<Self>, ctx: Arc<Ctx>, _hold: Hold) -> BoxFuture<'static, CheckOutcome> {
        Box::pin(async move {
            let about = self.about.clone();
            match &self.shared.blocked {
                Some((why, preflight)) => unrunnable(&ctx, about, why, preflight),
                None => judge(&ctx, about, self.check.as_ref(), &self.shared).await,
            }
        })
    }
}

/// Why the command, run without faults, cannot be judged; `None` when it can.
fn preflight_problem(ctx: &Ctx, run: &Observed) -> Option<String> {
    use command::Exit;
    let operation = ctx.operation_label();
    let sent = if run.others.is_empty() {
        "no request at all".to_owned()
    } else {
        format!("only {}", run.others.join(", "))
    };
    match (&run.output.exit, run.attempted()) {
        (Exit::NotStarted(why), _) => Some(format!("the command could not be started: {why}")),
        (Exit::TimedOut(after), false) => Some(format!(
            "the command made no {operation} request and did not exit within {}; it was killed (it sent {sent})",
            humantime::format_duration(*after)
        )),
        (Exit::TimedOut(after), true) => Some(format!(
            "the command did not exit within {} although its {operation} requests were answered with the profile's success; it was killed",
            humantime::format_duration(*after)
        )),
        (exit, false) if !exit.succeeded() => Some(format!(
            "the command ended ({exit}) before making a {operation} request (it sent {sent})"
        )),
        (_, false) => Some(format!(
            "the command exited 0 without making a {operation} request (it sent {sent}); does it use the base URL in ${} or {{{{base_url}}}}?",
            command::BASE_URL_VAR
        )),
        (exit, true) if !exit.succeeded() => Some(format!(
            "the command ended ({exit}) although every {operation} request was answered with the profile's success: does the client accept `success` as the profile gives it?"
        )),
        _ => None,
    }
}

/// The outcome of a check that could not run because the preflight failed.
fn unrunnable(ctx: &Ctx, about: About, why: &str, preflight: &Observed) -> CheckOutcome {
    let graded = Graded {
        verdict: crate::model::Verdict::Unknown,
        summary: format!("not judged: {why}"),
        notes: Vec::new(),
        support: vec![preflight.situation.to_owned()],
    };
    outcome::outcome(ctx, about, graded, std::slice::from_ref(preflight), 0)
}

/// Runs one check's situations (each holding one of `limit`'s permits while its command runs)
/// and grades it.
async fn judge(ctx: &Ctx, about: About, check: &dyn ClientCheck, shared: &Shared) -> CheckOutcome {
    let started = Instant::now();
    let observe_all = |situations: Vec<Situation>| async move {
        futures::future::join_all(situations.iter().map(|s| async move {
            // The semaphore is never closed, so acquiring only waits.
            let needs = if s.restart { shared.permits } else { 1 };
            let _permit = shared.limit.acquire_many(needs).await;
            ctx.observe(s).await
        }))
        .await
    };
    let mut runs: Vec<Observed> = observe_all(check.situations(ctx)).await;
    let more = check.follow_up(ctx, &runs);
    runs.extend(observe_all(more).await);
    let mut found: Vec<Judgement> = runs
        .iter()
        .filter(|r| !r.attempted())
        .map(|r| {
            Judgement::on(
                r.situation,
                Finding::Undecided(format!(
                    "`{}`: the command made no {} request ({})",
                    r.situation,
                    ctx.operation_label(),
                    r.output.exit
                )),
            )
        })
        .collect();
    let attempted: Vec<Observed> = runs.iter().filter(|r| r.attempted()).cloned().collect();
    found.extend(check.judge(ctx, &attempted));
    let graded = engine::grade(&found, &about);
    outcome::outcome(
        ctx,
        about,
        graded,
        &runs,
        started.elapsed().as_millis() as u64,
    )
}
