//! A worked example of a procedure: a create retried with its key names the resource the first
//! one made (CONTRIBUTING.md shows this file as it is).

use futures::future::BoxFuture;
use idemspec_scenarios::scenario::{KeySpec, Operation};

use super::Procedure;
use crate::engine::{Finding, Judgement};
use crate::runner::context::CheckRun;

/// `same-id-on-retry`: a create retried with its key names the resource the first one made.
pub(crate) struct SameIdOnRetry;

/// The built-in check: its header as a scenario has it.
const SCENARIO: &str = r#"version: 1
id: same-id-on-retry
title: A create retried with its key names the resource the first one made
level: MUST
reference: "article: retries"
procedure: same-id-on-retry
"#;

impl Procedure for SameIdOnRetry {
    fn name(&self) -> &'static str {
        "same-id-on-retry"
    }

    fn scenario(&self) -> &'static str {
        SCENARIO
    }

    fn judge<'a>(&'a self, run: &'a CheckRun) -> BoxFuture<'a, Vec<Judgement>> {
        Box::pin(async move {
            let key = KeySpec::Named("K1".into());
            let first = run
                .sender
                .request("first", Operation::Create)
                .key(Some(&key))
                .send()
                .await;
            let retry = run
                .sender
                .request("retry", Operation::Create)
                .key(Some(&key))
                .send()
                .await;
            let finding = match (
                run.sender.created_by("first"),
                run.sender.created_by("retry"),
            ) {
                (Some(a), Some(b)) if a == b => {
                    Finding::Held(format!("the retry named `{a}`, as the first create did"))
                }
                (Some(a), Some(b)) => Finding::Broken(format!(
                    "the first create made `{a}` and its retry `{b}`: a second resource"
                )),
                _ => Finding::Undecided(format!(
                    "no ids to compare: the first create got {}, its retry {}",
                    first.describe(),
                    retry.describe()
                )),
            };
            vec![Judgement::new(finding).on_steps(["first", "retry"])]
        })
    }
}
