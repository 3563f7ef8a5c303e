//! `idemspec run`: load the profile and scenarios, run the checks, fan the run events out to the
//! progress display, print the terminal report, write the report files, and exit by the verdicts.

use anyhow::Context as _;
use idemspec::engine::SelectError;
use idemspec::model::ExitCode;
use idemspec::reference::ReferenceOptions;
use idemspec::runner::{self, RunError, RunOptions, Target, Unreachable};
use idemspec_scenarios::profile::{check_documented_checks, TargetProfile};
use idemspec_scenarios::scenario::Scenario;

use super::args::RunArgs;
use super::list::load_scenario;
use super::{inputs, reporting, Failure};
use crate::output::Printer;

/// Runs `idemspec run`.
///
/// # Errors
/// A [`Failure`]: exit 2 for configuration problems (and report files that cannot be written,
/// after the report was printed), exit 3 when the target is unreachable. Failed checks are not a
/// `Failure`: they give exit code 1 through [`RunStats::exit_code`](idemspec::model::RunStats::exit_code).
pub fn run(args: RunArgs, printer: &Printer) -> Result<ExitCode, Failure> {
    let options = options(&args, printer)?;
    if !args.flaw.is_empty() {
        printer.warning(format!(
            "the reference server runs with --flaw {}: the checks that catch it should FAIL",
            flaw_names(&args).join(", --flaw ")
        ));
    }
    let (reporter_options, policy) = reporting::options(&args.reports, printer)?;
    let runtime = tokio::runtime::Runtime::new()
        .context("failed to start the async runtime")
        .map_err(Failure::usage)?;
    let report = runtime.block_on(reporting::follow(
        |sink| runner::run(options, sink),
        run_failure,
        reporter_options,
        printer,
    ))?;
    Ok(report.stats.exit_code(policy))
}

/// The `--flaw` values as leasebroker's flag spells them.
fn flaw_names(args: &RunArgs) -> Vec<String> {
    args.flaw.iter().map(|flaw| flaw.name()).collect()
}

/// Validates the flags into the runner's options, loading the profile and scenario files; the
/// profile's warnings go to `printer`.
fn options(args: &RunArgs, printer: &Printer) -> Result<RunOptions, Failure> {
    let verbose = printer.verbose > 0;
    // clap's `requires` counts a flag's default as present, so these are checked here.
    let reference_only = !args.flaw.is_empty()
        || args.reference_database_url.is_some()
        || args.reference_creates.is_some()
        || args.tls;
    if !args.reference && reference_only {
        return Err(Failure::usage(anyhow::anyhow!(
            "--flaw, --reference-database-url, --reference-creates and --tls apply only to the \
             reference server"
        ))
        .hint("add --reference to run against the bundled reference server"));
    }
    let target = match &args.target {
        Some(path) => {
            let text = inputs::read(path).map_err(|e| {
                let failure = Failure::usage(e);
                if path.exists() {
                    failure
                } else {
                    failure.hint(format!(
                        "`idemspec init {}` writes a commented profile to start from",
                        path.display()
                    ))
                }
            })?;
            let name = path.display().to_string();
            let profile = TargetProfile::load(&name, &text, &|var| std::env::var(var).ok())
                .with_context(|| format!("invalid target profile `{name}`"))
                .map_err(|e| {
                    Failure::usage(e).hint(format!(
                        "`idemspec validate {name}` checks a profile without running anything"
                    ))
                })?;
            for warning in profile.warnings(&name) {
                printer.warning(warning);
            }
            Target::Profile(Box::new(profile))
        }
        None => Target::Reference(ReferenceOptions {
            flaws: flaw_names(args),
            database_url: args.reference_database_url.clone(),
            creates: args.reference_creates.unwrap_or_default(),
            show_log: verbose,
            tls: args.tls,
            ..ReferenceOptions::default()
        }),
    };
    let mut options = RunOptions::new(target);
    for path in inputs::expand(&args.scenario)? {
        options.scenarios.push(load_scenario(&path)?);
    }
    if let (Target::Profile(profile), Some(path)) = (&options.target, &args.target) {
        check_documented(profile, &path.display().to_string(), &options.scenarios)?;
    }
    options.only = args.only.clone();
    options.skip = args.skip.clone();
    options.check_timeout = args.check_timeout;
    options.run_timeout = args.run_timeout;
    options.lockout_bound = args.lockout_bound;
    options.parallelism = usize::from(args.jobs);
    Ok(options)
}

/// Each of the profile's `documented` deviations names a check of this run's catalogue (the
/// built-in checks and `scenarios`), so a misspelt id is an error at its line.
fn check_documented(
    profile: &TargetProfile,
    name: &str,
    scenarios: &[Scenario],
) -> Result<(), Failure> {
    let mut known = idemspec::runner::catalogue_ids();
    known.extend(scenarios.iter().map(|s| s.id.value.clone()));
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    check_documented_checks(&profile.documented, name, &known)
        .with_context(|| format!("invalid target profile `{name}`"))
        .map_err(|e| Failure::usage(e).hint("`idemspec list` shows every check id"))
}

/// Maps a [`RunError`] to its exit code and a hint.
fn run_failure(error: RunError) -> Failure {
    match &error {
        // When the API answered (wrong credentials, a wrong list path, a body the list cannot
        // read) the message says what to check; only a silent target needs the hint.
        RunError::TargetUnreachable {
            reason:
                Unreachable::Answered { .. }
                | Unreachable::Unreadable { .. }
                | Unreachable::Session(_)
                | Unreachable::Tls(_),
            ..
        } => Failure::unreachable(error),
        RunError::TargetUnreachable { .. } => Failure::unreachable(error)
            .hint("is the API running, and do the profile's `base_urls` point at it?"),
        RunError::Select(select) => {
            let ids = idemspec::runner::catalogue_ids();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let hint = match select {
                SelectError::Unknown(_) => "`idemspec list` shows every check id",
                SelectError::Nothing => {
                    "`--skip` removes checks that `--only` selects; `idemspec list` shows every id"
                }
                SelectError::Duplicate(_) => {
                    "give your scenario an `id` of its own (`idemspec list` shows the ids taken)"
                }
            };
            Failure::selection(select, &ids).hint(hint)
        }
        RunError::Config(_) => Failure::usage(error)
            .hint("`idemspec validate FILE…` checks profiles and scenarios without running them"),
        RunError::Reference(_) => {
            Failure::usage(error).hint("run with -v to see the reference server's output")
        }
        RunError::Proxy(_) => Failure::usage(error),
        RunError::Tls(_) => Failure::usage(error).hint(
            "check the files the profile's `tls.ca_file` and `principals[].tls` name \
             (docs/profile-reference.md, `tls`)",
        ),
        RunError::Target(_) => Failure::usage(error)
            .hint("check the profile's `process` (command, cwd, ready) and the target's log"),
    }
}
