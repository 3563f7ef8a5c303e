//! The verdict model and its one grader, shared by every kind of check (`docs/reading-reports.md`,
//! "Verdicts"): what a check found, one [`Judgement`] per rule it looked at, and the ladder that
//! turns them into one verdict, one sentence and its notes.

use idemspec_scenarios::Level;

use super::About;
use crate::model::{Claim, Verdict};

/// What one rule's look at the exchanges found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The rule held; what was observed.
    Held(String),
    /// The rule was broken; how (at the judgement's level).
    Broken(String),
    /// The run could not decide; why.
    Undecided(String),
    /// The check does not apply to this target; why (the capability it lacks).
    Skipped(String),
    /// Behaviour recorded, not judged; what was seen.
    Recorded(String),
}

impl Finding {
    /// The finding's sentence.
    pub fn text(&self) -> &str {
        match self {
            Finding::Held(m)
            | Finding::Broken(m)
            | Finding::Undecided(m)
            | Finding::Skipped(m)
            | Finding::Recorded(m) => m,
        }
    }
}

/// One finding with what it is judged at and the exchanges behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// What was found.
    pub finding: Finding,
    /// The level a broken finding counts at; `None`: the check's.
    pub level: Option<Level>,
    /// The rule's source; `None`: the check's.
    pub reference: Option<String>,
    /// The steps (`run`) or situations (`client`), by name, whose exchanges support it; empty:
    /// all of the check's.
    pub support: Vec<String>,
    /// The finding is a precondition: when it is undecided, the check's setup did not happen as
    /// planned, so nothing else it found can be judged.
    pub precondition: bool,
    /// The precondition guards only a PASS: unmet, it keeps the check from passing, but a MUST
    /// seen broken is still a FAIL.
    pub pass_only: bool,
    /// What was seen that another check owns (notes whatever the verdict).
    pub notes: Vec<String>,
    /// The facts its sentence states about the exchanges, each audited against them after the
    /// check ([`crate::model::claim::audit`]).
    pub claims: Vec<Claim>,
}

impl Judgement {
    /// `finding` at the check's level and source, supported by all of its exchanges.
    pub fn new(finding: Finding) -> Self {
        Self {
            finding,
            level: None,
            reference: None,
            support: Vec::new(),
            precondition: false,
            pass_only: false,
            notes: Vec::new(),
            claims: Vec::new(),
        }
    }

    /// Stating `claim` (its sentence is in the finding's text): the audit holds it to the
    /// exchanges.
    pub fn claiming(mut self, claim: Claim) -> Self {
        self.claims.push(claim);
        self
    }

    /// `finding`, supported by the exchanges of `step` (a step or a situation).
    pub fn on(step: impl Into<String>, finding: Finding) -> Self {
        Self::new(finding).on_steps([step])
    }

    /// Recorded instead of judged, saying `why` (a held or broken rule the contract does not
    /// claim); undecided, skipped and recorded findings stay as they are.
    pub fn recorded(mut self, why: &str) -> Self {
        if let Finding::Held(m) | Finding::Broken(m) = &self.finding {
            self.finding = Finding::Recorded(format!("{m} ({why})"));
        }
        self
    }

    /// At this level instead of the check's.
    pub fn at(mut self, level: Level) -> Self {
        self.level = Some(level);
        self
    }

    /// Supported by the exchanges of these steps (or situations).
    pub fn on_steps<S: Into<String>>(mut self, steps: impl IntoIterator<Item = S>) -> Self {
        self.support = steps.into_iter().map(Into::into).collect();
        self
    }

    fn level_in(&self, about: &About) -> Level {
        self.level.unwrap_or(about.level)
    }

    fn reference_in<'a>(&'a self, about: &'a About) -> &'a str {
        self.reference.as_deref().unwrap_or(&about.reference)
    }
}

/// A graded check: the verdict, the sentence that says why, the notes, and the steps or
/// situations whose exchanges are its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graded {
    /// The verdict.
    pub verdict: Verdict,
    /// One sentence (several joined by `; `); a FAIL's or WARN's ends with each broken rule's
    /// source once, in parentheses.
    pub summary: String,
    /// The findings that did not decide the verdict, then what was seen that other checks own;
    /// each distinct sentence once, with `(×N)` when N said it.
    pub notes: Vec<String>,
    /// Not a PASS: the steps or situations the deciding findings name, each once, in order
    /// (empty: all of the check's). A PASS shows no evidence.
    pub support: Vec<String>,
    /// Every finding's claims, in the findings' order: what the summary and notes state.
    pub claims: Vec<Claim>,
}

