//! `key-format`: the key is 1 to 255 visible ASCII characters (an sf-string's quotes removed
//! where the contract allows them); a UUID is noted.

use std::collections::BTreeSet;

use idemspec_scenarios::Level;

use super::{about, ClientCheck, Ctx, Judgement, Observed, Situation};
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct KeyFormat;

/// The longest key servers must accept (Stripe: 255 characters; leasebroker's contract).
const MAX_LEN: usize = 255;

impl ClientCheck for KeyFormat {
    fn about(&self) -> About {
        about(
            "key-format",
            "Keys are 1 to 255 visible ASCII characters",
            Level::Must,
            "ietf-draft-07 §2.1 (key syntax); stripe: idempotency (keys up to 255 characters, V4 UUIDs suggested)",
        )
    }

    fn situations(&self, _ctx: &Ctx) -> Vec<Situation> {
        vec![Situation::new("clean", Vec::new())]
    }

    fn judge(&self, ctx: &Ctx, runs: &[Observed]) -> Vec<Judgement> {
        let mut found = Vec::new();
        for run in runs {
            let keys: BTreeSet<Option<&str>> =
                run.attempts.iter().map(|a| a.key.as_deref()).collect();
            for key in keys {
                let finding = match key {
                    None => Finding::Recorded(format!(
                        "an attempt carried no `{}` (key-present judges that)",
                        ctx.header()
                    )),
                    Some(raw) => judge_key(raw, ctx.contract.sf_string_keys),
                };
                found.push(Judgement::on(run.situation, finding));
                if let Some(note) = key.and_then(uuid_note) {
                    found.push(Judgement::on(run.situation, Finding::Recorded(note)));
                }
            }
        }
        found
    }
}

fn judge_key(raw: &str, sf_string: bool) -> Finding {
    let key = match raw.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(inner) if sf_string => inner,
        _ => raw,
    };
    let len = key.chars().count();
    let invisible = key.chars().find(|c| !('\x21'..='\x7e').contains(c));
    match (len, invisible) {
        (0, _) => Finding::Broken("the key is empty".into()),
        (n, _) if n > MAX_LEN => Finding::Broken(format!("the key {raw:?} has {n} characters; servers accept at most {MAX_LEN}"),
        ),
        (_, Some(c)) => Finding::Broken(format!(
                "the key {raw:?} contains {c:?}, which is not visible ASCII: a server rejects it or reads another key"
            ),
        ),
        (n, None) => Finding::Held(format!("the key {raw:?}: {n} visible ASCII characters")),
    }
}

fn uuid_note(key: &str) -> Option<String> {
    let id = uuid::Uuid::parse_str(key.trim_matches('"')).ok()?;
    Some(format!(
        "the key is a UUID (version {})",
        id.get_version_num()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_judged_by_length_and_characters() {
        let held = |f: &Finding| matches!(f, Finding::Held(_));
        assert!(held(&judge_key("order-17", false)));
        assert!(held(&judge_key("\"order-17\"", true)));
        assert!(!held(&judge_key("a b", false)));
        assert!(!held(&judge_key("", false)));
        assert!(!held(&judge_key(&"k".repeat(256), false)));
        assert!(held(&judge_key(&"k".repeat(255), false)));
        assert!(!held(&judge_key("clé", false)));
        assert_eq!(
            uuid_note("6f1c7a2e-4b7d-4c1a-9a55-0d1f2e3c4b5a").as_deref(),
            Some("the key is a UUID (version 4)")
        );
    }
}
