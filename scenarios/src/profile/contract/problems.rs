//! The contract's own rules (`contract:`), asked of what the profile wrote: each a problem in words,
//! with where it was written when the field keeps its position.

use super::resolve::envelope_member;
use super::{ContractSpec, KeyForm, ReplayBody, MAX_KEY_MAX_LEN};
use crate::load::{LoadErrors, Location};
use crate::profile::check_header;
use crate::profile::key_at::{key_header_problem, KeyAt};

/// Problems of a contract, each with where it was written where the field keeps its position.
type Problems<'a> = Vec<(Option<&'a Location>, String)>;

impl ContractSpec {
    /// The contract's rules, each broken one an error `contract: …` at its field or, where the
    /// field keeps no position, at `written` (where the `contract:` block is).
    pub(crate) fn check(&self, written: &Location, errors: &mut LoadErrors) {
        for (loc, m) in self.problems() {
            errors.at(loc.unwrap_or(written), format!("contract: {m}"));
        }
    }

    /// Cross-field rules of the contract: `header` and `replayed_header` are HTTP field names; a
    /// template exactly with `key_form: template`, and one that makes a key of 1–255 visible ASCII
    /// characters and depends on the key.
    pub(crate) fn problems(&self) -> Problems<'_> {
        let mut out = Vec::new();
        self.storage_problems(&mut out);
        self.wait_problems(&mut out);
        self.header_problems(&mut out);
        self.replay_problems(&mut out);
        self.key_length_problems(&mut out);
        self.key_template_problems(&mut out);
        out
    }

    /// `stores` and `replays_5xx` agree where both are given; an in-flight TTL is not zero.
    fn storage_problems<'a>(&'a self, out: &mut Problems<'a>) {
        if let (Some(stores), Some(replays_5xx)) = (&self.stores, self.replays_5xx) {
            if stores.iter().any(|s| s.is_5xx()) != replays_5xx {
                let listed: Vec<String> = stores.iter().map(ToString::to_string).collect();
                out.push((
                    None,
                    format!(
                        "`replays_5xx: {replays_5xx}` and `stores: [{}]` disagree on whether a \
                         5xx is stored; `stores` says it alone (list `5xx`, or a 5xx code, to \
                         store one), so leave `replays_5xx` out",
                        listed.join(", ")
                    ),
                ));
            }
        }
        if self.in_flight_ttl.is_some_and(|t| t.0.is_zero()) {
            out.push((
                None,
                "in_flight_ttl is 0s: a zero TTL would let any retry take over a request that is \
                 still running; give the TTL the API documents (e.g. `30s`), or leave it out if it \
                 has none"
                    .into(),
            ));
        }
    }

    /// A status a declared wait ends in can be told from the mismatch refusal: where it is also a
    /// `mismatch_status` code (and not an `in_flight_status` one, which reads as either), the
    /// mismatch's body must say what it is.
    fn wait_problems<'a>(&'a self, out: &mut Problems<'a>) {
        let c = self.resolve();
        let Some(wait) = &c.in_flight_wait else {
            return;
        };
        let shared = wait.then.iter().find(|code| {
            c.mismatch_status.contains(code)
                && !c.in_flight_status.contains(code)
                && c.mismatch_body.is_none()
        });
        if let Some(code) = shared {
            out.push((
                None,
                format!(
                    "in_flight_wait.then {code} is also the contract's `mismatch_status`, and \
                     nothing tells a wait that ran out from a mismatch refusal: declare what the \
                     mismatch's body says (`mismatch_body`), or the status the wait ends in"
                ),
            ));
        }
    }

    /// `replayed_header` and `header` are headers HTTP can carry and may carry a key, `key_at` is
    /// a place a key can travel, and the two do not name two places.
    fn header_problems<'a>(&'a self, out: &mut Problems<'a>) {
        // An empty `replayed_header` says the API marks no replay.
        let replayed = self.replayed_header.as_ref().filter(|h| !h.is_empty());
        if let Some(Err(m)) = replayed.map(|name| check_header(name, "k")) {
            out.push((None, m));
        }
        if let Some(m) = self.header.as_deref().and_then(key_header_problem) {
            out.push((None, m));
        }
        if let Some(m) = self.key_at.as_ref().and_then(KeyAt::problem) {
            out.push((None, m));
        }
        // One place for the key: `key_at: {header: NAME}` is `header: NAME`.
        if let (Some(header), Some(at)) = (&self.header, &self.key_at) {
            let same = matches!(at, KeyAt::Header(n) if n.eq_ignore_ascii_case(header));
            if !same {
                out.push((
                    None,
                    format!(
                        "`header: {header}` and `key_at: {}` both say where the key goes; give \
                         one (`key_at: {{header: NAME}}` is the same as `header: NAME`)",
                        at.as_yaml()
                    ),
                ));
            }
        }
    }

    /// A `replay_envelope` names a member and something tells an envelope from a first answer;
    /// a `replay_status` that is also a refusal's can be told from it.
    fn replay_problems<'a>(&'a self, out: &mut Problems<'a>) {
        let resolved = self.resolve();
        if let Some(written) = &self.replay_envelope {
            let at = envelope_member(written);
            let bad = |c: char| "[]$*'\"@?() ".contains(c) || c.is_control();
            if at.is_empty()
                || at.len() > 256
                || at.split('.').any(str::is_empty)
                || at.chars().any(bad)
            {
                out.push((
                    None,
                    format!(
                        "replay_envelope `{written}` names no member: give the member that \
                         holds the original body (`data`, or `$.data`), names joined by single \
                         dots for one inside another (`result.data`); no index or filter"
                    ),
                ));
            }
            let marks = resolved
                .replay_body
                .as_ref()
                .and_then(ReplayBody::condition);
            if marks.is_none() && resolved.replayed_header.is_empty() {
                out.push((
                    None,
                    "replay_envelope needs something that tells an envelope from a first \
                     answer: what a replay's body says (`replay_body: {at: $.cached, is: true}`) \
                     or the header that marks a replay (`replayed_header`)"
                        .into(),
                ));
            }
        }
        if let Some((code, field)) = resolved.ambiguous_replay() {
            out.push((
                None,
                format!(
                    "replay_status {code} is also the contract's `{field}`, and nothing tells a \
                     replay from that refusal: declare what a replay's body says (`replay_body: \
                     {{at: $.cached, is: true}}`, or `replay_body: original` where it is the \
                     original answer's body), where it names the original's id \
                     (`replay_id_at`), what the refusal's body says (`{}`), or the header that \
                     marks a replay (`replayed_header`)",
                    field.replace("_status", "_body")
                ),
            ));
        }
    }

    /// `key_max_len` is in range and leaves room for the UUID keys the checks send, where they
    /// send UUIDs.
    fn key_length_problems<'a>(&'a self, out: &mut Problems<'a>) {
        let resolved = self.resolve();
        // The preset's form counts too: `gcp-request-id` sends UUIDs.
        let uuid_keys = self.key_form == Some(KeyForm::Uuid)
            || (self.key_form.is_none() && resolved.key_form == KeyForm::Uuid);
        if let Some(n) = self.key_max_len.filter(|n| uuid_keys && *n < 36) {
            out.push((
                None,
                format!(
                    "key_max_len: {n} is shorter than the 36 characters of the UUID keys the \
                     checks send (`key_form: uuid`); declare the limit the API documents"
                ),
            ));
        }
        if let Some(n) = self
            .key_max_len
            .filter(|n| !(1..=MAX_KEY_MAX_LEN).contains(n))
        {
            out.push((
                None,
                format!(
                    "key_max_len: {n} is out of range; expected 1 to {MAX_KEY_MAX_LEN} characters"
                ),
            ));
        }
    }

    /// A `key_template` exactly with `key_form: template`, depending on the key, of visible ASCII.
    fn key_template_problems<'a>(&'a self, out: &mut Problems<'a>) {
        match (self.key_form, &self.key_template) {
            (Some(KeyForm::Template), None) => out.push((
                None,
                "`key_form: template` needs a `key_template`, e.g. `ord_{{uuid}}`".into(),
            )),
            (Some(KeyForm::Template), Some(t)) => {
                let rendered = t.value.replace("{{key}}", "k").replace("{{uuid}}", "u");
                if !t.value.contains("{{key}}") && !t.value.contains("{{uuid}}") {
                    out.push((Some(&t.referenced), format!(
                        "key_template `{}` has neither `{{{{key}}}}` nor `{{{{uuid}}}}`: every check would send one key",
                        t.value
                    )));
                } else if rendered.contains("{{") || !t.value.chars().all(|c| c.is_ascii_graphic())
                {
                    out.push((Some(&t.referenced), format!(
                        "key_template `{}` must be visible ASCII with only `{{{{key}}}}` and `{{{{uuid}}}}` placeholders",
                        t.value
                    )));
                }
            }
            (_, Some(t)) => out.push((
                Some(&t.referenced),
                "`key_template` applies only with `key_form: template`".into(),
            )),
            _ => {}
        }
    }
}
