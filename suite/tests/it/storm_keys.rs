//! retry-storm with clients sharing keys (`parameters.keys`): 60 clients on 6 keys, 10 per key
//! released at one barrier, through dropped responses and refused connections. The clean reference
//! ends with one resource per key; a reference that looks a key up before inserting it
//! (`check-then-act`) lets clients of one key race past each other and is caught.

use idemspec::model::Verdict;
use idemspec::runner::{RunOptions, Target};
use idemspec_scenarios::scenario::Scenario;

use crate::support::postgres::PgDb;
use crate::support::reference::{outcome, reference, table};

const SHARED: &str = r#"version: 1
id: storm-shared-keys
title: 60 clients on 6 keys through dropped responses and refused connections
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 60, keys: 6, attempts: 40, seed: 3, within: 60s}
faults:
  - {name: drop, match: {probability: 0.3, seed: 11}, fault: {drop_response: {}}}
  - {name: refuse, match: {probability: 0.1, seed: 12}, fault: refuse}
"#;

/// Runs the scenario `text` (loaded as `file`) alone against the reference with `flaws`.
async fn run_scenario(
    file: &str,
    text: &str,
    flaws: &[&str],
    database_url: Option<String>,
) -> idemspec::model::RunReport {
    let mut opts = RunOptions::new(Target::Reference(reference(flaws, database_url)));
    opts.builtin = false;
    opts.scenarios = vec![Scenario::load(file, text).expect("the scenario loads")];
    crate::support::reference::run_options(opts).await
}

async fn storm(flaws: &[&str], database_url: Option<String>) -> idemspec::model::RunReport {
    run_scenario("shared.yaml", SHARED, flaws, database_url).await
}

