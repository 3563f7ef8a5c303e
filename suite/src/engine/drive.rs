//! One driver for every kind of check: which run alone and which beside others, how many at
//! once (each check's [`Weight`] on the run's one semaphore, `slots.rs`), the events around each,
//! and the outcomes back in catalogue order.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::StreamExt;
use idemspec_scenarios::scenario::Isolation;

use super::slots::{Hold, Slots, Weight};
use super::{About, RunRecord};
use crate::model::CheckOutcome;

/// One check as the driver runs it: a YAML scenario or a Rust procedure against an API
/// (`runner`), or a check of an HTTP client (`client_check`).
pub trait Check: Send + Sync + 'static {
    /// What every check of the run shares: the API's context (`runner`'s `ApiCtx`), or the
    /// client's (`client_check::Ctx`).
    type Ctx: Send + Sync + 'static;

    /// What it is.
    fn about(&self) -> &About;

    /// How it shares the target with the others (beside any, unless it says why not).
    fn isolation(&self) -> Isolation {
        Isolation::Shared
    }

    /// How many of the run's slots it holds while it runs: by default what its isolation asks
    /// ([`Weight::of`]); a check whose cost is in parts holds none and takes each part's weight
    /// from its [`Hold`].
    fn weight(&self) -> Weight {
        Weight::of(self.isolation())
    }

    /// Whether, among the checks that share the target, it starts first because it waits long
    /// (out the in-flight TTL), so that the others overlap its wait.
    fn waits_long(&self) -> bool {
        false
    }

    /// Runs it to its graded outcome, holding `hold`, the slots its weight asked (a check alone
    /// only through its crash may [`Hold::share`] them after).
    fn run(self: Arc<Self>, ctx: Arc<Self::Ctx>, hold: Hold) -> BoxFuture<'static, CheckOutcome>;
}

/// Runs `checks` with `ctx` on `slots` slots (each check holding its [`Check::weight`]),
/// announcing each to `record`; returns their outcomes in the order given.
///
/// Checks alone from start to end ([`Isolation::Alone`]) run first, one at a time, while nothing
/// else has touched the target; then the checks alone only through a crash
/// ([`Isolation::AloneThrough`]), so that every other check overlaps their wait for the TTL; then
/// the shared ones, those that wait long first, each waiting for its slots in that order. A
/// check's time starts when it holds its slots, not while it waits for them.
pub async fn drive<C: Check>(
    checks: Vec<C>,
    ctx: Arc<C::Ctx>,
    record: &RunRecord,
    slots: usize,
) -> Vec<CheckOutcome> {
    let run_slots = Slots::new(slots);
    let mut order: Vec<(usize, Arc<C>)> = checks.into_iter().map(Arc::new).enumerate().collect();
    order.sort_by_key(|(i, c)| {
        let phase = match c.isolation() {
            Isolation::Alone(_) => 0,
            Isolation::AloneThrough(_) => 1,
            Isolation::Shared if c.waits_long() => 2,
            Isolation::Shared => 3,
        };
        (phase, *i)
    });
    let (alone, rest): (Vec<_>, Vec<_>) = order
        .into_iter()
        .partition(|(_, c)| matches!(c.isolation(), Isolation::Alone(_)));
    let one = |(i, check): (usize, Arc<C>)| {
        let (ctx, run_slots) = (ctx.clone(), run_slots.clone());
        async move {
            let hold = run_slots.hold(check.weight()).await;
            record.check_started(&check.about().id);
            let outcome = check.run(ctx, hold).await;
            record.check_finished(&outcome);
            (i, outcome)
        }
    };
    let mut outcomes = Vec::new();
    for check in alone {
        outcomes.push(one(check).await);
    }
    // Every check is started in order and waits for its slots: the semaphore bounds how many run.
    let rest: Vec<_> = futures::stream::iter(rest)
        .map(one)
        .buffer_unordered(usize::MAX)
        .collect()
        .await;
    outcomes.extend(rest);
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}
