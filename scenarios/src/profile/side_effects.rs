//! The side-effect probe (`side_effects:`): a GET that makes what happens behind the API (nodes,
//! leases) visible to the checks, with its rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::wire::request_problems;
use crate::load::{LoadErrors, Spanned};
use crate::value::JsonPathExpr;

/// A GET that exposes counters of side effects behind the API (nodes, leases, …).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SideEffectsProbe {
    /// Absolute URL.
    pub url: Spanned<String>,
    /// Headers to send.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Counter name → JSONPath to an integer, e.g. `leases: $.leases`. Every counter must grow by
    /// exactly the number of resources created.
    pub counters: BTreeMap<String, JsonPathExpr>,
}

impl SideEffectsProbe {
    /// The probe's rules: a URL and headers HTTP can use.
    pub(crate) fn check(&self, errors: &mut LoadErrors) {
        for m in request_problems(&self.url.value, &self.headers) {
            errors.at(&self.url.referenced, format!("side_effects: {m}"));
        }
    }
}
