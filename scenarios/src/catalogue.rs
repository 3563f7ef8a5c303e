//! The built-in checks written as YAML steps (`idemspec list` shows them with those written in
//! Rust, which the runner holds; README "What it is"), one file per check under
//! `scenarios/catalogue/`, embedded with `include_str!` so the binary works anywhere; and the bundled
//! leasebroker target profiles.

use crate::scenario::Scenario;

/// The leasebroker target profile's text (`scenarios/targets/leasebroker.yaml`).
pub const LEASEBROKER_PROFILE: &str = include_str!("../targets/leasebroker.yaml");

/// The name the embedded leasebroker profile is reported under in errors.
pub const LEASEBROKER_PROFILE_FILE: &str = "<embedded:targets/leasebroker.yaml>";

/// The profile of leasebroker with `--creates async` (`scenarios/targets/leasebroker-async.yaml`).
pub const LEASEBROKER_ASYNC_PROFILE: &str = include_str!("../targets/leasebroker-async.yaml");

/// The name the embedded asynchronous leasebroker profile is reported under in errors.
pub const LEASEBROKER_ASYNC_PROFILE_FILE: &str = "<embedded:targets/leasebroker-async.yaml>";

macro_rules! catalogue {
    ($($id:literal),* $(,)?) => {
        /// `(id, YAML text)` of every built-in check written as steps, in run order.
        pub const SOURCES: &[(&str, &str)] = &[
            $(($id, include_str!(concat!("../catalogue/", $id, ".yaml")))),*
        ];
    };
}

catalogue!(
    "never-processed",
    "lost-response",
    "client-timeout-in-flight",
    "concurrent-same-key",
    "fingerprint-mismatch",
    "cross-tenant",
    "endpoint-scope",
    "replay-fidelity",
    "create-response-shape",
    "replay-after-delete",
    "delete-doom-loop",
    "reboot-once",
    "failed-not-cached",
    "failed-creates-nothing",
    "resumable-side-effects",
    "stuck-in-flight",
    "slow-handler-outlives-ttl",
);

/// The built-in checks written as steps, loaded.
///
/// # Panics
/// If an embedded file does not load: a build defect, caught by this module's tests.
pub fn builtin() -> Vec<Scenario> {
    SOURCES
        .iter()
        .map(|(id, text)| {
            Scenario::load(&format!("<embedded:{id}>"), text)
                .unwrap_or_else(|e| panic!("built-in check {id} does not load: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_check_loads_under_its_file_name() {
        let checks = builtin();
        assert_eq!(checks.len(), SOURCES.len());
        for (check, (id, _)) in checks.iter().zip(SOURCES) {
            assert_eq!(&check.id.value, id);
        }
    }

    #[test]
    fn examples_load() {
        for (file, text) in [
            (
                "duplicating-intermediary.yaml",
                include_str!("../examples/duplicating-intermediary.yaml"),
            ),
            (
                "slow-response-retry.yaml",
                include_str!("../examples/slow-response-retry.yaml"),
            ),
        ] {
            Scenario::load(file, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let env = |v: &str| v.starts_with("MY_API_KEY").then(|| "k".to_owned());
        let p = crate::profile::TargetProfile::load(
            "my-api.yaml",
            include_str!("../examples/my-api.yaml"),
            &env,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.contract().mismatch_status, vec![422]);
    }

    #[test]
    fn leasebroker_profile_loads_with_defaults() {
        let p = crate::profile::TargetProfile::load(
            LEASEBROKER_PROFILE_FILE,
            LEASEBROKER_PROFILE,
            &|_| None,
        )
        .unwrap();
        assert_eq!(p.name.value, "leasebroker");
        assert!(p.operations.create.body.has_variant());
        let p = crate::profile::TargetProfile::load(
            LEASEBROKER_ASYNC_PROFILE_FILE,
            LEASEBROKER_ASYNC_PROFILE,
            &|_| None,
        )
        .unwrap();
        assert_eq!(p.name.value, "leasebroker-async");
        assert!(p
            .operations
            .long_running_of(crate::scenario::Operation::Create)
            .is_some());
    }
}
