//! A client run end to end: the selection, the canned upstream, the preflight run, each check's
//! situations driven by the engine, and the report.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use idemspec_scenarios::profile::KeyAt;

use super::checks::{self, ClientCheck};
use super::discover::Discovery;
use super::situation::{CommandRun, Situation};
use super::tls_edge::TlsEdge;
use super::{assemble, canned, command, ClientError, ClientOptions, Ctx};
use crate::engine::{self, About, EventSink, Finding, Graded, Hold, Judgement, RunRecord, Weight};
use crate::model::{CheckOutcome, RunReport};

/// Runs the selected client checks with `options`, sending progress to `events`.
///
/// A preflight run (no faults) comes first: when the command cannot be started, makes no
/// request of the operation, never exits, or fails although every request succeeded, every check
/// is UNKNOWN with that cause and the command's output, and no check runs.
///
/// With `options.tls` every run of the command is served over TLS ([`TlsEdge`]) and the report
/// says so; the CA's file is removed when the run ends.
///
/// # Errors
/// [`ClientError`] for a selection that names no check or leaves none, an unusable key header, a
/// canned upstream that cannot listen, or a throwaway CA that cannot be made.
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
    let tls = edge(options.tls)?;
    if let Some(edge) = &tls {
        record.served_over_tls(edge.served());
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
        tls,
    });
    record.announce(
        &ctx.profile.name.value,
        ctx.contract.preset.name(),
        selected.len(),
    );
    let preflight = ctx
        .run_command(&Situation::new("preflight", Vec::new()))
        .await;
    // A client that persists its keys shares its journal between runs of the command: they run
    // one at a time.
    let slots = if ctx.profile.persists_keys() {
        1
    } else {
        options.parallelism.clamp(1, 1024)
    };
    let blocked = Arc::new(preflight_problem(&ctx, &preflight).map(|why| (why, preflight)));
    let checks: Vec<SelectedCheck> = selected
        .into_iter()
        .map(|(about, check)| SelectedCheck {
            about,
            check,
            blocked: blocked.clone(),
        })
        .collect();
    // Every check at once: the slots bound the runs of the command, which are what costs.
    let checks = engine::drive(checks, ctx.clone(), &record, slots).await;
    drop(canned);
    // The last holder of the context: its TLS edge, and the CA's directory, go with it.
    drop(ctx);
    Ok(record.finish(checks, None))
}

/// The TLS edge of a run that asked for one.
fn edge(tls: bool) -> Result<Option<TlsEdge>, ClientError> {
    tls.then(TlsEdge::new).transpose().map_err(ClientError::Tls)
}

/// Runs `idemspec client --discover` with `options`' profile, command, timeout and TLS (see
/// [`discover`]); each of its runs has a canned upstream of its own, so `upstream`, `only`,
/// `skip` and `parallelism` are not used.
pub async fn discover(options: ClientOptions) -> Discovery {
    let tls = match edge(options.tls) {
        Ok(tls) => tls,
        Err(e) => {
            return Discovery::failed(format!(
                "{}: {}",
                e,
                std::error::Error::source(&e).map_or(String::new(), ToString::to_string)
            ))
        }
    };
    let ctx = Ctx {
        timeout: options.timeout.unwrap_or(options.profile.timeout()),
        contract: options.profile.contract(),
        profile: options.profile,
        command: options.command,
        upstream: String::new(),
        canned: true,
        tls,
    };
    ctx.discover().await
}

/// A client check as the engine runs it.
struct SelectedCheck {
    about: About,
    check: Box<dyn ClientCheck>,
    /// Why no check can run (the preflight's problem and run), shared by every check.
    blocked: Arc<Option<(String, CommandRun)>>,
}

impl engine::Check for SelectedCheck {
    type Ctx = Ctx;

    fn about(&self) -> &About {
        &self.about
    }

    /// A client check's cost is its runs of the command, each of which takes its own slots
    /// (see [`run_and_grade`]); the check itself holds none, so every check starts at once.
    fn weight(&self) -> Weight {
        Weight::Slots(0)
    }

    /// Every client check runs beside the others: each situation has a proxy of its own.
    fn run(self: Arc<Self>, ctx: Arc<Ctx>, hold: Hold) -> BoxFuture<'static, CheckOutcome> {
        Box::pin(async move {
            let about = self.about.clone();
            match self.blocked.as_ref() {
                Some((why, preflight)) => unrunnable(&ctx, about, why, preflight),
                None => run_and_grade(&ctx, about, self.check.as_ref(), &hold).await,
            }
        })
    }
}

