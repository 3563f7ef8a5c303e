//! The contract's own rules (`contract:`), asked of what the profile wrote: each a problem in words,
//! with where it was written when the field keeps its position.

use super::resolve::envelope_member;
use super::{ContractSpec, KeyForm, ReplayBody, Retention, MAX_KEY_MAX_LEN};
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
            // A position the parser could not record (line 0) says less than the block's.
            let at = loc.filter(|l| l.line() > 0).unwrap_or(written);
            errors.at(at, format!("contract: {m}"));
        }
    }

    /// Cross-field rules of the contract: `stores` and `replays_5xx` agree; no zero TTL or
    /// retention; `header` and `replayed_header` are HTTP field names; a replay status something
    /// tells from a refusal; `replay_body` and `replay_id_at` only with a `replay_status` to
    /// read; a `key_max_len` in range; a template exactly with `key_form: template`, and one that
    /// makes a key of 1–255 visible ASCII characters and depends on the key. Each at the field
    /// in conflict, where the profile wrote it.
    pub(crate) fn problems(&self) -> Problems<'_> {
        let mut out = Vec::new();
        self.storage_problems(&mut out);
        self.wait_problems(&mut out);
        self.header_problems(&mut out);
        self.replay_problems(&mut out);
        self.replay_reading_problems(&mut out);
        self.key_length_problems(&mut out);
        self.key_template_problems(&mut out);
        out
    }

    /// `stores` and `replays_5xx` agree where both are given (the error at `replays_5xx`); an
    /// in-flight TTL and a retention window are not zero.
    fn storage_problems<'a>(&'a self, out: &mut Problems<'a>) {
        if let (Some(stores), Some(replays)) = (&self.stores, &self.replays_5xx) {
            let replays_5xx = replays.value;
            if stores.iter().any(|s| s.is_5xx()) != replays_5xx {
                let listed: Vec<String> = stores.iter().map(ToString::to_string).collect();
                out.push((
                    Some(&replays.referenced),
                    format!(
                        "`replays_5xx: {replays_5xx}` and `stores: [{}]` disagree on whether a \
                         5xx is stored; `stores` says it alone (list `5xx`, or a 5xx code, to \
                         store one), so leave `replays_5xx` out",
                        listed.join(", ")
                    ),
                ));
            }
        }
        if let Some(ttl) = self.in_flight_ttl.as_ref().filter(|t| t.value.0.is_zero()) {
            out.push((
                Some(&ttl.referenced),
                "in_flight_ttl is 0s: a zero TTL would let any retry take over a request that is \
                 still running; give the TTL the API documents (e.g. `30s`), or leave it out if it \
                 has none"
                    .into(),
            ));
        }
        let zero = Some(Retention::For(std::time::Duration::ZERO));
        if let Some(retention) = self.retention.as_ref().filter(|r| Some(r.value) == zero) {
            out.push((
                Some(&retention.referenced),
                "retention is 0s: a window of nothing would keep no record, so no retry could \
                 ever be replayed; write the window the API documents (e.g. `24h`), \
                 `while_resource_exists` where a key lives as long as the resource it created, \
                 or leave `retention` out where the documentation names none"
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
        let replayed = self
            .replayed_header
            .as_ref()
            .filter(|h| !h.value.is_empty());
        if let Some(replayed) = replayed {
            if let Err(m) = check_header(&replayed.value, "k") {
                out.push((Some(&replayed.referenced), m));
            }
        }
        if let Some(header) = &self.header {
            if let Some(m) = key_header_problem(&header.value) {
                out.push((Some(&header.referenced), m));
            }
        }
        if let Some(key_at) = &self.key_at {
            if let Some(m) = key_at.value.problem() {
                out.push((Some(&key_at.referenced), m));
            }
        }
        // One place for the key: `key_at: {header: NAME}` is `header: NAME`.
        if let (Some(header), Some(key_at)) = (&self.header, &self.key_at) {
            let (header, at) = (&header.value, &key_at.value);
            let same = matches!(at, KeyAt::Header(n) if n.eq_ignore_ascii_case(header));
            if !same {
                out.push((
                    Some(&key_at.referenced),
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
        if let Some(envelope) = &self.replay_envelope {
            let (written, here) = (&envelope.value, Some(&envelope.referenced));
            let at = envelope_member(written);
            let bad = |c: char| "[]$*'\"@?() ".contains(c) || c.is_control();
            if at.is_empty()
                || at.len() > 256
                || at.split('.').any(str::is_empty)
                || at.chars().any(bad)
            {
                out.push((
                    here,
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
                    here,
                    "replay_envelope needs something that tells an envelope from a first \
                     answer: what a replay's body says (`replay_body: {at: $.cached, is: true}`) \
                     or the header that marks a replay (`replayed_header`)"
                        .into(),
                ));
            }
        }
        if let Some((code, field)) = resolved.ambiguous_replay() {
            out.push((
                self.replay_status.as_ref().map(|s| &s.referenced),
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

    /// `replay_body` and `replay_id_at` read an answer under a `replay_status` code, so each
    /// needs one to tell anything; `replay_body: {at, is}` also marks a `replay_envelope`, and
    /// beside one needs none.
    fn replay_reading_problems<'a>(&'a self, out: &mut Problems<'a>) {
        if !self.resolve().replay_status.is_empty() {
            return;
        }
        let fix = "add the status a replay comes under (`replay_status: 409`)";
        if let Some(id_at) = &self.replay_id_at {
            out.push((
                Some(&id_at.referenced),
                format!(
                    "replay_id_at `{}` reads the answers under a `replay_status` code, and the \
                     contract declares none, so it would tell nothing; {fix}, or leave \
                     `replay_id_at` out",
                    id_at.value.source()
                ),
            ));
        }
        let Some(body) = &self.replay_body else {
            return;
        };
        if self.replay_envelope.is_none() || body.value.condition().is_none() {
            out.push((
                Some(&body.referenced),
                format!(
                    "replay_body reads the answers under a `replay_status` code (and, as `{{at, \
                     is}}`, tells a `replay_envelope` from a first answer), and the contract \
                     declares neither, so it would tell nothing; {fix}, or leave `replay_body` \
                     out"
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
        let Some(written) = &self.key_max_len else {
            return;
        };
        let (n, here) = (written.value, Some(&written.referenced));
        if uuid_keys && n < 36 {
            out.push((
                here,
                format!(
                    "key_max_len: {n} is shorter than the 36 characters of the UUID keys the \
                     checks send (`key_form: uuid`); declare the limit the API documents"
                ),
            ));
        }
        if !(1..=MAX_KEY_MAX_LEN).contains(&n) {
            out.push((
                here,
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
