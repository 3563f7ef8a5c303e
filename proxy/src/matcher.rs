//! Rule matching: which rule (if any) applies to a request or a connection.
//!
//! A compiled rule pairs the rule's settings (shared, immutable, from `idemspec_scenarios`) with
//! its counters ([`Gate`]): how many requests satisfied its conditions (for `nth`), its own seeded
//! random sequence (for `probability`, advanced exactly once per such request, so a run replays
//! exactly), and how often it applied (for `times`). Replacing the rule set builds fresh counters;
//! adding a rule keeps the others'.

use std::sync::{Arc, Mutex};

use globset::GlobMatcher;
use http::request::Parts;
use idemspec_scenarios::rules::{duplicate_name, Match, Rule, TcpMatch, TcpRule};

use crate::error::ProxyError;

/// SplitMix64: a tiny, fixed, portable generator, so a seed means the same choices on every
/// platform and every version of this crate (unlike `rand`'s `StdRng`).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in `[0, 1)`.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The counting part of a rule: `nth`, `probability` + `seed`, `times`.
#[derive(Debug)]
pub(crate) struct Gate {
    nth: Option<u64>,
    probability: Option<f64>,
    seed: u64,
    times: Option<u64>,
    state: Mutex<GateState>,
}

#[derive(Debug)]
struct GateState {
    matched: u64,
    applied: u64,
    rng: SplitMix64,
}

impl Gate {
    fn new(
        nth: Option<u64>,
        probability: Option<f64>,
        seed: Option<u64>,
        times: Option<u64>,
    ) -> Self {
        let seed = seed.unwrap_or(0);
        Self {
            nth,
            probability,
            seed,
            times,
            state: Mutex::new(GateState {
                matched: 0,
                applied: 0,
                rng: SplitMix64::new(seed),
            }),
        }
    }

    /// Called once per request that satisfied the rule's conditions: does the rule apply to it?
    pub(crate) fn admit(&self) -> bool {
        let mut s = self.state.lock().expect("gate lock is never poisoned");
        s.matched += 1;
        // Draw for every matching request, so the k-th request always gets the k-th draw.
        let draw = self.probability.map(|_| s.rng.next_f64());
        if self.nth.is_some_and(|n| s.matched != n) {
            return false;
        }
        if let (Some(p), Some(draw)) = (self.probability, draw) {
            if draw >= p {
                return false;
            }
        }
        if self.times.is_some_and(|t| s.applied >= t) {
            return false;
        }
        s.applied += 1;
        true
    }

    /// Back to the initial counters and the start of the seeded sequence.
    pub(crate) fn reset(&self) {
        let mut s = self.state.lock().expect("gate lock is never poisoned");
        s.matched = 0;
        s.applied = 0;
        s.rng = SplitMix64::new(self.seed);
    }

    /// A generator for in-fault randomness (TCP jitter), seeded from the rule.
    pub(crate) fn jitter_rng(&self) -> SplitMix64 {
        let mut s = self.state.lock().expect("gate lock is never poisoned");
        SplitMix64::new(s.rng.next_u64() ^ self.seed.rotate_left(17))
    }
}

fn invalid(rule: &str, reason: String) -> ProxyError {
    ProxyError::InvalidRule {
        rule: rule.to_owned(),
        reason,
    }
}

/// Rejects a list in which two rules share a name: events name the rule that applied.
pub(crate) fn unique_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), ProxyError> {
    match duplicate_name(names) {
        Some((index, name)) => Err(ProxyError::DuplicateRuleName {
            name: name.to_owned(),
            index,
        }),
        None => Ok(()),
    }
}

/// An HTTP rule ready to match.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    pub(crate) rule: Rule,
    glob: Option<GlobMatcher>,
    pub(crate) gate: Gate,
}

