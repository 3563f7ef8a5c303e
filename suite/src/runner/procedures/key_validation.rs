//! key-validation: invalid keys (empty, over-long, non-ASCII) get a 4xx with the error body the
//! contract promises (`error_shape`), never a 5xx and never a resource; a missing key gets the
//! contract's status when keys are required; a valid key sent as an RFC 8941 string names the same
//! record as the bare key where the contract accepts sf-strings (ietf-draft-07 §2.1).

use futures::future::BoxFuture;
use idemspec_scenarios::profile::{Contract, Refusal};
use idemspec_scenarios::scenario::{KeySpec, Level, Operation, Via};

use super::Procedure;
use crate::engine::{Finding, Judgement};
use crate::http_client::Exchange;
use crate::runner::context::CheckRun;

/// `key-validation`: invalid, missing, bare and sf-string keys.
pub(crate) struct KeyValidation;

/// The built-in check: its header as a scenario has it.
const SCENARIO: &str = r#"version: 1
id: key-validation
title: Invalid keys get a 4xx with the declared error body, never a 5xx; a missing key gets what the contract says
level: MUST
reference: "ietf-draft-07 §2.1 (key syntax), §2.7 (error handling); RFC 8941 §3.3.3"
procedure: key-validation
"#;

impl Procedure for KeyValidation {
    fn name(&self) -> &'static str {
        "key-validation"
    }

    fn scenario(&self) -> &'static str {
        SCENARIO
    }

    fn judge<'a>(&'a self, check: &'a CheckRun) -> BoxFuture<'a, Vec<Judgement>> {
        Box::pin(run(check))
    }
}

