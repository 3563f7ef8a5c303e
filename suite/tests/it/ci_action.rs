//! The GitHub Action and the GitLab CI template run as their CI would run them, against the
//! bundled reference server (leasebroker, inside the binary this test built): action.yml's one step
//! (ci/action.sh) with its inputs passed the way action.yml wires them and a fake job summary,
//! outputs and path file; ci/idemspec.gitlab-ci.yml's script lines with its variables, in `sh -e`
//! as a GitLab runner does. A passing run writes the summary and JUnit and exits 0; a flawed run
//! fails with the FAIL's sentence in the summary; a bad profile fails with idemspec's located error.
//! Both are given the built binary (the action's `binary` input; the template skips installing
//! when `idemspec` is on PATH), so no wheel is fetched (.ci/wheel/check.sh runs the action's install
//! path on the wheel CI builds). The workflows the README and docs/ci.md print give the action
//! only inputs it declares.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemspec::model::{RunReport, Verdict};
use serde::Deserialize;

/// One check, the one `--flaw no-fingerprint` breaks, so each run takes a few seconds.
const ONLY: &str = "--reference --only fingerprint-mismatch";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// action.yml, the parts a runner reads.
#[derive(Debug, Deserialize)]
struct Action {
    inputs: BTreeMap<String, Input>,
    runs: Runs,
}

#[derive(Debug, Deserialize)]
struct Input {
    default: String,
}

#[derive(Debug, Deserialize)]
struct Runs {
    using: String,
    steps: Vec<ActionStep>,
}

#[derive(Debug, Deserialize)]
struct ActionStep {
    shell: String,
    run: String,
    env: BTreeMap<String, String>,
}

/// What one run of the action's step left behind.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    /// The job summary (`GITHUB_STEP_SUMMARY`).
    summary: String,
    /// The step's outputs (`GITHUB_OUTPUT`).
    outputs: String,
    /// The step's log, stdout then stderr.
    log: String,
    /// The step's working directory.
    dir: tempfile::TempDir,
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Runs action.yml's step in a fresh directory holding `files`, with `inputs` (the rest at their
/// defaults) mapped to its environment as action.yml says, as a runner would.
fn action(inputs: &[(&str, &str)], files: &[(&str, &str)]) -> Ran {
    let text = read(&root().join("action.yml"));
    let action: Action = serde_saphyr::from_str(&text).expect("action.yml parses");
    assert_eq!(action.runs.using, "composite");
    let [step] = &action.runs.steps[..] else {
        panic!("action.yml has one step: {:?}", action.runs.steps)
    };
    assert_eq!(step.shell, "bash");
    let given: BTreeMap<_, _> = inputs.iter().copied().collect();
    let mut wired = Vec::new();
    let mut command = Command::new("bash");
    for (var, expr) in &step.env {
        let name = expr
            .strip_prefix("${{ inputs.")
            .and_then(|rest| rest.strip_suffix(" }}"))
            .unwrap_or_else(|| panic!("{var} is not an input: {expr}"));
        let default = &action.inputs.get(name).expect("a declared input").default;
        command.env(var, given.get(name).copied().unwrap_or(default));
        wired.push(name);
    }
    let declared: Vec<_> = action.inputs.keys().map(String::as_str).collect();
    wired.sort_unstable();
    assert_eq!(wired, declared, "every input reaches the step, once");
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).expect("write fixture");
    }
    let github = |name: &str| dir.path().join(format!("github-{name}"));
    let out = command
        .args(["-c", &step.run])
        .current_dir(dir.path())
        .env("GITHUB_ACTION_PATH", root())
        .env("GITHUB_STEP_SUMMARY", github("summary"))
        .env("GITHUB_OUTPUT", github("output"))
        .env("GITHUB_PATH", github("path"))
        .env("RUNNER_TEMP", dir.path())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("bash runs");
    Ran {
        code: out.status.code(),
        summary: read(&github("summary")),
        outputs: read(&github("output")),
        log: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        dir,
    }
}

