//! What a run is asked to do, and what can stop it before any check runs.

use std::time::Duration;

use idemspec_scenarios::profile::TargetProfile;
use idemspec_scenarios::scenario::Scenario;
use idemspec_scenarios::LoadError;

/// The API under test.
#[derive(Debug, Clone)]
pub enum Target {
    /// A user's API, described by a loaded profile.
    Profile(Box<TargetProfile>),
    /// The bundled leasebroker, started as a child process (`idemspec run --reference`).
    Reference(crate::reference::ReferenceOptions),
}

/// Everything [`run`](super::run) needs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The API under test.
    pub target: Target,
    /// Scenarios to run besides (or instead of) the built-in catalogue, already loaded.
    pub scenarios: Vec<Scenario>,
    /// Whether the built-in catalogue runs (default `true`).
    pub builtin: bool,
    /// Run only these check ids (empty: all). An id that matches nothing is a usage error.
    pub only: Vec<String>,
    /// Skip these check ids.
    pub skip: Vec<String>,
    /// How many checks may run at once (default 8; `--jobs`), capped by the profile's
    /// `checks_at_once`. A check that disturbs the others (a crash
    /// until the target is back; `fail_next`, side-effect counters or `exclusive: true`
    /// throughout) runs alone regardless.
    pub parallelism: usize,
    /// How long one check may run (default [`RunOptions::CHECK_TIMEOUT`]); a check still running
    /// then is UNKNOWN, naming the deadline.
    pub check_timeout: Duration,
    /// How long the whole run may take (default [`RunOptions::RUN_TIMEOUT`]); checks that would
    /// run after it are UNKNOWN.
    pub run_timeout: Duration,
    /// How long an in-flight lockout is measured where the contract declares no in-flight TTL
    /// (default [`RunOptions::LOCKOUT_BOUND`]); a key still locked then is reported, with the
    /// time, at SHOULD level.
    pub lockout_bound: Duration,
}

impl RunOptions {
    /// Default deadline of one check: 5 minutes, well beyond the longest built-in check
    /// (`stuck-in-flight`: the declared in-flight TTL plus 10 s).
    pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5 * 60);
    /// Default deadline of a run: 1 hour.
    pub const RUN_TIMEOUT: Duration = Duration::from_secs(60 * 60);
    /// Default lockout bound: 60 s, a minute past which a key locked by a crashed request is a
    /// lockout a client notices (the article recommends an in-flight TTL of minutes at most).
    pub const LOCKOUT_BOUND: Duration = Duration::from_secs(60);

    /// Options running the built-in catalogue against `target`.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            scenarios: Vec::new(),
            builtin: true,
            only: Vec::new(),
            skip: Vec::new(),
            parallelism: 8,
            check_timeout: Self::CHECK_TIMEOUT,
            run_timeout: Self::RUN_TIMEOUT,
            lockout_bound: Self::LOCKOUT_BOUND,
        }
    }
}

/// What stops a run before (or instead of) verdicts. A FAIL verdict is never an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A profile or scenario did not load (exit code 2).
    #[error("load configuration")]
    Config(#[from] LoadError),
    /// `--only`/`--skip` named no check, or left none; or two scenarios share an id (exit code
    /// 2).
    #[error(transparent)]
    Select(#[from] crate::engine::SelectError),
    /// The bundled reference server could not be started.
    #[error("start the reference server")]
    Reference(#[source] crate::reference::ReferenceError),
    /// The target the profile's `process` describes could not be started (exit code 2).
    #[error("start the target")]
    Target(#[source] crate::target_process::TargetProcessError),
    /// The profile's TLS files (CA, a principal's certificate or key) could not be used (exit
    /// code 2).
    #[error("set up TLS from the profile")]
    Tls(#[source] idemspec_tls::TlsError),
    /// The embedded proxy could not be started.
    #[error("start the fault-injecting proxy")]
    Proxy(#[source] std::io::Error),
    /// A base URL did not answer, or did not answer a principal's list with a 2xx the profile's
    /// `list` can read, before any check ran (exit code 3).
    #[error("reach the target at {url}: {reason}")]
    TargetUnreachable {
        /// The base URL tried.
        url: String,
        /// What went wrong.
        reason: Unreachable,
    },
}

/// Why the target could not be used before any check ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// Nothing answered: refused, reset, timed out.
    #[error("{0}")]
    Silent(String),
    /// The API answered a principal's list with something other than a 2xx: the profile's path
    /// or credentials do not work with it.
    #[error(
        "{path} as principal `{principal}` answered {answer}; check the profile's \
         `operations.list` and the principal's {credentials}"
    )]
    Answered {
        /// The list request's method, path and query (`GET /v1/workers?label=x`).
        path: String,
        /// The principal it was sent as.
        principal: String,
        /// The status (and problem type) it answered.
        answer: String,
        /// What of the principal carries its credentials: `headers`, the cookie its `login` or
        /// `session` opened, or its signature (`sign`), the API's refusal named.
        credentials: String,
    },
    /// The TLS handshake failed before any check: the cause in words, with what to do (set
    /// `tls.ca_file`, `tls.server_name`, `principals[].tls`; use `http://`).
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// A principal's session could not be opened: its `login`, or the first answer its `session`
    /// names, got no 2xx, or set no cookie.
    #[error("{0}")]
    Session(String),
    /// The API answered a principal's list with a 2xx that the profile's `list` cannot read: not
    /// JSON (another service on that port, a welcome page), or no node where `items` looks.
    #[error(
        "{path} as principal `{principal}` answered {status}, but {why}; check the profile's \
         `base_urls` and `operations.list`"
    )]
    Unreadable {
        /// The list request's method, path and query (`GET /v1/workers?label=x`).
        path: String,
        /// The principal it was sent as.
        principal: String,
        /// The status it answered.
        status: u16,
        /// What in the body the profile's `list` cannot read.
        why: String,
    },
}
