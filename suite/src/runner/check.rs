//! One check end to end: capabilities, the embedded fault proxy, the per-check context
//! ([`CheckRun`]), what the assertions need prepared, the steps (or a procedure), what is observed
//! behind the API afterwards, the judgements, and the graded outcome with its evidence.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use idemspec_scenarios::rules::Rule;
use idemspec_scenarios::scenario::{HookName, Isolation, Scenario};

use super::api_ctx::ApiCtx;
use super::context::{evidence, CheckRun};
use super::observe;
use super::proxy::FaultProxy;
use super::{assert, capabilities, procedures, steps};
use crate::engine::{grade, About, Check, Finding, Hold, Judgement};
use crate::http_client::Exchange;
use crate::model::{claim, CheckOutcome, Evidence, Verdict};

/// How long a check may take: its own deadline, and when the run's ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// One check's deadline (`--check-timeout`).
    pub check: Duration,
    /// When the run's time is up (`--run-timeout` from its start).
    pub run_ends: Instant,
}

/// A scenario (YAML steps, or a Rust procedure it names) as the engine runs it.
pub(crate) struct ScenarioCheck {
    about: About,
    scenario: Arc<Scenario>,
    isolation: Isolation,
    limits: Limits,
}

impl ScenarioCheck {
    /// `scenario` against the target in `ctx`, within `limits`.
    pub(crate) fn new(ctx: &ApiCtx, scenario: Scenario, limits: Limits) -> Self {
        // A hook step disturbs the others only where the profile's hook runs (a request variant
        // that does its job touches only the check's own request).
        let isolation = scenario.isolation(|hook: HookName| !ctx.variant_does(hook));
        Self {
            about: about(&scenario),
            scenario: Arc::new(scenario),
            isolation,
            limits,
        }
    }
}

impl Check for ScenarioCheck {
    type Ctx = ApiCtx;

    fn about(&self) -> &About {
        &self.about
    }

    fn isolation(&self) -> Isolation {
        self.isolation
    }

    fn waits_long(&self) -> bool {
        self.scenario.waits_out_ttl()
    }

    fn run(self: Arc<Self>, ctx: Arc<ApiCtx>, hold: Hold) -> BoxFuture<'static, CheckOutcome> {
        Box::pin(async move {
            let left = self
                .limits
                .run_ends
                .saturating_duration_since(Instant::now());
            let limit = self.limits.check.min(left);
            let deviation = ctx.profile.deviation(&self.about.id).cloned();
            let mut outcome =
                run_check(ctx, self.scenario.clone(), limit, hold, self.isolation).await;
            if let Some(deviation) = deviation {
                super::documented::mark(&mut outcome, &deviation);
            }
            outcome
        })
    }
}

/// Runs `scenario` against the target in `ctx`, within `limit`, holding `hold`, the run's slots
/// `isolation` asks: a check still running then is UNKNOWN, naming the deadline,
/// with the evidence it had sent.
async fn run_check(
    ctx: Arc<ApiCtx>,
    scenario: Arc<Scenario>,
    limit: Duration,
    hold: Hold,
    isolation: Isolation,
) -> CheckOutcome {
    let started = Instant::now();
    if limit.is_zero() {
        let why = "the run's deadline (--run-timeout) passed before this check could start";
        let j = Judgement::new(Finding::Undecided(why.into()));
        return outcome(&scenario, &[j], &[], started);
    }
    if let Some(reason) = capabilities::missing_capability(&ctx, &scenario) {
        let skip = Judgement::new(Finding::Skipped(reason));
        return outcome(&scenario, &[skip], &[], started);
    }
    let proxy = if scenario.faults.is_empty() {
        None
    } else {
        let rules: Vec<Rule> = scenario.faults.iter().map(|r| r.value.clone()).collect();
        match FaultProxy::start(
            &ctx.profile.base_urls.value,
            &rules,
            &ctx.contract.key_at,
            &ctx.tls,
        )
        .await
        {
            Ok(p) => Some(p),
            Err(e) => {
                let why = format!("could not start the fault-injecting proxy: {e}");
                let j = Judgement::new(Finding::Undecided(why));
                return outcome(&scenario, &[j], &[], started);
            }
        }
    };
    let uncovered = capabilities::uncovered(&ctx, &scenario);
    let mut run = CheckRun::new(ctx, scenario.clone(), proxy, hold, isolation);
    let judgements = match tokio::time::timeout(limit, judge(&mut run)).await {
        Ok(judgements) => judgements,
        Err(_) => {
            run.finish_steps();
            let why = format!(
                "the check did not finish within {} (its deadline: --check-timeout, or what was \
                 left of --run-timeout); what it had seen is not judged",
                humantime::format_duration(limit)
            );
            vec![Judgement::new(Finding::Undecided(why))]
        }
    };
    let judgements = match uncovered {
        Some(why) => judgements.into_iter().map(|j| j.recorded(&why)).collect(),
        None => judgements,
    };
    let judgements = undecided_if_one_identity(&run, judgements);
    if let Some(p) = run.proxy.take() {
        p.shutdown().await;
    }
    let mut outcome = outcome(&scenario, &judgements, run.exchanges(), started);
    outcome.timeline = evidence::timeline(run.exchanges(), run.contract());
    outcome
}

