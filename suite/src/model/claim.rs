//! Claims: the facts a verdict's sentence states about the exchanges ("its work may still be
//! running", "it got the other step's answer", "it was handled as its own operation"), as data
//! that holds what proves them, and the audit that re-derives each claim from a check's recorded
//! exchanges.
//!
//! A check states such a fact only through a [`Claim`]: its sentence is the claim's
//! [`Claim::sentence`], and the claim rides on the outcome ([`super::CheckOutcome::claims`]). After
//! the check, [`audit`] reads every claim against every exchange the check made; a claim the
//! exchanges do not bear out is a defect of idemspec, reported on the outcome
//! ([`super::CheckOutcome::audit`]) and failed by the tests, never passed off as a finding.

use serde::{Deserialize, Serialize};

use super::{Evidence, ResponseRecord};

/// A fact about a check's exchanges that a sentence states, with what proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "claim", rename_all = "snake_case")]
pub enum Claim {
    /// `step` got no answer, and the proxy did not see the upstream answer it (or the request went
    /// direct, where nothing saw it answered): its work may still be running. Proof: an exchange
    /// of `step` with no response whose proxy record shows no upstream answer.
    StillRunning {
        /// The step.
        step: String,
    },
    /// `principal` sent creates with these different keys and each got a 2xx. Proof: a 2xx to a
    /// request of `principal` carrying each key.
    DifferentKeysSucceeded {
        /// The principal.
        principal: String,
        /// The keys, each once, in send order (at least two).
        keys: Vec<String>,
    },
    /// `step` got the answer `of` got: the same status and the same body. Proof: a response of
    /// each with one status and one body excerpt.
    GotAnswerOf {
        /// The step that got another's answer.
        step: String,
        /// The step whose answer it got.
        of: String,
    },
    /// `step` got a 2xx naming the resource `of` got (`id`): two operations were given one
    /// resource. Proof: a 2xx of `step` and an answer of `of`, each naming `id`.
    GotResourceOf {
        /// The step given another's resource.
        step: String,
        /// The step whose resource it was given.
        of: String,
        /// The resource.
        id: String,
    },
    /// `step` was handled as an operation of its own: every answer it got is a 2xx naming a
    /// resource (`ids`) that is not the resource `other` got (`other_id`). Proof: each answer of
    /// `step` a 2xx; each id in one of them (its body or `Location`); `other_id`, if known, not
    /// among `ids`.
    OwnOperation {
        /// The step.
        step: String,
        /// The resources its answers named, one per answer (empty where the API names none).
        ids: Vec<String>,
        /// The step it was not a replay of.
        other: String,
        /// The resource `other`'s answer named, when it named one.
        other_id: Option<String>,
    },
    /// The check's requests got `successes` 2xx answers: the work the check could have caused.
    /// Proof: at least that many 2xx answers among its exchanges.
    Succeeded {
        /// How many 2xx answers.
        successes: usize,
    },
}

impl Claim {
    /// The claim as a sentence's clause (no capital, no full stop).
    pub fn sentence(&self) -> String {
        match self {
            Claim::StillRunning { step } => format!(
                "step `{step}` got no response and the upstream was not seen answering it, so its \
                 work may still be running"
            ),
            Claim::DifferentKeysSucceeded { principal, keys } => format!(
                "{} creates of {principal} with different keys ({}) each succeeded",
                keys.len(),
                keys.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Claim::GotAnswerOf { step, of } => format!("`{step}` got `{of}`'s answer"),
            Claim::GotResourceOf { step, of, id } => {
                format!("`{step}` got a 2xx naming `{of}`'s resource `{id}`")
            }
            Claim::OwnOperation { step, ids, .. } if ids.is_empty() => {
                format!("`{step}` was handled as its own operation")
            }
            Claim::OwnOperation { step, ids, .. } => format!(
                "`{step}` was handled as its own operation (resource {})",
                ids.join(", ")
            ),
            Claim::Succeeded { successes } => {
                format!("the check's requests got {successes} 2xx answer(s)")
            }
        }
    }
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.sentence())
    }
}

/// The claims the `exchanges` (every exchange of one check, in send order, each with its proxy
/// record) do not bear out, one line each naming the claim and what the exchanges show instead.
/// Empty: every claim holds.
pub fn audit(claims: &[Claim], exchanges: &[Evidence]) -> Vec<String> {
    claims
        .iter()
        .filter_map(|claim| {
            contradiction(claim, exchanges)
                .map(|why| format!("the claim \"{claim}\" does not hold: {why}"))
        })
        .collect()
}

