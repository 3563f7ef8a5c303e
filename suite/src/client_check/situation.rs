//! A situation: one run of the user's command behind a fresh proxy whose rules make the
//! operation's first attempts (or all of them) fail in one planned way; and what was observed.

use std::time::Duration;

use idemspec_proxy::{ProxyConfig, ProxyHandle};
use idemspec_scenarios::rules::{Count, Fault, Match, ResponseHeaders, Rule, Status};

use super::attempt::{is_operation, Attempt};
use super::command::{self, RunOutput};
use super::Ctx;

/// How often a planned fault applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// To this many attempts, after those the faults before it took.
    First(u64),
    /// To every attempt: a permanent answer.
    Always,
}

/// One fault of a situation, with a name for the evidence (`in-flight 409`).
#[derive(Debug, Clone)]
pub struct Planned {
    /// What the evidence calls it.
    pub name: String,
    /// What the proxy does.
    pub fault: Fault,
    /// To which attempts.
    pub times: Times,
}

/// One run of the command under planned faults.
#[derive(Debug, Clone)]
pub struct Situation {
    /// Its name in the evidence, e.g. `lost-response`.
    pub name: &'static str,
    /// The faults, in the order they apply to the operation's attempts.
    pub faults: Vec<Planned>,
    /// A shorter deadline than the profile's timeout (`bounded-retries` kills at its bound).
    pub deadline: Option<Duration>,
}

impl Situation {
    /// A situation with these faults.
    pub fn new(name: &'static str, faults: Vec<Planned>) -> Self {
        Self {
            name,
            faults,
            deadline: None,
        }
    }
}

/// What a run of the command did: the operation's attempts, the other requests it made, how the
/// command ended.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The situation's name.
    pub situation: &'static str,
    /// The operation's attempts, in the order they were sent.
    pub attempts: Vec<Attempt>,
    /// Every other request, as `METHOD PATH`.
    pub others: Vec<String>,
    /// The command's exit, time and output.
    pub output: RunOutput,
    /// The faults that were planned, to describe what each attempt was answered.
    pub faults: Vec<Planned>,
}

impl Observed {
    /// Whether the command made at least one attempt of the operation.
    pub fn attempted(&self) -> bool {
        !self.attempts.is_empty()
    }

    /// Whether the client retried (sent the operation more than once).
    pub fn retried(&self) -> bool {
        self.attempts.len() > 1
    }

    /// The planned fault named `name`.
    pub fn planned(&self, name: &str) -> Option<&Planned> {
        self.faults.iter().find(|p| p.name == name)
    }
}

/// Fault builders that speak the contract: the statuses, bodies and `Retry-After` the checks
/// answer with.
impl Ctx {
    /// A synthetic answer `status` with a problem body of `kind` and, if asked, `Retry-After`.
    pub fn answer(&self, status: u16, kind: &str, title: &str, retry_after: bool) -> Fault {
        let mut headers = std::collections::BTreeMap::new();
        if retry_after {
            headers.insert(
                "Retry-After".to_owned(),
                self.profile.retry_after().as_secs().to_string(),
            );
        }
        Fault::Respond {
            status: Status::new(status).expect("the checks answer with statuses in 100..=599"),
            body: serde_json::json!({
                "type": format!("https://idemspec.dev/problems/{kind}"),
                "title": title,
                "status": status,
                "detail": format!("idemspec answered {status} on purpose ({kind})"),
            })
            .to_string(),
            content_type: Some("application/problem+json".into()),
            headers: ResponseHeaders::new(headers).expect("Retry-After with digits is valid"),
        }
    }

    /// A 503 (`Service Unavailable`), with or without `Retry-After`.
    pub fn unavailable(&self, retry_after: bool) -> Fault {
        self.answer(503, "unavailable", "Service Unavailable", retry_after)
    }

    /// A 502 (`Bad Gateway`): the gateway error more clients retry than any other status.
    pub fn bad_gateway(&self) -> Fault {
        self.answer(502, "bad-gateway", "Bad Gateway", false)
    }

    /// The contract's in-flight conflict (409), with `Retry-After`.
    pub fn in_flight(&self) -> Fault {
        let status = self
            .contract
            .in_flight_status
            .first()
            .copied()
            .unwrap_or(409);
        self.answer(
            status,
            "request-in-progress",
            "A request with this key is in progress",
            true,
        )
    }

    /// The contract's mismatch answer (409 under `article`, 422 `ietf-draft`, 400 `stripe-v1`).
    pub fn mismatch(&self) -> Fault {
        let status = self
            .contract
            .mismatch_status
            .first()
            .copied()
            .unwrap_or(409);
        self.answer(
            status,
            "key-reused-with-different-request",
            "The key was used with a different request",
            false,
        )
    }

    /// A permanent 4xx that is neither the mismatch nor the in-flight status: 400, else 422.
    pub fn permanent_4xx(&self) -> Fault {
        let taken = |s: &u16| {
            self.contract.mismatch_status.contains(s) || self.contract.in_flight_status.contains(s)
        };
        let status = [400, 422, 404]
            .into_iter()
            .find(|s| !taken(s))
            .unwrap_or(404);
        self.answer(status, "invalid-request", "The request is invalid", false)
    }

