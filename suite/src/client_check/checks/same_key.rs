//! `same-key`: every retry of one logical operation carries the key of its first attempt — after
//! a lost response, a reset, a 502/503, a client timeout and a 409 in flight (where the API has
//! in-flight state: `in_flight_state`).

use idemspec_scenarios::client_profile::answers::AnswerKind;
use idemspec_scenarios::rules::Fault;
use idemspec_scenarios::Level;

use super::{about, key_text, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::attempt::operations;
use crate::client_check::situation::Times;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct SameKey;

impl ClientCheck for SameKey {
    fn about(&self) -> About {
        about(
            "same-key",
            "Every retry of one operation carries the same key (lost response, reset, 5xx, timeout, 409 in flight)",
            Level::Must,
            "article: what the client should do (one key per operation, generated before the first attempt); ietf-draft-07 §2.2; stripe: idempotency (retry with the same key)",
        )
    }

    fn situations(&self, ctx: &Ctx) -> Vec<Situation> {
        let once = |name: &str, fault: Fault| ctx.plan(name, fault, Times::First(1));
        let answer = |kind, retry_after| ctx.planned(kind, retry_after, Times::First(1));
        let mut situations = vec![
            Situation::new("lost-response", vec![once("drop", Fault::DropResponse {})]),
            Situation::new(
                "reset",
                vec![once("reset", Fault::ResetMidResponse { after_bytes: 0 })],
            ),
            Situation::new(
                "502-then-503",
                vec![
                    answer(AnswerKind::BadGateway, false),
                    answer(AnswerKind::Unavailable, false),
                ],
            ),
            Situation::new("timeout", vec![once("hang", Fault::Hang { forward: true })]),
        ];
        // An API without in-flight state never answers it (`in_flight_state: false`).
        if ctx.profile.in_flight_state() {
            situations.push(Situation::new(
                "in-flight",
                vec![answer(AnswerKind::InFlight, true)],
            ));
        }
        situations
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        runs.iter()
            .map(|run| {
                // The faults hit the first operation; with several per run, the others are clean.
                let first = operations(&run.attempts)[0];
                // An attempt without a key is key-present's rule; this one compares the keys sent.
                // In the order the attempts sent them, each once.
                let mut keys: Vec<&str> = Vec::new();
                for key in first.iter().filter_map(|a| a.key.as_deref()) {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                let n = first.len();
                let keyless = first.iter().filter(|a| a.key.is_none()).count();
                let finding = if n < 2 {
                    Finding::Recorded(format!(
                        "`{}`: not retried ({})",
                        run.situation, run.output.exit
                    ))
                } else if keys.is_empty() {
                    Finding::Recorded(format!(
                        "`{}`: retried {n} times without any key in {} (key-present judges that)",
                        run.situation,
                        ctx.key_words()
                    ))
                } else if keys.len() > 1 {
                    let listed: Vec<String> = keys.iter().map(|k| key_text(Some(k))).collect();
                    Finding::Broken(format!(
                            "`{}`: {n} attempts of one operation carried {} different keys ({}): a retry with a new key is a new operation to the server, which runs it again",
                            run.situation,
                            keys.len(),
                            listed.join(", ")
                        ),
                    )
                } else if keyless > 0 {
                    Finding::Recorded(format!(
                        "`{}`: of {n} attempts, {keyless} carried no key in {} (key-present judges \
                         that) and the others one key",
                        run.situation,
                        ctx.key_words()
                    ))
                } else {
                    Finding::Held(format!(
                        "`{}`: {n} attempts, one key",
                        run.situation
                    ))
                };
                Judgement::on(run.situation, finding)
            })
            .collect()
    }
}
