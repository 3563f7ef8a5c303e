//! A check's FAIL or WARN that the target's own documentation states (the profile's
//! `documented`): marked "as documented" on the outcome, or, where the exchanges do not show the
//! documented answer, left as it is with a note saying why (docs/profile-reference.md,
//! `documented`).

use idemspec_scenarios::profile::Deviation;

use crate::model::{AsDocumented, CheckOutcome, Verdict};

/// Marks `outcome` with what `deviation` documents about its check, when the check FAILed or
/// WARNed and (where the deviation names statuses) one of its exchanges got one of them. A PASS
/// under a documented deviation gets a note: the documentation and the API disagree, or the
/// entry is stale. Other verdicts judged nothing and are left alone.
pub(crate) fn mark(outcome: &mut CheckOutcome, deviation: &Deviation) {
    let quoted = deviation.quoted();
    match outcome.verdict {
        Verdict::Fail | Verdict::Warn => {}
        Verdict::Pass => {
            outcome.notes.push(format!(
                "the profile documents a deviation here ({quoted}), but this run did not show \
                 one: the check passed; if the API no longer deviates, remove the entry from \
                 `documented`"
            ));
            return;
        }
        Verdict::Info | Verdict::Skip | Verdict::Unknown => return,
    }
    let documented = |seen| AsDocumented {
        says: deviation.says.value.trim().to_owned(),
        source: deviation.source().map(str::to_owned),
        seen,
    };
    let Some(answer) = &deviation.answer else {
        outcome.documented = Some(documented(Vec::new()));
        return;
    };
    let mut seen: Vec<u16> = Vec::new();
    for status in outcome
        .evidence
        .iter()
        .filter_map(|e| e.response.as_ref().map(|r| r.status))
    {
        if answer.contains(&status) && !seen.contains(&status) {
            seen.push(status);
        }
    }
    if seen.is_empty() {
        let named: Vec<String> = answer.iter().map(u16::to_string).collect();
        outcome.notes.push(format!(
            "the profile documents a deviation here ({quoted}), answered {}, but none of this \
             check's exchanges got {}: this {} is not that deviation, and counts as any other",
            named.join(" or "),
            if named.len() == 1 {
                "it"
            } else {
                "any of them"
            },
            outcome.verdict
        ));
        return;
    }
    outcome.documented = Some(documented(seen));
}
