//! `idemspec client`: load the client profile, run the client checks with the user's command,
//! fan the run events out to the reporter, and exit by the verdicts (as `run` does).

use anyhow::Context as _;
use idemspec::client_check::{self, ClientError, ClientOptions};
use idemspec::model::ExitCode;
use idemspec_scenarios::client_profile::ClientProfile;

use super::args::ClientArgs;
use super::{follow, inputs, Failure};
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
    let (reporter_options, policy) = follow::reporting(&args.reports, printer)?;
    let mut options = ClientOptions::new(profile, args.exec.clone());
    options.upstream = args.upstream.clone();
    options.only = args.only.clone();
    options.skip = args.skip.clone();
    options.timeout = args.command_timeout;
    options.parallelism = usize::from(args.parallel);
    let runtime = super::servers::runtime()?;
    let report = runtime.block_on(follow::follow(
        |sink| client_check::run(options, sink),
        client_failure,
        reporter_options,
        printer,
    ))?;
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

/// A client run's error as the user sees it, with the check ids for a selection that cannot run.
fn client_failure(e: ClientError) -> Failure {
    match &e {
        ClientError::Select(select) => {
            let ids: Vec<String> = client_check::checks::list()
                .into_iter()
                .map(|c| c.id)
                .collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            Failure::selection(select, &ids)
                .hint(format!("the client checks are: {}", ids.join(", ")))
        }
        _ => Failure::usage(anyhow::Error::new(e)),
    }
}
