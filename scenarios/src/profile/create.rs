//! The create (`operations.create:`), the idempotent request under test: how it is sent, where its
//! answer names the new resource, the variants a check sends instead, with its rules, including
//! those it shares with the contract (the key's place in its body, the slow variant's time).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::method::{essence, http_method, json, post};
use super::{Contract, KeyAt, LongRunningOperation};
use crate::load::{LoadErrors, Location, Spanned};
use crate::template::Template;
use crate::value::JsonPathExpr;

/// The create operation.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateOp {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path template, e.g. `/v1/workers` (starting with `/`).
    #[serde(deserialize_with = "crate::template::path")]
    pub path: Template,
    /// Body template; use `{{marker}}` so the check can count what it created, `{{variant}}` so a
    /// differing body can be sent (fingerprint checks).
    pub body: Template,
    /// Content-Type of the body (default `application/json`).
    #[serde(default = "json")]
    pub content_type: String,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
    /// Where the new resource's id is in the response body, e.g. `$.id` or `$.data.uuid`.
    pub id: JsonPathExpr,
    /// Where the id sits inside the string at `id`: it is what follows the last occurrence of this
    /// text (`/instances/` cuts `NAME` out of a `targetLink` of `…/instances/NAME`).
    #[serde(default)]
    pub id_after: Option<String>,
    /// Requests that make the API fail, fail once, be slow or hang — for APIs (and test doubles)
    /// that fail by what is sent rather than by an admin switch.
    #[serde(default)]
    pub variants: Variants,
    /// The long-running operation the answer names, where it names one (`operation:`).
    #[serde(default, rename = "operation")]
    pub long_running: Option<Spanned<LongRunningOperation>>,
}

/// Request variants of the create, each for one role a check needs.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variants {
    /// A create that always fails with a 5xx.
    #[serde(default)]
    pub always_fails: Option<Variant>,
    /// A create that fails with a 5xx the first time this body is sent (after some side effects,
    /// where the API has any) and succeeds every later time.
    #[serde(default)]
    pub fails_once: Option<Variant>,
    /// A create whose handler takes `takes` to finish (longer than the in-flight TTL, for
    /// `slow-handler-outlives-ttl`).
    #[serde(default)]
    pub slow: Option<SlowVariant>,
    /// A create whose handler never finishes (until the server stops).
    #[serde(default)]
    pub hangs: Option<Variant>,
}

/// A create sent differently: its own body, and optionally its own path. Use `{{marker}}` so the
/// variant is unique per check (a retry must send the same bytes, so avoid `{{uuid}}`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// The body template.
    pub body: Template,
    /// The path template (default: the create's).
    #[serde(default, deserialize_with = "crate::template::optional_path")]
    pub path: Option<Template>,
}

/// The slow variant, with how long its handler takes.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlowVariant {
    /// The body template.
    pub body: Template,
    /// The path template (default: the create's).
    #[serde(default, deserialize_with = "crate::template::optional_path")]
    pub path: Option<Template>,
    /// How long the handler takes, e.g. `8s`; where it is written (its errors point there).
    pub takes: Spanned<crate::value::HumanDuration>,
}

impl Variants {
    /// The variant for `role`, as a body and an optional path.
    pub fn get(
        &self,
        role: crate::scenario::BodyVariant,
    ) -> Option<(&Template, Option<&Template>)> {
        use crate::scenario::BodyVariant as B;
        match role {
            B::AlwaysFails => self
                .always_fails
                .as_ref()
                .map(|v| (&v.body, v.path.as_ref())),
            B::FailsOnce => self.fails_once.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Slow | B::SlowIfAny => self.slow.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Hangs => self.hangs.as_ref().map(|v| (&v.body, v.path.as_ref())),
            B::Default | B::Alt => None,
        }
    }
}

impl CreateOp {
    /// An `id_after` is not empty; its error points at `unplaced`, since the field has no
    /// position of its own.
    pub(crate) fn check_id_after(&self, unplaced: &Location, errors: &mut LoadErrors) {
        if self.id_after.as_deref() == Some("") {
            errors.at(
                unplaced,
                "operations.create.id_after is empty: give the text the id follows (e.g. \
                 `/instances/`), or leave it out to take the value at `id` whole",
            );
        }
    }

    /// The rules the create shares with `contract` (its key's place written at `contract_at`,
    /// where the errors point): where the key goes
    /// in a body, the body (of type `body_type`, the create's own `Content-Type` header or its
    /// `content_type`) is of that kind, or the key would be appended to something the API cannot
    /// read; the slow variant outlives the in-flight TTL (or, without one, takes some time).
    pub(crate) fn check_against(
        &self,
        contract: &Contract,
        body_type: &str,
        contract_at: &Location,
        errors: &mut LoadErrors,
    ) {
        let kind = essence(body_type);
        let (place, fits) = match &contract.key_at {
            KeyAt::Form(name) => (
                format!("a form field (`key_at: {{form: {name}}}`)"),
                kind == "application/x-www-form-urlencoded",
            ),
            KeyAt::Json(name) => (
                format!("a JSON member (`key_at: {{json: {name}}}`)"),
                kind.contains("json"),
            ),
            _ => (String::new(), true),
        };
        if !fits {
            errors.at(
                contract_at,
                format!(
                    "contract: the key goes in {place}, but the create's body is `{body_type}`; \
                     give the create a body of that kind (its `content_type`, or a \
                     `Content-Type` in its `headers`), or put the key where the API reads it"
                ),
            );
        }
        if let Some(slow) = &self.variants.slow {
            slow.check_against(contract.in_flight_ttl, errors);
        }
    }
}

impl SlowVariant {
    /// `takes` is longer than the in-flight TTL `ttl` (the slow handler is there to outlive it),
    /// or, with no TTL declared, more than zero.
    fn check_against(&self, ttl: Option<std::time::Duration>, errors: &mut LoadErrors) {
        let (written, takes) = (&self.takes.referenced, self.takes.value.0);
        match ttl {
            Some(t) if takes <= t => errors.at(
                written,
                format!(
                    "operations.create.variants.slow.takes `{}` must be longer than the \
                     contract's in-flight TTL ({}): the slow handler is there to outlive it",
                    humantime::format_duration(takes),
                    humantime::format_duration(t)
                ),
            ),
            None if takes.is_zero() => errors.at(
                written,
                "operations.create.variants.slow.takes must be more than 0s",
            ),
            _ => {}
        }
    }
}