/// `judgements`, a broken rule made undecided where the check sent as two principals that
/// present one client certificate
/// ([`crate::http_client::TlsSettings::shared_certificate`]): the server may have seen
/// one identity, so what looks like a response crossing principals is no proof of one.
fn undecided_if_one_identity(run: &CheckRun, judgements: Vec<Judgement>) -> Vec<Judgement> {
    let principals = run
        .exchanges()
        .iter()
        .map(|ex| ex.evidence.request.principal.as_str());
    let Some(why) = run.ctx().tls.shared_certificate(principals) else {
        return judgements;
    };
    judgements
        .into_iter()
        .map(|mut j| {
            if let Finding::Broken(seen) = &j.finding {
                j.finding = Finding::Undecided(format!("{why} (seen: {seen})"));
            }
            j
        })
        .collect()
}

/// What the assertions need prepared, the steps (or the procedure), the observations after, and
/// the judgements.
async fn judge(run: &mut CheckRun) -> Vec<Judgement> {
    let scenario = run.scenario.clone();
    let needs = assert::needs(&scenario);
    if needs.counters {
        run.observed.counters_before = Some(observe::read_counters(run.ctx()).await);
    }
    match &scenario.procedure {
        Some(name) => {
            let judgements = match procedures::named(&name.value) {
                Some(procedure) => procedure.judge(run).await,
                None => {
                    let why = format!("no procedure is named `{}`", name.value);
                    vec![Judgement::new(Finding::Undecided(why))]
                }
            };
            run.finish_steps();
            judgements
        }
        None => {
            steps::run(run, &needs).await;
            run.finish_steps();
            run.observe_after(&needs).await;
            assert::evaluate(run)
        }
    }
}

/// What `scenario` is, for the grader and the report.
fn about(scenario: &Scenario) -> About {
    About {
        id: scenario.id.value.clone(),
        title: scenario.title.clone(),
        level: scenario.level,
        reference: scenario.reference.clone(),
    }
}

/// Grades the judgements into the check's outcome, with the evidence of the judgements that
/// decided it (FAIL, WARN, UNKNOWN) and the others as notes.
fn outcome(
    scenario: &Scenario,
    judgements: &[Judgement],
    exchanges: &[Exchange],
    started: Instant,
) -> CheckOutcome {
    let about = about(scenario);
    let graded = grade(judgements, &about);
    let evidence = if matches!(
        graded.verdict,
        Verdict::Fail | Verdict::Warn | Verdict::Unknown
    ) {
        let steps: Vec<&str> = graded.support.iter().map(String::as_str).collect();
        evidence::select(exchanges, &steps)
    } else {
        Vec::new()
    };
    let mut graded = graded;
    let mut notes = std::mem::take(&mut graded.notes);
    let all: Vec<Evidence> = exchanges.iter().map(|e| e.evidence.clone()).collect();
    let audit = claim::audit(&graded.claims, &all);
    // Every format shows a claim the exchanges refute, as idemspec's defect, not the target's.
    notes.extend(audit.iter().map(|line| format!("{AUDIT_NOTE}{line}")));
    let duration_ms = started.elapsed().as_millis() as u64;
    let mut outcome = about.outcome(graded, notes, evidence, duration_ms, Default::default());
    outcome.audit = audit;
    outcome
}

/// How a note of idemspec's own audit begins: a sentence of this check states what its exchanges
/// do not show, which is a defect to report, not a finding.
const AUDIT_NOTE: &str = "idemspec's own audit (a defect of idemspec, please report it): ";