/// The action's inputs for a run of [`ONLY`] against the reference with `more` arguments.
fn reference_inputs(more: &str) -> [(&'static str, String); 4] {
    [
        ("binary", env!("CARGO_BIN_EXE_idemspec").to_owned()),
        ("profile", String::new()),
        ("args", format!("{ONLY} --report-json report.json {more}")),
        ("junit", "reports/idemspec.xml".to_owned()),
    ]
}

fn as_refs<'a>(inputs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    inputs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The JSON report the run wrote to `name` in `dir`.
fn json_report(dir: &Path, name: &str) -> RunReport {
    crate::support::read_json_report(dir.join(name))
}

#[test]
fn action_passing_run_writes_summary_and_junit_and_exits_0() {
    let ran = action(&as_refs(&reference_inputs("")), &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.log);
    assert!(
        ran.summary.contains("## idemspec:") && ran.summary.contains("passed"),
        "the Markdown report is on the summary: {}",
        ran.summary
    );
    assert!(
        ran.summary.contains("`fingerprint-mismatch`"),
        "{}",
        ran.summary
    );
    let junit = read(&ran.dir.path().join("reports/idemspec.xml"));
    assert!(
        junit.contains("<testsuite") && junit.contains("fingerprint-mismatch"),
        "JUnit where `junit` says: {junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    for line in ["exit-code=0", "junit=reports/idemspec.xml", "report="] {
        assert!(ran.outputs.contains(line), "{line} in {}", ran.outputs);
    }
}

/// Text as the Markdown report writes it inside HTML (`<summary>`).
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn action_flawed_run_fails_the_step_with_the_fail_sentence_in_the_summary() {
    let ran = action(&as_refs(&reference_inputs("--flaw no-fingerprint")), &[]);
    assert_eq!(ran.code, Some(1), "{}", ran.log);
    let report = json_report(ran.dir.path(), "report.json");
    let check = report
        .checks
        .iter()
        .find(|c| c.id == "fingerprint-mismatch")
        .expect("the check ran");
    assert_eq!(check.verdict, Verdict::Fail, "{}", check.summary);
    assert!(
        ran.summary.contains("FAILED") && ran.summary.contains(&html(&check.summary)),
        "the FAIL's sentence {:?} is on the summary: {}",
        check.summary,
        ran.summary
    );
    assert!(ran.outputs.contains("exit-code=1"), "{}", ran.outputs);
    let junit = read(&ran.dir.path().join("reports/idemspec.xml"));
    assert!(junit.contains("<failure"), "{junit}");
}

/// A profile from `idemspec init` with one field misspelt (`base_url:` at line 25).
fn misspelt_profile() -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["init", "profile.yaml"])
        .current_dir(dir.path())
        .output()
        .expect("idemspec init runs");
    assert!(out.status.success(), "{out:?}");
    read(&dir.path().join("profile.yaml")).replace("base_urls:", "base_url:")
}

#[test]
fn action_bad_profile_fails_the_step_with_the_located_error() {
    let bin = env!("CARGO_BIN_EXE_idemspec");
    let profile = misspelt_profile();
    let ran = action(
        &[("binary", bin), ("profile", "typo.yaml")],
        &[("typo.yaml", &profile)],
    );
    assert_eq!(ran.code, Some(2), "{}", ran.log);
    for words in [
        "exit 2, no report",
        "typo.yaml:25:1",
        "unknown field `base_url`",
    ] {
        assert!(ran.summary.contains(words), "{words}: {}", ran.summary);
    }
    assert!(ran.outputs.contains("exit-code=2"), "{}", ran.outputs);
    // No report was written: no output names one.
    assert!(
        !ran.outputs.contains("junit=") && !ran.outputs.contains("report="),
        "{}",
        ran.outputs
    );
    let no_binary = action(
        &[
            ("binary", "/nonexistent/idemspec"),
            ("profile", "typo.yaml"),
        ],
        &[("typo.yaml", &profile)],
    );
    assert_eq!(no_binary.code, Some(2), "{}", no_binary.log);
    assert!(
        no_binary
            .summary
            .contains("/nonexistent/idemspec does not run")
            && no_binary.outputs.contains("exit-code=2"),
        "{}\n{}",
        no_binary.summary,
        no_binary.outputs
    );
    let missing = action(&[("binary", bin), ("profile", "missing.yaml")], &[]);
    assert_eq!(missing.code, Some(2), "{}", missing.log);
    assert!(
        missing.summary.contains("failed to read `missing.yaml`"),
        "{}",
        missing.summary
    );
}

