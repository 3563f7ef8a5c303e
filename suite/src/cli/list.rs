//! `idemspec list`: the checks with their level, source and required capabilities.

use anyhow::Context as _;
use idemspec::model::ExitCode;
use idemspec_scenarios::scenario::Scenario;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Style, Width};

use super::args::ListArgs;
use super::{inputs, Failure};
use crate::output::Printer;

/// Runs `idemspec list`: one row per check of the built-in catalogue, then the user's
/// `--scenario` files.
///
/// # Errors
/// A [`Failure`] (exit 2) when a `--scenario` file does not load.
pub fn list(args: &ListArgs, printer: &Printer) -> Result<ExitCode, Failure> {
    let mut checks: Vec<(String, Scenario)> = idemspec::runner::catalogue()
        .into_iter()
        .map(|s| ("built-in".to_owned(), s))
        .collect();
    let mut ids = inputs::ScenarioIds::builtin();
    for path in inputs::expand(&args.scenario)? {
        let scenario = load_scenario(&path)?;
        let from = path.display().to_string();
        let at = &scenario.id.referenced;
        ids.take(
            &scenario.id.value,
            &format!("{from}:{}:{}", at.line(), at.column()),
            &path,
        )
        .map_err(|e| Failure::usage(e).hint("give your scenario an `id` of its own"))?;
        checks.push((from, scenario));
    }
    let with_origin = !args.scenario.is_empty();
    let mut builder = Builder::default();
    let mut header = vec!["check", "level", "title", "source", "requires"];
    if with_origin {
        header.push("from");
    }
    builder.push_record(header);
    for (from, scenario) in &checks {
        let requires: Vec<String> = scenario
            .requires
            .iter()
            .map(|c| {
                serde_json::to_value(c)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("{c:?}"))
            })
            .collect();
        let mut row = vec![
            scenario.id.value.clone(),
            scenario.level.to_string(),
            scenario.title.clone(),
            scenario.reference.clone(),
            requires.join(", "),
        ];
        if with_origin {
            row.push(from.clone());
        }
        builder.push_record(row);
    }
    let mut table = builder.build();
    // Wrapped at word boundaries so the table fits a common terminal width.
    table
        .with(Style::rounded())
        .modify(Columns::new(2..3), Width::wrap(44).keep_words(true))
        .modify(Columns::new(3..4), Width::wrap(36).keep_words(true))
        .modify(Columns::new(4..5), Width::wrap(16).keep_words(true));
    printer.result(format!("{table}\n"));
    printer.status(format!("{} checks", checks.len()));
    Ok(ExitCode::Success)
}

/// Loads a user's scenario file with its located error.
pub fn load_scenario(path: &std::path::Path) -> anyhow::Result<Scenario> {
    let text = inputs::read(path)?;
    let name = path.display().to_string();
    Scenario::load(&name, &text)
        .and_then(|s| idemspec::runner::check_procedure(&s, &name).map(|()| s))
        .with_context(|| format!("invalid scenario `{name}`"))
}
