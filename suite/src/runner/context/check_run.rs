//! [`CheckRun`]: one check's context — its scenario, sender, steps, exchanges, the proxy's events
//! and what was observed behind the API.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::profile::Contract;
use idemspec_scenarios::scenario::{Isolation, Scenario};

use super::{evidence, Needs, Sender};
use crate::engine::Hold;
use crate::http_client::Exchange;
use crate::runner::api_ctx::ApiCtx;
use crate::runner::observe::{self, Counters};
use crate::runner::proxy::FaultProxy;

/// One check's context: the environment, the scenario, the sender (with the check's marker and
/// fault proxy), what each step did, every exchange, the proxy's events and the observations made
/// behind the API.
pub(crate) struct CheckRun {
    /// The scenario being run.
    pub scenario: Arc<Scenario>,
    /// Sends and records the check's requests.
    pub sender: Sender,
    /// The check's own fault proxy, when it injects faults.
    pub(crate) proxy: Option<FaultProxy>,
    /// What each step did besides its exchanges, by step name.
    steps: BTreeMap<String, StepMeta>,
    /// Every exchange, in send order, paired with the proxy's actions (after the steps).
    exchanges: Vec<Exchange>,
    /// The proxy's events (empty without faults).
    events: Vec<ProxyEvent>,
    /// What was seen behind the API, as the assertions asked.
    pub observed: Observed,
    /// The run's slots the check holds (`engine/slots.rs`).
    hold: Option<Hold>,
    /// The 0-based step after which the check lets others run beside it
    /// ([`Isolation::AloneThrough`]).
    pub share_after: Option<usize>,
    /// The long-running operations seen settled (`operations.rs`), by reference: true for one
    /// that failed.
    pub(super) settled: std::sync::Mutex<std::collections::HashMap<String, bool>>,
}

/// What a step did besides sending requests.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepMeta {
    /// Why the step could not be carried out (unknown principal, no id to act on, hook failed).
    pub problem: Option<String>,
    /// Whether the step had a `retry` (assertions then judge its last attempt).
    pub retried: bool,
    /// Time from the first attempt's start to the end of the first 2xx response.
    pub succeeded_after: Option<Duration>,
}

/// What was observed behind the API, for the assertions that need it ([`Needs`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Observed {
    /// Side-effect counters before the first step.
    pub counters_before: Option<Result<Counters, String>>,
    /// Side-effect counters after the last step.
    pub counters_after: Option<Result<Counters, String>>,
    /// The check's resources per principal (by the name the assertion used; `None`: A), counted
    /// with the profile's `list` after the steps.
    pub counts: BTreeMap<Option<String>, Result<u64, String>>,
    /// Whether the profile's `list` saw this check's resources just before its first DELETE (after
    /// a delete, an empty list proves nothing about the profile). `Err` says why it did not.
    pub list_before_delete: Option<Result<(), String>>,
}

/// One step as assertions read it: its exchanges in send order and what it did besides.
#[derive(Debug)]
pub(crate) struct StepView<'a> {
    /// Every request of the step, in send order (retries included).
    pub exchanges: Vec<&'a Exchange>,
    /// What the step did besides.
    pub meta: &'a StepMeta,
}

impl<'a> StepView<'a> {
    /// The responses assertions judge: the last attempt of a retried step, all of a concurrent one.
    pub(crate) fn judged(&self) -> &[&'a Exchange] {
        if self.meta.retried {
            self.exchanges
                .split_last()
                .map_or(&[], |(last, _)| std::slice::from_ref(last))
        } else {
            &self.exchanges
        }
    }

    /// The first exchange with a status.
    pub(crate) fn first_response(&self) -> Option<&'a Exchange> {
        self.exchanges.iter().copied().find(|e| e.status.is_some())
    }

    /// The first 2xx.
    pub(crate) fn first_success(&self) -> Option<&'a Exchange> {
        self.exchanges.iter().copied().find(|e| e.is_success())
    }
}

impl CheckRun {
    /// The context of `scenario` in `ctx`, sending through `proxy` when it has one, holding
    /// `hold`, the run's slots `isolation` asks.
    pub(crate) fn new(
        ctx: Arc<ApiCtx>,
        scenario: Arc<Scenario>,
        proxy: Option<FaultProxy>,
        hold: Hold,
        isolation: Isolation,
    ) -> Self {
        let share_after = match isolation {
            Isolation::AloneThrough(step) => Some(step),
            Isolation::Shared | Isolation::Alone(_) => None,
        };
        Self {
            hold: Some(hold),
            share_after,
            scenario,
            sender: Sender::new(ctx, proxy.as_ref().map(FaultProxy::base_urls)),
            proxy,
            steps: BTreeMap::new(),
            exchanges: Vec::new(),
            events: Vec::new(),
            observed: Observed::default(),
            settled: Default::default(),
        }
    }

