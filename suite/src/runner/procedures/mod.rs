//! Checks written in Rust, for logic beyond a linear script of steps: each is one file here
//! implementing [`Procedure`], and its line in [`ALL`].
//!
//! A procedure names itself (a scenario's `procedure:` names it too), gives the header of the
//! built-in check it is (what it is, what it requires, its faults and parameters, in the scenario
//! schema of docs/writing-scenarios.md, with no steps) and judges: it sends through the check's
//! [`CheckRun`] like any step, so its requests are evidence in send order, paired with what the
//! proxy did, and each judgement names the steps whose exchanges support it. The runner gives it
//! what every check gets: the capability test (SKIP), its fault proxy, its deadline and its
//! grading.

#[cfg(test)]
mod example;
mod key_validation;
mod retry_storm;

use futures::future::BoxFuture;
use idemspec_scenarios::load::LoadError;
use idemspec_scenarios::scenario::Scenario;

use super::context::CheckRun;
use crate::engine::Judgement;

/// A check of an API written in Rust.
pub(crate) trait Procedure: Sync {
    /// Its name, as a scenario's `procedure:` gives it (kebab-case; the built-in check's id).
    fn name(&self) -> &'static str;

    /// The built-in check it is: a scenario's header in YAML (`version`, `id`, `title`,
    /// `level`, `reference`, and as needed `requires`, `exclusive`, `faults`, `parameters`) and
    /// `procedure:` naming itself.
    fn scenario(&self) -> &'static str;

    /// The `parameters` it reads (a scenario naming it may give only these).
    fn parameters(&self) -> &'static [&'static str] {
        &[]
    }

    /// Sends through `run` and judges what came back.
    fn judge<'a>(&'a self, run: &'a CheckRun) -> BoxFuture<'a, Vec<Judgement>>;
}

/// Every procedure, in the order the built-in checks they are run after the YAML ones.
pub(crate) const ALL: [&dyn Procedure; 2] =
    [&key_validation::KeyValidation, &retry_storm::RetryStorm];

/// The procedure named `name`.
pub(crate) fn named(name: &str) -> Option<&'static dyn Procedure> {
    ALL.into_iter().find(|p| p.name() == name)
}

/// Every procedure's name and the parameters it reads, in [`ALL`]'s order.
fn known() -> Vec<(&'static str, &'static [&'static str])> {
    ALL.iter().map(|p| (p.name(), p.parameters())).collect()
}

/// The built-in checks written in Rust, loaded (each under `<embedded:NAME>`).
///
/// # Panics
/// If one's header does not load or names another procedure: a build defect, caught by this
/// module's tests.
pub(crate) fn builtin() -> Vec<Scenario> {
    ALL.iter()
        .map(|p| {
            let file = format!("<embedded:{}>", p.name());
            let scenario = Scenario::load(&file, p.scenario())
                .and_then(|s| {
                    s.check_procedure(&file, &[(p.name(), p.parameters())])
                        .map(|()| s)
                })
                .unwrap_or_else(|e| panic!("built-in check {} does not load: {e}", p.name()));
            assert_eq!(
                scenario.id.value,
                p.name(),
                "a procedure's check has its name"
            );
            scenario
        })
        .collect()
}

/// Refuses a scenario whose `procedure:` names none of [`ALL`], or gives `parameters` it does
/// not read, at its position in `file`.
///
/// # Errors
/// The located [`LoadError`].
pub fn check_known(scenario: &Scenario, file: &str) -> Result<(), LoadError> {
    scenario.check_procedure(file, &known())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_procedure_is_a_built_in_check_under_its_name() {
        let checks = builtin();
        assert_eq!(checks.len(), ALL.len());
        for (check, procedure) in checks.iter().zip(ALL) {
            assert_eq!(check.id.value, procedure.name());
            assert!(
                check.steps.is_empty(),
                "{}: a procedure has no steps",
                procedure.name()
            );
        }
    }

    /// The ids listed without loading the catalogue are the loaded catalogue's, in its order.
    #[test]
    fn the_catalogue_ids_are_its_checks_ids() {
        let loaded: Vec<String> = crate::runner::catalogue()
            .into_iter()
            .map(|s| s.id.value)
            .collect();
        assert_eq!(crate::runner::catalogue_ids(), loaded);
    }

    /// CONTRIBUTING.md's worked example is this module's `example.rs`, which compiles and whose
    /// header loads.
    #[test]
    fn the_contributing_example_compiles_and_loads() {
        let source = include_str!("example.rs");
        let guide = include_str!("../../../../CONTRIBUTING.md");
        assert!(
            guide.contains(source.trim()),
            "CONTRIBUTING.md shows suite/src/runner/procedures/example.rs as it is"
        );
        let example = example::SameIdOnRetry;
        let file = "<example>";
        let scenario = Scenario::load(file, example.scenario()).expect("its header loads");
        scenario
            .check_procedure(file, &[(example.name(), example.parameters())])
            .expect("it names itself");
        assert_eq!(scenario.id.value, example.name());
    }
}
