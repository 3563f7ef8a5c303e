//! `distinct_problems: {steps}`: two conflicts a client must tell apart — "in flight, retry later"
//! and "mismatch, never retry" — differ in status, in what the contract's `error_shape` names (the
//! problem `type`, RFC 9457 §3.1.1, under `problem`; the vendor's member at `at`), in a vendor's
//! error code, or in `Retry-After`. An entry
//! may list several steps (two same-key requests, either of which may be the one refused as in
//! flight); the first of them that got a refusal stands for it.

use idemspec_scenarios::profile::{Contract, MismatchAnswer, Refusal};
use idemspec_scenarios::scenario::{ConflictSteps, StepChoice};

use super::Judge;
use crate::engine::Finding::{self, Broken, Held, Recorded, Undecided};
use crate::http_client::Exchange;
use crate::runner::context::CheckRun;

/// The `distinct_problems` kind.
pub(super) struct DistinctProblems<'a>(pub &'a ConflictSteps);

impl Judge for DistinctProblems<'_> {
    fn judge(&self, run: &CheckRun) -> Finding {
        let contract = run.contract();
        if contract.mismatch_answer == MismatchAnswer::Original {
            return Held(format!(
                "no mismatch refusal to tell from an in-flight one: {} says a reused key with \
                 another request gets the original's answer",
                contract.who_says("mismatch_answer", "original")
            ));
        }
        let mut firsts = Vec::new();
        for choice in &self.0.steps {
            match refusal_of(run, choice) {
                Ok(found) => firsts.push(found),
                Err(finding) => return finding,
            }
        }
        for (i, (a, ea)) in firsts.iter().enumerate() {
            for (b, eb) in &firsts[i + 1..] {
                if tells(ea, contract) == tells(eb, contract) {
                    return Broken(format!(
                        "`{a}` and `{b}` both answered {}, with the same {}error code and \
                         Retry-After: a client cannot tell a retryable conflict from a terminal one",
                        ea.describe(),
                        contract
                            .error_shape
                            .naming()
                            .map_or(String::new(), |n| format!("{n}, "))
                    ));
                }
            }
        }
        let all: Vec<String> = firsts
            .iter()
            .map(|(s, e)| format!("`{s}` {}", e.describe()))
            .collect();
        Held(format!("conflicts are distinguishable: {}", all.join(", ")))
    }
}

/// The first step of `choice` whose first answer was a refusal, with it; or the finding when
/// none was: not compared (every step was answered with a success, and the sentence says what
/// that shows: one step's success is its own assertion's to judge; two same-key requests that
/// were both served did not overlap, or were not refused though they did), or undecided (a step
/// got no answer).
fn refusal_of<'r>(
    run: &'r CheckRun,
    choice: &'r StepChoice,
) -> Result<(&'r str, &'r Exchange), Finding> {
    let contract = run.contract();
    let mut answered = Vec::new();
    let mut server_error = false;
    for s in choice.names() {
        match run.step(s).first_response() {
            Some(e) if is_conflict(e, contract) => return Ok((s, e)),
            Some(e) => {
                server_error |= !e.is_success();
                answered.push(format!("`{s}` answered {}", e.describe()));
            }
            None => return Err(Undecided(format!("step `{s}` got no response"))),
        }
    }
    let why = if server_error {
        // A crash page is no conflict: there is nothing a client must tell apart in it.
        "a server error, not a conflict a client must tell from another".to_owned()
    } else if answered.len() < 2 {
        // One step, answered as a success: the assertion that owns that step judges the answer.
        "not a refusal".to_owned()
    } else if run.ctx().profile.operations.create.variants.slow.is_some() {
        "neither refused, though the profile's `slow` request kept the first running: the API \
         took them up one after the other, or does not refuse a key in flight \
         (concurrent-same-key judges that)"
            .to_owned()
    } else {
        "neither refused: they did not overlap (two same-key requests surely overlap only with \
         the profile's `slow` request variant, which it has none of)"
            .to_owned()
    };
    Err(Recorded(format!(
        "the conflicts could not be compared: {}, {why}",
        answered.join(", ")
    )))
}