    /// Lets other checks run beside this one from now on: what disturbed them is over.
    pub(crate) fn share(&mut self) {
        self.hold = self.hold.take().map(Hold::share);
    }

    /// The run's shared environment.
    pub(crate) fn ctx(&self) -> &ApiCtx {
        self.sender.ctx()
    }

    /// The contract the target declares.
    pub(crate) fn contract(&self) -> &Contract {
        &self.ctx().contract
    }

    /// The check's marker.
    pub(crate) fn marker(&self) -> &str {
        self.sender.marker()
    }

    /// Records what step `name` did besides its exchanges.
    pub(crate) fn record_step(&mut self, name: String, meta: StepMeta) {
        self.steps.insert(name, meta);
    }

    /// Step `name` as assertions read it (empty if it never ran).
    pub(crate) fn step(&self, name: &str) -> StepView<'_> {
        const NOTHING: &StepMeta = &StepMeta {
            problem: None,
            retried: false,
            succeeded_after: None,
        };
        StepView {
            exchanges: self
                .exchanges
                .iter()
                .filter(|e| e.evidence.request.step == name)
                .collect(),
            meta: self.steps.get(name).unwrap_or(NOTHING),
        }
    }

    /// The first exchange of the earliest step before `step` that sent the same named key (the
    /// request `step` retries), if any.
    pub(crate) fn key_sent_before(&self, step: &str) -> Option<&Exchange> {
        let index = self
            .scenario
            .steps
            .iter()
            .position(|s| s.value.name() == step)?;
        let name = self.scenario.retried_by(index)?.name();
        self.exchanges
            .iter()
            .find(|e| e.evidence.request.step == name)
    }

    /// Every exchange of the check, in send order (after the steps).
    pub(crate) fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// The proxy's events.
    pub(crate) fn events(&self) -> &[ProxyEvent] {
        &self.events
    }

    /// Counts the resources with this check's marker of the principal named `principal` (`None`:
    /// A), see [`observe::count_created`].
    pub(crate) async fn count(&self, principal: Option<&str>) -> Result<u64, String> {
        let principal = self.ctx().principal(principal)?;
        self.settle().await?;
        let (seen, _) = self.paired();
        let is_delete = |e: &Exchange| {
            self.sender.operation_of(&e.evidence.request.step)
                == Some(idemspec_scenarios::scenario::Operation::Delete)
        };
        observe::count_created(self.ctx(), principal, self.marker(), &seen, &is_delete).await
    }

    /// Every exchange sent so far, in send order, each proxied one paired with what the proxy
    /// did with it, for a procedure that judges before the steps are finished.
    pub(crate) fn exchanges_so_far(&self) -> Vec<Exchange> {
        self.paired().0
    }

    /// Every exchange sent so far, in send order, each proxied one paired with the proxy's event;
    /// and the proxy's events.
    pub(super) fn paired(&self) -> (Vec<Exchange>, Vec<ProxyEvent>) {
        let events = self
            .proxy
            .as_ref()
            .map(FaultProxy::events)
            .unwrap_or_default();
        let mut exchanges = self.sender.exchanges();
        evidence::pair_proxy_actions(&mut exchanges, &events);
        self.mark_failed_operations(&mut exchanges);
        (exchanges, events)
    }

    /// Takes every exchange sent so far, paired with what the proxy did, for the judgements.
    pub(crate) fn finish_steps(&mut self) {
        (self.exchanges, self.events) = self.paired();
    }

    /// Makes the observations `needs` asks for after the steps.
    pub(crate) async fn observe_after(&mut self, needs: &Needs) {
        for name in &needs.counts {
            let count = self.count(name.as_deref()).await;
            self.observed.counts.insert(name.clone(), count);
        }
        if needs.counters {
            let after = match self.settle().await {
                Ok(()) => observe::read_counters(self.ctx()).await,
                Err(why) => Err(why),
            };
            self.observed.counters_after = Some(after);
        }
        // What settled while observing: the answers whose operations failed are failures.
        let mut exchanges = std::mem::take(&mut self.exchanges);
        self.mark_failed_operations(&mut exchanges);
        self.exchanges = exchanges;
    }
}
