//! The fixed assertion vocabulary. Each `assert:` entry names exactly one kind; an unknown kind is a
//! located error (`unknown field`, with the list of known ones).

use serde::{Deserialize, Deserializer, Serialize};

use super::{Level, Within};

/// A status a response may have: an exact code (`201`), a class (`2xx`), or a set the contract
/// declares (`mismatch`, `in_flight`, `missing_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StatusPattern {
    /// Exactly this code.
    Exact(u16),
    /// The class `N`xx (1..=5).
    Class(u8),
    /// The contract's `mismatch_status`.
    Mismatch,
    /// The contract's `in_flight_status`.
    InFlight,
    /// The contract's `missing_key_status`.
    MissingKey,
    /// The contract's mismatch refusal of a key reused on another endpoint, where the contract
    /// allows one (`per_endpoint: false`); nothing where keys are scoped per endpoint.
    EndpointMismatch,
    /// Anything but the contract's in-flight conflict or a 5xx (which shows nothing of the key) —
    /// another status, or (in a retry's `until`) no response after a second or more: the key is
    /// no longer locked.
    Released,
}

impl StatusPattern {
    /// Parses `201`, `2xx`, `mismatch`, `in_flight`, `missing_key`.
    ///
    /// # Errors
    /// A message saying what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "mismatch" => return Ok(Self::Mismatch),
            "in_flight" => return Ok(Self::InFlight),
            "missing_key" => return Ok(Self::MissingKey),
            "endpoint_mismatch" => return Ok(Self::EndpointMismatch),
            "released" => return Ok(Self::Released),
            _ => {}
        }
        if let Some(c) = text.strip_suffix("xx") {
            if let Ok(d @ 1..=5) = c.parse::<u8>() {
                return Ok(Self::Class(d));
            }
        }
        match text.parse::<u16>() {
            Ok(code @ 100..=599) => Ok(Self::Exact(code)),
            _ => Err(format!(
                "invalid status `{text}`; expected 100..=599, `2xx`, `mismatch`, `in_flight`, `missing_key`, `endpoint_mismatch` or `released`"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for StatusPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = StatusPattern;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a status code, `2xx`, `mismatch`, `in_flight`, `missing_key`, `endpoint_mismatch` or `released`",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<StatusPattern, E> {
                StatusPattern::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<StatusPattern, E> {
                StatusPattern::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<StatusPattern, E> {
                StatusPattern::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `status: {step, in: [...]}`: every response of the step has a status in the set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusSet {
    /// The step.
    pub step: String,
    /// Accepted statuses.
    #[serde(rename = "in")]
    pub allowed: Vec<StatusPattern>,
}

/// `{step}`: an assertion about one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRef {
    /// The step.
    pub step: String,
}

/// `{step, as}`: compares a step's responses with another step's first response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepPair {
    /// The step judged.
    pub step: String,
    /// The step it is compared with.
    #[serde(rename = "as")]
    pub other: String,
}

/// `same_response: {step, as, fidelity_judged_by}`: each judged response of the step is a faithful
/// replay of the other step's first response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SameResponse {
    /// The step judged.
    pub step: String,
    /// The step it is compared with.
    #[serde(rename = "as")]
    pub other: String,
    /// The check that owns replay fidelity, when it is not this one (also accepted as
    /// `headers_judged_by`). See [`Consistent::fidelity_judged_by`].
    #[serde(default, alias = "headers_judged_by")]
    pub fidelity_judged_by: Option<String>,
}

/// `consistent: {step, fidelity_judged_by}`: a concurrent step's successes are one resource,
/// replayed identically, and the rest in-flight conflicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consistent {
    /// The concurrent step.
    pub step: String,
    /// The check that owns replay fidelity, when it is not this one: another success code for a
    /// success (`200` for `201`), a replay's `Location` and `Content-Type`, and a body rendered
    /// again for the same resource (the same id at `create.id`) are then a note naming that check,
    /// not a broken rule here, so one defect fails one check. Any other status difference, and a
    /// body of another resource or none, are always judged.
    #[serde(default)]
    pub fidelity_judged_by: Option<String>,
}

/// `distinct_ids: {steps: [a, b]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepList {
    /// The steps.
    pub steps: Vec<String>,
}

/// `distinct_problems: {steps: [changed, [in-flight, slow]]}`: each entry one step, or a list of
/// steps of which the first that got a refusal stands for the entry (of two same-key requests
/// sent close together, either may be the one refused as in flight).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConflictSteps {
    /// The entries, at least two.
    pub steps: Vec<StepChoice>,
}

/// One entry of [`ConflictSteps`]: a step name, or a list of step names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StepChoice {
    /// This step.
    One(String),
    /// The first of these that got a refusal.
    AnyOf(Vec<String>),
}

