//! The servers the `idemspec` binary carries: the standalone proxy (`idemspec proxy`) and the
//! reference server behind the hidden `idemspec __leasebroker`, which `idemspec run --reference`
//! re-executes as a child process it can really kill and restart.

use std::ffi::OsString;

use anyhow::Context as _;
use clap::Parser as _;
use idemspec::model::ExitCode;

use super::Failure;

/// The hidden subcommand that runs leasebroker (docs/design/interfaces.md).
pub const LEASEBROKER_SUBCOMMAND: &str = "__leasebroker";

/// Runs `idemspec proxy` until Ctrl-C.
///
/// # Errors
/// A [`Failure`] (exit 2) for an invalid proxy file, a missing upstream or an address in use.
pub fn proxy(args: idemspec_proxy::cli::ProxyArgs) -> Result<ExitCode, Failure> {
    runtime()?
        .block_on(idemspec_proxy::cli::run(args))
        .map_err(|e| Failure::usage(e).hint("`idemspec validate FILE` checks a proxy file"))?;
    Ok(ExitCode::Success)
}

/// Runs `idemspec __leasebroker ARGS…`: every argument after the subcommand is leasebroker's
/// own, parsed by its clap definition (so `idemspec`'s global flags never take one of them).
///
/// # Errors
/// A [`Failure`] (exit 2) when leasebroker cannot start.
pub fn leasebroker(args: impl Iterator<Item = OsString>) -> Result<ExitCode, Failure> {
    let args = leasebroker::cli::Args::parse_from(
        std::iter::once(OsString::from("idemspec __leasebroker")).chain(args),
    );
    idemspec::process_group::exit_with_parent();
    runtime()?
        .block_on(leasebroker::cli::run(args))
        .context("leasebroker stopped")?;
    Ok(ExitCode::Success)
}

/// A multi-threaded tokio runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Runtime::new()
        .context("failed to start the async runtime")
        .map_err(Failure::usage)
}
