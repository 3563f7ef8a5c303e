//! Comparing a replay with the original: status, body bytes, Location, Content-Type.

use idemspec_scenarios::profile::{ReplayBy, Replays};

use crate::http_client::Exchange;
use crate::runner::context::{member_bytes, same_operation, CheckRun};

/// What part of a response a [`Difference`] is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Another outcome (a `201` replayed as a `409`, a `500` as a `503`): not the same response.
    Outcome,
    /// Another success code (a `201` replayed as a `200`).
    Status,
    /// A header a replay must keep (`Location`, `Content-Type`).
    Header,
    /// The body bytes.
    Body,
    /// The body bytes, where both bodies name one created resource (the same id at the profile's
    /// `create.id`): the same resource, rendered again.
    Rendering,
}

impl Part {
    /// Whether a difference here is one of replay fidelity (a code within its class, a header),
    /// which a check that owns another rule leaves to the check that owns fidelity; an outcome or
    /// a body that differs means the response is not a replay at all.
    pub(crate) fn is_fidelity(self) -> bool {
        matches!(self, Part::Status | Part::Header | Part::Rendering)
    }
}

/// One way a replay differs from its original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// Where it is.
    pub part: Part,
    /// What differs, for a reader (`location missing (was `/w/1`)`).
    pub text: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What differs between `replay` and `original` (empty: a faithful replay).
///
/// Split by who judges it with [`split_fidelity`].
pub(crate) fn differences(replay: &Exchange, original: &Exchange) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut push = |part, text| out.push(Difference { part, text });
    if !same_status(replay, original) {
        // Only a success's code is a matter of fidelity alone: replay-fidelity judges 2xx replays.
        let success = |e: &Exchange| e.status.is_some_and(|s| (200..300).contains(&s));
        push(
            if success(replay) && success(original) {
                Part::Status
            } else {
                Part::Outcome
            },
            format!(
                "status {} instead of {}",
                replay.describe(),
                original.describe()
            ),
        );
    }
    for header in ["location", "content-type"] {
        // Compared as bytes (a non-ASCII `Location` too), shown as text.
        let value = |e: &Exchange| {
            e.headers
                .get(header)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let text = match (value(replay), value(original)) {
            (a, b) if a == b => continue,
            (None, Some(b)) => format!("{header} missing (was `{b}`)"),
            (Some(a), None) => format!("{header} `{a}` added"),
            (Some(a), Some(b)) => format!("{header} `{a}` instead of `{b}`"),
            (None, None) => continue,
        };
        push(Part::Header, text);
    }
    if replay.body != original.body {
        push(Part::Body, body_difference(&replay.body, &original.body));
    }
    out
}

/// Where two bodies first differ, with a short excerpt of each side from just before that byte, so a
/// reader sees the change itself and not only two lengths (which may be equal).
fn body_difference(replay: &[u8], original: &[u8]) -> String {
    const BEFORE: usize = 12;
    const EXCERPT: usize = 40;
    let at = replay
        .iter()
        .zip(original)
        .position(|(a, b)| a != b)
        .unwrap_or(replay.len().min(original.len()));
    let excerpt = |body: &[u8]| {
        let start = at.saturating_sub(BEFORE);
        let end = (start + EXCERPT).min(body.len());
        let text = String::from_utf8_lossy(&body[start.min(end)..end]);
        let lead = if start > 0 { "…" } else { "" };
        let tail = if end < body.len() { "…" } else { "" };
        format!("`{lead}{text}{tail}`")
    };
    format!(
        "body differs at byte {at} ({} bytes instead of {}): {} instead of {}",
        replay.len(),
        original.len(),
        excerpt(replay),
        excerpt(original)
    )
}

/// Whether `a` is the same status and body as `b` (what a replay of `b` looks like).
///
/// A replay under the other status the contract declares for one (`contract.replay_status`) is the
/// same response as the success it replays, body for body.
pub(crate) fn same_response(a: &Exchange, b: &Exchange) -> bool {
    a.status.is_some() && same_status(a, b) && a.body == b.body
}

/// Whether `a` and `b` answered alike in status: the same one, or one is a replay under the other
/// status the contract declares for one and the other the success it replays (in either order: a
/// burst's first answer may be the replay).
fn same_status(a: &Exchange, b: &Exchange) -> bool {
    a.status == b.status
        || (a.declared_replay.is_some() && b.is_success())
        || (b.declared_replay.is_some() && a.is_success())
}