/// ci/idemspec.gitlab-ci.yml's hidden job, the parts a runner reads.
#[derive(Debug, Deserialize)]
struct Template {
    #[serde(rename = ".idemspec")]
    job: Job,
}

#[derive(Debug, Deserialize)]
struct Job {
    variables: BTreeMap<String, String>,
    script: Vec<String>,
    artifacts: Artifacts,
}

#[derive(Debug, Deserialize)]
struct Artifacts {
    when: String,
    reports: BTreeMap<String, String>,
    paths: Vec<String>,
}

/// Runs the template's script in a fresh directory with its variables, `variables` overriding
/// them, and the built binary's directory first on PATH; its exit code and the directory.
fn gitlab(variables: &[(&str, &str)]) -> (Option<i32>, String, tempfile::TempDir, Artifacts) {
    let text = read(&root().join("ci/idemspec.gitlab-ci.yml"));
    let template: Template = serde_saphyr::from_str(&text).expect("the template parses");
    let job = template.job;
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_idemspec"))
        .parent()
        .expect("a directory");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new("sh")
        .args(["-e", "-c", &job.script.join("\n")])
        .current_dir(dir.path())
        .envs(&job.variables)
        .envs(variables.iter().copied())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("sh runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), log, dir, job.artifacts)
}

/// Every artifact path the template keeps is there, and the JUnit report is one of them.
fn artifacts_written(dir: &Path, artifacts: &Artifacts) {
    assert_eq!(
        artifacts.when, "always",
        "reports are kept when the job fails"
    );
    let junit = artifacts.reports.get("junit").expect("a JUnit report");
    assert!(artifacts.paths.contains(junit), "{artifacts:?}");
    for path in &artifacts.paths {
        assert!(dir.join(path).is_file(), "{path} was written");
    }
}

#[test]
fn gitlab_template_passes_and_fails_by_the_run() {
    let vars = [("IDEMSPEC_PROFILE", ""), ("IDEMSPEC_ARGS", ONLY)];
    let (code, log, dir, artifacts) = gitlab(&vars);
    assert_eq!(code, Some(0), "{log}");
    artifacts_written(dir.path(), &artifacts);

    let args = format!("{ONLY} --flaw no-fingerprint");
    let (code, log, dir, artifacts) = gitlab(&[("IDEMSPEC_PROFILE", ""), ("IDEMSPEC_ARGS", &args)]);
    assert_eq!(code, Some(1), "{log}");
    artifacts_written(dir.path(), &artifacts);
    let report = read(&dir.path().join("idemspec.md"));
    let json = json_report(dir.path(), "idemspec.json");
    let check = json.checks.iter().find(|c| c.verdict == Verdict::Fail);
    let check = check.expect("the flawed run has a FAIL");
    assert!(report.contains(&html(&check.summary)), "{report}");
}

/// Every step in `value` that uses this repository's action (`uses: idemspec/idemspec@…`).
fn action_steps<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            let uses = map.get("uses").and_then(serde_json::Value::as_str);
            if uses.is_some_and(|u| u.starts_with("idemspec/idemspec@")) {
                found.push(value);
            }
            map.values().for_each(|v| action_steps(v, found));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| action_steps(v, found)),
        _ => {}
    }
}

/// The workflows the README and docs/ci.md print give the action only inputs action.yml declares.
#[test]
fn documented_action_steps_use_declared_inputs() {
    let action: Action = serde_saphyr::from_str(&read(&root().join("action.yml"))).expect("parses");
    let mut steps = 0;
    for doc in ["README.md", "docs/ci.md"] {
        let text = read(&root().join(doc));
        for block in text.split("```yaml\n").skip(1) {
            let yaml = block.split("```").next().unwrap_or_default();
            let Ok(value) = serde_saphyr::from_str::<serde_json::Value>(yaml) else {
                continue; // GitLab's, or a fragment
            };
            let mut found = Vec::new();
            action_steps(&value, &mut found);
            for step in found {
                let with = step["with"].as_object().expect("inputs under `with`");
                for name in with.keys() {
                    assert!(action.inputs.contains_key(name), "{doc}: input {name}");
                }
                steps += 1;
            }
        }
    }
    assert!(
        steps >= 2,
        "the README and docs/ci.md show the action: {steps}"
    );
}
