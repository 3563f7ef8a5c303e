//! `idemspec validate FILE…`: load every target profile, scenario and proxy file without running
//! anything, report every error each file has (as many as the loader can recover: a syntax error
//! stops the file, a validation pass reports every rule broken) with file, line and column, and
//! exit 2 if any failed.

use std::path::Path;

use anyhow::{anyhow, Context as _};
use idemspec::model::ExitCode;
use idemspec_scenarios::client_profile::ClientProfile;
use idemspec_scenarios::profile::{check_documented_checks, TargetProfile};
use idemspec_scenarios::rules::ProxyFile;
use idemspec_scenarios::scenario::Scenario;

use super::args::ValidateArgs;
use super::inputs::{self, FileKind};
use super::Failure;
use crate::output::Printer;

/// Runs `idemspec validate`.
///
/// # Errors
/// A [`Failure`] (exit 2) when a path does not exist or any file is invalid; each invalid file's
/// error has been printed by then.
pub fn validate(args: &ValidateArgs, printer: &Printer) -> Result<ExitCode, Failure> {
    let files = inputs::expand(&args.files)?;
    if files.is_empty() {
        return Err(Failure::usage(anyhow!("no YAML files found"))
            .hint("directories are searched for `*.yaml` and `*.yml` files"));
    }
    // Scenario ids must be unique among the built-in checks and the files, as `run` requires.
    let mut ids = inputs::ScenarioIds::builtin();
    let mut invalid = 0;
    for file in &files {
        let checked = check(file).and_then(|checked| match checked.scenario {
            Some((id, at)) => ids
                .take(&id, &at, file)
                .map(|()| (checked.description, checked.warnings))
                .map_err(Invalid::from),
            None => Ok((checked.description, checked.warnings)),
        });
        match checked {
            Ok((description, warnings)) => {
                printer.result(format!("ok: {} ({description})\n", file.display()));
                for warning in warnings {
                    printer.warning(warning);
                }
            }
            Err(Invalid { error, hint }) => {
                invalid += 1;
                let hints: Vec<String> = hint.into_iter().map(str::to_owned).collect();
                printer.error(&error, &hints);
            }
        }
    }
    if invalid > 0 {
        return Err(Failure::usage(anyhow!(
            "{invalid} of {} file{} invalid",
            files.len(),
            if files.len() == 1 { " is" } else { "s are" }
        )));
    }
    Ok(ExitCode::Success)
}

/// What loading one file found.
struct Checked {
    /// The file in a few words.
    description: String,
    /// For a scenario: its id and where the id is written (`file:line:column`).
    scenario: Option<(String, String)>,
    /// What loads but is likely a mistake, located (a profile's [`TargetProfile::warnings`]), each
    /// a sentence saying what to declare or change.
    warnings: Vec<String>,
}

/// A file that did not load: the error chain, and where its kind of file is documented.
struct Invalid {
    error: anyhow::Error,
    hint: Option<&'static str>,
}

impl From<anyhow::Error> for Invalid {
    fn from(error: anyhow::Error) -> Self {
        Self { error, hint: None }
    }
}

/// Loads one file as whatever it is and describes it in a few words.
fn check(path: &Path) -> Result<Checked, Invalid> {
    let text = inputs::read(path)?;
    let name = path.display().to_string();
    let kind = inputs::classify(&text).ok_or_else(|| {
        // Classification reads top-level keys line by line; a file it cannot place may simply not
        // parse (a tab in the indentation hides its keys): then the parser's located error is the
        // useful one.
        if let Err(error) = idemspec_scenarios::from_yaml::<serde_json::Value>(&name, &text) {
            return anyhow::Error::new(error).context(format!("`{name}` is not valid YAML"));
        }
        if text.trim().is_empty() {
            return anyhow!(
                "`{name}` is empty: expected a target profile, a scenario, a proxy file or a \
                 client profile"
            );
        }
        anyhow!(
            "cannot tell what `{name}` is: expected a target profile (with `base_urls` and \
             `operations`), a scenario (with `id` and `steps` or a `procedure`), a proxy file \
             (with `upstream` and `rules`) or a client profile (with `operation` or `success`)"
        )
    })?;
    let context = || format!("invalid {} `{name}`", kind.noun());
    let described = |description: String| Checked {
        description,
        scenario: None,
        warnings: Vec::new(),
    };
    Ok(match kind {
        FileKind::Profile => {
            let profile = TargetProfile::load(&name, &text, &|var| std::env::var(var).ok())
                .with_context(context)
                .map_err(|error| Invalid {
                    error,
                    hint: Some("every profile field, its default and each preset's values: docs/profile-reference.md"),
                })?;
            let mut warnings = profile.warnings(&name);
            let ids = idemspec::runner::catalogue_ids();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            if let Err(e) = check_documented_checks(&profile.documented, &name, &ids) {
                warnings.push(format!(
                    "{e:#} (unless a scenario of your own has that id: `idemspec run` refuses a \
                     `documented` check that is neither built in nor given with `--scenario`)"
                ));
            }
            Checked {
                warnings,
                ..described(format!(
                    "target profile `{}`, contract `{}`",
                    profile.name.value,
                    profile.contract().preset.name()
                ))
            }
        }
        FileKind::Scenario => {
            let scenario = Scenario::load(&name, &text)
                .and_then(|s| idemspec::runner::check_procedure(&s, &name).map(|()| s))
                .with_context(context)
                .map_err(|error| Invalid {
                    error,
                    hint: Some("the step and assertion vocabulary: docs/writing-scenarios.md"),
                })?;
            let at = &scenario.id.referenced;
            Checked {
                description: format!("scenario `{}`, {}", scenario.id.value, scenario.level),
                scenario: Some((
                    scenario.id.value.clone(),
                    format!("{name}:{}:{}", at.line(), at.column()),
                )),
                warnings: Vec::new(),
            }
        }
        FileKind::ProxyFile => {
            let proxy = ProxyFile::load(&name, &text).with_context(context)?;
            described(format!("proxy file, {} rules", proxy.rules.len()))
        }
        FileKind::ClientProfile => {
            let profile = ClientProfile::load(&name, &text, &|var| std::env::var(var).ok())
                .with_context(context)
                .map_err(|error| Invalid {
                    error,
                    hint: Some("every field of a client profile: docs/client.md"),
                })?;
            described(format!(
                "client profile `{}`, contract `{}`",
                profile.name.value,
                profile.contract().preset.name()
            ))
        }
    })
}