/// Why the command, run without faults, cannot be judged; `None` when it can.
fn preflight_problem(ctx: &Ctx, run: &CommandRun) -> Option<String> {
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
            "the command made no {operation} request and did not exit within {}; it was killed (it sent {sent}){}",
            humantime::format_duration(*after),
            tls_hint(ctx)
        )),
        (Exit::TimedOut(after), true) => Some(format!(
            "the command did not exit within {} although its {operation} requests were answered with the profile's success; it was killed",
            humantime::format_duration(*after)
        )),
        (exit, false) if !exit.succeeded() => Some(format!(
            "the command ended ({exit}) before making a {operation} request (it sent {sent}){}",
            tls_hint(ctx)
        )),
        (_, false) => Some(format!(
            "the command exited 0 without making a {operation} request (it sent {sent}); does it use the base URL in ${} or {{{{base_url}}}}?",
            command::BASE_URL_VAR
        )),
        (exit, true) if !exit.succeeded() && !ctx.canned => Some(format!(
            "the command ended ({exit}) after its {operation} requests got {}: with `--upstream` these are the upstream's answers, or the proxy's where the upstream gave none; is the upstream reachable, and does it accept the command's requests?",
            upstream_answers(run)
        )),
        (exit, true) if !exit.succeeded() => Some(format!(
            "the command ended ({exit}) although every {operation} request was answered with the profile's success: does the client accept `success` as the profile gives it?"
        )),
        _ => None,
    }
}

/// What the operation's requests of `run` got, distinct answers in order: a status, with the
/// proxy's reason where it answered for an upstream that did not (`502 (connection refused)`), or
/// `no answer`.
fn upstream_answers(run: &CommandRun) -> String {
    let mut seen: Vec<String> = Vec::new();
    for a in &run.attempts {
        let answer = match (a.client_status, &a.error) {
            (Some(status), Some(why)) if a.upstream_status.is_none() => format!("{status} ({why})"),
            (Some(status), _) => status.to_string(),
            (None, Some(why)) => format!("no answer ({why})"),
            (None, None) => "no answer".to_owned(),
        };
        if !seen.contains(&answer) {
            seen.push(answer);
        }
    }
    seen.join(", ")
}

/// What to look at when a command served over TLS made no request: whether it trusts the CA.
fn tls_hint(ctx: &Ctx) -> String {
    if ctx.tls.is_none() {
        return String::new();
    }
    format!(
        "; it was served over TLS: does the client trust the CA in {} (docs/client.md, \"--tls\"), and does it use ${} as given (https://; plain HTTP to the TLS port is answered 400 and not proxied)?",
        super::tls_edge::CA_VARIABLES.join(", "),
        command::BASE_URL_VAR
    )
}

/// The outcome of a check that could not run because the preflight failed.
fn unrunnable(ctx: &Ctx, about: About, why: &str, preflight: &CommandRun) -> CheckOutcome {
    let graded = Graded {
        verdict: crate::model::Verdict::Unknown,
        summary: format!("not judged: {why}"),
        notes: Vec::new(),
        support: vec![preflight.situation.to_owned()],
        claims: Vec::new(),
    };
    assemble::outcome(ctx, about, graded, std::slice::from_ref(preflight), 0)
}

/// Runs one check's situations and grades it. Each run of the command takes one of the run's
/// slots from `hold` while it runs; a restart takes them all, so no other run of the command
/// (which may share the client's key journal) overlaps it.
async fn run_and_grade(
    ctx: &Ctx,
    about: About,
    check: &dyn ClientCheck,
    hold: &Hold,
) -> CheckOutcome {
    let started = Instant::now();
    let run_all = |situations: Vec<Situation>| async move {
        futures::future::join_all(situations.iter().map(|s| async move {
            let weight = if s.restart {
                Weight::All
            } else {
                Weight::Slots(1)
            };
            let _slots = hold.take(weight).await;
            ctx.run_command(s).await
        }))
        .await
    };
    let mut runs: Vec<CommandRun> = run_all(check.situations(ctx)).await;
    for _ in 0..checks::FOLLOW_UPS {
        let more = check.follow_up(ctx, &runs);
        if more.is_empty() {
            break;
        }
        runs.extend(run_all(more).await);
    }
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
    let attempted: Vec<CommandRun> = runs.iter().filter(|r| r.attempted()).cloned().collect();
    found.extend(check.judge(ctx, &attempted));
    let graded = engine::grade(&found, &about);
    assemble::outcome(
        ctx,
        about,
        graded,
        &runs,
        started.elapsed().as_millis() as u64,
    )
}