fn assert_one_resource_per_key(report: &idemspec::model::RunReport) {
    let o = outcome(report, "storm-shared-keys");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(report));
    assert!(
        o.summary.contains("6 resources for 6 accepted keys"),
        "{}",
        o.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_clients_on_six_keys_make_six_resources_on_sqlite() {
    assert_one_resource_per_key(&storm(&[], None).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_clients_on_six_keys_make_six_resources_on_postgres() {
    let Some(db) = PgDb::create().await else {
        return;
    };
    let report = storm(&[], Some(db.url.clone())).await;
    db.drop().await;
    assert_one_resource_per_key(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_sharing_a_key_catch_check_then_act() {
    let report = storm(&["check-then-act"], None).await;
    let o = outcome(&report, "storm-shared-keys");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    assert!(
        o.summary.contains("different ids") || o.summary.contains("expected exactly 6"),
        "{}",
        o.summary
    );
}

const TWENTY: &str = r#"version: 1
id: storm-twenty
title: 20 clients on 20 keys through dropped responses
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 20, attempts: 20, seed: 5, within: 30s}
faults:
  - {name: drop, match: {probability: 0.3, seed: 21}, fault: {drop_response: {}}}
"#;

/// A storm against a server that ignores the key fails with one line that leads with the totals
/// and names at most three keys, in the summary, the terminal's "rule broken" line and the JUnit
/// message alike (a 100-key storm used to print a 34,000-character paragraph per report); every
/// confirmation's disagreement names the id it got, not its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_storm_leads_with_its_totals_and_names_a_bounded_number_of_keys() {
    let mut opts = RunOptions::new(Target::Reference(reference(&["no-idempotency"], None)));
    opts.builtin = false;
    opts.scenarios = vec![Scenario::load("twenty.yaml", TWENTY).expect("the storm loads")];
    let report = crate::support::reference::run_options(opts).await;
    let o = outcome(&report, "storm-twenty");
    assert_eq!(o.verdict, Verdict::Fail, "{}", table(&report));
    let totals = o.summary.find("resources exist for 20 accepted keys");
    let exactly = o.summary.find("expected exactly 20");
    let keys = o.summary.find("keys did not keep one id");
    assert!(
        totals.is_some_and(|t| t < 4) && keys.is_some() && exactly < keys,
        "the totals lead, then the keys: {}",
        o.summary
    );
    assert!(
        o.summary.contains("more (the evidence has every exchange)"),
        "{}",
        o.summary
    );
    assert!(
        o.summary.matches("during the storm but").count() <= 3,
        "{}",
        o.summary
    );
    assert!(
        o.summary.len() < 1500,
        "{} characters: {}",
        o.summary.len(),
        o.summary
    );
    assert!(
        !o.summary.contains("but 201 afterwards") && !o.summary.contains("but 200 afterwards"),
        "a confirmation is named by its id: {}",
        o.summary
    );
    let junit =
        idemspec::report::junit::render(&report, Default::default()).expect("JUnit renders");
    let message = junit
        .split("message=\"")
        .nth(1)
        .and_then(|m| m.split('"').next())
        .expect("a failure message");
    assert!(
        message.contains("resources exist for 20 accepted keys"),
        "{message}"
    );
    assert!(message.len() < 2000, "{message}");
    let terminal = idemspec::report::terminal::render(
        &report,
        idemspec::report::TerminalOptions {
            palette: idemspec::report::Palette::PLAIN,
            policy: idemspec::model::ExitPolicy::default(),
        },
    );
    let broken = terminal
        .lines()
        .find(|l| l.contains("rule broken"))
        .expect("a rule-broken line");
    assert!(
        broken.contains("resources exist for 20 accepted keys"),
        "{broken}"
    );
    assert!(broken.len() < 2000, "{broken}");
}

const REFUSED_AFTER_IT_RAN: &str = r#"version: 1
id: storm-refused-after-it-ran
title: A client refused for good after its key's create ran upstream
level: MUST
reference: "article: retries with backoff and jitter, keeping the key"
procedure: retry-storm
parameters: {clients: 4, attempts: 10, seed: 1, within: 20s}
faults:
  # storm-0's first create runs upstream, its 201 is dropped; its retry is refused for good.
  - name: lose-first
    match: {header: {name: x-idemspec-step, equals: storm-0}}
    fault: {drop_response: {}}
    times: 1
  - name: refuse-retry
    match: {header: {name: x-idemspec-step, equals: storm-0}}
    fault: {respond: {status: 422, body: "refused"}}
    times: 1
"#;

/// A key whose create the proxy saw succeed upstream counts as accepted, whatever its client
/// heard afterwards (a refusal for good): 4 resources for 4 keys is right, not "4 resources
/// for 3 accepted keys".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_whose_create_ran_upstream_counts_as_accepted_though_its_client_was_refused() {
    let report = run_scenario("refused.yaml", REFUSED_AFTER_IT_RAN, &[], None).await;
    let o = outcome(&report, "storm-refused-after-it-ran");
    assert_eq!(o.verdict, Verdict::Pass, "{}", table(&report));
    assert!(
        o.summary.contains("4 resources for 4 accepted keys"),
        "{}",
        o.summary
    );
    assert!(
        o.summary
            .contains("the proxy saw 1 of their keys' creates succeed upstream"),
        "{}",
        o.summary
    );
}

/// A scenario that runs a procedure under a header of its own gets what the header says: its
/// faults apply to the procedure's requests (every answer a 500 here), and its level is the
/// level its broken rules count at (SHOULD: WARN, not FAIL).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_procedure_runs_under_the_header_of_the_scenario_naming_it() {
    const FAULTED: &str = r#"version: 1
id: keys-through-500s
title: key-validation with every answer a 500
level: SHOULD
reference: "a user's"
procedure: key-validation
faults:
  - {name: all-500, fault: {respond: {status: 500, body: "injected"}}}
"#;
    let report = run_scenario("faulted.yaml", FAULTED, &[], None).await;
    let o = outcome(&report, "keys-through-500s");
    assert_eq!(o.verdict, Verdict::Warn, "{}", table(&report));
    assert!(
        o.evidence
            .iter()
            .any(|e| e.proxy.as_ref().is_some_and(|p| p.fault.is_some())),
        "the procedure's requests went through the scenario's fault: {:?}",
        o.evidence
    );
}