/// Grades `judgements` of the check `about` (the ladder of `docs/reading-reports.md`):
/// 1. SKIP if any finding says the check does not apply;
/// 2. UNKNOWN if a precondition did not hold (the setup failed, so a broken rule after it is no
///    evidence against the target: a server answering 500 to the first create must not be
///    accused of leaking a response across principals) — unless every unmet precondition guards
///    only a PASS and a MUST was seen broken;
/// 3. FAIL if a MUST is broken; 4. UNKNOWN if anything else is undecided; 5. WARN if a SHOULD is
///    broken; 6. INFO when every finding only recorded; 7. PASS when every judged rule held
///    (recorded findings become notes).
///
/// A check that judged nothing is UNKNOWN, never PASS.
pub fn grade(judgements: &[Judgement], about: &About) -> Graded {
    let pick =
        |f: &dyn Fn(&Judgement) -> bool| judgements.iter().filter(|j| f(j)).collect::<Vec<_>>();
    let broken_at = |j: &Judgement, level| {
        matches!(j.finding, Finding::Broken(_)) && j.level_in(about) == level
    };
    let skipped = pick(&|j| matches!(j.finding, Finding::Skipped(_)));
    let unmet = pick(&|j| j.precondition && matches!(j.finding, Finding::Undecided(_)));
    let must = pick(&|j| broken_at(j, Level::Must));
    let undecided = pick(&|j| matches!(j.finding, Finding::Undecided(_)));
    let should = pick(&|j| broken_at(j, Level::Should));
    let held = pick(&|j| matches!(j.finding, Finding::Held(_)));
    let recorded = pick(&|j| matches!(j.finding, Finding::Recorded(_)));
    // A broken MUST is a FAIL past unmet preconditions that only a PASS needs: what was seen
    // broken does not depend on them.
    let seen_broken = !must.is_empty() && unmet.iter().all(|j| j.pass_only);
    let (verdict, chosen) = if !skipped.is_empty() {
        (Verdict::Skip, skipped)
    } else if !unmet.is_empty() && !seen_broken {
        (Verdict::Unknown, unmet)
    } else if !must.is_empty() {
        (Verdict::Fail, must)
    } else if !undecided.is_empty() {
        (Verdict::Unknown, undecided)
    } else if !should.is_empty() {
        (Verdict::Warn, should)
    } else if !held.is_empty() {
        (Verdict::Pass, held)
    } else if !recorded.is_empty() {
        (Verdict::Info, recorded)
    } else {
        return Graded {
            verdict: Verdict::Unknown,
            summary: "the check judged nothing".into(),
            notes: counted(
                judgements
                    .iter()
                    .flat_map(|j| j.notes.iter().map(String::as_str)),
            ),
            support: Vec::new(),
            claims: Vec::new(),
        };
    };
    let mut summary = chosen
        .iter()
        .map(|j| j.finding.text())
        .collect::<Vec<_>>()
        .join("; ");
    if matches!(verdict, Verdict::Fail | Verdict::Warn) {
        let mut sources: Vec<&str> = Vec::new();
        for j in &chosen {
            let source = j.reference_in(about);
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
        summary = format!("{summary} ({})", sources.join(" | "));
    }
    let is_chosen = |j: &Judgement| chosen.iter().any(|c| std::ptr::eq(*c, j));
    let undeciding = judgements
        .iter()
        .filter(|j| !is_chosen(j))
        .map(|j| j.finding.text());
    let owned_elsewhere = judgements
        .iter()
        .flat_map(|j| j.notes.iter().map(String::as_str));
    let notes = counted(undeciding.chain(owned_elsewhere));
    let mut support: Vec<String> = Vec::new();
    if verdict != Verdict::Pass {
        for step in chosen.iter().flat_map(|j| &j.support) {
            if !support.contains(step) {
                support.push(step.clone());
            }
        }
    }
    Graded {
        verdict,
        summary,
        notes,
        support,
        claims: judgements.iter().flat_map(|j| j.claims.clone()).collect(),
    }
}

/// Each distinct note once, in first-seen order, with `(×N)` when N findings said the same (three
/// bursts that each held print one line, not three identical ones).
fn counted<'a>(notes: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for note in notes {
        match seen.iter_mut().find(|(n, _)| *n == note) {
            Some((_, count)) => *count += 1,
            None => seen.push((note, 1)),
        }
    }
    seen.into_iter()
        .map(|(n, count)| match count {
            1 => n.to_owned(),
            _ => format!("{n} (×{count})"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Finding::*;

    fn about() -> About {
        About {
            id: "c".into(),
            title: "t".into(),
            level: Level::Must,
            reference: "article".into(),
        }
    }

    fn v(judgements: &[Judgement]) -> Verdict {
        grade(judgements, &about()).verdict
    }

    #[test]
    fn grading_order_and_nothing_judged_is_never_pass() {
        let held = Judgement::on("a", Held("ok".into()));
        let must = Judgement::on("b", Broken("bad".into()));
        let should = Judgement::on("c", Broken("meh".into())).at(Level::Should);
        let unsure = Judgement::on("d", Undecided("?".into()));
        let rec = Judgement::on("e", Recorded("not retried".into()));
        assert_eq!(v(std::slice::from_ref(&held)), Verdict::Pass);
        assert_eq!(
            v(&[held.clone(), must.clone(), unsure.clone()]),
            Verdict::Fail
        );
        assert_eq!(v(&[held.clone(), should.clone(), unsure]), Verdict::Unknown);
        assert_eq!(v(&[held.clone(), should.clone()]), Verdict::Warn);
        assert_eq!(v(&[held.clone(), rec.clone()]), Verdict::Pass);
        assert_eq!(v(std::slice::from_ref(&rec)), Verdict::Info);
        assert_eq!(v(&[]), Verdict::Unknown, "nothing judged is never PASS");
        let failed = grade(&[must, rec.clone()], &about());
        assert_eq!(failed.summary, "bad (article)");
        assert_eq!(failed.support, ["b"]);
        assert_eq!(failed.notes, ["not retried"]);
        let passed = grade(&[held, rec], &about());
        assert_eq!(
            passed.summary, "ok",
            "recorded findings are notes of a PASS"
        );
        assert_eq!(passed.notes, ["not retried"]);
        assert!(passed.support.is_empty(), "a PASS shows no evidence");
    }

    #[test]
    fn a_broken_rule_cites_its_own_source_once() {
        let mut own = Judgement::new(Broken("x".into()));
        own.reference = Some("ietf".into());
        let g = grade(
            &[
                Judgement::new(Broken("a".into())),
                own,
                Judgement::new(Broken("b".into())),
            ],
            &about(),
        );
        assert_eq!(g.summary, "a; x; b (article | ietf)");
    }

    #[test]
    fn an_unmet_precondition_is_unknown_even_beside_a_broken_rule() {
        let unmet = Judgement {
            precondition: true,
            ..Judgement::new(Undecided(
                "precondition not met: `create` answered 500".into(),
            ))
        };
        let must = Judgement::new(Broken("0 resources exist; expected 1".into()));
        let g = grade(&[unmet.clone(), must.clone()], &about());
        assert_eq!(g.verdict, Verdict::Unknown, "the setup failed: no FAIL");
        assert!(g.summary.contains("precondition not met"), "{}", g.summary);
        // An undecided finding that is not a precondition does not hide a broken rule.
        let other = Judgement::new(Undecided("no response".into()));
        assert_eq!(v(&[other, must.clone()]), Verdict::Fail);
        // A precondition that held does not change anything.
        let held = Judgement {
            precondition: true,
            ..Judgement::new(Held("201".into()))
        };
        assert_eq!(v(&[held, must]), Verdict::Fail);
        let skip = Judgement::new(Skipped("no delete".into()));
        assert_eq!(v(&[unmet, skip]), Verdict::Skip);
    }

    #[test]
    fn a_precondition_only_a_pass_needs_does_not_hide_a_broken_must() {
        let pass_only = Judgement {
            precondition: true,
            pass_only: true,
            ..Judgement::new(Undecided(
                "precondition not met: the retry did not replay".into(),
            ))
        };
        let leak = Judgement::new(Broken("bob got alice's resource".into()));
        let g = grade(&[pass_only.clone(), leak.clone()], &about());
        assert_eq!(g.verdict, Verdict::Fail, "{}", g.summary);
        assert!(
            g.summary.contains("bob got alice's resource"),
            "{}",
            g.summary
        );
        // Without a broken MUST it still keeps the check from passing.
        let held = Judgement::new(Held("201".into()));
        assert_eq!(v(&[pass_only.clone(), held]), Verdict::Unknown);
        // A full precondition beside it still makes the check UNKNOWN.
        let setup = Judgement {
            precondition: true,
            ..Judgement::new(Undecided("precondition not met: no resource".into()))
        };
        assert_eq!(v(&[pass_only, setup, leak]), Verdict::Unknown);
    }

    #[test]
    fn repeated_notes_are_printed_once_with_a_count() {
        let notes = counted(["a", "b", "a", "a"].into_iter());
        assert_eq!(notes, vec!["a (×3)".to_owned(), "b".to_owned()]);
    }
}
