//! The `leasebroker` binary: a thin wrapper around [`leasebroker::cli::run`].

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = leasebroker::cli::Args::parse();
    match leasebroker::cli::run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("leasebroker: error: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}
