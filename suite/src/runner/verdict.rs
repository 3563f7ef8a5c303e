//! From assertion findings to one graded verdict and its summary.

use idemspec_scenarios::scenario::Scenario;
use idemspec_scenarios::Level;

use crate::model::Verdict;

/// What one assertion found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Finding {
    /// The rule held; what was observed.
    Held(String),
    /// The rule was broken; how.
    Broken(String),
    /// The run could not decide; why.
    Undecided(String),
    /// The check does not apply to this target; why.
    Skipped(String),
    /// Behaviour recorded, not judged (`record: true`).
    Recorded(String),
}

impl Finding {
    /// The finding's sentence.
    pub(crate) fn text(&self) -> &str {
        match self {
            Finding::Held(m)
            | Finding::Broken(m)
            | Finding::Undecided(m)
            | Finding::Skipped(m)
            | Finding::Recorded(m) => m,
        }
    }
}

/// One assertion's finding with its level, source and the steps whose exchanges support it.
#[derive(Debug, Clone)]
pub(crate) struct Judgement {
    pub finding: Finding,
    pub level: Level,
    pub reference: String,
    pub steps: Vec<String>,
    /// The assertion is a precondition (`precondition: true`): when it is undecided, the check's
    /// setup did not happen as planned, so nothing else it found can be judged.
    pub precondition: bool,
    /// The precondition guards only a PASS (`pass_only: true`): unmet, it keeps the check from
    /// passing, but a MUST seen broken is still a FAIL.
    pub pass_only: bool,
    /// What the assertion saw that another check owns (shown whatever the verdict).
    pub notes: Vec<String>,
}

impl Judgement {
    /// A finding at the scenario's level and reference, supported by no step in particular.
    pub(crate) fn new(scenario: &Scenario, finding: Finding) -> Self {
        Self {
            finding,
            level: scenario.level,
            reference: scenario.reference.clone(),
            steps: Vec::new(),
            precondition: false,
            pass_only: false,
            notes: Vec::new(),
        }
    }

    /// Recorded instead of judged, saying `why` (a held or broken rule the contract does not
    /// claim); undecided, skipped and recorded findings stay as they are.
    pub(crate) fn recorded(mut self, why: &str) -> Self {
        if let Finding::Held(m) | Finding::Broken(m) = &self.finding {
            self.finding = Finding::Recorded(format!("{m} ({why})"));
        }
        self
    }

