//! `failure_handled: {failed, retry}`: the first attempt failed with a 5xx (or answered a
//! long-running operation that failed); the retry re-ran it
//! (the contract does not store that 5xx: `stores`, or `replays_5xx: false`) or replayed it
//! (it does), and nothing was left half-done:
//! afterwards exactly one resource exists when the retry re-ran, none when the failure was replayed.

use std::time::Duration;

use idemspec_scenarios::profile::Preset;
use idemspec_scenarios::scenario::FailureHandled;

use super::{responses, same_response, Judge};
use crate::engine::Finding::{self, Broken, Held, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::reading::{self, Reading};
use crate::runner::context::CheckRun;
use crate::runner::context::Needs;

impl Judge for FailureHandled {
    fn needs(&self) -> Needs {
        Needs {
            counts: vec![None],
            ..Needs::default()
        }
    }

    fn judge(&self, run: &CheckRun) -> Finding {
        let finding = statuses(self, run);
        if !matches!(finding, Held(_)) {
            return finding;
        }
        let Some(first) = run.step(&self.failed).first_response() else {
            return finding;
        };
        let expected = u64::from(!failure_stored(run, first));
        match run.observed.counts.get(&None) {
            Some(Ok(n)) if *n == expected => finding,
            Some(Ok(n)) => Broken(format!(
                "{n} resources exist after a failed create and its retry; expected {expected} (half-done work left behind)"
            )),
            Some(Err(e)) => Undecided(format!("could not count resources: {e}")),
            None => Undecided("the resources were not counted".into()),
        }
    }

    fn reference(&self, run: &CheckRun) -> Option<String> {
        let first = run.step(&self.failed).first_response()?;
        Some(rule_source(run, first))
    }
}

/// The source of the rule the contract holds the failed attempt to: a stored 5xx replayed
/// (Stripe's documentation under `stripe-v1`) or a 5xx re-run (the article and the IETF draft),
/// or the profile's own field where it set what is stored.
fn rule_source(run: &CheckRun, first: &Exchange) -> String {
    let contract = run.contract();
    let profile_says = ["stores", "replays_5xx"]
        .iter()
        .any(|f| contract.overridden.contains(f));
    if profile_says {
        contract.who_says_stores()
    } else if failure_stored(run, first) {
        match contract.preset {
            Preset::StripeV1 => "stripe: idempotency (500s are replayed)".to_owned(),
            _ => contract.who_says_stores(),
        }
    } else {
        "article: only terminal outcomes are stored; ietf-draft-07 §2.6".to_owned()
    }
}

/// The failed attempt's status and the retry's, judged by the contract.
fn statuses(f: &FailureHandled, run: &CheckRun) -> Finding {
    let (failed, retry) = (&f.failed, &f.retry);
    let Some(first) = run.step(failed).first_response() else {
        return Undecided(format!("step `{failed}` got no response"));
    };
    if !first.is_server_failure() {
        return Undecided(format!(
            "`{failed}` was meant to fail with a 5xx or a failed operation (the fail_next hook, or the fails_once request variant) but answered {}",
            first.describe()
        ));
    }
    let rs = match responses(run, retry) {
        Ok(rs) => rs,
        Err(e) => return Undecided(e),
    };
    let again = rs[0];
    let contract = run.contract();
    let who = contract.who_says_stores();
    // What failed, as the contract's rule names it: the status, or the failed operation.
    let what = match first.status {
        Some(status) if first.operation_failed.is_none() => format!("a {status}"),
        _ => "a failed operation".to_owned(),
    };
    let header = &contract.replayed_header;
    if failure_stored(run, first) {
        if same_response(again, first) && again.marks_replay(header) {
            Held(format!(
                "the {} was replayed (the retry carries `{header}`), as {who} says",
                first.describe()
            ))
        } else if same_response(again, first) {
            // Not "replayed": without a marker the same 500 may as well be a second failure.
            Held(format!(
                "the retry got the same {} again, as {who} has {what} answered again (without a \
                 replay marker, a 5xx kept and a second failure look alike)",
                first.describe()
            ))
        } else {
            Broken(format!(
                "{who} says {what} is replayed, but the retry got {}",
                again.describe()
            ))
        }
    } else if again.is_success() {
        ran_again_or_replayed(run, first, again, &what)
    } else if same_response(again, first) {
        // "Stored and replayed" only where the response says so; the same 500 again may also be
        // a layer that failed before the handler both times (a crash page), which the retry's
        // timing and counters tell, not this comparison.
        if again.marks_replay(header) {
            Broken(format!(
                "the {} was stored and replayed (the retry carries `{header}`); {who} says {what} \
                 is re-run",
                first.describe()
            ))
        } else {
            same_failure_again(run, first, again, &what)
        }
    } else {
        Broken(format!(
            "the retry after a 5xx answered {}, not a success",
            again.describe()
        ))
    }
}

/// Below this, how long a failure took to answer measures no handler's work: a round trip and a
/// framework's error page take as long.
const WORK_FLOOR: Duration = Duration::from_millis(20);

/// The retry of a failure the contract says is re-run got the same failure again, with no replay
/// marker: the answer alone cannot tell a stored failure replayed without a marker from the
/// request run again and failing again, so the time each took does. `first` failed after the
/// handler's work when it took at least [`WORK_FLOOR`]; a retry answered in a quarter of that time
/// did not run it (replayed: FAIL); one that took half of it or more ran again and failed again
/// (the failure was not stored, but a re-run was not seen to complete: UNKNOWN); anything else, or
/// a first failure too fast to measure work, tells neither (UNKNOWN with both readings).
fn same_failure_again(run: &CheckRun, first: &Exchange, again: &Exchange, what: &str) -> Finding {
    let contract = run.contract();
    let (who, header) = (contract.who_says_stores(), &contract.replayed_header);
    let without = if header.is_empty() {
        "with no replay marker (the contract names none)".to_owned()
    } else {
        format!("without `{header}`")
    };
    let (took, before) = (again.elapsed, first.elapsed);
    let timing = format!(
        "in {} ms, against {} ms for the failed attempt",
        took.as_millis(),
        before.as_millis()
    );
    let seen = format!(
        "the retry got the same {} again, {without}, {timing}",
        first.describe()
    );
    if before >= WORK_FLOOR && took.saturating_mul(4) <= before {
        Broken(format!(
            "{seen}: answered too fast to have run the request again, so the failure was stored \
             and replayed without a marker; {who} says {what} is re-run"
        ))
    } else if before >= WORK_FLOOR && took.saturating_mul(2) >= before {
        Undecided(format!(
            "{seen}: it took as long as the failed attempt, so it ran again and failed again \
             (the failure was not stored, as {who} says), but the request meant to fail once \
             failed twice, and a re-run was not seen to complete"
        ))
    } else {
        Undecided(format!(
            "{seen}: nothing measured tells the two readings apart: stored and replayed without \
             a marker (or refused before the handler both times), which breaks {who} ({what} is \
             re-run), or run again and failed again, which keeps it"
        ))
    }
}

/// The retry of a failure the contract says is re-run got a success: it ran again, unless the
/// contract reads it as a replay (its marker, a declared replay status or body): then a success
/// was stored behind the failure `first` answered — the work was done while the client was told it
/// failed, and a client that believed the 5xx and gave up has a resource it does not know of.
fn ran_again_or_replayed(
    run: &CheckRun,
    first: &Exchange,
    again: &Exchange,
    what: &str,
) -> Finding {
    match reading::read(again, run.contract()) {
        Reading::Replay { by } => Broken(format!(
            "the retry got a replay of a success ({}, told by {}), though the only answer before \
             it was {what} ({}): the work was done and stored behind the failure, and the client \
             was told it failed (a client that gives up on the 5xx leaves a resource it does not \
             know of); a failure must leave nothing done, or be replayed as the failure",
            again.describe(),
            by.describe(),
            first.describe()
        )),
        _ => Held(format!(
            "the retry ran again and succeeded ({})",
            again.describe()
        )),
    }
}

/// Whether the contract stores the failure `first` answered: its 5xx status is in `stores`, or,
/// for a long-running operation that failed after a 2xx, some 5xx is (`replays_5xx`).
fn failure_stored(run: &CheckRun, first: &Exchange) -> bool {
    let contract = run.contract();
    match first.status {
        Some(status) if first.operation_failed.is_none() => contract.stores_status(status),
        _ => contract.replays_5xx,
    }
}
