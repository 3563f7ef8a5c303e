//! A situation: one run of the user's command behind a fresh proxy whose rules make the
//! operation's first attempts (or all of them) fail in one planned way; and what was observed.

use std::time::Duration;

use idemspec_proxy::{ProxyConfig, ProxyHandle};
use idemspec_scenarios::client_profile::answers::AnswerKind;
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
    /// Kill the command once the server has done the operation's work (its first attempt is held
    /// by a `hang` fault, so the client never hears back), then run it again without faults: a
    /// process restart. Needs the canned upstream, which says when the work was done.
    pub restart: bool,
    /// Stop the command this long after the operation's first attempt was answered (its exit is
    /// then [`Exit::AtBound`](super::command::Exit::AtBound)), however long it took to send
    /// that attempt: a bound on what it does after an answer, not on its start-up (`deadline`
    /// still bounds the whole run).
    pub after_answer: Option<Duration>,
}

impl Situation {
    /// A situation with these faults.
    pub fn new(name: &'static str, faults: Vec<Planned>) -> Self {
        Self {
            name,
            faults,
            deadline: None,
            restart: false,
            after_answer: None,
        }
    }
}

/// The second run of a restart situation.
#[derive(Debug, Clone)]
pub struct Restarted {
    /// How many of [`CommandRun::attempts`] the first run made; the rest are the second run's.
    pub first_run: usize,
    /// How the second run ended.
    pub output: RunOutput,
}

/// What a run of the command did: the operation's attempts, the other requests it made, how the
/// command ended.
#[derive(Debug, Clone)]
pub struct CommandRun {
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
    /// For a restart situation, the run after the restart (`output` is the first run's).
    pub restarted: Option<Restarted>,
}

impl CommandRun {
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

/// Fault builders that speak the contract and the vendor: the statuses, bodies and `Retry-After`
/// the checks answer with (the profile's `answers`).
impl Ctx {
    /// The fault answering `kind` as the profile's `answers` give it, with a wait of
    /// `retry_after`, if given, in `Retry-After` (or the profile's `retry_after_header`).
    pub fn answer(&self, kind: AnswerKind, retry_after: Option<Duration>) -> Fault {
        let answer = self.profile.answer(kind);
        let mut headers: std::collections::BTreeMap<String, String> =
            answer.headers.into_iter().collect();
        if let Some(wait) = retry_after {
            let (name, value) = self.profile.retry_after_field(wait);
            headers.insert(name, value);
        }
        Fault::Respond {
            status: Status::new(answer.status)
                .expect("an answer's status is validated to 400..=599 at load"),
            body: answer.body,
            content_type: Some(answer.content_type),
            headers: ResponseHeaders::new(headers)
                .expect("an answer's headers are validated at load"),
        }
    }

    /// One fault of `kind` (with `Retry-After` if asked) for `times` attempts, named for the
    /// evidence by its status: `502`, `in-flight 409`, `mismatch 400`, `4xx 422`.
    pub fn planned(&self, kind: AnswerKind, retry_after: bool, times: Times) -> Planned {
        self.planned_wait(kind, retry_after.then(|| self.profile.retry_after()), times)
    }

    /// [`Ctx::planned`] with a wait of `retry_after` rather than the profile's.
    pub fn planned_wait(
        &self,
        kind: AnswerKind,
        retry_after: Option<Duration>,
        times: Times,
    ) -> Planned {
        let fault = self.answer(kind, retry_after);
        let status = match &fault {
            Fault::Respond { status, .. } => status.get(),
            _ => unreachable!("an answer is a `respond` fault"),
        };
        let name = match kind {
            AnswerKind::Mismatch => format!("mismatch {status}"),
            AnswerKind::InFlight => format!("in-flight {status}"),
            AnswerKind::Invalid => format!("4xx {status}"),
            AnswerKind::RateLimited | AnswerKind::Unavailable | AnswerKind::BadGateway => {
                status.to_string()
            }
        };
        Planned { name, fault, times }
    }

    /// A planned fault that is no answer of the profile's (a reset, a dropped response).
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
    /// proxy saw once the command and every one of its connections has ended; for a restart
    /// situation, twice (see [`Situation::restart`]).
    pub async fn run_command(&self, situation: &Situation) -> CommandRun {
        if situation.restart {
            return self.run_restart(situation).await;
        }
        let seen = self
            .once(situation, &self.upstream, std::future::pending())
            .await;
        CommandRun {
            situation: situation.name,
            attempts: seen.attempts,
            others: seen.others,
            output: seen.output,
            faults: situation.faults.clone(),
            restarted: None,
        }
    }

