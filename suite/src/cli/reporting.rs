//! What `run` and `client` share: the report flags made into reporter options and an exit
//! policy, and following a run's events with the reporter until it ends or a signal stops it.

use std::future::Future;

use anyhow::Context as _;
use idemspec::model::{ExitPolicy, RunEvent, RunReport};
use idemspec::report::{Progress, ReportFiles, Reporter, ReporterOptions, TerminalOptions};

use super::args::ReportArgs;
use super::Failure;
use crate::output::Printer;

/// The reporter's options and the exit policy `args` ask for.
///
/// # Errors
/// A usage [`Failure`] when two reports go to one file or a report file cannot be written (checked
/// before anything runs).
pub(super) fn options(
    args: &ReportArgs,
    printer: &Printer,
) -> Result<(ReporterOptions, ExitPolicy), Failure> {
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
        fail_documented: args.fail_documented,
    };
    let options = ReporterOptions {
        terminal: TerminalOptions {
            palette: printer.stdout,
            policy,
        },
        summary_only: printer.quiet,
        files,
    };
    Ok((options, policy))
}

/// Starts the run `start` makes from an event sink, hands every event it sends to the reporter,
/// and returns its report; `failure` maps the run's error. Ctrl-C or SIGTERM stops the run (what it
/// started is killed as it is dropped) and writes no report.
///
/// # Errors
/// The run's error as `failure` maps it, a report file that could not be written, or an
/// interruption (exit 130).
pub(super) async fn follow<F, E>(
    start: impl FnOnce(tokio::sync::mpsc::UnboundedSender<RunEvent>) -> F,
    failure: impl FnOnce(E) -> Failure,
    options: ReporterOptions,
    printer: &Printer,
) -> Result<RunReport, Failure>
where
    F: Future<Output = Result<RunReport, E>> + Send + 'static,
    E: Send + 'static,
{
    let (sink, mut events) = tokio::sync::mpsc::unbounded_channel();
    let progress = Progress::new(printer.progress_mode(), printer.stderr);
    let mut reporter = Reporter::new(progress, options, printer);
    let mut runner = tokio::spawn(start(sink));
    let mut written = Ok(());
    let events_done = async {
        while let Some(event) = events.recv().await {
            if let Err(e) = reporter.write_event(&event) {
                written = Err(e);
            }
        }
    };
    tokio::select! {
        () = events_done => {}
        signal = shutdown_signal() => {
            runner.abort();
            let _ = (&mut runner).await;
            reporter.abandon();
            return Err(Failure::interrupted(anyhow::anyhow!(
                "interrupted by {signal}; no report was written"
            )));
        }
    }
    let report = runner
        .await
        .context("the run stopped unexpectedly")
        .map_err(Failure::usage)?
        .map_err(failure)?;
    written.map_err(|e| Failure::usage(anyhow::Error::new(e)))?;
    Ok(report)
}

/// Waits for Ctrl-C or (on Unix) SIGTERM, and names the signal.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return "Ctrl-C",
                _ = term.recv() => return "SIGTERM",
            }
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}
