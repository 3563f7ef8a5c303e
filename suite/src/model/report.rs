//! The whole result of a run, as every report file renders it.

use serde::{Deserialize, Serialize};

use super::{CheckOutcome, RunStats};

/// The whole result of a run, as the JSON report serialises it (with a `version` field).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Schema version of this report; bumped on incompatible changes.
    pub version: u32,
    /// The target profile's name.
    pub target: String,
    /// The contract preset the verdicts were judged against, e.g. `article`.
    pub contract: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time of the whole run, in ms.
    pub duration_ms: u64,
    /// One outcome per check, in run order.
    pub checks: Vec<CheckOutcome>,
    /// Counts per verdict.
    pub stats: RunStats,
    /// The log of a target idemspec started itself (the profile's `process`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_log: Option<String>,
    /// How the target was reached over TLS: one entry per `https://` base URL, from the handshake
    /// before any check (none for a plain-HTTP target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tls: Vec<TlsReached>,
    /// How `idemspec client --tls` served the command over TLS (none for plain HTTP or `run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_tls: Option<TlsServed>,
    /// Warnings about the whole run that every report format shows above the checks: that the
    /// target's certificates went unverified ([`RunReport::UNVERIFIED_WARNING`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One `https://` base URL as its TLS handshake before the checks found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsReached {
    /// The base URL.
    pub url: String,
    /// The protocol version agreed, e.g. `TLS 1.3`.
    pub version: String,
    /// The subject of the certificate the target presented, e.g. `CN=api.internal`.
    pub subject: String,
    /// Its issuer, e.g. `CN=idemspec throwaway CA`.
    pub issuer: String,
}

impl TlsReached {
    /// The line every report format shows: `reached https://… over TLS 1.3, certificate CN=…
    /// (issuer CN=…)`.
    pub fn line(&self) -> String {
        format!(
            "reached {} over {}, certificate {} (issuer {})",
            self.url, self.version, self.subject, self.issuer
        )
    }
}

/// How `idemspec client --tls` served the command: every situation's proxy spoke only TLS on its
/// port (plain HTTP sent to it is refused, never proxied), so every request the checks judged
/// arrived over TLS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsServed {
    /// The base URL's scheme and host, e.g. `https://127.0.0.1` (each situation its own port).
    pub url: String,
    /// The names the certificate holds, e.g. `127.0.0.1`, `localhost`.
    pub names: Vec<String>,
    /// The environment variables that handed the command the throwaway CA's file.
    pub variables: Vec<String>,
}

impl TlsServed {
    /// The line every report format shows: `served the command over TLS at https://127.0.0.1
    /// (…), a certificate for 127.0.0.1, localhost from a throwaway CA made for the run, its file
    /// in SSL_CERT_FILE, …`.
    pub fn line(&self) -> String {
        format!(
            "served the command over TLS at {} (a port per situation), a certificate for {} from a \
             throwaway CA made for the run, its file in {}",
            self.url,
            self.names.join(", "),
            self.variables.join(", ")
        )
    }
}

impl RunReport {
    /// The schema version this build writes in [`RunReport::version`]; bumped on incompatible
    /// changes (fields are only ever added within a version; `docs/reading-reports.md`).
    pub const VERSION: u32 = 1;

    /// The warning every report format shows when the target's certificates were not verified.
    pub const UNVERIFIED_WARNING: &'static str = "WARNING: TLS certificates were NOT verified \
         (`tls.insecure_skip_verify: true`): anyone on the path could have answered for the target";

    /// The lines every report format shows above the checks: the run's [`warnings`] first, then
    /// one line per `https://` base URL reached ([`TlsReached::line`]), then how the command was
    /// served over TLS ([`TlsServed::line`]).
    ///
    /// [`warnings`]: RunReport::warnings
    pub fn header_lines(&self) -> Vec<String> {
        self.warnings
            .iter()
            .cloned()
            .chain(self.tls_lines())
            .collect()
    }

    /// The header's TLS lines: each `https://` base URL reached, then how the command was served.
    pub fn tls_lines(&self) -> Vec<String> {
        let reached = self.tls.iter().map(TlsReached::line);
        let served = self.served_tls.iter().map(TlsServed::line);
        reached.chain(served).collect()
    }
}
