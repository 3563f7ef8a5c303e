//! `idemspec client`: load the client profile, run the client checks with the user's command,
//! fan the run events out to the reporter, and exit by the verdicts (as `run` does).

use anyhow::Context as _;
use idemspec::client_check::{self, ClientError, ClientOptions};
use idemspec::model::{ExitCode, ExitPolicy, RunReport};
use idemspec::report::{Progress, ReportFiles, Reporter, ReporterOptions, TerminalOptions};
use idemspec_scenarios::client_profile::ClientProfile;

use super::args::ClientArgs;
use super::{inputs, Failure};
use crate::output::Printer;

/// Runs `idemspec client`.
///
/// # Errors
/// A [`Failure`] (exit 2) for an invalid profile, flags or report paths. Failed checks are not a
/// `Failure`: they give exit code 1 through the run's statistics.
pub fn client(args: ClientArgs, printer: &Printer) -> Result<ExitCode, Failure> {
    let profile = load_profile(&args)?;
    if let Some(url) = &args.upstream {
        idemspec_scenarios::profile::check_url(url)
            .map_err(|m| Failure::usage(anyhow::anyhow!("--upstream: {m}")))?;
    }
    let files = ReportFiles {
        junit: args.report_junit.clone(),
        json: args.report_json.clone(),
        markdown: args.report_markdown.clone(),
        html: args.report_html.clone(),
    };
    files
        .check()
        .map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    let policy = ExitPolicy {
        allow_unknown: args.allow_unknown,
        allow_nothing_judged: args.allow_nothing_judged,
    };
    let reporter_options = ReporterOptions {
        terminal: TerminalOptions {
            palette: printer.stdout,
            policy,
        },
        summary_only: printer.quiet,
        files,
    };
    let mut options = ClientOptions::new(profile, args.exec.clone());
    options.upstream = args.upstream.clone();
    options.only = args.only.clone();
    options.skip = args.skip.clone();
    options.timeout = args.command_timeout;
    options.parallelism = usize::from(args.parallel);
    let runtime = super::servers::runtime()?;
    let report = runtime.block_on(drive(options, reporter_options, printer))?;
    Ok(report.stats.exit_code(policy))
}

fn load_profile(args: &ClientArgs) -> Result<ClientProfile, Failure> {
    let (name, text) = match &args.profile {
        Some(path) => (path.display().to_string(), inputs::read(path)?),
        None => (
            "(default client profile)".to_owned(),
            ClientProfile::DEFAULT.to_owned(),
        ),
    };
    ClientProfile::load(&name, &text, &|var| std::env::var(var).ok())
        .with_context(|| format!("invalid client profile `{name}`"))
        .map_err(|e| {
            Failure::usage(e).hint("every field of a client profile is described in docs/client.md")
        })
}

/// Runs the client checks while the reporter follows their events.
async fn drive(
    options: ClientOptions,
    reporter_options: ReporterOptions,
    printer: &Printer,
) -> Result<RunReport, Failure> {
    let (sink, mut events) = tokio::sync::mpsc::unbounded_channel();
    let progress = Progress::new(printer.progress_mode(), printer.stderr);
    let mut reporter = Reporter::new(progress, reporter_options, printer);
    let mut runner = tokio::spawn(client_check::run(options, sink));
    let mut written = Ok(());
    let follow = async {
        while let Some(event) = events.recv().await {
            if let Err(e) = reporter.write_event(&event) {
                written = Err(e);
            }
        }
    };
    tokio::select! {
        () = follow => {}
        _ = tokio::signal::ctrl_c() => {
            // Dropping the run kills the commands it started (kill_on_drop).
            runner.abort();
            let _ = (&mut runner).await;
            reporter.abandon();
            return Err(Failure::interrupted(anyhow::anyhow!("interrupted by Ctrl-C; no report was written")));
        }
    }
    let report = runner
        .await
        .context("the client run stopped unexpectedly")
        .map_err(Failure::usage)?
        .map_err(|e| {
            let hint = matches!(
                e,
                ClientError::UnknownCheck(_) | ClientError::NothingSelected
            );
            let failure = Failure::usage(anyhow::Error::new(e));
            if hint {
                failure.hint(format!(
                    "the client checks are: {}",
                    client_check::checks::list()
                        .iter()
                        .map(|c| c.id)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            } else {
                failure
            }
        })?;
    written.map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    Ok(report)
}