    /// At this level instead of the scenario's.
    pub(crate) fn at(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// Supported by the exchanges of these steps.
    pub(crate) fn on_steps<S: Into<String>>(mut self, steps: impl IntoIterator<Item = S>) -> Self {
        self.steps = steps.into_iter().map(Into::into).collect();
        self
    }
}

/// Grades the findings: SKIP if any assertion does not apply; UNKNOWN if a precondition did not
/// hold (the setup failed, so a broken rule after it is no evidence against the target: a server
/// answering 500 to the first create must not be accused of leaking a response across
/// principals); FAIL if a MUST is broken; UNKNOWN if anything else is undecided; WARN if a SHOULD is broken; INFO when every assertion only recorded;
/// PASS only when every judged assertion held (recorded ones become notes).
pub(crate) fn grade(judgements: &[Judgement]) -> (Verdict, String, Vec<&Judgement>) {
    let pick =
        |f: &dyn Fn(&Judgement) -> bool| judgements.iter().filter(|j| f(j)).collect::<Vec<_>>();
    let skipped = pick(&|j| matches!(j.finding, Finding::Skipped(_)));
    let unmet = pick(&|j| j.precondition && matches!(j.finding, Finding::Undecided(_)));
    let must = pick(&|j| matches!(j.finding, Finding::Broken(_)) && j.level == Level::Must);
    let undecided = pick(&|j| matches!(j.finding, Finding::Undecided(_)));
    let should = pick(&|j| matches!(j.finding, Finding::Broken(_)) && j.level == Level::Should);
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
    } else if judgements.is_empty() {
        return (
            Verdict::Unknown,
            "the check asserted nothing".into(),
            Vec::new(),
        );
    } else if judgements
        .iter()
        .all(|j| matches!(j.finding, Finding::Recorded(_)))
    {
        (Verdict::Info, pick(&|_| true))
    } else {
        let held: Vec<String> = judgements
            .iter()
            .map(|j| j.finding.text().to_owned())
            .collect();
        return (Verdict::Pass, held.join("; "), Vec::new());
    };
    let messages: Vec<&str> = chosen.iter().map(|j| j.finding.text()).collect();
    let mut summary = messages.join("; ");
    if matches!(verdict, Verdict::Fail | Verdict::Warn) {
        // Each rule's source once, after the sentences that broke it.
        let mut sources: Vec<&str> = Vec::new();
        for j in &chosen {
            if !sources.contains(&j.reference.as_str()) {
                sources.push(&j.reference);
            }
        }
        summary = format!("{summary} ({})", sources.join(" | "));
    }
    (verdict, summary, chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(finding: Finding, level: Level) -> Judgement {
        Judgement {
            finding,
            level,
            reference: "article".into(),
            steps: vec![],
            precondition: false,
            pass_only: false,
            notes: vec![],
        }
    }

    #[test]
    fn grading_order() {
        use Finding::*;
        let held = j(Held("ok".into()), Level::Must);
        let must = j(Broken("b".into()), Level::Must);
        let should = j(Broken("s".into()), Level::Should);
        let unk = j(Undecided("u".into()), Level::Must);
        assert_eq!(grade(std::slice::from_ref(&held)).0, Verdict::Pass);
        assert_eq!(grade(&[held.clone(), should.clone()]).0, Verdict::Warn);
        assert_eq!(grade(&[should.clone(), unk.clone()]).0, Verdict::Unknown);
        assert_eq!(grade(&[unk, must.clone()]).0, Verdict::Fail);
        assert_eq!(
            grade(&[]).0,
            Verdict::Unknown,
            "nothing observed is never PASS"
        );
        assert_eq!(grade(&[must]).1, "b (article)");
        let rec = j(Recorded("mismatch answered 417".into()), Level::Must);
        assert_eq!(grade(std::slice::from_ref(&rec)).0, Verdict::Info);
        assert_eq!(grade(&[rec, held.clone()]).0, Verdict::Pass);
    }

    #[test]
    fn an_unmet_precondition_is_unknown_even_beside_a_broken_rule() {
        use Finding::*;
        let unmet = Judgement {
            precondition: true,
            ..j(
                Undecided("precondition not met: `create` answered 500".into()),
                Level::Must,
            )
        };
        let must = j(Broken("0 resources exist; expected 1".into()), Level::Must);
        let (verdict, summary, _) = grade(&[unmet.clone(), must.clone()]);
        assert_eq!(verdict, Verdict::Unknown, "the setup failed: no FAIL");
        assert!(summary.contains("precondition not met"), "{summary}");
        // An undecided assertion that is not a precondition does not hide a broken rule.
        let other = j(Undecided("no response".into()), Level::Must);
        assert_eq!(grade(&[other, must.clone()]).0, Verdict::Fail);
        // A precondition that held does not change anything.
        let held = Judgement {
            precondition: true,
            ..j(Held("201".into()), Level::Must)
        };
        assert_eq!(grade(&[held, must]).0, Verdict::Fail);
        let skip = j(Skipped("no delete".into()), Level::Must);
        assert_eq!(grade(&[unmet.clone(), skip]).0, Verdict::Skip);
    }

    #[test]
    fn a_precondition_only_a_pass_needs_does_not_hide_a_broken_must() {
        use Finding::*;
        let pass_only = Judgement {
            precondition: true,
            pass_only: true,
            ..j(
                Undecided("precondition not met: the retry did not replay".into()),
                Level::Must,
            )
        };
        let leak = j(Broken("bob got alice's resource".into()), Level::Must);
        let (verdict, summary, _) = grade(&[pass_only.clone(), leak.clone()]);
        assert_eq!(verdict, Verdict::Fail, "{summary}");
        assert!(summary.contains("bob got alice's resource"), "{summary}");
        // Without a broken MUST it still keeps the check from passing.
        let held = j(Held("201".into()), Level::Must);
        assert_eq!(grade(&[pass_only.clone(), held]).0, Verdict::Unknown);
        // A full precondition beside it still makes the check UNKNOWN.
        let setup = Judgement {
            precondition: true,
            ..j(
                Undecided("precondition not met: no resource".into()),
                Level::Must,
            )
        };
        assert_eq!(grade(&[pass_only, setup, leak]).0, Verdict::Unknown);
    }
}
