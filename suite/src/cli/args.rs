//! The command line as clap sees it: raw flags, validated later into what each command uses
//! (model: ripgrep's flags — parse, then validate).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::output::ColorChoice;

const EXAMPLES: &str = "\
Examples:
  # The one-command demonstration: the bundled reference server, every check.
  idemspec run --reference

  # Your own API, described by a target profile, with reports for CI.
  idemspec init idemspec.yaml
  idemspec run --target idemspec.yaml --report-junit idemspec.xml

  # Check profiles and scenarios without running anything.
  idemspec validate idemspec.yaml scenarios/

Exit codes: 0 every MUST check passed, 1 a MUST check failed (one the profile's `documented`
states only with --fail-documented; or a check was UNKNOWN without --allow-unknown), 2 usage or
configuration error, 3 the target was unreachable, 4 no check judged anything (without
--allow-nothing-judged), 130 interrupted.";

/// Prove that retries against your provisioning API are safe.
///
/// idemspec puts a fault-injecting proxy in front of an API, fires concurrent same-key requests
/// through it, and grades every Idempotency-Key rule PASS, FAIL, WARN, INFO, SKIP or UNKNOWN, with
/// the requests and responses as evidence.
#[derive(Debug, Parser)]
#[command(name = "idemspec", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// Output settings, accepted before or after the subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// When to colour output; `auto` honours NO_COLOR and colours only terminals.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, value_name = "WHEN", help_heading = "Output")]
    pub color: ColorChoice,
    /// Print only the essentials: the summary line and errors.
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Output"
    )]
    pub quiet: bool,
    /// More detail: one line per finished check, then logs (-vv for debug logs).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = "Output")]
    pub verbose: u8,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the checks against a target (or the bundled reference server) and report.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Write a commented target profile to start from.
    Init(InitArgs),
    /// Check target profiles and scenarios without running them.
    Validate(ValidateArgs),
    /// List the built-in checks with their level and source.
    List(ListArgs),
    /// Run the fault-injecting proxy on its own, until Ctrl-C.
    Proxy(idemspec_proxy::cli::ProxyArgs),
    /// Judge an HTTP client's retries: run a command that performs one operation through it,
    /// behind the fault proxy, and check its keys, backoff and bounds.
    #[command(after_help = CLIENT_EXAMPLES)]
    Client(ClientArgs),
}

const CLIENT_EXAMPLES: &str = "\
Examples:
  # The bundled example client (Python standard library):
  idemspec client --profile clients/example/client.yaml --exec 'python3 clients/example/create.py'

  # Your SDK: the command reads the base URL from $IDEMSPEC_BASE_URL or gets it as {{base_url}}.
  idemspec client --profile stripe.yaml --exec 'node create.js {{base_url}}' --report-junit client.xml

  # Over HTTPS: a throwaway CA per run, its file in SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
  # NODE_EXTRA_CA_CERTS, AWS_CA_BUNDLE and CURL_CA_BUNDLE, the base URL https://127.0.0.1:PORT.
  idemspec client --tls --profile clients/example/client.yaml \\
      --exec 'python3 clients/example/create.py --require-https'

The command runs once per situation (with `sh -c`, no stdin, its process group killed at the
deadline). Exit codes as for `run`: 0 every MUST check passed, 1 one failed or was UNKNOWN, 2 usage
or configuration error, 4 nothing judged.";

/// `idemspec client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The command that performs the profile's operation(s) through the client, run with `sh -c`;
    /// `{{base_url}}` in it, and $IDEMSPEC_BASE_URL, is where idemspec listens.
    #[arg(long, value_name = "COMMAND")]
    pub exec: String,
    /// The client profile (default: any POST is the operation, answered 201 with a small JSON body).
    #[arg(long, value_name = "CLIENT.yaml")]
    pub profile: Option<PathBuf>,
    /// Forward to this API instead of the canned upstream (`http://host:port`, or `https://`
    /// trusted by the platform's roots).
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Serve the command over HTTPS (as the profile's `tls: true` does): a throwaway CA made for
    /// the run issues a certificate for 127.0.0.1 and localhost; the command gets the CA's file in
    /// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS, AWS_CA_BUNDLE and CURL_CA_BUNDLE,
    /// and the base URL as https://127.0.0.1:PORT. The file is removed when the run ends.
    #[arg(long)]
    pub tls: bool,
    /// Run only these client checks (repeatable, or a comma-separated list).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Do not run these client checks (repeatable, or a comma-separated list).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// How long one run of the command may take (overrides the profile's `timeout`).
    #[arg(long, value_name = "DURATION", value_parser = bounded_duration)]
    pub command_timeout: Option<std::time::Duration>,
    /// How many runs of the command go on at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    /// Judge nothing: run the command three times (two operations, one retried after a lost
    /// response) and name where it puts its key, a value fresh per operation and kept across the
    /// retry, as `contract.key_at` writes it. Exit 0 when a place was found, 1 when none.
    #[arg(long, conflicts_with_all = ["upstream", "only", "skip"])]
    pub discover: bool,
    /// Reports and what the run may end with.
    #[command(flatten)]
    pub reports: ReportArgs,
}