/// Why `claim` does not hold on `exchanges`, or `None` when it does.
fn contradiction(claim: &Claim, exchanges: &[Evidence]) -> Option<String> {
    let of = |step: &str| -> Vec<&Evidence> {
        exchanges
            .iter()
            .filter(|e| e.request.step == step)
            .collect()
    };
    match claim {
        Claim::StillRunning { step } => {
            let sent = of(step);
            let unanswered = sent.iter().any(|e| e.may_still_be_running());
            (!unanswered).then(|| match sent.iter().find(|e| e.response.is_none()) {
                Some(e) => format!(
                    "the proxy saw the upstream answer `{step}` ({})",
                    upstream_words(e)
                ),
                None if sent.is_empty() => format!("no exchange of `{step}` was recorded"),
                None => format!("every request of `{step}` got a response"),
            })
        }
        Claim::DifferentKeysSucceeded { principal, keys } => {
            if keys.len() < 2 {
                return Some(format!("{} key(s) is not different keys", keys.len()));
            }
            keys.iter().find_map(|key| {
                let succeeded = exchanges.iter().any(|e| {
                    e.request.principal == *principal
                        && e.request.idempotency_key.as_deref() == Some(key)
                        && e.response.as_ref().is_some_and(|r| is_2xx(r.status))
                });
                (!succeeded)
                    .then(|| format!("no request of {principal} with key `{key}` got a 2xx"))
            })
        }
        Claim::GotAnswerOf { step, of: other } => {
            let theirs: Vec<&ResponseRecord> = of(other)
                .iter()
                .filter_map(|e| e.response.as_ref())
                .collect();
            let same = of(step)
                .iter()
                .filter_map(|e| e.response.as_ref())
                .any(|r| {
                    theirs
                        .iter()
                        .any(|o| o.status == r.status && o.body_excerpt == r.body_excerpt)
                });
            (!same).then(|| {
                format!("no answer of `{step}` has the status and body of one of `{other}`'s")
            })
        }
        Claim::GotResourceOf {
            step,
            of: other,
            id,
        } => {
            let in_step = of(step)
                .iter()
                .filter_map(|e| e.response.as_ref())
                .any(|r| is_2xx(r.status) && names(r, id));
            let in_other = of(other)
                .iter()
                .filter_map(|e| e.response.as_ref())
                .any(|r| names(r, id));
            match (in_step, in_other) {
                (true, true) => None,
                (false, _) => Some(format!("no 2xx of `{step}` names `{id}`")),
                (true, false) => Some(format!("no answer of `{other}` names `{id}`")),
            }
        }
        Claim::OwnOperation {
            step,
            ids,
            other,
            other_id,
        } => own_operation_contradiction(&of(step), step, ids, other, other_id.as_deref()),
        Claim::Succeeded { successes } => {
            let seen = exchanges
                .iter()
                .filter(|e| e.response.as_ref().is_some_and(|r| is_2xx(r.status)))
                .count();
            (seen < *successes || *successes == 0).then(|| {
                format!("the check's exchanges hold {seen} 2xx answer(s), not {successes}")
            })
        }
    }
}

/// Why `step`'s exchanges (`sent`) were not an operation of its own naming `ids`, apart from
/// `other`'s `other_id`.
fn own_operation_contradiction(
    sent: &[&Evidence],
    step: &str,
    ids: &[String],
    other: &str,
    other_id: Option<&str>,
) -> Option<String> {
    if sent.is_empty() {
        return Some(format!("no exchange of `{step}` was recorded"));
    }
    if let Some(e) = sent
        .iter()
        .find(|e| !e.response.as_ref().is_some_and(|r| is_2xx(r.status)))
    {
        return Some(format!(
            "`{step}` got {}, not a 2xx",
            e.response
                .as_ref()
                .map_or("no response".to_owned(), |r| r.status.to_string())
        ));
    }
    if let Some(shared) = other_id.filter(|o| ids.iter().any(|i| i == o)) {
        return Some(format!("`{step}` got `{other}`'s resource `{shared}`"));
    }
    ids.iter().find_map(|id| {
        let named = sent
            .iter()
            .filter_map(|e| e.response.as_ref())
            .any(|r| names(r, id));
        (!named).then(|| format!("no answer of `{step}` names resource `{id}`"))
    })
}

/// Whether `r` names `id`: in its body (an excerpt cut at its limit, marked `…`, may have lost
/// it, and is given the benefit of the doubt) or in a header (`Location`).
fn names(r: &ResponseRecord, id: &str) -> bool {
    r.body_excerpt.contains(id)
        || r.body_excerpt.ends_with('…')
        || r.headers.iter().any(|(_, v)| v.contains(id))
}

