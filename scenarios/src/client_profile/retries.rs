//! The bounds on a client's retries in a client profile: when it must have given up
//! (`gives_up:`), and the header the faults' wait travels in (`retry_after_header:`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::load::{LoadErrors, Spanned};
use crate::profile::check_header;
use crate::value::HumanDuration;

/// The header a vendor sends its wait in, and the wait's unit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryAfterHeader {
    /// The header's name (`Retry-After`, `x-ms-retry-after-ms`).
    pub name: String,
    /// Whole seconds (`s`, default) or milliseconds (`ms`).
    #[serde(default)]
    pub unit: WaitUnit,
}

impl RetryAfterHeader {
    /// Why it cannot carry the faults' wait, in words: a name HTTP cannot carry, a header that
    /// frames the message, or `Retry-After` counted in milliseconds.
    pub(super) fn problem(&self) -> Option<String> {
        let problem = check_header(&self.name, "1").err().or_else(|| {
            let lower = self.name.to_ascii_lowercase();
            [
                "content-type",
                "content-length",
                "transfer-encoding",
                "connection",
            ]
            .contains(&lower.as_str())
            .then(|| format!("`{}` frames the message; it cannot carry a wait", self.name))
        });
        problem.or_else(|| {
            (self.name.eq_ignore_ascii_case("retry-after") && self.unit == WaitUnit::Milliseconds)
                .then(|| {
                    "`Retry-After` counts whole seconds (RFC 9110 §10.2.3); a wait in \
                     milliseconds travels in a vendor's own header"
                        .to_owned()
                })
        })
    }
}

/// The unit a wait header counts in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum WaitUnit {
    /// Whole seconds, as `Retry-After`'s delay-seconds.
    #[default]
    #[serde(rename = "s")]
    Seconds,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Milliseconds,
}

/// The bound on retries (the `bounded-retries` check).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GivesUpSpec {
    /// At most this many attempts of one operation (default 10, 1 to 1000).
    #[serde(default)]
    pub after_attempts: Option<Spanned<u32>>,
    /// …and an exit within this long (default: the run's `timeout`, which it may not exceed).
    #[serde(default)]
    pub within: Option<Spanned<HumanDuration>>,
}

impl GivesUpSpec {
    /// 1 to 1000 attempts, and an exit within the run's `timeout`.
    pub(super) fn check(&self, timeout: Duration, errors: &mut LoadErrors) {
        if let Some(n) = &self.after_attempts {
            if !(1..=1000).contains(&n.value) {
                errors.at(
                &n.referenced,
                format!(
                    "gives_up.after_attempts: {} is out of range; expected 1 to 1000 (1: a client that never retries)",
                    n.value
                ),
            );
            }
        }
        if let Some(within) = &self.within {
            if within.value.0 > timeout {
                errors.at(
                &within.referenced,
                format!(
                    "gives_up.within: `{}` is longer than the run's timeout `{}`; a run is killed at its timeout",
                    humantime::format_duration(within.value.0),
                    humantime::format_duration(timeout)
                ),
            );
            }
        }
    }
}