const RUN_EXAMPLES: &str = "\
Examples:
  idemspec run --reference
  idemspec run --reference --flaw no-fingerprint
  idemspec run --reference --tls
  idemspec run --target api.yaml --only lost-response --only concurrent-same-key
  idemspec run --target api.yaml --scenario my-checks/ --report-junit out/idemspec.xml \\
      --report-json out/idemspec.json --report-markdown \"$GITHUB_STEP_SUMMARY\"";

/// `idemspec run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The target profile describing the API under test.
    #[arg(
        long,
        value_name = "PROFILE.yaml",
        required_unless_present = "reference",
        conflicts_with = "reference"
    )]
    pub target: Option<PathBuf>,
    /// Start the bundled reference server (leasebroker) and run against it.
    #[arg(long)]
    pub reference: bool,
    /// Break one rule of the reference server on purpose (repeatable), to see a FAIL.
    #[arg(long, value_name = "NAME", value_enum)]
    pub flaw: Vec<leasebroker::flaw::Flaw>,
    /// Database for the reference server (default: SQLite in a temporary directory).
    #[arg(long, value_name = "URL")]
    pub reference_database_url: Option<String>,
    /// How the reference server's creates answer: `sync` (default), `201` with the booted worker;
    /// `async`, `202` with a long-running operation to poll, the boot running after the answer.
    #[arg(long, value_name = "MODE", value_enum)]
    pub reference_creates: Option<leasebroker::fleet::CreateMode>,
    /// Serve the reference server over mutual TLS: a throwaway CA made for the run, leasebroker
    /// requiring a client certificate from it, and the two principals named by their
    /// certificates instead of bearer tokens (through the fault proxy too).
    #[arg(long)]
    pub tls: bool,
    /// Also run these scenario files, or every `*.yaml` in these directories (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    pub scenario: Vec<PathBuf>,
    /// Run only these checks (repeatable, or a comma-separated list).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Do not run these checks (repeatable, or a comma-separated list).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Reports and what the run may end with.
    #[command(flatten)]
    pub reports: ReportArgs,
    /// How long one check may run before it is UNKNOWN (e.g. `90s`, `10m`; at most 24h).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = bounded_duration)]
    pub check_timeout: std::time::Duration,
    /// How long the whole run may take; checks left when it ends are UNKNOWN (at most 24h).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = bounded_duration)]
    pub run_timeout: std::time::Duration,
    /// How long to measure a key's in-flight lockout where the contract declares no in-flight TTL;
    /// a key still locked then is a WARN with the time measured (at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = bounded_duration)]
    pub lockout_bound: std::time::Duration,
    /// How many checks run at once (1: one at a time). A check that disturbs the others (a crash,
    /// fail_next, the side-effect counters) runs alone regardless, and the profile's
    /// `checks_at_once` caps it. Verdicts do not depend on it.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
}

/// `idemspec init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the profile.
    #[arg(default_value = "idemspec.yaml", value_name = "PATH")]
    pub path: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// The contract to start from: `article` (the default), `ietf-draft`, `stripe-v1`, or a
    /// cloud's shape, `aws-client-token` (the key in a JSON body, operations named by a header)
    /// or `gcp-request-id` (the key in the query, the project in the path, operations to poll).
    #[arg(long, value_name = "NAME", default_value = "article")]
    pub preset: String,
}

/// `idemspec validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Target profiles, scenarios, or directories of them.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
}

/// `idemspec list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Also list the checks in these scenario files or directories.
    #[arg(long, value_name = "FILE|DIR")]
    pub scenario: Vec<PathBuf>,
}

/// A duration with a unit, from 1 s to 24 h (a deadline outside that is a typo, not a plan).
fn bounded_duration(text: &str) -> Result<std::time::Duration, String> {
    const MAX: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration ({e}); expected e.g. `90s` or `10m`"))?;
    if d < std::time::Duration::from_secs(1) || d > MAX {
        return Err(format!("`{text}` is out of range; expected 1s to 24h"));
    }
    Ok(d)
}

/// The report files and the exit policy, shared by `run` and `client`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "FILE", help_heading = "Reports")]
    pub report_junit: Option<PathBuf>,
    /// Write a JSON report here (schema: docs/reading-reports.md).
    #[arg(long, value_name = "FILE", help_heading = "Reports")]
    pub report_json: Option<PathBuf>,
    /// Write a Markdown report here (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "FILE", help_heading = "Reports")]
    pub report_markdown: Option<PathBuf>,
    /// Write a self-contained HTML report here: every check, its evidence and a timeline of its
    /// requests.
    #[arg(long, value_name = "FILE", help_heading = "Reports")]
    pub report_html: Option<PathBuf>,
    /// Do not fail the run when a check is UNKNOWN (could not decide).
    #[arg(long, help_heading = "Reports")]
    pub allow_unknown: bool,
    /// Exit 0 even when no check judged anything (every check skipped, only recorded, or
    /// allowed UNKNOWN); without it such a run exits 4.
    #[arg(long, help_heading = "Reports")]
    pub allow_nothing_judged: bool,
    /// Fail the run on a FAIL the target profile's `documented` states; without it such a FAIL
    /// is reported "as documented" and does not change the exit code.
    #[arg(long, help_heading = "Reports")]
    pub fail_documented: bool,
}