/// Whether `e` is a conflict to compare: a 4xx, or an answer the contract reads as one of its
/// refusals or as a wait that ran out (a layer may declare a 5xx for them); any other 5xx is a
/// server error.
fn is_conflict(e: &Exchange, contract: &Contract) -> bool {
    let Some(status) = e.status else {
        return false;
    };
    (400..500).contains(&status)
        || contract.wait_ran_out(status)
        || Refusal::ALL
            .iter()
            .any(|r| contract.refuses(*r, status, e.json.as_deref()))
}

/// What a client can tell two conflicts apart by: the status, what the contract's error shape
/// names (the problem `type`, or the value at the vendor's place), an error code in a JSON body
/// (`code`, `error.code`, `error.type`, or `error` as a string, as vendors write them, whatever
/// the shape), whether `Retry-After` says "come back later", and which of the contract's
/// refusals the answer is read as (where the profile declares what a refusal's body says,
/// `mismatch_body` or `in_flight_body`, two answers of one status that the declarations tell
/// apart are told apart).
fn tells(e: &Exchange, contract: &Contract) -> Tells {
    let code = e.json.as_deref().and_then(|json| {
        ["/code", "/error/code", "/error/type", "/error"]
            .iter()
            .find_map(|p| json.pointer(p).and_then(|v| v.as_str()).map(str::to_owned))
    });
    let read_as = e.status.map_or((false, false), |status| {
        let body = e.json.as_deref();
        (
            contract.refuses(Refusal::Mismatch, status, body),
            contract.holds_in_flight(status, body),
        )
    });
    Tells {
        status: e.status,
        shape: contract.error_shape.names(e.json.as_deref()),
        code,
        retry_after: e.header("retry-after").is_some(),
        read_as,
    }
}

/// What [`tells`] finds in one answer; two answers a client can tell apart differ in some part.
#[derive(PartialEq, Eq)]
struct Tells {
    status: Option<u16>,
    shape: Option<String>,
    code: Option<String>,
    retry_after: bool,
    /// Read as the mismatch refusal, and as in flight, by the contract's declarations.
    read_as: (bool, bool),
}

#[cfg(test)]
mod tests {
    use idemspec_scenarios::profile::ContractSpec;

    use super::*;

    fn contract(yaml: &str) -> Contract {
        serde_saphyr::from_str::<ContractSpec>(yaml)
            .expect("a contract")
            .resolve()
    }

    fn answer(status: u16, body: &str) -> Exchange {
        let mut ex = Exchange::failed("s", String::new());
        ex.status = Some(status);
        ex.json = serde_json::from_str(body).ok().map(std::sync::Arc::new);
        ex.body = bytes::Bytes::from(body.to_owned());
        ex
    }

    /// A crash page is no conflict, unless the contract declares that status for a refusal; a
    /// 4xx is one whatever its body.
    #[test]
    fn a_server_error_is_a_conflict_only_where_the_contract_declares_it() {
        let article = contract("preset: article\n");
        assert!(!is_conflict(&answer(500, "<h1>crash</h1>"), &article));
        assert!(!is_conflict(&answer(503, ""), &article));
        assert!(is_conflict(&answer(409, "{}"), &article));
        assert!(is_conflict(&answer(400, "oops"), &article));
        let declared = contract("preset: article\nin_flight_status: 503\n");
        assert!(is_conflict(&answer(503, ""), &declared));
        assert!(!is_conflict(&answer(500, ""), &declared));
    }

    /// Two `409`s with the same shape, code and no `Retry-After` are told apart where the
    /// profile declares what each refusal's body says, and only then.
    #[test]
    fn declared_refusal_bodies_tell_two_answers_of_one_status_apart() {
        let mismatch = answer(
            409,
            r#"{"reason": "key-reused", "error": {"code": "conflict"}}"#,
        );
        let in_flight = answer(
            409,
            r#"{"reason": "in-progress", "error": {"code": "conflict"}}"#,
        );
        let undeclared = contract("preset: article\nerror_shape: none\n");
        assert!(tells(&mismatch, &undeclared) == tells(&in_flight, &undeclared));
        let declared = contract(
            "preset: article\nerror_shape: none\nmismatch_body: {at: $.reason, is: key-reused}\n\
             in_flight_body: {at: $.reason, is: in-progress}\n",
        );
        assert!(tells(&mismatch, &declared) != tells(&in_flight, &declared));
    }
}
