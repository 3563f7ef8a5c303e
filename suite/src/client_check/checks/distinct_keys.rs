//! `distinct-keys`: two logical operations use two different keys (a key cached on the client,
//! or a constant, makes the second operation a replay of the first).

use std::collections::BTreeMap;

use idemspec_scenarios::Level;

use super::{about, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::client_check::attempt::operations;
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct DistinctKeys;

impl ClientCheck for DistinctKeys {
    fn about(&self) -> About {
        about(
            "distinct-keys",
            "Two logical operations carry two different keys",
            Level::Must,
            "article: what the client should do (a fresh key per logical operation); ietf-draft-07 §2.2 (uniqueness)",
        )
    }

    fn situations(&self, _ctx: &Ctx) -> Vec<Situation> {
        vec![
            Situation::new("first", Vec::new()),
            Situation::new("second", Vec::new()),
        ]
    }

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let mut seen: BTreeMap<&str, String> = BTreeMap::new();
        let mut found = Vec::new();
        let mut count = 0;
        for run in runs {
            for (i, op) in operations(&run.attempts).into_iter().enumerate() {
                let at = format!("`{}` operation {}", run.situation, i + 1);
                count += 1;
                match op[0].key.as_deref() {
                    None => found.push(Judgement::on(
                        run.situation,
                        Finding::Recorded(format!(
                            "{at}: no key in {} to compare (key-present judges that)",
                            ctx.key_words()
                        )),
                    )),
                    Some(key) => {
                        if let Some(earlier) = seen.get(key) {
                            found.push(Judgement::on(
                                run.situation,
                                Finding::Broken(format!(
                                        "{earlier} and {at} both carried the key {key:?}: the server replays the first operation's response to the second, which never happens"
                                    ),
                                ),
                            ));
                        } else {
                            seen.insert(key, at);
                        }
                    }
                }
            }
        }
        if runs.len() == 2 && found.is_empty() {
            found.push(Judgement::new(Finding::Held(format!(
                "{count} logical operations in two runs, {count} different keys"
            ))));
        }
        found
    }
}