    /// A planned fault.
    pub fn plan(&self, name: &str, fault: Fault, times: Times) -> Planned {
        Planned {
            name: name.to_owned(),
            fault,
            times,
        }
    }

    /// The proxy rules of `situation`, each matching the operation's method and path.
    fn rules(&self, situation: &Situation) -> Vec<Rule> {
        let operation = self.profile.operation();
        let mut matcher = Match {
            method: Some(operation.method.clone()),
            ..Match::default()
        };
        // With or without a trailing slash, as `attempt::is_operation` reads the path.
        match operation
            .path
            .as_deref()
            .map(super::attempt::without_trailing_slash)
        {
            Some("/") => matcher.path = Some("/".into()),
            Some(bare) => matcher.path_glob = Some(path_glob(bare)),
            None => {}
        }
        situation
            .faults
            .iter()
            .map(|planned| Rule {
                name: planned.name.clone(),
                matcher: matcher.clone(),
                fault: planned.fault.clone(),
                times: match planned.times {
                    Times::First(n) => Count::new(n),
                    Times::Always => None,
                },
            })
            .collect()
    }

    /// Runs the command once behind a fresh proxy with `situation`'s faults, and reads what the
    /// proxy saw once the command and every one of its connections has ended.
    pub async fn observe(&self, situation: &Situation) -> Observed {
        let deadline = situation.deadline.unwrap_or(self.timeout);
        let proxy = match self.proxy(situation).await {
            Ok(proxy) => proxy,
            Err(e) => {
                return Observed {
                    situation: situation.name,
                    attempts: Vec::new(),
                    others: Vec::new(),
                    output: RunOutput {
                        exit: command::Exit::NotStarted(format!("the proxy did not start: {e}")),
                        started: time::OffsetDateTime::now_utc(),
                        elapsed: Duration::ZERO,
                        stdout: String::new(),
                        stderr: String::new(),
                    },
                    faults: situation.faults.clone(),
                }
            }
        };
        let base_url = format!("http://{}", proxy.addr());
        let output = command::run(&self.command, &base_url, deadline).await;
        // A shutdown releases held (`hang`) exchanges and waits for the rest, so every attempt's
        // event is in the log when it returns.
        proxy.shutdown().await;
        let operation = self.profile.operation();
        let mut attempts = Vec::new();
        let mut others = Vec::new();
        for event in proxy.events() {
            if is_operation(&operation, &event.method, &event.path) {
                attempts.push(Attempt::from_event(&event));
            } else {
                others.push(format!("{} {}", event.method, event.path));
            }
        }
        // The log is in order of completion; attempts are read in order of sending.
        attempts.sort_by_key(|a| a.start);
        Observed {
            situation: situation.name,
            attempts,
            others,
            output,
            faults: situation.faults.clone(),
        }
    }

    async fn proxy(
        &self,
        situation: &Situation,
    ) -> Result<ProxyHandle, idemspec_proxy::ProxyError> {
        idemspec_proxy::start(ProxyConfig {
            upstream: self.upstream.trim_end_matches('/').to_owned(),
            rules: self.rules(situation),
            key_at: self.contract.key_at.clone(),
            // The command has ended when the proxy stops; a held request must not hold the check.
            shutdown_grace: Duration::from_millis(100),
            ..ProxyConfig::default()
        })
        .await
    }
}

/// The proxy's glob for the operation's path `bare` (no trailing slash), with or without one:
/// literal but for `*` (one segment), a `,` kept out of the alternation.
fn path_glob(bare: &str) -> String {
    let bare = globset::escape(bare)
        .replace("[*]", "*")
        .replace(',', "[,]");
    format!("{{{bare},{bare}/}}")
}

#[cfg(test)]
mod tests {
    use super::path_glob;

    /// Compiled as the proxy compiles a rule's `path_glob` (`*` does not cross `/`).
    fn matches(pattern: &str, path: &str) -> bool {
        globset::GlobBuilder::new(&path_glob(pattern))
            .literal_separator(true)
            .build()
            .expect("a glob")
            .compile_matcher()
            .is_match(path)
    }

    #[test]
    fn the_operations_glob_takes_a_trailing_slash_and_nothing_else() {
        assert!(matches("/v1/workers", "/v1/workers"));
        assert!(matches("/v1/workers", "/v1/workers/"));
        assert!(!matches("/v1/workers", "/v1/workers/x"));
        assert!(matches("/v1/servers/*/actions", "/v1/servers/s1/actions/"));
        assert!(!matches("/v1/servers/*/actions", "/v1/servers/a/b/actions"));
        // Characters a glob would read are literal in a path.
        assert!(matches("/v1/a,b[1]{x}?", "/v1/a,b[1]{x}?"));
        assert!(!matches("/v1/a,b", "/v1/a"));
        assert!(!matches("/v1/a?", "/v1/ab"));
    }
}