impl CompiledRule {
    /// Compiles `rule`, after the checks its schema makes while parsing (a rule built in code
    /// skipped them).
    pub(crate) fn new(rule: Rule) -> Result<Self, ProxyError> {
        rule.check().map_err(|reason| invalid(&rule.name, reason))?;
        let m = &rule.matcher;
        let glob = match &m.path_glob {
            Some(g) => Some(
                globset::GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| invalid(&rule.name, e.to_string()))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let gate = Gate::new(
            m.nth.map(|n| n.get()),
            m.probability.map(|p| p.get()),
            m.seed,
            rule.times.map(|t| t.get()),
        );
        Ok(Self { rule, glob, gate })
    }

    /// Whether `req` satisfies the rule's conditions (not counting nth/probability/times);
    /// `key`: the request's idempotency key where the proxy found it
    /// ([`crate::ProxyConfig::key_at`]), which `idempotency_key` is compared with.
    fn matches(&self, req: &impl RequestView, key: Option<&str>) -> bool {
        let m: &Match = &self.rule.matcher;
        let path = req.path();
        m.method.as_ref().is_none_or(|x| x.as_str() == req.method())
            && m.path.as_ref().is_none_or(|p| p == path)
            && m.path_prefix
                .as_ref()
                .is_none_or(|p| path.starts_with(p.as_str()))
            && self.glob.as_ref().is_none_or(|g| g.is_match(path))
            && m.header.as_ref().is_none_or(|h| {
                let value = req.header(&h.name);
                match (&h.equals, value) {
                    (_, None) => false,
                    (None, Some(_)) => true,
                    (Some(want), Some(v)) => v == want.as_bytes(),
                }
            })
            && m.idempotency_key
                .as_ref()
                .is_none_or(|k| key == Some(k.as_str()))
    }
}

/// What a rule's conditions read of a request: hyper's parsed head ([`Parts`]) on hyper's path,
/// the `httparse` head on the fast path, so that both judge a request the same way.
pub(crate) trait RequestView {
    /// The method as sent (`POST`).
    fn method(&self) -> &str;
    /// The path of the request-target, without the query (`/v1/workers`).
    fn path(&self) -> &str;
    /// The first value of header `name` (given lowercase, compared case-insensitively), as sent.
    fn header(&self, name: &str) -> Option<&[u8]>;
}

impl RequestView for Parts {
    fn method(&self) -> &str {
        self.method.as_str()
    }

    fn path(&self) -> &str {
        self.uri.path()
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.get(name).map(|v| v.as_bytes())
    }
}

/// The HTTP rules in order; immutable once built (replaced as a whole, so a request keeps the rule
/// it matched even if the set changes under it).
#[derive(Debug, Default)]
pub(crate) struct RuleSet {
    pub(crate) rules: Vec<Arc<CompiledRule>>,
}

impl RuleSet {
    /// Compiles `rules`. Errors: a rule breaks its schema, or two share a name.
    pub(crate) fn compile(rules: Vec<Rule>) -> Result<Self, ProxyError> {
        unique_names(rules.iter().map(|r| r.name.as_str()))?;
        let rules = rules
            .into_iter()
            .map(|r| CompiledRule::new(r).map(Arc::new))
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// The first rule that applies to `req`, advancing the counters of every rule whose
    /// conditions it satisfied along the way. `key`: the request's idempotency key, which a
    /// rule's `idempotency_key` is compared with.
    pub(crate) fn select(
        &self,
        req: &impl RequestView,
        key: Option<&str>,
    ) -> Option<Arc<CompiledRule>> {
        self.rules
            .iter()
            .find(|r| r.matches(req, key) && r.gate.admit())
            .cloned()
    }

    /// Whether any rule's conditions hold for `req`, touching no counter. When none hold, no
    /// rule can apply to it whatever the counters say, and [`RuleSet::select`] would only have
    /// returned `None`: the request passes through, and the fast path may forward it itself.
    pub(crate) fn may_apply(&self, req: &impl RequestView, key: Option<&str>) -> bool {
        self.rules.iter().any(|r| r.matches(req, key))
    }

    pub(crate) fn to_rules(&self) -> Vec<Rule> {
        self.rules.iter().map(|r| r.rule.clone()).collect()
    }
}

/// A TCP rule ready to match.
#[derive(Debug)]
pub(crate) struct CompiledTcpRule {
    pub(crate) rule: TcpRule,
    pub(crate) gate: Gate,
}

/// The TCP rules in order.
#[derive(Debug, Default)]
pub(crate) struct TcpRuleSet {
    pub(crate) rules: Vec<Arc<CompiledTcpRule>>,
}

impl TcpRuleSet {
    /// Compiles `rules`. Errors: a rule breaks its schema, or two share a name.
    pub(crate) fn compile(rules: Vec<TcpRule>) -> Result<Self, ProxyError> {
        unique_names(rules.iter().map(|r| r.name.as_str()))?;
        let rules = rules
            .into_iter()
            .map(|rule| {
                rule.check().map_err(|reason| invalid(&rule.name, reason))?;
                let m: &TcpMatch = &rule.matcher;
                let gate = Gate::new(
                    m.nth.map(|n| n.get()),
                    m.probability.map(|p| p.get()),
                    m.seed,
                    rule.times.map(|t| t.get()),
                );
                Ok(Arc::new(CompiledTcpRule { rule, gate }))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// The first rule that applies to a new connection.
    pub(crate) fn select(&self) -> Option<Arc<CompiledTcpRule>> {
        self.rules.iter().find(|r| r.gate.admit()).cloned()
    }

    pub(crate) fn to_rules(&self) -> Vec<TcpRule> {
        self.rules.iter().map(|r| r.rule.clone()).collect()
    }
}

#[cfg(test)]
mod tests;
