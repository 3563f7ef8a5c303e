//! What a client check found, and the verdict it grades to.
//!
//! The order is the server checks' (`docs/reading-reports.md`): FAIL when a MUST was broken,
//! UNKNOWN when something could not be decided, WARN when a SHOULD was broken, INFO when the check
//! only recorded behaviour (the client never retried, so there was nothing to judge), PASS when
//! every judged rule held — and a check that observed nothing is UNKNOWN, never PASS.

use idemspec_scenarios::Level;

use crate::model::Verdict;

/// One thing a check found about one situation (or about all of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The rule held; what was observed.
    Held(String),
    /// The rule, at this level, was broken; how.
    Broken(Level, String),
    /// The run could not decide; why.
    Undecided(String),
    /// Behaviour recorded, not judged (the client never retried, say).
    Recorded(String),
}

/// A finding and the situations whose attempts support it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// What was found.
    pub finding: Finding,
    /// The situations (by name) behind it; empty: all of the check's.
    pub situations: Vec<&'static str>,
}

impl Judged {
    /// `finding`, supported by the attempts of `situation`.
    pub fn on(situation: &'static str, finding: Finding) -> Self {
        Self {
            finding,
            situations: vec![situation],
        }
    }

    /// `finding`, supported by every situation of the check.
    pub fn overall(finding: Finding) -> Self {
        Self {
            finding,
            situations: Vec::new(),
        }
    }

    fn text(&self) -> &str {
        match &self.finding {
            Finding::Held(t)
            | Finding::Broken(_, t)
            | Finding::Undecided(t)
            | Finding::Recorded(t) => t,
        }
    }
}

/// A graded check: its verdict, the sentence that says why, the notes, and the situations whose
/// attempts are its evidence (empty: none for a PASS, all otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graded {
    /// The verdict.
    pub verdict: Verdict,
    /// One sentence (several joined by `; `).
    pub summary: String,
    /// What else was seen, one sentence each.
    pub notes: Vec<String>,
    /// The situations whose attempts support the verdict.
    pub situations: Vec<&'static str>,
}

/// Grades `found` (see the module documentation); `reference` follows a broken rule's sentence.
pub fn grade(found: &[Judged], reference: &str) -> Graded {
    let of =
        |f: &dyn Fn(&Finding) -> bool| found.iter().filter(|j| f(&j.finding)).collect::<Vec<_>>();
    let must = of(&|f| matches!(f, Finding::Broken(Level::Must, _)));
    let undecided = of(&|f| matches!(f, Finding::Undecided(_)));
    let should = of(&|f| matches!(f, Finding::Broken(Level::Should, _)));
    let held = of(&|f| matches!(f, Finding::Held(_)));
    let recorded = of(&|f| matches!(f, Finding::Recorded(_)));
    let (verdict, chosen) = if !must.is_empty() {
        (Verdict::Fail, must)
    } else if !undecided.is_empty() {
        (Verdict::Unknown, undecided)
    } else if !should.is_empty() {
        (Verdict::Warn, should)
    } else if !held.is_empty() {
        (Verdict::Pass, held)
    } else if !recorded.is_empty() {
        (Verdict::Info, recorded.clone())
    } else {
        return Graded {
            verdict: Verdict::Unknown,
            summary: "the check observed nothing".into(),
            notes: Vec::new(),
            situations: Vec::new(),
        };
    };
    let mut summary = chosen
        .iter()
        .map(|j| j.text())
        .collect::<Vec<_>>()
        .join("; ");
    if matches!(verdict, Verdict::Fail | Verdict::Warn) {
        summary = format!("{summary} ({reference})");
    }
    let notes = found
        .iter()
        .filter(|j| !chosen.contains(j))
        .map(|j| match &j.finding {
            Finding::Held(t) => format!("held: {t}"),
            Finding::Broken(level, t) => format!("also broken ({level}): {t}"),
            Finding::Undecided(t) => format!("undecided: {t}"),
            Finding::Recorded(t) => t.clone(),
        })
        .collect();
    let situations = if verdict == Verdict::Pass {
        Vec::new()
    } else {
        let mut s: Vec<&'static str> = Vec::new();
        for j in &chosen {
            for name in &j.situations {
                if !s.contains(name) {
                    s.push(name);
                }
            }
        }
        s
    };
    Graded {
        verdict,
        summary,
        notes,
        situations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grading_order_and_nothing_observed_is_never_pass() {
        let held = Judged::on("a", Finding::Held("ok".into()));
        let must = Judged::on("b", Finding::Broken(Level::Must, "bad".into()));
        let should = Judged::on("c", Finding::Broken(Level::Should, "meh".into()));
        let unsure = Judged::on("d", Finding::Undecided("?".into()));
        let rec = Judged::on("e", Finding::Recorded("not retried".into()));
        let v = |f: &[Judged]| grade(f, "src").verdict;
        assert_eq!(
            v(&[held.clone(), must.clone(), unsure.clone()]),
            Verdict::Fail
        );
        assert_eq!(v(&[held.clone(), should.clone(), unsure]), Verdict::Unknown);
        assert_eq!(v(&[held.clone(), should.clone()]), Verdict::Warn);
        assert_eq!(v(&[held.clone(), rec.clone()]), Verdict::Pass);
        assert_eq!(v(std::slice::from_ref(&rec)), Verdict::Info);
        assert_eq!(v(&[]), Verdict::Unknown);
        let failed = grade(&[must, rec], "src");
        assert_eq!(failed.summary, "bad (src)");
        assert_eq!(failed.situations, ["b"]);
        assert_eq!(failed.notes, ["not retried"]);
        assert!(grade(&[held], "src").situations.is_empty());
    }
}
