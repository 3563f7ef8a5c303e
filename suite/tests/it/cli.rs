//! The `idemspec` binary as a user meets it: exit codes, where output goes, and every configuration
//! error message (snapshotted), run as a real process in a temporary directory.

use std::path::Path;
use std::process::{Command, Output};

const SCENARIO: &str = r#"version: 1
id: my-lost-response
title: The response is lost; the retry replays it
level: MUST
reference: "article: lost responses"
steps:
  - {name: first, op: create, key: K1}
  - {name: retry, op: create, key: K1}
assert:
  - status: {step: retry, in: [2xx]}
  - created: {equals: 1}
"#;

/// Runs the binary in `dir` with `args`, colour off by environment (as in CI logs).
fn idemspec(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the idemspec binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write fixture");
}

/// A directory holding a valid profile (from `idemspec init`) and a valid scenario.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = idemspec(dir.path(), &["init", "profile.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    write(dir.path(), "scenario.yaml", SCENARIO);
    dir
}

/// Asserts exit code 2 and an empty stdout, and returns stderr for a snapshot.
fn config_error(dir: &Path, args: &[&str]) -> String {
    let out = idemspec(dir, args);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "", "errors never go to stdout");
    let text = stderr(&out);
    assert!(!text.contains('\u{1b}'), "NO_COLOR is honoured: {text}");
    text
}