/// Whether `a`, the same answer as `b`, is only the same error again, not shown to be a replay:
/// `b` is no success and `a` carries no replay marker (`contract.replayed_header`; none where the
/// contract has none). An error page is the same for every request that fails alike — a
/// framework's crash page is answered before any handler runs — so its repetition proves nothing
/// stored; a replayed success names its resource, which no other request gets.
pub(crate) fn same_error_again(run: &CheckRun, a: &Exchange, b: &Exchange) -> bool {
    let marker = &run.contract().replayed_header;
    !b.is_success() && (marker.is_empty() || !a.marks_replay(marker))
}

/// The words for `step` answering what `other` answered (`b`), an error not shown to be a replay:
/// where the contract does not store that answer (`stores`), the request ran again, as declared.
pub(crate) fn error_again_words(run: &CheckRun, step: &str, other: &str, b: &Exchange) -> String {
    let contract = run.contract();
    match b.status {
        Some(status) if b.operation_failed.is_none() && !contract.stores_status(status) => {
            format!(
                "`{step}` answered {} as `{other}` did: the same error again, as {} (it stores \
                 no {status}: the request runs again)",
                b.describe(),
                contract.who_says_stores()
            )
        }
        _ => format!(
            "`{step}` answered {} as `{other}` did: the same error again, which any request \
             failing alike gets, not shown to be a replay (no replay marker)",
            b.describe()
        ),
    }
}

/// Where `original` was answered with a status the contract does not store (`stores`) — the
/// status it got, or, where the proxy dropped it, the one the upstream answered — the words that
/// say a retry of it runs again by the contract's own rule: appended to a sentence that finds
/// the retry was not its replay. Never where one of the `retries` got the original's answer
/// itself (its status and body): that retry did not visibly run again.
pub(crate) fn not_stored_note(
    run: &CheckRun,
    original: &Exchange,
    retries: &[&Exchange],
) -> Option<String> {
    if retries.iter().any(|r| same_response(r, original)) {
        return None;
    }
    let upstream = || original.evidence.proxy.as_ref()?.upstream_status;
    let status = original.status.or_else(upstream)?;
    let contract = run.contract();
    (!contract.stores_status(status)).then(|| {
        format!(
            " ({} stores no {status}: a retry of it runs again, as declared, and this is what a \
             client retrying it meets)",
            contract.who_says_stores()
        )
    })
}

/// [`same_response`] as a check of the run reads it: also two answers that name one long-running
/// operation, whatever state each saw it in.
///
/// Where the contract says a replay shows the resource's current state (`contract.replays:
/// current_state`), two successes that name one created resource are the same answer too.
pub(crate) fn same_answer(run: &CheckRun, a: &Exchange, b: &Exchange) -> bool {
    same_response(a, b)
        || same_operation(run, a, b)
        || ((names_its_original(a) || names_its_original(b)) && same_resource(run, a, b))
        || (shows_current_state(run)
            && a.is_success()
            && a.status == b.status
            && same_resource(run, a, b))
}

/// Whether `e` is a replay read as one by the original's id at `contract.replay_id_at`: an answer
/// of the API's own (an "already exists" error) that names the resource, its body, `Location` and
/// `Content-Type` not the original's, as the contract declares.
fn names_its_original(e: &Exchange) -> bool {
    e.declared_replay == Some(ReplayBy::OriginalId)
}

/// Whether the contract says a replay shows the resource's current state.
fn shows_current_state(run: &CheckRun) -> bool {
    run.contract().replays == Replays::CurrentState
}

/// Whether `a` and `b` name one created resource (the same id at the profile's `create.id`).
fn same_resource(run: &CheckRun, a: &Exchange, b: &Exchange) -> bool {
    let ctx = run.ctx();
    ctx.created_id(a)
        .is_some_and(|id| ctx.created_id(b).as_ref() == Some(&id))
}

/// [`differences`] as a check of the run judges them: a body difference between two responses that
/// name one created resource is [`Part::Rendering`]; between two answers that name one
/// long-running operation, none at all (the same operation, in the state each saw it).
pub(crate) fn replay_differences(
    run: &CheckRun,
    replay: &Exchange,
    original: &Exchange,
) -> Vec<Difference> {
    let same = same_resource(run, replay, original);
    // One operation, or one resource where the contract says a replay shows its current state:
    // the body may show it as it stands now.
    let current = same_operation(run, replay, original) || (same && shows_current_state(run));
    // A replay told by the original's id is an answer of its own naming the resource: only its
    // status and the resource it names are the original's.
    let own = same && (names_its_original(replay) || names_its_original(original));
    differences(replay, original)
        .into_iter()
        .filter(|d| !(current && d.part == Part::Body))
        .filter(|d| !(own && matches!(d.part, Part::Body | Part::Header)))
        .map(|mut d| {
            if same && d.part == Part::Body {
                d.part = Part::Rendering;
            }
            if d.part == Part::Body {
                if let Some(note) = unopened_envelope(run, replay) {
                    d.text.push_str(&note);
                }
            }
            d
        })
        .collect()
}