    /// A restart: the first run against a canned upstream of its own, killed as soon as that
    /// upstream has answered the operation (the proxy holds the answer back), then a second run
    /// without faults against the same upstream, in the same working directory.
    async fn run_restart(&self, situation: &Situation) -> CommandRun {
        let not_run = |why: String| CommandRun {
            situation: situation.name,
            attempts: Vec::new(),
            others: Vec::new(),
            output: RunOutput::not_started(why),
            faults: situation.faults.clone(),
            restarted: None,
        };
        if !self.canned {
            return not_run(
                "a restart needs the canned upstream to know when the server did the work; \
                 it was not run against `--upstream`"
                    .into(),
            );
        }
        let upstream = match super::canned::CannedUpstream::start(&self.profile).await {
            Ok(upstream) => upstream,
            Err(e) => return not_run(format!("the canned upstream did not start: {e}")),
        };
        let mut served = upstream.served();
        let done = async move {
            // Closed only with the upstream, which outlives this run.
            if served.wait_for(|n| *n >= 1).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let first = self.once(situation, &upstream.url(), done).await;
        let clean = Situation::new(situation.name, Vec::new());
        let second = self
            .once(&clean, &upstream.url(), std::future::pending())
            .await;
        let first_run = first.attempts.len();
        let mut attempts = first.attempts;
        attempts.extend(second.attempts);
        let mut others = first.others;
        others.extend(second.others);
        CommandRun {
            situation: situation.name,
            attempts,
            others,
            output: first.output,
            faults: situation.faults.clone(),
            restarted: Some(Restarted {
                first_run,
                output: second.output,
            }),
        }
    }

    /// One run of the command behind a fresh proxy to `upstream` with `situation`'s faults,
    /// killed when `stop` is ready.
    pub(super) async fn once(
        &self,
        situation: &Situation,
        upstream: &str,
        stop: impl std::future::Future<Output = ()>,
    ) -> Seen {
        let deadline = situation.deadline.unwrap_or(self.timeout);
        let proxy = match self.proxy(situation, upstream).await {
            Ok(proxy) => proxy,
            Err(e) => {
                return Seen {
                    attempts: Vec::new(),
                    others: Vec::new(),
                    output: RunOutput::not_started(format!("the proxy did not start: {e}")),
                }
            }
        };
        // Under `--tls` the proxy's port speaks only TLS: every event below arrived over it.
        let (scheme, env) = match &self.tls {
            Some(edge) => ("https", edge.env()),
            None => ("http", Vec::new()),
        };
        let base_url = format!("{scheme}://{}", proxy.addr());
        let at_bound = std::sync::atomic::AtomicBool::new(false);
        let answered = async {
            self.after_first_answer(&proxy, situation.after_answer)
                .await;
            at_bound.store(true, std::sync::atomic::Ordering::Relaxed);
        };
        let stop = async move {
            tokio::select! {
                () = stop => {}
                () = answered => {}
            }
        };
        let mut output = command::run_until(&self.command, &base_url, &env, deadline, stop).await;
        if let (true, command::Exit::Stopped, Some(bound)) = (
            at_bound.load(std::sync::atomic::Ordering::Relaxed),
            &output.exit,
            situation.after_answer,
        ) {
            output.exit = command::Exit::AtBound(bound);
        }
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
        Seen {
            attempts,
            others,
            output,
        }
    }

    /// Ready `bound` after `proxy` logged the operation's first answered attempt; never without a
    /// bound. The log is read every 20 ms.
    async fn after_first_answer(&self, proxy: &ProxyHandle, bound: Option<Duration>) {
        let Some(bound) = bound else {
            return std::future::pending().await;
        };
        let operation = self.profile.operation();
        let mut seen = 0;
        loop {
            let events = proxy.events_since(seen);
            if events
                .iter()
                .any(|e| is_operation(&operation, &e.method, &e.path) && e.client_status.is_some())
            {
                break;
            }
            seen = events.last().map_or(seen, |e| e.seq);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(bound).await;
    }

    async fn proxy(
        &self,
        situation: &Situation,
        upstream: &str,
    ) -> Result<ProxyHandle, idemspec_proxy::ProxyError> {
        idemspec_proxy::start(ProxyConfig {
            upstream: upstream.trim_end_matches('/').to_owned(),
            rules: self.rules(situation),
            key_at: self.contract.key_at.clone(),
            listen_tls: self.tls.as_ref().map(|edge| edge.server_config()),
            // The command has ended when the proxy stops; a held request must not hold the check.
            shutdown_grace: Duration::from_millis(100),
            ..ProxyConfig::default()
        })
        .await
    }
}

/// What one run of the command showed.
pub(super) struct Seen {
    /// The operation's attempts, in the order sent.
    pub attempts: Vec<Attempt>,
    /// Every other request, as `METHOD PATH`.
    pub others: Vec<String>,
    /// How the command ended.
    pub output: RunOutput,
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
