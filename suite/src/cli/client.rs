//! `idemspec client`: load the client profile, run the client checks with the user's command,
//! fan the run events out to the reporter, and exit by the verdicts (as `run` does).

use anyhow::Context as _;
use idemspec::client_check::discover::Discovery;
use idemspec::client_check::{self, ClientError, ClientOptions};
use idemspec::model::ExitCode;
use idemspec_scenarios::client_profile::ClientProfile;

use super::args::ClientArgs;
use super::{inputs, reporting, Failure};
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
    if args.discover {
        return discover(&args, profile, printer);
    }
    let (reporter_options, policy) = reporting::options(&args.reports, printer)?;
    let mut options = ClientOptions::new(profile, args.exec.clone());
    options.upstream = args.upstream.clone();
    options.tls |= args.tls;
    options.only = args.only.clone();
    options.skip = args.skip.clone();
    options.timeout = args.command_timeout;
    options.parallelism = usize::from(args.parallel);
    let runtime = super::servers::runtime()?;
    let report = runtime.block_on(reporting::follow(
        |sink| client_check::run(options, sink),
        client_failure,
        reporter_options,
        printer,
    ))?;
    Ok(report.stats.exit_code(policy))
}

/// `idemspec client --discover`: where the command's client puts its key.
fn discover(
    args: &ClientArgs,
    profile: ClientProfile,
    printer: &Printer,
) -> Result<ExitCode, Failure> {
    let mut options = ClientOptions::new(profile, args.exec.clone());
    options.timeout = args.command_timeout;
    options.tls |= args.tls;
    let runtime = super::servers::runtime()?;
    printer.status("discover: running the command three times (two operations, one retried after a lost response)");
    let found = runtime.block_on(client_check::discover(options));
    let (text, exit) = discovery_text(&found);
    printer.result(text);
    Ok(exit)
}

/// The most places `--discover` prints, most key-like first; the rest are counted.
const MAX_SHOWN: usize = 20;

/// What `--discover` found, in lines, and the exit code: 0 when a place was found other than the
/// headers that are no key (`client_check::discover::NOT_KEYS`), which are listed apart.
fn discovery_text(found: &Discovery) -> (String, ExitCode) {
    if let Some(problem) = &found.problem {
        return (
            format!("discover: nothing learned: {problem}\n"),
            ExitCode::ChecksFailed,
        );
    }
    if found.candidates.is_empty() {
        return (nothing_found(found), ExitCode::ChecksFailed);
    }
    let mut out = String::from(
        "where the key is, most key-like first (put the first in the client profile's \
         `contract.key_at`):\n",
    );
    for (i, c) in found.candidates.iter().take(MAX_SHOWN).enumerate() {
        let at = c.at.as_yaml();
        let kept = match c.kept_on_retry {
            Some(true) => "kept on the retry",
            _ => "not retried, so whether it is kept was not seen",
        };
        let named = c
            .not_a_key
            .map(|why| format!(" (usually {why}; listed because `contract.key_at` names it)"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}. key_at: {at}  {:?} then {:?}, {kept}{named}\n",
            i + 1,
            c.values.0,
            c.values.1
        ));
    }
    if let Some(more) = found
        .candidates
        .len()
        .checked_sub(MAX_SHOWN)
        .filter(|n| *n > 0)
    {
        out.push_str(&format!("  … and {more} more, less key-like\n"));
    }
    out.push_str(&not_keys_text(found));
    if !found.retried {
        out.push_str("note: the client did not retry after the lost response\n");
    }
    if let Some(unread) = &found.unread_bodies {
        out.push_str(&format!(
            "note: idemspec could not read {unread}; a key in a body was not seen\n"
        ));
    }
    (out, ExitCode::Success)
}

/// What `--discover` says when no place qualified as a key.
fn nothing_found(found: &Discovery) -> String {
    let why = match &found.unread_bodies {
        Some(unread) => format!(
            "idemspec could not read {unread}; a key in a body was not seen, so where the \
             client puts its key is not known"
        ),
        None if !found.not_keys.is_empty() => {
            return format!(
                "discover: no key found: only headers that carry something else (a request \
                 id, a trace, a date, a signature) were fresh per operation and kept across \
                 the retry, so the client sends no idempotency key idemspec can see \
                 (key-present will FAIL it); if the API documents one of them as its key, name \
                 it in the client profile's `contract.key_at`:\n{}",
                not_keys_text(found)
            );
        }
        None => "the client sends no key, or a new one on each attempt, or the same one for \
                 every operation"
            .to_owned(),
    };
    format!(
        "discover: no place carried a value fresh per operation and kept across the retry: \
         {why}\n{}",
        not_keys_text(found)
    )
}

/// One line for each place that behaved like a key but is named as something else, with why.
fn not_keys_text(found: &Discovery) -> String {
    found
        .not_keys
        .iter()
        .map(|c| {
            format!(
                "  seen, not a key: {}  {:?} then {:?} ({})\n",
                c.at.as_yaml(),
                c.values.0,
                c.values.1,
                c.not_a_key.unwrap_or_default()
            )
        })
        .collect()
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