#[test]
fn init_writes_a_profile_that_validates_and_refuses_to_overwrite() {
    let dir = workspace();
    let out = idemspec(dir.path(), &["validate", "profile.yaml", "scenario.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "ok: profile.yaml (target profile `my-api`, contract `article`)\n\
         ok: scenario.yaml (scenario `my-lost-response`, MUST)\n"
    );

    std::fs::write(dir.path().join("profile.yaml"), "mine").expect("overwrite fixture");
    insta::assert_snapshot!(config_error(dir.path(), &["init", "profile.yaml"]));
    let kept = std::fs::read_to_string(dir.path().join("profile.yaml")).expect("read");
    assert_eq!(
        kept, "mine",
        "init without --force must not touch an existing file"
    );

    let out = idemspec(dir.path(), &["init", "profile.yaml", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = idemspec(dir.path(), &["validate", "profile.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `init --preset NAME` writes a starting profile for every preset that validates as it stands,
/// without a warning, and claims that preset; an unknown name is refused, listing the presets, and writes nothing.
#[test]
fn init_writes_a_profile_for_each_preset() {
    let dir = workspace();
    for preset in [
        "article",
        "ietf-draft",
        "stripe-v1",
        "aws-client-token",
        "gcp-request-id",
    ] {
        let file = format!("{preset}.yaml");
        let out = idemspec(dir.path(), &["init", &file, "--preset", preset]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = idemspec(dir.path(), &["validate", &file]);
        assert_eq!(out.status.code(), Some(0), "{preset}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("warning"),
            "{preset}: {}",
            stderr(&out)
        );
        assert!(
            stdout(&out).contains(&format!("contract `{preset}`")),
            "{}",
            stdout(&out)
        );
    }
    let out = idemspec(dir.path(), &["init", "x.yaml", "--preset", "azure"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the presets are: article"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("x.yaml").exists());
}

#[test]
fn bad_yaml_is_located() {
    let dir = workspace();
    write(
        dir.path(),
        "broken.yaml",
        "version: 1\nname: x\nbase_urls: [http://a\nprincipals: []\n",
    );
    insta::assert_snapshot!(config_error(dir.path(), &["validate", "broken.yaml"]));
}

/// A syntax error that hides the file's top-level keys (a tab in the indentation) is still
/// reported with file, line and column by `validate`, not as "cannot tell what this file is"; an
/// empty file says it is empty.
#[test]
fn validate_locates_yaml_that_cannot_be_classified() {
    let dir = workspace();
    write(
        dir.path(),
        "tabbed.yaml",
        "version: 1\nname: x\n\tbase_urls: []\n",
    );
    let text = config_error(dir.path(), &["validate", "tabbed.yaml"]);
    assert!(text.contains("tabbed.yaml:2:"), "located: {text}");
    assert!(text.contains("found a tab"), "says what is wrong: {text}");
    assert!(!text.contains("cannot tell"), "{text}");
    write(dir.path(), "empty.yaml", "\n");
    let text = config_error(dir.path(), &["validate", "empty.yaml"]);
    assert!(text.contains("`empty.yaml` is empty"), "{text}");
}

#[test]
fn unknown_profile_field_is_located() {
    let dir = workspace();
    let text = std::fs::read_to_string(dir.path().join("profile.yaml")).expect("read");
    write(
        dir.path(),
        "typo.yaml",
        &text.replace("base_urls:", "base_url:"),
    );
    insta::assert_snapshot!(config_error(dir.path(), &["validate", "typo.yaml"]));
}

#[test]
fn unknown_assertion_is_located() {
    let dir = workspace();
    write(
        dir.path(),
        "typo.yaml",
        &SCENARIO.replace("created: {equals: 1}", "creatd: {equals: 1}"),
    );
    insta::assert_snapshot!(config_error(dir.path(), &["validate", "typo.yaml"]));
}

/// A scenario naming a procedure the runner does not have is refused at the name's line, listing
/// the ones there are, by `validate` and by `run --scenario` alike; one naming a real procedure
/// under a header of its own validates.
#[test]
fn an_unknown_procedure_is_located_and_the_known_ones_listed() {
    let dir = workspace();
    let header = "version: 1\nid: my-storm\ntitle: t\nlevel: MUST\nreference: r\n";
    write(
        dir.path(),
        "storm.yaml",
        &format!("{header}procedure: retry-strom\n"),
    );
    let text = config_error(dir.path(), &["validate", "storm.yaml"]);
    assert!(text.contains("storm.yaml:6:"), "located: {text}");
    assert!(
        text.contains(
            "unknown procedure \"retry-strom\"; expected one of: key-validation, retry-storm"
        ),
        "{text}"
    );
    let text = config_error(
        dir.path(),
        &[
            "run",
            "--reference",
            "--scenario",
            "storm.yaml",
            "--only",
            "my-storm",
        ],
    );
    assert!(text.contains("unknown procedure \"retry-strom\""), "{text}");
    // What a procedure does not read is refused, not ignored: steps and assertions beside it,
    // parameters it does not take, parameters with no procedure to tune.
    for (body, said) in [
        (
            "procedure: retry-storm\nassert:\n  - created: {equals: 99}\n",
            "storm.yaml:6:12: a scenario that runs the procedure `retry-storm` has no `steps` or `assert`",
        ),
        (
            "procedure: key-validation\nparameters: {clients: 5}\n",
            "storm.yaml:6:12: the procedure `key-validation` does not read `parameters.clients` (it reads none)",
        ),
        (
            "steps:\n  - {name: a, op: create, key: K1}\nparameters: {seed: 1}\n",
            "`parameters` tune a `procedure`, and this scenario names none",
        ),
    ] {
        write(dir.path(), "storm.yaml", &format!("{header}{body}"));
        let text = config_error(dir.path(), &["validate", "storm.yaml"]);
        assert!(text.contains(said), "{body}: {text}");
    }
    write(
        dir.path(),
        "storm.yaml",
        &format!("{header}procedure: retry-storm\nparameters: {{clients: 2}}\n"),
    );
    let out = idemspec(dir.path(), &["validate", "storm.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A file taking a built-in's id is refused by `list` as by `validate` and `run`.
    write(
        dir.path(),
        "storm.yaml",
        &format!("{header}procedure: retry-storm\n").replace("my-storm", "key-validation"),
    );
    let text = config_error(dir.path(), &["list", "--scenario", "storm.yaml"]);
    assert!(
        text.contains(
            "storm.yaml:2:5: scenario id `key-validation` is already used by a built-in check"
        ),
        "{text}"
    );
}

#[test]
fn validate_reports_every_invalid_file_and_the_valid_ones() {
    let dir = workspace();
    write(
        dir.path(),
        "a-bad.yaml",
        &SCENARIO.replace("level: MUST", "level: MAYBE"),
    );
    write(dir.path(), "b-unknown.yaml", "hello: world\n");
    write(
        dir.path(),
        "c-builtin-id.yaml",
        &SCENARIO.replace("my-lost-response", "lost-response"),
    );
    // Files are read in sorted order: this one claims the id before `scenario.yaml` does.
    write(dir.path(), "d-twice.yaml", SCENARIO);
    let out = idemspec(dir.path(), &["validate", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stdout(&out),
        "ok: ./d-twice.yaml (scenario `my-lost-response`, MUST)\n\
         ok: ./profile.yaml (target profile `my-api`, contract `article`)\n"
    );
    insta::assert_snapshot!(stderr(&out));
}

#[test]
fn run_with_a_bad_profile_or_scenario_stops_before_running() {
    let dir = workspace();
    write(
        dir.path(),
        "typo.yaml",
        &SCENARIO.replace("op: create", "op: creat"),
    );
    insta::assert_snapshot!(
        "run_bad_scenario",
        config_error(
            dir.path(),
            &["run", "--target", "profile.yaml", "--scenario", "typo.yaml"]
        )
    );
    write(
        dir.path(),
        "env.yaml",
        "version: 1\nname: x\nbase_urls: [\"${IDEMSPEC_TEST_UNSET_URL}\"]\n",
    );
    insta::assert_snapshot!(
        "run_unset_variable",
        config_error(dir.path(), &["run", "--target", "env.yaml"])
    );
    insta::assert_snapshot!(
        "run_missing_profile",
        config_error(dir.path(), &["run", "--target", "missing.yaml"])
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = workspace();
    for args in [
        &["run"][..],
        &[
            "run",
            "--flaw",
            "no-fingerprint",
            "--target",
            "profile.yaml",
        ],
        &["run", "--reference", "--target", "profile.yaml"],
        &["run", "--reference", "--color", "sometimes"],
        &["run", "--reference", "--flaw", "no-such-flaw"],
        &["validate"],
        &["frobnicate"],
    ] {
        let out = idemspec(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("error:"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// `idemspec run --reference --tls` reaches the reference over mutual TLS and says so, and no
/// private key shows in its output.
#[test]
fn reference_over_mutual_tls_from_the_command_line() {
    let dir = workspace();
    let args = ["run", "--reference", "--tls", "--only", "cross-tenant"];
    let out = idemspec(dir.path(), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("reached https://127.0.0.1:"), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    assert!(!text.contains("PRIVATE KEY"), "{text}");
}

#[test]
fn tls_applies_only_to_the_reference_server() {
    let dir = workspace();
    let out = idemspec(dir.path(), &["run", "--tls", "--target", "profile.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--tls apply only to the reference server"),
        "{err}"
    );
    assert!(err.contains("add --reference"), "{err}");
}

#[test]
fn color_always_colours_errors_and_never_does_not() {
    let dir = workspace();
    let always = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["--color", "always", "validate", "missing.yaml"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert!(
        stderr(&always).contains("\u{1b}["),
        "--color always beats NO_COLOR"
    );
    let never = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["validate", "missing.yaml", "--color", "never"])
        .current_dir(dir.path())
        .env_remove("NO_COLOR")
        .output()
        .expect("runs");
    assert!(!stderr(&never).contains('\u{1b}'));
}

#[test]
fn help_shows_examples_and_exit_codes() {
    let out = idemspec(Path::new("."), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for expected in ["idemspec run --reference", "idemspec init", "Exit codes: 0"] {
        assert!(
            help.contains(expected),
            "--help lacks {expected:?}:\n{help}"
        );
    }
}

#[test]
fn list_shows_every_check_of_the_design_catalogue() {
    let dir = workspace();
    let out = idemspec(dir.path(), &["list", "--scenario", "scenario.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    for id in [
        "never-processed",
        "lost-response",
        "client-timeout-in-flight",
        "concurrent-same-key",
        "fingerprint-mismatch",
        "cross-tenant",
        "endpoint-scope",
        "stuck-in-flight",
        "failed-not-cached",
        "delete-doom-loop",
        "reboot-once",
        "replay-fidelity",
        "replay-after-delete",
        "key-validation",
        "resumable-side-effects",
        "retry-storm",
        "my-lost-response",
    ] {
        assert!(table.contains(id), "`idemspec list` lacks {id}:\n{table}");
    }
    assert!(
        table.contains("scenario.yaml"),
        "user checks name their file"
    );
}

#[test]
fn proxy_and_reference_server_are_carried_by_the_binary() {
    let dir = workspace();
    write(dir.path(), "proxy.yaml", "version: 1\nupstream: http://127.0.0.1:1\nrules:\n  - {name: x, match: {}, fault: {explode: {}}}\n");
    let out = idemspec(dir.path(), &["proxy", "--scenario", "proxy.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("proxy.yaml:4:"), "{}", stderr(&out));
    // The hidden subcommand takes leasebroker's own flags, even ones idemspec also has.
    let out = idemspec(dir.path(), &["__leasebroker", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("--flaw"), "{}", stdout(&out));
}

#[test]
fn an_unreachable_target_exits_3_with_a_hint() {
    let dir = workspace();
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["run", "--target", "profile.yaml"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("API_URL", "http://127.0.0.1:1")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "no report when nothing could run");
    let text = stderr(&out);
    assert!(text.starts_with("error: "), "{text}");
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(text.contains("\nhint: "), "{text}");
}

/// Serves every request on a fresh 127.0.0.1 port with `200`, `content_type` and `body` until
/// the process ends; returns its base URL.
fn answer_everything(content_type: &'static str, body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A base URL where something else answers 200 (a welcome page, a JSON API of another shape)
/// stops the run at the preflight with exit 3, naming the list request and what came back, instead
/// of running every check against a page that can judge nothing.
#[test]
fn a_list_the_profile_cannot_read_stops_the_run_at_the_preflight() {
    let dir = workspace();
    let cases = [
        (
            "text/html",
            "<!DOCTYPE html>\n<html><body>Welcome to nginx!</body></html>",
            "its body is not JSON (Content-Type `text/html`",
        ),
        (
            "application/json",
            r#"{"results": [], "count": 0}"#,
            "is not in the response (its top-level fields are `count`, `results`)",
        ),
    ];
    for (content_type, body, said) in cases {
        let url = answer_everything(content_type, body);
        let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
            .args(["run", "--target", "profile.yaml"])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("API_URL", &url)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert_eq!(stdout(&out), "", "no report when nothing could run");
        let text = stderr(&out);
        assert!(text.contains(said), "{text}");
        assert!(text.contains("answered 200, but"), "{text}");
        assert!(text.contains("as principal `"), "{text}");
        assert!(text.contains("`operations.list`"), "{text}");
    }
}

/// The YAML examples in the README and the scenario guide load as they are printed: the docs
/// cannot drift from the schema unnoticed.
#[test]
fn documented_examples_validate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = [
        ("README.md", include_str!("../../../README.md")),
        (
            "docs/writing-scenarios.md",
            include_str!("../../../docs/writing-scenarios.md"),
        ),
    ];
    let mut files = Vec::new();
    for (doc, text) in docs {
        for (i, block) in text.split("```yaml\n").skip(1).enumerate() {
            let yaml = block.split("```").next().unwrap_or_default();
            // Only whole profiles and scenarios; CI snippets and fragments are not ours to load.
            if yaml.starts_with("version: 1") {
                let name = format!("{}-{i}.yaml", doc.replace(['/', '.'], "-"));
                write(dir.path(), &name, yaml);
                files.push(name);
            }
        }
    }
    assert!(
        files.len() >= 3,
        "the docs hold a profile and scenarios: {files:?}"
    );
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(&args)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("ALT_API_URL", "http://127.0.0.1:1")
        .env("ALT_ADMIN_URL", "http://127.0.0.1:2")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Processes whose environment holds `tag` (the test's own children and grandchildren).
#[cfg(target_os = "linux")]
fn processes_tagged(tag: &str) -> Vec<u32> {
    let needle = format!("IDEMSPEC_TEST_TAG={tag}");
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Polls `done` every 50 ms until it holds; fails with `what` after `within` seconds.
fn wait_until(within: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(within);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends SIGTERM to `child` (a CI job's cancel, `docker stop`).
fn sigterm(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Once `what` (a `sleep MARKER` that `child`, an idemspec, started) runs, sends `child` SIGTERM
/// and asserts idemspec exits 130 and `what` does not outlive it.
#[cfg(target_os = "linux")]
fn sigterm_takes_down(child: std::process::Child, marker: &str, what: &str) {
    let sleeping = || {
        Command::new("pgrep")
            .args(["-f", &format!("^sleep {marker}$")])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    };
    wait_until(60, &format!("{what} never started"), sleeping);
    sigterm(&child);
    let out = child.wait_with_output().expect("idemspec exits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    wait_until(10, &format!("{what} outlived idemspec"), || !sleeping());
}

/// SIGTERM stops `idemspec proxy --tls-self-signed` as Ctrl-C does: it exits and its CA's
/// directory is gone (no CA file left in the temp dir per run).
#[cfg(target_os = "linux")]
#[test]
fn sigterm_stops_the_proxy_and_removes_its_self_signed_ca() {
    use std::io::BufRead as _;
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .arg("--tls-self-signed")
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the idemspec binary starts");
    let stdout = child.stdout.take().expect("piped");
    let ca = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("idemspec-proxy CA certificate: ")
                .map(str::to_owned)
        })
        .expect("the proxy names its CA file");
    assert!(std::path::Path::new(&ca).starts_with(tmp.path()), "{ca}");
    assert!(std::path::Path::new(&ca).exists(), "{ca}");
    sigterm(&child);
    let mut exit = None;
    wait_until(20, "the proxy did not stop", || {
        exit = child.try_wait().expect("wait");
        exit.is_some()
    });
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// SIGTERM stops `idemspec client` and the command it runs, with all the command's shell started:
/// nothing of it outlives idemspec.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_stops_the_client_run_and_its_command() {
    let marker = format!("47.{}", std::process::id());
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../clients/example/client.yaml"
    );
    let child = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["client", "--profile", profile, "--exec"])
        .arg(format!("sleep {marker}; echo done"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the idemspec binary starts");
    sigterm_takes_down(child, &marker, "the command");
}

/// SIGTERM while a principal's token command runs stops the run with exit 130 and takes all the
/// command started down with it.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_during_a_token_command_kills_what_it_started() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = format!("46.{}", std::process::id());
    let profile = include_str!("fixtures/alt-api.yaml").replace(
        "headers: {X-Api-Key: alpha-key}\n",
        &format!(
            "headers: {{X-Api-Key: alpha-key}}\n    token: {{command: 'sleep {marker}; echo t'}}\n"
        ),
    );
    std::fs::write(dir.path().join("p.yaml"), profile).expect("write the profile");
    let child = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["run", "--target", "p.yaml"])
        .current_dir(dir.path())
        .env("ALT_API_URL", "http://127.0.0.1:9")
        .env("ALT_ADMIN_URL", "http://127.0.0.1:9")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the idemspec binary starts");
    sigterm_takes_down(child, &marker, "the token command");
}

/// SIGTERM (a CI job's timeout) stops the run with exit 130 and takes the reference server's child
/// process down with it: no orphaned leasebroker keeps a port and a database open.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_stops_the_run_and_the_reference_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tag = format!("sigterm-{}", std::process::id());
    let child = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["run", "--reference"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("IDEMSPEC_TEST_TAG", &tag)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the idemspec binary starts");
    // Wait until the reference server (a grandchild carrying the tag) is up.
    wait_until(60, "the reference server never started", || {
        processes_tagged(&tag).len() >= 2
    });
    sigterm(&child);
    let out = child.wait_with_output().expect("idemspec exits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    let left = format!("processes tagged {tag} outlived idemspec");
    wait_until(20, &left, || processes_tagged(&tag).is_empty());
}

/// The profile `idemspec init` writes is a working start: against leasebroker in `--dev` mode (any
/// bearer token is a principal) every check runs, and those needing hooks the template leaves
/// commented out are SKIP with the capability named.
#[test]
fn the_init_profile_runs_against_a_dev_reference_server() {
    use std::io::BufRead as _;
    let dir = workspace();
    let database = format!("sqlite://{}/lb.db", dir.path().display());
    let mut server = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args([
            "__leasebroker",
            "--dev",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &database,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("leasebroker starts");
    let server_out = server.stdout.take().expect("piped stdout");
    let first = std::io::BufReader::new(server_out)
        .lines()
        .next()
        .and_then(Result::ok)
        .unwrap_or_default();
    let url = first
        .strip_prefix("leasebroker listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
        .to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args([
            "run",
            "--target",
            "profile.yaml",
            "--report-json",
            "report.json",
        ])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("API_URL", &url)
        .output()
        .expect("runs");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let report: idemspec::model::RunReport = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("report.json")).expect("report written"),
    )
    .expect("report parses");
    assert_eq!(
        report.stats.fail + report.stats.unknown,
        0,
        "{}",
        stdout(&out)
    );
    for check in report
        .checks
        .iter()
        .filter(|c| c.verdict == idemspec::model::Verdict::Skip)
    {
        assert!(
            [
                "crash",
                "restart",
                "fail_next",
                "side_effects",
                "request variant",
                "in_flight_ttl"
            ]
            .iter()
            .any(|missing| check.summary.contains(missing)),
            "{} is SKIP without naming the missing hook, variant or contract field: {}",
            check.id,
            check.summary
        );
    }
    assert!(report.stats.pass >= 12, "{}", stdout(&out));
}

#[test]
fn selection_errors_name_the_id_and_stop_before_any_request() {
    let dir = workspace();
    // API_URL points nowhere: a selection error must come before any attempt to reach it.
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
            .args(args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("API_URL", "http://127.0.0.1:1")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        stderr(&out)
    };
    insta::assert_snapshot!(
        "run_unknown_only_id",
        run(&["run", "--target", "profile.yaml", "--only", "lost-responce"])
    );
    write(
        dir.path(),
        "dup.yaml",
        &SCENARIO.replace("my-lost-response", "lost-response"),
    );
    insta::assert_snapshot!(
        "run_duplicate_id",
        run(&["run", "--target", "profile.yaml", "--scenario", "dup.yaml"])
    );
    // A selection that leaves nothing would otherwise print `result: ok` and exit 0, judging nothing.
    let text = run(&[
        "run",
        "--target",
        "profile.yaml",
        "--only",
        "lost-response",
        "--skip",
        "lost-response",
    ]);
    assert!(text.contains("leaves no check to run"), "{text}");
}

/// An unwritable report path is a configuration error before anything runs, not after a long run.
#[test]
fn an_unwritable_report_is_refused_before_the_run() {
    let dir = workspace();
    std::fs::create_dir(dir.path().join("taken.json")).expect("a directory in the way");
    let out = idemspec(
        dir.path(),
        &[
            "run",
            "--reference",
            "--only",
            "replay-fidelity",
            "--report-json",
            "taken.json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "nothing ran");
    insta::assert_snapshot!(stderr(&out));
}

/// The same file for two reports is a usage error before anything runs (no request, no report).
#[test]
fn two_reports_in_one_file_stop_before_the_run() {
    let dir = workspace();
    let text = config_error(
        dir.path(),
        &[
            "run",
            "--target",
            "profile.yaml",
            "--report-junit",
            "out/report",
            "--report-json",
            "./out/../out/report",
        ],
    );
    assert!(
        text.contains("`--report-junit` and `--report-json` both write"),
        "{text}"
    );
    assert!(
        !text.contains("reach the target"),
        "nothing was sent: {text}"
    );
}

/// Every assertion kind and modifier the loader knows is in the guide's vocabulary: the loader's own
/// "expected one of …" list is the source of truth.
#[test]
fn the_scenario_guide_documents_every_assertion_kind() {
    let dir = workspace();
    write(
        dir.path(),
        "typo.yaml",
        &SCENARIO.replace("created: {equals: 1}", "creatd: {equals: 1}"),
    );
    let out = idemspec(dir.path(), &["validate", "typo.yaml"]);
    let err = stderr(&out);
    let known = err
        .split("expected one of ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the error lists the known kinds");
    let guide = include_str!("../../../docs/writing-scenarios.md");
    let missing: Vec<&str> = known
        .split(", ")
        .map(str::trim)
        .filter(|kind| {
            !guide.contains(&format!("`{kind}:")) && !guide.contains(&format!("`{kind}`"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/writing-scenarios.md lacks {missing:?}"
    );
}

/// What HTTP cannot carry is a configuration error (exit 2) from `validate` and from `run`, with
/// file, line and column and every problem of the file — never "unreachable" (exit 3) at run time.
#[test]
fn values_http_cannot_carry_are_configuration_errors_with_every_problem() {
    let dir = workspace();
    let profile = std::fs::read_to_string(dir.path().join("profile.yaml")).expect("read");
    let broken = profile
        .replacen(
            "base_urls:\n",
            "base_urls:\n  - \"http://\"\n  - \"http://127.0.0.1:99999\"\n",
            1,
        )
        .replacen(
            "Authorization: Bearer ${API_TOKEN_A:-token-alice}",
            "Authorization: \"Bearer a\\r\\nX-Injected: 1\"",
            1,
        );
    assert!(
        broken.contains("X-Injected") && broken.contains("99999"),
        "{broken}"
    );
    write(dir.path(), "broken.yaml", &broken);
    let text = config_error(dir.path(), &["validate", "broken.yaml"]);
    for says in ["`http://` has no host", "port `99999`", "CR and LF"] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(text.contains("broken.yaml:"), "located: {text}");
    let run = idemspec(dir.path(), &["run", "--target", "broken.yaml"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
}

/// A `${VAR}` in a YAML comment (a commented-out hook, say) is left alone.
#[test]
fn variables_in_comments_are_not_expanded() {
    let dir = workspace();
    let profile = std::fs::read_to_string(dir.path().join("profile.yaml")).expect("read");
    write(
        dir.path(),
        "commented.yaml",
        &format!("# crash: {{request: {{url: \"${{NOT_SET_ANYWHERE}}/crash\"}}}}\n{profile}"),
    );
    let out = idemspec(dir.path(), &["validate", "commented.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A reference database that cannot be reached fails at once with the child's own error (once: a
/// 30 s wait ending in "no listening lines").
#[test]
fn an_unreachable_reference_database_fails_fast_with_the_childs_error() {
    let dir = workspace();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "postgres://postgres@{}/nothing",
        closed.local_addr().expect("addr")
    );
    drop(closed);
    let started = std::time::Instant::now();
    let out = idemspec(
        dir.path(),
        &["run", "--reference", "--reference-database-url", &url],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stderr(&out).contains("Connection refused"),
        "{}",
        stderr(&out)
    );
}

/// ARCHITECTURE.md says what the code has: the number of built-in checks, and every subcommand
/// `idemspec --help` lists among its entry points.
#[test]
fn the_architecture_map_matches_the_code() {
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md");
    let checks = idemspec::runner::catalogue().len();
    assert!(
        map.contains(&format!("{checks} are built in")),
        "ARCHITECTURE.md should say `{checks} are built in`"
    );
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .arg("--help")
        .output()
        .expect("idemspec --help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .expect("a Commands: section");
    for line in commands.lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if name == "help" || !line.starts_with("  ") || line.starts_with("   ") {
            continue;
        }
        assert!(
            map.contains(&format!("`idemspec {name}`")),
            "ARCHITECTURE.md's entry points should name `idemspec {name}`"
        );
    }
}

/// `--only` and `--skip` take a comma-separated list as well as repeated flags.
#[test]
fn only_takes_a_comma_separated_list() {
    let dir = workspace();
    let out = idemspec(
        dir.path(),
        &["run", "--reference", "--only", "key-validation,retry-storm"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("2 passed"), "{text}");
}

/// TLS settings that cannot apply are said: upstream TLS flags with a plain upstream are refused
/// (exit 2) naming the flag, and two principals with one client certificate validate with a
/// warning naming both, at the second's `cert_file`.
#[test]
fn tls_settings_that_cannot_apply_are_said() {
    let dir = tempfile::tempdir().expect("temp dir");
    let argv = [
        "proxy",
        "--upstream",
        "http://127.0.0.1:1",
        "--tls-ca-file",
        "ca.pem",
    ];
    let text = config_error(dir.path(), &argv);
    assert!(
        text.contains("--tls-ca-file applies to an https:// upstream only"),
        "{text}"
    );
    let ca = idemspec_tls::ThrowawayCa::new().expect("a CA");
    let pair = ca.client_cert("alpha").expect("a certificate");
    idemspec_tls::write_identity(dir.path(), "alpha", &pair).expect("written");
    let id = "tls: {cert_file: alpha.pem, key_file: alpha-key.pem}";
    let profile = format!(
        "version: 1\nname: t\nbase_urls: [\"https://127.0.0.1:1\"]\nprincipals:\n  - {{name: alpha, {id}}}\n  - {{name: beta, {id}}}\noperations:\n  create: {{path: /things, body: '{{\"m\":\"{{{{marker}}}}\"}}', id: $.id}}\n  list: {{path: /things, items: \"$[*]\", marker: $.m}}\n"
    );
    write(dir.path(), "mtls.yaml", &profile);
    let out = idemspec(dir.path(), &["validate", "mtls.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("warning: mtls.yaml:6:") && said.contains("principals `alpha` and `beta`"),
        "{said}"
    );
}
