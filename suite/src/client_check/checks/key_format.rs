//! `key-format`: the key is 1 to 255 visible ASCII characters (an sf-string's quotes removed
//! where the contract allows them); a UUID is noted.

use std::collections::BTreeSet;

use idemspec_scenarios::Level;

use super::{about, ClientCheck, CommandRun, Ctx, Judgement, Situation};
use crate::engine::About;
use crate::engine::Finding;

/// See the module documentation.
pub struct KeyFormat;

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

    fn judge(&self, ctx: &Ctx, runs: &[CommandRun]) -> Vec<Judgement> {
        let mut found = Vec::new();
        for run in runs {
            let keys: BTreeSet<Option<&str>> =
                run.attempts.iter().map(|a| a.key.as_deref()).collect();
            for key in keys {
                let finding = match key {
                    None => Finding::Recorded(format!(
                        "an attempt carried no key in {} (key-present judges that)",
                        ctx.key_words()
                    )),
                    Some(raw) => judge_key(
                        raw,
                        ctx.contract.sf_string_keys,
                        ctx.contract.key_max_len as usize,
                    ),
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

/// `raw` judged as a key: 1 to `max_len` (the contract's `key_max_len`: 255 by default, Stripe's
/// limit; 64 for AWS's client token) visible ASCII characters, an sf-string's quotes removed.
fn judge_key(raw: &str, sf_string: bool, max_len: usize) -> Finding {
    let key = match raw.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(inner) if sf_string => inner,
        _ => raw,
    };
    // A key longer than the proxy's event keeps arrives cut, marked with its whole length.
    let (key, len, cut) = match idemspec_proxy::cut_value(key) {
        Some((kept, whole)) => (kept, whole, true),
        None => (key, key.chars().count(), false),
    };
    let invisible = key.chars().find(|c| !('\x21'..='\x7e').contains(c));
    match (len, invisible) {
        (0, _) => Finding::Broken("the key is empty".into()),
        (n, _) if n > max_len => Finding::Broken(format!("the key {raw:?} has {n} characters; the contract's servers accept at most {max_len} (`key_max_len`)"),
        ),
        (_, Some(c)) => Finding::Broken(format!(
                "the key {raw:?} contains {c:?}, which is not visible ASCII: a server rejects it or reads another key"
            ),
        ),
        (n, None) if cut => Finding::Held(format!(
            "the key {raw:?}: {n} bytes, the first {} visible ASCII (the rest was not kept)",
            key.len()
        )),
        (n, None) => Finding::Held(format!("the key {raw:?}: {n} visible ASCII characters")),
    }
}

/// "the key is a UUID (version 4)" where its variant and version bits say it is one (RFC 9562
/// §4.1, §4.2); 32 random hex digits in the UUID layout are not labelled.
fn uuid_note(key: &str) -> Option<String> {
    let id = uuid::Uuid::parse_str(key.trim_matches('"')).ok()?;
    let version = id.get_version_num();
    (id.get_variant() == uuid::Variant::RFC4122 && (1..=8).contains(&version))
        .then(|| format!("the key is a UUID (version {version})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_judged_by_length_and_characters() {
        let held = |f: &Finding| matches!(f, Finding::Held(_));
        assert!(held(&judge_key("order-17", false, 255)));
        assert!(held(&judge_key("\"order-17\"", true, 255)));
        assert!(!held(&judge_key("a b", false, 255)));
        assert!(!held(&judge_key("", false, 255)));
        assert!(!held(&judge_key(&"k".repeat(256), false, 255)));
        assert!(held(&judge_key(&"k".repeat(255), false, 255)));
        assert!(!held(&judge_key(&"k".repeat(65), false, 64)), "AWS's 64");
        assert!(!held(&judge_key("clé", false, 255)));
        // A key the proxy's event cut is judged by its whole length, not what was kept of it.
        let cut = format!(
            "{}…[cut: 300 bytes, sha256 0123456789abcdef]",
            "k".repeat(256)
        );
        assert!(
            matches!(judge_key(&cut, false, 255), Finding::Broken(m) if m.contains("has 300 characters"))
        );
        assert!(
            matches!(judge_key(&cut, false, 1000), Finding::Held(m) if m.contains("300 bytes, the first 256"))
        );
        // Random hex in the UUID layout, its version nibble 0 and its variant bits not RFC's.
        assert_eq!(uuid_note("6f1c7a2e-4b7d-0c1a-1a55-0d1f2e3c4b5a"), None);
        assert_eq!(
            uuid_note("6f1c7a2e-4b7d-4c1a-9a55-0d1f2e3c4b5a").as_deref(),
            Some("the key is a UUID (version 4)")
        );
    }
}