/// Keys the contract forbids, each with the step that sends it and what it is. Each is unique to
/// the check run (the marker is in it), so a record an earlier run left cannot answer for it.
fn invalid_keys(marker: &str, max_len: u32) -> [(&'static str, KeySpec, String); 3] {
    let too_long = max_len as usize + 1;
    [
        ("empty-key", KeySpec::Empty, "an empty key".into()),
        (
            "long-key",
            KeySpec::Long(too_long),
            format!("a {too_long}-character key"),
        ),
        (
            "non-ascii-key",
            KeySpec::Raw(format!("{marker}-clé-ключ")),
            "a non-ASCII key".into(),
        ),
    ]
}

async fn run(run: &CheckRun) -> Vec<Judgement> {
    let contract = run.contract();
    let mut judgements = Vec::new();
    // The requests the contract lets create a resource, and that did: what the count is judged by.
    let mut creators: Vec<&str> = Vec::new();
    // The requests the contract refuses that the API accepted anyway (each a broken rule already):
    // their resources are explained, not counted as owed.
    let mut accepted_anyway: Vec<&str> = Vec::new();
    // A MUST rule counts at the check's own level (a scenario may run this procedure as SHOULD);
    // a SHOULD rule (a problem body, an optional key refused) never counts higher.
    let judge = |finding: Finding, level: Level, step: &str| {
        let judgement = Judgement::new(finding).on_steps([step]);
        match level {
            Level::Should => judgement.at(Level::Should),
            Level::Must => judgement,
        }
    };
    let empty_is_missing = contract.empty_key_is_missing;
    let invalid = invalid_keys(run.marker(), contract.key_max_len);
    for (step, key, what) in &invalid {
        let (step, key, what) = (*step, key.clone(), what.as_str());
        if empty_is_missing && key == KeySpec::Empty {
            // The contract says an empty key is no key: judged as a missing key, below.
            let ex = create(run, step, key).await;
            let (finding, level) =
                missing_finding(&ex, contract, "an empty key (no key, by the contract)");
            // Counted only where the contract lets a request without a key create: where it
            // requires the key, this success is a broken rule already, not a resource owed.
            if ex.is_success() {
                let what = "an empty key (no key, by the contract)";
                if contract.key_required {
                    accepted_anyway.push(what);
                } else {
                    creators.push(what);
                }
            }
            judgements.push(judge(finding, level, step));
            continue;
        }
        let ex = create(run, step, key).await;
        if ex.is_success() {
            accepted_anyway.push(what);
        }
        judgements.push(judge(invalid_finding(&ex, what), Level::Must, step));
        judgements.extend(unshaped(&ex, contract, what).map(|j| j.on_steps([step])));
    }
    let missing = create(run, "missing-key", KeySpec::None).await;
    let (finding, level) = missing_finding(&missing, contract, "a request without a key");
    if missing.is_success() {
        if contract.key_required {
            accepted_anyway.push("a request without a key");
        } else {
            creators.push("a request without a key");
        }
    }
    judgements.push(judge(finding, level, "missing-key"));
    let valid = create(run, "valid-key", KeySpec::Named("order-17".into())).await;
    judgements.push(judge(
        match valid.status {
            None => {
                Finding::Undecided(format!("a valid key got no response: {}", valid.describe()))
            }
            Some(200..=299) => {
                creators.push("a valid key");
                Finding::Held(format!(
                    "a valid key of the declared form ({}) was accepted",
                    contract.key_form.name()
                ))
            }
            Some(_) => Finding::Broken(format!(
                "a valid key of the declared form (`{}`) was refused: {}",
                valid
                    .evidence
                    .request
                    .idempotency_key
                    .as_deref()
                    .unwrap_or_default(),
                valid.describe()
            )),
        },
        Level::Must,
        "valid-key",
    ));
    if contract.sf_string_keys {
        let quoted = create(run, "sf-key", KeySpec::SfNamed("K9".into())).await;
        let bare = create(run, "bare-key", KeySpec::Named("K9".into())).await;
        let id = |ex: &Exchange| run.ctx().created_id(ex);
        let finding = match (quoted.is_success(), bare.is_success()) {
            (true, true) if id(&quoted) == id(&bare) => {
                creators.push("an sf-string key with its bare form");
                Finding::Held("an sf-string key and its bare form named the same record".into())
            }
            (true, true) => {
                // Broken above; the two resources are not counted against the check twice.
                creators.extend(["an sf-string key", "its bare form"]);
                Finding::Broken(format!(
                    "the sf-string key `\"…-K9\"` and the bare `…-K9` created two resources ({} and {}): the quotes were not removed",
                    id(&quoted).unwrap_or_default(),
                    id(&bare).unwrap_or_default()
                ))
            }
            _ => Finding::Broken(format!(
                "the contract accepts sf-string keys, but `\"…-K9\"` got {} and `…-K9` got {}",
                quoted.describe(),
                bare.describe()
            )),
        };
        judgements.push(Judgement::new(finding).on_steps(["sf-key", "bare-key"]));
    }
    let expected_created = (creators.len() + accepted_anyway.len()) as u64;
    let finding = match run.count(None).await {
        Err(e) => Finding::Undecided(format!("could not count resources: {e}")),
        Ok(n) if n == expected_created && accepted_anyway.is_empty() => {
            Finding::Held(format!("{n} resource(s), only from valid keys"))
        }
        Ok(n) if n == expected_created => Finding::Held(format!(
            "{n} resource(s): {} from requests the contract accepts, {} from requests it refuses \
             that were accepted anyway ({}; each reported above)",
            creators.len(),
            accepted_anyway.len(),
            accepted_anyway.join(", ")
        )),
        Ok(n) => count_mismatch(n, &creators, &accepted_anyway),
    };
    judgements.push(Judgement::new(finding));
    judgements
}

/// A request without a key (or one the contract counts as none), and the level it is judged at:
/// the contract's missing-key status where keys are required (MUST); otherwise anything but a 5xx
/// (MUST), and a 2xx rather than a 4xx (SHOULD: a refusal says the API requires the key the
/// contract calls optional, so the profile or the API is wrong about it).
fn missing_finding(ex: &Exchange, contract: &Contract, what: &str) -> (Finding, Level) {
    let finding = match ex.status {
        None => Finding::Undecided(format!("{what} got no response: {}", ex.describe())),
        Some(s)
            if contract.key_required
                && contract.refuses(Refusal::MissingKey, s, ex.json.as_deref()) =>
        {
            Finding::Held(format!("{what} got {}", ex.describe()))
        }
        Some(_) if contract.key_required => Finding::Broken(format!(
            "{what} got {}; {} requires the key ({:?})",
            ex.describe(),
            contract.who_says("key_required", "true"),
            contract.missing_key_status
        )),
        Some(s) if s >= 500 => Finding::Broken(format!("{what} got {}", ex.describe())),
        Some(s) if s >= 400 => {
            let finding = Finding::Broken(format!(
                "{what} got {}, though the contract makes the key optional (`key_required: \
                 false`); if the API requires it, declare `key_required: true` and its \
                 `missing_key_status`",
                ex.describe()
            ));
            return (finding, Level::Should);
        }
        Some(_) => Finding::Held(format!("{what} (optional here) got {}", ex.describe())),
    };
    (finding, Level::Must)
}

/// More (or fewer) resources than the requests the contract lets create one: the count, and
/// which requests those are, so the base of the count is on the page.
fn count_mismatch(n: u64, creators: &[&str], accepted_anyway: &[&str]) -> Finding {
    let mut base = if creators.is_empty() {
        "no request the contract lets create one succeeded".to_owned()
    } else {
        format!(
            "{} request(s) the contract accepts should have made one each ({})",
            creators.len(),
            creators.join(", ")
        )
    };
    if !accepted_anyway.is_empty() {
        base.push_str(&format!(
            ", and {} it refuses were accepted anyway ({})",
            accepted_anyway.len(),
            accepted_anyway.join(", ")
        ));
    }
    Finding::Broken(format!(
        "{n} resources exist after the key checks, where {base}"
    ))
}

/// An invalid key must be refused with a 4xx, never a 5xx, never accepted.
fn invalid_finding(ex: &Exchange, what: &str) -> Finding {
    match ex.status {
        None => Finding::Undecided(format!("{what} got no response: {}", ex.describe())),
        Some(s) if (400..500).contains(&s) => {
            Finding::Held(format!("{what} got {}", ex.describe()))
        }
        Some(s) if s >= 500 => {
            Finding::Broken(format!("{what} got {}: a server error", ex.describe()))
        }
        Some(_) => Finding::Broken(format!(
            "{what} was accepted ({}); it must be refused with a 4xx",
            ex.describe()
        )),
    }
}

/// Where an invalid key's 4xx lacks the error body the contract promises a refusal
/// (`error_shape`), the broken SHOULD, naming the shape and who promises it, at the shape's
/// source; `None` where it has it, or where the contract promises none.
fn unshaped(ex: &Exchange, contract: &Contract, what: &str) -> Option<Judgement> {
    let shape = &contract.error_shape;
    let refused = ex.status.is_some_and(|s| (400..500).contains(&s));
    if !refused || shape.holds(ex.header("content-type"), ex.json.as_deref()) {
        return None;
    }
    let who = contract.who_says("error_shape", &shape.as_yaml());
    let mut judgement = Judgement::new(Finding::Broken(format!(
        "{what} was rejected with {} but without {}, which {who} promises for a refusal",
        ex.describe(),
        shape.describe()
    )))
    .at(Level::Should);
    judgement.reference = Some(if contract.overridden.contains(&"error_shape") {
        who
    } else {
        contract.preset.error_source().to_owned()
    });
    Some(judgement)
}

async fn create(run: &CheckRun, step: &str, key: KeySpec) -> Exchange {
    run.sender
        .request(step, Operation::Create)
        .key(Some(&key))
        // Through the check's fault proxy where its scenario has faults.
        .via(Via::Proxy)
        .send()
        .await
}