/// Where `replay` is marked as a declared envelope (`replay_envelope`) but has no such member, so
/// it was compared whole: the words that say so.
fn unopened_envelope(run: &CheckRun, replay: &Exchange) -> Option<String> {
    let contract = run.contract();
    let at = contract.replay_envelope.as_deref()?;
    let marker = &contract.replayed_header;
    let marked = !marker.is_empty() && replay.marks_replay(marker);
    (contract.envelops(marked, replay.json.as_deref()) && member_bytes(&replay.body, at).is_none())
        .then(|| {
            format!(
                " (the replay is marked as the declared envelope but has no `{at}` member, so it \
                 was compared whole)"
            )
        })
}

/// `differences` split into those a check judges and those the check named by `fidelity_judged_by`
/// owns (none when it is `None`: every difference is judged).
///
/// A response that is no replay at all (another outcome, or a body of another resource) has no
/// fidelity to judge elsewhere: its header and status differences go with the judged ones, not
/// into notes that would call another resource a replay.
pub(crate) fn split_fidelity(
    differences: Vec<Difference>,
    fidelity_judged_by: Option<&str>,
) -> (Vec<Difference>, Vec<Difference>) {
    let no_replay = differences.iter().any(|d| !d.part.is_fidelity());
    differences
        .into_iter()
        .partition(|d| no_replay || !d.part.is_fidelity() || fidelity_judged_by.is_none())
}

/// The note for a difference `owner` judges: `` `step` differs from `other`: … (not judged here:
/// owner judges a replay's fidelity: status code, headers, rendering)``.
pub(crate) fn owned_elsewhere(step: &str, other: &str, d: &Difference, owner: &str) -> String {
    format!(
        "`{step}` differs from `{other}`: {d} (not judged here: {owner} judges a replay's \
         fidelity: status code, headers, rendering)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(replay: &Exchange, original: &Exchange) -> Vec<String> {
        differences(replay, original)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn response(status: u16, location: Option<&str>, body: &str) -> Exchange {
        let mut ex = Exchange::failed("s", String::new());
        ex.status = Some(status);
        if let Some(l) = location {
            ex.headers
                .insert("location", l.parse().expect("valid header"));
        }
        ex.body = bytes::Bytes::from(body.to_owned());
        ex
    }

    #[test]
    fn a_body_of_equal_length_names_the_first_differing_byte() {
        let replay = response(201, None, r#"{"id":"w1","cpu":1}"#);
        let original = response(201, None, r#"{"id":"w1","cpu":2}"#);
        assert_eq!(
            texts(&replay, &original),
            vec![
                r#"body differs at byte 17 (19 bytes instead of 19): `…:"w1","cpu":1}` instead of `…:"w1","cpu":2}`"#
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_truncated_body_differs_where_it_ends() {
        let replay = response(200, None, "abc");
        let original = response(200, None, "abcdef");
        assert_eq!(
            texts(&replay, &original),
            vec![
                "body differs at byte 3 (3 bytes instead of 6): `abc` instead of `abcdef`"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_faithful_replay_has_no_differences() {
        let a = response(201, Some("/w/1"), "{}");
        assert!(differences(&a, &a.clone()).is_empty());
        assert!(same_response(&a, &a.clone()));
    }

    /// A replay under the status the contract declares for one is the success it replays,
    /// whichever of the two is taken as the original (a burst's first answer may be the replay).
    #[test]
    fn a_declared_replay_differs_from_its_success_in_no_status() {
        let created = response(201, Some("/w/1"), r#"{"id":1}"#);
        let mut replayed = response(409, Some("/w/1"), r#"{"id":1}"#);
        replayed.declared_replay = Some(ReplayBy::DeclaredStatus);
        assert!(differences(&replayed, &created).is_empty());
        assert!(differences(&created, &replayed).is_empty());
        assert!(same_response(&created, &replayed) && same_response(&replayed, &created));
        replayed.declared_replay = None;
        assert_eq!(differences(&replayed, &created)[0].part, Part::Outcome);
    }

    #[test]
    fn each_difference_is_named() {
        let original = response(201, Some("/w/1"), r#"{"id":1}"#);
        let replay = response(200, None, r#"{"id":2}"#);
        let parts: Vec<Part> = differences(&replay, &original)
            .iter()
            .map(|d| d.part)
            .collect();
        assert_eq!(parts, [Part::Status, Part::Header, Part::Body]);
        let diffs = texts(&replay, &original);
        assert!(diffs[0].starts_with("status 200 instead of 201"));
        assert_eq!(diffs[1], "location missing (was `/w/1`)");
        assert!(diffs[2].starts_with("body differs"));
    }
}