impl StepChoice {
    /// The step names, in order.
    pub fn names(&self) -> &[String] {
        match self {
            StepChoice::One(s) => std::slice::from_ref(s),
            StepChoice::AnyOf(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for StepChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de;

        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = StepChoice;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a step name, or a list of step names")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepChoice, E> {
                Ok(StepChoice::One(v.to_owned()))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<StepChoice, A::Error> {
                let names = Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                if names.is_empty() {
                    return Err(de::Error::custom("a list of steps needs at least one step"));
                }
                Ok(StepChoice::AnyOf(names))
            }
        }

        d.deserialize_any(Visitor)
    }
}

/// `created: {principal, equals}` or `created: {principal, at_most}`: resources with the check's
/// marker, counted with `list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Created {
    /// Whose resources (default `A`).
    #[serde(default)]
    pub principal: Option<String>,
    /// The exact count expected.
    #[serde(default)]
    pub equals: Option<u64>,
    /// The most there may be (a request the server never finished may leave none).
    #[serde(default)]
    pub at_most: Option<u64>,
}

/// `overlapped: {step, with}`: the judged request of `step` started while `with`'s request was
/// still running — a precondition for checks about a handler outliving a retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlapped {
    /// The later step.
    pub step: String,
    /// The step whose request must still have been running.
    pub with: String,
}

/// `lock_released: {step, since, within}`: the retried step found its key no longer locked (an
/// answer other than the in-flight conflict, or none) within `within` of the start of `since` —
/// the in-flight lockout after a request was abandoned, measured and judged by the contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockReleased {
    /// The retried step (with `retry: {until: [released]}`).
    pub step: String,
    /// The step whose first request started the lock (the abandoned one).
    pub since: String,
    /// The limit: `in_flight_ttl + 5s` (without a declared TTL, the run's lockout bound).
    pub within: Within,
}

/// `conflict: {step, kind}`: the step was rejected with the contract's status for `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    /// The step.
    pub step: String,
    /// `mismatch` or `in_flight`.
    pub kind: ConflictKind,
    /// Where the contract answers a reused key with another request by the original
    /// (`contract.mismatch_answer: original`, as Google Cloud documents for a repeated
    /// `requestId`): the step whose answer this mismatch must get instead of a refusal.
    #[serde(default)]
    pub or_original: Option<String>,
}

/// Which conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictKind {
    /// Same key, different request.
    Mismatch,
    /// Same key while the first is still running.
    InFlight,
}

/// `header: {step, name, when}`: every response of the step whose status is in `when` (default
/// `[2xx]`) carries the header. `name: replayed` means the contract's replay header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderPresent {
    /// The step.
    pub step: String,
    /// Header name, or `replayed`.
    pub name: String,
    /// The statuses whose responses must carry it (default `[2xx]`), e.g. `[in_flight]` for
    /// `Retry-After`. When no response has such a status the assertion holds with a note.
    #[serde(default)]
    pub when: Option<Vec<StatusPattern>>,
}

/// `succeeded_within: {step, within}`: the step (with `retry`) reached 2xx in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SucceededWithin {
    /// The step.
    pub step: String,
    /// Limit from the step's first attempt.
    pub within: Within,
}

/// `effect_delta: {before, after, equals}`: the action's effect counter, read by two `get` steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectDelta {
    /// The `get` step before.
    pub before: String,
    /// The `get` step after.
    pub after: String,
    /// Expected difference.
    pub equals: i64,
}

/// `failure_handled: {failed, retry}`: the first attempt failed with a 5xx; the retry re-ran it
/// (contract `replays_5xx: false`) or replayed the 5xx (`true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureHandled {
    /// The step that was made to fail.
    pub failed: String,
    /// Its retry.
    pub retry: String,
}

/// What the proxy must have observed for a faulted step (a precondition: when it does not hold the
/// check is UNKNOWN, not FAIL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamOutcome {
    /// The upstream answered 2xx (the work was done) and the client did not get it.
    Worked,
    /// The request never reached the upstream.
    NotReached,
}

/// `fault_applied: {step, upstream}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultApplied {
    /// The step.
    pub step: String,
    /// What the proxy must have seen.
    pub upstream: UpstreamOutcome,
}

/// `side_effects: {equals}`: every side-effect counter grew by exactly this much over the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideEffects {
    /// Expected growth of each counter.
    pub equals: i64,
}

