//! Resolving a contract: the preset's contract ([`super::Preset::contract`]) with each field the
//! profile gives over it, and the record of which fields those were.

use super::{Contract, ContractSpec, InFlightWait, StoredStatus};
use crate::profile::KeyAt;

impl ContractSpec {
    /// Applies the overrides to the preset.
    pub fn resolve(&self) -> Contract {
        let mut c = self.preset.contract();
        c.overridden = self.overridden();
        self.place_key(&mut c);
        self.override_refusals(&mut c);
        self.override_storage(&mut c);
        self.override_keys(&mut c);
        self.override_replays(&mut c);
        c
    }

    /// The fields the profile gives, in the contract's order (`Contract::overridden`).
    fn overridden(&self) -> Vec<&'static str> {
        [
            ("header", self.header.is_some()),
            ("key_at", self.key_at.is_some()),
            ("mismatch_status", self.mismatch_status.is_some()),
            ("in_flight_status", self.in_flight_status.is_some()),
            ("missing_key_status", self.missing_key_status.is_some()),
            ("mismatch_body", self.mismatch_body.is_some()),
            ("in_flight_body", self.in_flight_body.is_some()),
            ("missing_key_body", self.missing_key_body.is_some()),
            ("error_shape", self.error_shape.is_some()),
            (
                "in_flight_retry_after",
                self.in_flight_retry_after.is_some(),
            ),
            ("in_flight_ttl", self.in_flight_ttl.is_some()),
            ("in_flight_wait", self.in_flight_wait.is_some()),
            ("retention", self.retention.is_some()),
            ("key_required", self.key_required.is_some()),
            ("replays_5xx", self.replays_5xx.is_some()),
            ("stores", self.stores.is_some()),
            ("per_principal", self.per_principal.is_some()),
            ("per_endpoint", self.per_endpoint.is_some()),
            ("sf_string_keys", self.sf_string_keys.is_some()),
            ("replayed_header", self.replayed_header.is_some()),
            ("key_form", self.key_form.is_some()),
            ("empty_key_is_missing", self.empty_key_is_missing.is_some()),
            ("key_max_len", self.key_max_len.is_some()),
            ("mismatch_answer", self.mismatch_answer.is_some()),
            ("covers", self.covers.is_some()),
            ("replay_status", self.replay_status.is_some()),
            ("replay_body", self.replay_body.is_some()),
            ("replay_id_at", self.replay_id_at.is_some()),
            ("replay_envelope", self.replay_envelope.is_some()),
            ("replays", self.replays.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, set)| set.then_some(field))
        .collect()
    }

    /// Where the key goes: `key_at`, or `header` (which also names the header of a `key_at:
    /// {header: …}`), or the preset's place.
    fn place_key(&self, c: &mut Contract) {
        if let Some(v) = &self.header {
            c.header = v.value.clone();
        }
        c.key_at = match self.key_at.as_ref().map(|at| &at.value) {
            Some(KeyAt::Header(name)) => {
                c.header = name.clone();
                KeyAt::Header(name.clone())
            }
            Some(at) => at.clone(),
            // The preset's place, unless the profile named a header.
            None if self.header.is_some() => KeyAt::Header(c.header.clone()),
            None => c.key_at.clone(),
        };
    }

    /// The refusals' statuses and bodies (and what every refusal's body and an in-flight one's
    /// headers are promised to carry), how a same-key request in flight waits, and how a reused
    /// key with another request is answered.
    fn override_refusals(&self, c: &mut Contract) {
        if let Some(v) = &self.mismatch_status {
            c.mismatch_status = v.clone();
        }
        if let Some(v) = &self.in_flight_status {
            c.in_flight_status = v.clone();
        }
        if let Some(v) = &self.missing_key_status {
            c.missing_key_status = v.clone();
        }
        for (mine, preset) in [
            (&self.mismatch_body, &mut c.mismatch_body),
            (&self.in_flight_body, &mut c.in_flight_body),
            (&self.missing_key_body, &mut c.missing_key_body),
        ] {
            if let Some(condition) = mine {
                *preset = Some(condition.clone());
            }
        }
        c.mismatch_answer = self.mismatch_answer.unwrap_or(c.mismatch_answer);
        // After `in_flight_status`: a wait that names no status of its own ends in it.
        if let Some(wait) = &self.in_flight_wait {
            c.in_flight_wait = Some(InFlightWait {
                up_to: wait.up_to.0,
                then: wait
                    .then
                    .clone()
                    .unwrap_or_else(|| c.in_flight_status.clone()),
            });
        }
        if let Some(shape) = &self.error_shape {
            c.error_shape = shape.clone();
        }
        c.in_flight_retry_after = self
            .in_flight_retry_after
            .unwrap_or(c.in_flight_retry_after);
    }

    /// The layer's record: the in-flight TTL, the retention window, what it stores (`stores`, or
    /// `replays_5xx` as its shorthand) and which operations it covers.
    fn override_storage(&self, c: &mut Contract) {
        if let Some(v) = &self.in_flight_ttl {
            c.in_flight_ttl = Some(v.value.0);
        }
        if let Some(v) = &self.retention {
            c.retention = Some(v.value);
        }
        match (&self.stores, self.replays_5xx.as_ref().map(|r| r.value)) {
            (Some(stores), _) => c.stores = stores.clone(),
            // `replays_5xx` alone adds the 5xx class to the preset's, or takes every 5xx out.
            (None, Some(true)) if !c.stores.iter().any(|s| s.is_5xx()) => {
                c.stores.push(StoredStatus::Class(5));
            }
            (None, Some(false)) => c.stores.retain(|s| !s.is_5xx()),
            (None, _) => {}
        }
        c.replays_5xx = c.stores.iter().any(|s| s.is_5xx());
        if let Some(v) = &self.covers {
            c.covers = v.clone();
        }
    }

    /// The key's form, length and scope, and whether it is required.
    fn override_keys(&self, c: &mut Contract) {
        c.key_required = self.key_required.unwrap_or(c.key_required);
        c.key_max_len = self.key_max_len.as_ref().map_or(c.key_max_len, |n| n.value);
        c.per_principal = self.per_principal.unwrap_or(c.per_principal);
        c.per_endpoint = self.per_endpoint.unwrap_or(c.per_endpoint);
        c.sf_string_keys = self.sf_string_keys.unwrap_or(c.sf_string_keys);
        c.key_form = self.key_form.unwrap_or(c.key_form);
        c.key_template = self.key_template.as_ref().map(|t| t.value.clone());
        c.empty_key_is_missing = self.empty_key_is_missing.unwrap_or(c.empty_key_is_missing);
    }

    /// What marks a replay and how one is answered.
    fn override_replays(&self, c: &mut Contract) {
        if let Some(v) = &self.replayed_header {
            c.replayed_header = v.value.clone();
        }
        if let Some(v) = &self.replay_status {
            c.replay_status = v.value.clone();
        }
        if let Some(v) = &self.replay_body {
            c.replay_body = Some(v.value.clone());
        }
        if let Some(v) = &self.replay_id_at {
            c.replay_id_at = Some(v.value.clone());
        }
        if let Some(v) = &self.replay_envelope {
            c.replay_envelope = Some(envelope_member(&v.value).to_owned());
        }
        c.replays = self.replays.unwrap_or(c.replays);
    }
}

/// The member a `replay_envelope` names: as written, or without the `$.` of a JSONPath that
/// names it (`$.data` is `data`).
pub(super) fn envelope_member(written: &str) -> &str {
    written.strip_prefix("$.").unwrap_or(written)
}
