//! What `idemspec client` is asked to run ([`ClientOptions`]), why it may refuse ([`ClientError`]),
//! and what every check of the run shares ([`Ctx`]).

use std::time::Duration;

use idemspec_scenarios::client_profile::ClientProfile;
use idemspec_scenarios::profile::{Contract, KeyAt};

use super::tls_edge::TlsEdge;
use crate::engine::SelectError;

/// What `idemspec client` runs.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The client profile (loaded, validated).
    pub profile: ClientProfile,
    /// The command that performs the profile's operations through the client, run with `sh -c`.
    pub command: String,
    /// A real upstream to forward to instead of the canned one (`http://host:port[/prefix]`, or
    /// `https://`, trusted by the platform's roots).
    pub upstream: Option<String>,
    /// Serve the command over TLS (`--tls`, or the profile's `tls: true`): a throwaway CA per run,
    /// handed to the command in [`CA_VARIABLES`](super::tls_edge::CA_VARIABLES), the base URL
    /// `https://127.0.0.1:PORT`.
    pub tls: bool,
    /// Run only these checks (empty: all).
    pub only: Vec<String>,
    /// Do not run these checks.
    pub skip: Vec<String>,
    /// One run's deadline, overriding the profile's `timeout`.
    pub timeout: Option<Duration>,
    /// How many runs of the command (situations, of any check) go on at once. Each situation has
    /// a proxy of its own and judges only its own attempts' timing, so they may overlap; a loaded
    /// machine only lengthens delays, and every timing rule is a lower bound or a wide margin.
    pub parallelism: usize,
}

impl ClientOptions {
    /// Options running every check of `profile` with `command`, eight runs at a time, over TLS
    /// when the profile says `tls: true`.
    pub fn new(profile: ClientProfile, command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            upstream: None,
            tls: profile.tls(),
            only: Vec::new(),
            skip: Vec::new(),
            timeout: None,
            parallelism: 8,
            profile,
        }
    }
}

/// Why a client run could not start (its checks' findings are data, never errors).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `--only` or `--skip` named no client check, or left none.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// The canned upstream could not listen.
    #[error("start the canned upstream on 127.0.0.1")]
    Upstream(#[source] std::io::Error),
    /// `--tls`: the throwaway CA, its certificate or the CA's file could not be made.
    #[error("serve the command over TLS (--tls)")]
    Tls(#[source] idemspec_tls::TlsError),
    /// The contract's key header is not an HTTP field name.
    #[error("use `{0}` as the key header: it is not an HTTP field name")]
    KeyHeader(String),
}

/// What every check of a run shares: the profile, its contract, the command, where the proxies
/// forward to.
#[derive(Debug)]
pub struct Ctx {
    /// The client profile.
    pub profile: ClientProfile,
    /// Its resolved contract.
    pub contract: Contract,
    /// The command line.
    pub command: String,
    /// Where each situation's proxy forwards (the canned upstream or the user's).
    pub upstream: String,
    /// Whether `upstream` is the canned one (so its responses are known).
    pub canned: bool,
    /// One run's deadline.
    pub timeout: Duration,
    /// The TLS the command is served with (`--tls`); `None`: plain HTTP.
    pub tls: Option<TlsEdge>,
}

impl Ctx {
    /// `POST /v1/workers`, or `POST (any path)`.
    pub fn operation_label(&self) -> String {
        let op = self.profile.operation();
        format!(
            "{} {}",
            op.method,
            op.path.as_deref().unwrap_or("(any path)")
        )
    }

    /// The headers and body a passed-through attempt was answered with, as far as idemspec
    /// knows them.
    pub fn success_as_sent(&self) -> (Vec<(String, String)>, String) {
        if !self.canned {
            return (Vec::new(), "(the upstream's)".into());
        }
        let mut headers = self.profile.headers();
        headers.push(("Content-Type".into(), self.profile.content_type().into()));
        (headers, self.profile.body().to_owned())
    }

    /// Where the key goes, for sentences: `` `Idempotency-Key` `` for a header, else
    /// "the JSON member `clientToken`" and the like.
    pub fn key_words(&self) -> String {
        match &self.contract.key_at {
            KeyAt::Header(name) => format!("`{name}`"),
            at => at.describe(),
        }
    }
}