/// One `assert:` entry: exactly one kind, and an optional `level` (default: the scenario's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    /// Overrides the scenario's level for this assertion (a broken SHOULD is a WARN).
    #[serde(default)]
    pub level: Option<Level>,
    /// Source of this particular clause, if it differs from the scenario's.
    #[serde(default)]
    pub reference: Option<String>,
    /// A precondition: when it does not hold, the check could not observe what it claims and is
    /// UNKNOWN rather than FAIL (e.g. the setup create did not succeed).
    #[serde(default)]
    pub precondition: bool,
    /// With `precondition: true`: the precondition guards only a PASS. When it does not hold, a
    /// PASS would prove nothing (UNKNOWN), but a MUST seen broken by another assertion is still a
    /// FAIL (e.g. the first principal's own retry did not replay, yet the second principal got the
    /// first one's resource: a leak whatever else held).
    #[serde(default)]
    pub pass_only: bool,
    /// The check that owns this rule, when it is not this one: a broken finding is then no FAIL
    /// here but an unmet precondition (UNKNOWN) whose message names that check, so one defect fails
    /// one check (e.g. a retry that got a stored 5xx replayed is `failed-not-cached`'s rule, and
    /// `resumable-side-effects` could not observe a resumption).
    #[serde(default)]
    pub judged_by: Option<String>,
    /// Only record what was observed, never judge it: a check whose assertions all record is INFO
    /// ("mismatch answered 417"); otherwise recorded findings become notes.
    #[serde(default)]
    pub record: bool,
    /// Judged only under a contract of this retention case (`while_resource_exists`, or
    /// `outlives_resource`: any other): a rule that depends on whether a key outlives its
    /// resource (replay-after-delete) gives each case its assertions. Default: every contract.
    #[serde(default)]
    pub if_retention: Option<crate::profile::RetentionCase>,
    /// Judged only under a contract that promises this (`in_flight_retry_after`): a rule some
    /// contracts ask and others do not (the article asks `Retry-After` on an in-flight `409`;
    /// Stripe promises none). Under one that does not, the assertion is recorded as not looked
    /// for, naming who says so. Default: every contract.
    #[serde(default)]
    pub if_contract: Option<crate::profile::Promise>,
    /// Status in a set.
    #[serde(default)]
    pub status: Option<StatusSet>,
    /// Same response (status, body, Location, Content-Type) as another step.
    #[serde(default)]
    pub same_response: Option<SameResponse>,
    /// Not a replay of another step's response.
    #[serde(default)]
    pub not_replay_of: Option<StepPair>,
    /// The created ids differ.
    #[serde(default)]
    pub distinct_ids: Option<StepList>,
    /// A concurrent step's successes are identical, the rest in-flight conflicts.
    #[serde(default)]
    pub consistent: Option<Consistent>,
    /// Count of resources by marker.
    #[serde(default)]
    pub created: Option<Created>,
    /// Rejected as a conflict of a kind.
    #[serde(default)]
    pub conflict: Option<Conflict>,
    /// A header present on successes (or on the statuses in `when`).
    #[serde(default)]
    pub header: Option<HeaderPresent>,
    /// Two conflicts a client must be able to tell apart (by status or problem `type`).
    #[serde(default)]
    pub distinct_problems: Option<ConflictSteps>,
    /// Reached success in time.
    #[serde(default)]
    pub succeeded_within: Option<SucceededWithin>,
    /// Action effect counter delta.
    #[serde(default)]
    pub effect_delta: Option<EffectDelta>,
    /// 5xx re-run or replayed per contract.
    #[serde(default)]
    pub failure_handled: Option<FailureHandled>,
    /// Precondition on what the proxy saw.
    #[serde(default)]
    pub fault_applied: Option<FaultApplied>,
    /// Precondition: the step got no response (crash).
    #[serde(default)]
    pub no_response: Option<StepRef>,
    /// No 5xx from the step.
    #[serde(default)]
    pub no_5xx: Option<StepRef>,
    /// Side-effect counters' growth.
    #[serde(default)]
    pub side_effects: Option<SideEffects>,
    /// The in-flight lock released in time.
    #[serde(default)]
    pub lock_released: Option<LockReleased>,
    /// One step's request started while another's was running.
    #[serde(default)]
    pub overlapped: Option<Overlapped>,
    /// No request of the step that found its key in flight was held past the contract's
    /// declared wait (`in_flight_wait`); judged only where the contract declares one.
    #[serde(default)]
    pub wait_bounded: Option<StepRef>,
}

/// The steps an assertion kind reads (checked at load: each must exist).
pub trait StepRefs {
    /// The step names, in the order the kind names them.
    fn steps(&self) -> Vec<&str>;
}

macro_rules! step_refs {
    ($($ty:ty => |$a:ident| $steps:expr),* $(,)?) => {
        $(impl StepRefs for $ty {
            fn steps(&self) -> Vec<&str> {
                let $a = self;
                $steps
            }
        })*
    };
}

