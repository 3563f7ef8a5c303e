//! Which checks run: the catalogue plus the user's scenarios, `--only`/`--skip`, and whether the
//! profile offers each check's capabilities.

use idemspec_scenarios::scenario::{Capability, Scenario};

use super::api_ctx::ApiCtx;
use super::RunError;
use crate::engine;
use idemspec_scenarios::profile::Covered;
use idemspec_scenarios::scenario::HookName;

/// The scenarios to run, in order: built-in first, then the user's; filtered by `only` and
/// `skip` ([`engine::select`]).
///
/// # Errors
/// [`RunError::Select`] when two scenarios share an id, or `only`/`skip` names an id no scenario
/// has or leaves none.
pub(crate) fn select(
    builtin: Vec<Scenario>,
    user: Vec<Scenario>,
    only: &[String],
    skip: &[String],
) -> Result<Vec<Scenario>, RunError> {
    let all: Vec<Scenario> = builtin.into_iter().chain(user).collect();
    Ok(engine::select(all, |s| &s.id.value, only, skip)?)
}

/// Why `scenario`'s findings are recorded rather than judged, if they are: it needs a keyed
/// operation (`delete_key`, `action_key`) that the profile sends with a key but the contract does
/// not cover (`contract.covers`). The check still runs, so what the API did with the key is on the
/// page (a retried DELETE that answered 404 is the doom loop, covered or not), as INFO naming the
/// contract instead of a SKIP that hides it.
pub(crate) fn uncovered(ctx: &ApiCtx, scenario: &Scenario) -> Option<String> {
    scenario
        .requires
        .iter()
        .find_map(|cap| {
            match cap {
        Capability::DeleteKey if !ctx.contract.covers(Covered::Delete) => Some(
            "recorded, not judged: the contract does not cover DELETE (`contract.covers` lacks \
             `delete`)",
        ),
        Capability::ActionKey if !ctx.contract.covers(Covered::Action) => Some(
            "recorded, not judged: the contract does not cover the action (`contract.covers` \
             lacks `action`)",
        ),
        _ => None,
    }
        })
        .map(str::to_owned)
}

/// Why the profile cannot run `scenario`, if it cannot.
pub(crate) fn missing_capability(ctx: &ApiCtx, scenario: &Scenario) -> Option<String> {
    let ops = &ctx.profile.operations;
    scenario.requires.iter().find_map(|cap| {
        let missing = match cap {
            Capability::Get => ops.get.is_none(),
            Capability::Delete => ops.delete.is_none(),
            // A keyed operation the contract does not cover still runs: what it does with the key
            // is recorded, not judged (`uncovered`).
            Capability::DeleteKey => !ops
                .delete
                .as_ref()
                .is_some_and(|d| d.key == idemspec_scenarios::profile::KeyUse::Send),
            Capability::ActionKey => ops.action.is_none(),
            Capability::Action => ops.action.is_none(),
            Capability::ActionEffect => {
                ops.get.is_none() || ops.action.as_ref().is_none_or(|a| a.effect.is_none())
            }
            Capability::Crash => !ctx.hooks.has(HookName::Crash),
            Capability::Restart => !ctx.hooks.has(HookName::Restart),
            Capability::FailNext => !ctx.hooks.has(HookName::FailNext),
            Capability::FailsOnce => {
                !ctx.hooks.has(HookName::FailNext) && ops.create.variants.fails_once.is_none()
            }
            Capability::AlwaysFails => ops.create.variants.always_fails.is_none(),
            Capability::Slow => ops.create.variants.slow.is_none(),
            Capability::Abandon => {
                !(ctx.hooks.has(HookName::Crash) && ctx.hooks.has(HookName::Restart))
                    && ops.create.variants.hangs.is_none()
            }
            Capability::SideEffects => ctx.profile.side_effects.is_none(),
            Capability::BodyVariant => !ops.create.body.has_variant(),
            Capability::InFlightTtl => ctx.contract.in_flight_ttl.is_none(),
            Capability::PerPrincipalKeys => !ctx.contract.per_principal,
        };
        missing.then(|| {
            // Where two causes could be missing, the one that is.
            let deletes_keyed = ops
                .delete
                .as_ref()
                .is_some_and(|d| d.key == idemspec_scenarios::profile::KeyUse::Send);
            match cap {
                Capability::Get => "the profile has no `operations.get`",
                Capability::Delete => "the profile has no `operations.delete`",
                Capability::DeleteKey if ops.delete.is_none() => {
                    "the profile has no `operations.delete`"
                }
                Capability::DeleteKey if !deletes_keyed => {
                    "the profile's delete sends no idempotency key (`operations.delete.key`)"
                }
                Capability::DeleteKey => "the profile has no keyed `operations.delete`",
                Capability::ActionKey => "the profile has no `operations.action`",
                Capability::Action => "the profile has no `operations.action`",
                Capability::ActionEffect => {
                    "the profile declares no `operations.action.effect` (with `operations.get`) to observe the action"
                }
                Capability::Crash => "the profile has no `hooks.crash`",
                Capability::Restart => "the profile has no `hooks.restart`",
                Capability::FailNext => "the profile has no `hooks.fail_next`",
                Capability::FailsOnce => {
                    "the profile has neither `hooks.fail_next` nor a `fails_once` request variant (`operations.create.variants`)"
                }
                Capability::AlwaysFails => {
                    "the profile has no `always_fails` request variant (`operations.create.variants`)"
                }
                Capability::Slow => {
                    "the profile has no `slow` request variant (`operations.create.variants`)"
                }
                Capability::Abandon => {
                    "the profile can neither crash the target (`hooks.crash` and `hooks.restart`, or `process`) nor make a request hang (a `hangs` request variant)"
                }
                Capability::SideEffects => "the profile has no `side_effects` probe",
                Capability::BodyVariant => {
                    "the create body has no `{{variant}}`, so no differing request can be sent"
                }
                Capability::InFlightTtl => "the contract declares no `in_flight_ttl`",
                Capability::PerPrincipalKeys => {
                    "the contract declares keys shared by all principals (`per_principal: false`)"
                }
            }
            .to_owned()
        })
    })
}