/// What the proxy saw the upstream do with an exchange that got no response.
fn upstream_words(e: &Evidence) -> String {
    match &e.proxy {
        Some(p) => match (p.upstream_status, &p.upstream_head_refused) {
            (Some(s), _) => format!("{s} upstream"),
            (None, Some(limit)) => format!("a head the proxy refused: {limit}"),
            (None, None) => "no upstream answer".into(),
        },
        None => "sent direct".into(),
    }
}

fn is_2xx(status: u16) -> bool {
    (200..300).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ProxyAction, RequestRecord};

    fn exchange(step: &str, key: &str, status: Option<u16>, body: &str) -> Evidence {
        Evidence {
            request: RequestRecord {
                step: step.into(),
                method: "POST".into(),
                path: "/v1/workers".into(),
                principal: "alice".into(),
                idempotency_key: Some(key.into()),
                body_excerpt: String::new(),
                via_proxy: true,
            },
            response: status.map(|status| ResponseRecord {
                status,
                headers: Vec::new(),
                problem_type: None,
                body_excerpt: body.into(),
                elapsed_ms: 3,
            }),
            error: status.is_none().then(|| "connection closed".into()),
            proxy: Some(ProxyAction {
                rule: None,
                fault: None,
                upstream_status: None,
                upstream_head_refused: None,
                client_complete: status.is_some(),
            }),
        }
    }

    #[test]
    fn still_running_needs_an_unanswered_request_the_upstream_did_not_answer() {
        let claim = Claim::StillRunning {
            step: "first".into(),
        };
        let mut cut = exchange("first", "k", None, "");
        assert!(audit(std::slice::from_ref(&claim), &[cut.clone()]).is_empty());
        cut.proxy.as_mut().unwrap().upstream_status = Some(500);
        let found = audit(std::slice::from_ref(&claim), &[cut]);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("500 upstream"), "{found:?}");
        let answered = exchange("first", "k", Some(201), "{}");
        assert!(audit(&[claim], &[answered])[0].contains("got a response"));
    }

    #[test]
    fn different_keys_need_a_success_for_each_key() {
        let claim = Claim::DifferentKeysSucceeded {
            principal: "alice".into(),
            keys: vec!["k1".into(), "k2".into()],
        };
        let both = [
            exchange("a", "k1", Some(201), "{}"),
            exchange("b", "k2", Some(201), "{}"),
        ];
        assert!(audit(std::slice::from_ref(&claim), &both).is_empty());
        let one = [exchange("a", "k1", Some(201), "{}")];
        assert!(audit(std::slice::from_ref(&claim), &one)[0].contains("`k2`"));
        let single = Claim::DifferentKeysSucceeded {
            principal: "alice".into(),
            keys: vec!["k1".into()],
        };
        assert!(
            !audit(&[single], &one).is_empty(),
            "one key is never merged"
        );
    }

    #[test]
    fn own_operation_is_refuted_by_the_other_steps_resource() {
        let sent = [
            exchange("first", "k", Some(201), r#"{"id":"w-1"}"#),
            exchange("second", "k", Some(201), r#"{"id":"w-1"}"#),
        ];
        let claim = |ids: &[&str]| Claim::OwnOperation {
            step: "second".into(),
            ids: ids.iter().map(|s| s.to_string()).collect(),
            other: "first".into(),
            other_id: Some("w-1".into()),
        };
        assert!(audit(&[claim(&["w-1"])], &sent)[0].contains("`first`'s resource `w-1`"));
        assert!(audit(&[claim(&["w-2"])], &sent)[0].contains("names resource `w-2`"));
        let own = [
            exchange("first", "k", Some(201), r#"{"id":"w-1"}"#),
            exchange("second", "k", Some(201), r#"{"id":"w-2"}"#),
        ];
        assert!(audit(&[claim(&["w-2"])], &own).is_empty());
    }

    #[test]
    fn successes_and_answers_of_another_step_are_counted_from_the_exchanges() {
        let sent = [
            exchange("first", "k", Some(201), "{\"id\":1}"),
            exchange("retry", "k", Some(201), "{\"id\":1}"),
        ];
        assert!(audit(&[Claim::Succeeded { successes: 2 }], &sent).is_empty());
        assert!(!audit(&[Claim::Succeeded { successes: 3 }], &sent).is_empty());
        assert!(!audit(&[Claim::Succeeded { successes: 0 }], &sent).is_empty());
        let got = Claim::GotAnswerOf {
            step: "retry".into(),
            of: "first".into(),
        };
        assert!(audit(std::slice::from_ref(&got), &sent).is_empty());
        let other = [
            exchange("first", "k", Some(201), "{\"id\":1}"),
            exchange("retry", "k", Some(201), "{\"id\":2}"),
        ];
        assert!(!audit(&[got], &other).is_empty());
    }
}