step_refs!(
    StatusSet => |a| vec![&a.step],
    StepRef => |a| vec![&a.step],
    SameResponse => |a| vec![&a.step, &a.other],
    Consistent => |a| vec![&a.step],
    StepPair => |a| vec![&a.step, &a.other],
    StepList => |a| a.steps.iter().map(String::as_str).collect(),
    ConflictSteps => |a| a.steps.iter().flat_map(StepChoice::names).map(String::as_str).collect(),
    Created => |_a| vec![],
    Conflict => |a| std::iter::once(&a.step).chain(&a.or_original).map(String::as_str).collect(),
    HeaderPresent => |a| vec![&a.step],
    SucceededWithin => |a| vec![&a.step],
    EffectDelta => |a| vec![&a.before, &a.after],
    FailureHandled => |a| vec![&a.failed, &a.retry],
    FaultApplied => |a| vec![&a.step],
    SideEffects => |_a| vec![],
    LockReleased => |a| vec![&a.step, &a.since],
    Overlapped => |a| vec![&a.step, &a.with],
);

/// Lists each kind once: its field in [`Assertion`] and its variant in [`AssertKind`].
macro_rules! assertion_kinds {
    ($($field:ident: $ty:ty => $variant:ident),* $(,)?) => {
        /// An [`Assertion`]'s one kind, borrowed.
        #[derive(Debug, Clone, Copy, PartialEq)]
        #[allow(missing_docs)]
        pub enum AssertKind<'a> {
            $($variant(&'a $ty),)*
        }

        impl<'a> AssertKind<'a> {
            /// The kind's payload as the steps it reads.
            pub fn step_refs(self) -> &'a dyn StepRefs {
                match self {
                    $(AssertKind::$variant(a) => a,)*
                }
            }
        }

        impl Assertion {
            /// All kinds given in this entry (valid entries have exactly one).
            pub fn kinds(&self) -> Vec<AssertKind<'_>> {
                let mut out = Vec::new();
                $(if let Some(v) = &self.$field { out.push(AssertKind::$variant(v)); })*
                out
            }
        }
    };
}

assertion_kinds!(
    status: StatusSet => Status,
    same_response: SameResponse => SameResponse,
    not_replay_of: StepPair => NotReplayOf,
    distinct_ids: StepList => DistinctIds,
    consistent: Consistent => Consistent,
    created: Created => Created,
    conflict: Conflict => Conflict,
    header: HeaderPresent => Header,
    distinct_problems: ConflictSteps => DistinctProblems,
    succeeded_within: SucceededWithin => SucceededWithin,
    effect_delta: EffectDelta => EffectDelta,
    failure_handled: FailureHandled => FailureHandled,
    fault_applied: FaultApplied => FaultApplied,
    no_response: StepRef => NoResponse,
    no_5xx: StepRef => No5xx,
    side_effects: SideEffects => SideEffects,
    lock_released: LockReleased => LockReleased,
    overlapped: Overlapped => Overlapped,
    wait_bounded: StepRef => WaitBounded,
);

impl Assertion {
    /// The entry's one kind.
    pub fn kind(&self) -> AssertKind<'_> {
        self.kinds()
            .into_iter()
            .next()
            .expect("validated assertions have exactly one kind")
    }

    /// The step names the assertion refers to.
    pub fn steps(&self) -> Vec<&str> {
        self.kinds()
            .first()
            .map_or_else(Vec::new, |k| k.step_refs().steps())
    }

    /// Exactly one kind, and every step it names exists.
    ///
    /// # Errors
    /// A message for the first problem.
    pub fn validate(&self, steps: &[String]) -> Result<(), String> {
        match self.kinds().len() {
            1 => {}
            0 => {
                return Err(
                    "an assertion needs a kind, e.g. `status: {step: s1, in: [2xx]}`".into(),
                )
            }
            _ => return Err("one assertion per list entry; split this entry".into()),
        }
        if self.pass_only && !self.precondition {
            return Err(
                "`pass_only: true` qualifies a precondition; add `precondition: true`".into(),
            );
        }
        if let Some(c) = &self.created {
            if c.equals.is_some() == c.at_most.is_some() {
                return Err("`created` needs exactly one of `equals` or `at_most`".into());
            }
        }
        for s in self.steps() {
            if !steps.iter().any(|n| n == s) {
                return Err(format!("assertion names step `{s}`, which does not exist"));
            }
        }
        if let Some(d) = &self.distinct_problems {
            if d.steps.len() < 2 {
                return Err(
                    "`distinct_problems` compares at least two entries (steps, or lists of steps)"
                        .into(),
                );
            }
            let all: Vec<&String> = d.steps.iter().flat_map(StepChoice::names).collect();
            if let Some(twice) = all
                .iter()
                .enumerate()
                .find_map(|(i, s)| all[..i].contains(s).then_some(s))
            {
                return Err(format!(
                    "`distinct_problems` names step `{twice}` twice; a refusal is compared with another step's"
                ));
            }
        }
        Ok(())
    }
}
