//! The target profile: the whole file, its loader, and its validation, which asks each part's
//! rules (they live beside the part: `principal.rs`, `operations.rs`, `create.rs`, `hooks.rs`,
//! `process.rs`, `contract/problems.rs` …) in the order its errors are reported.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::checks_at_once::ChecksAtOnce;
use super::file::load_profile;
use super::principal::check_principals;
use super::tls::{profile_dir, resolve};
use super::{
    check_url, Contract, ContractSpec, CookieScope, Deviation, Hooks, KeyAt, Operations, Principal,
    ProcessSpec, SideEffectsProbe, TlsSpec,
};
use crate::load::{check_name, check_version, LoadError, LoadErrors, Spanned};
use crate::scenario::Operation;

/// How an API under test is described (README "Point it at your own API"). Load it with
/// [`TargetProfile::load`], which expands `${VAR}`, parses and validates.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetProfile {
    /// Schema version; must be `1`.
    pub version: Spanned<u32>,
    /// A name for reports: one line of plain text (a control character is refused at load).
    pub name: Spanned<String>,
    /// The idempotency contract the target claims.
    #[serde(default = "default_contract")]
    pub contract: Spanned<ContractSpec>,
    /// One or more base URLs (`http://host:port`, no trailing path needed); concurrent requests are
    /// spread over them (replicas behind one database).
    pub base_urls: Spanned<Vec<String>>,
    /// Two or more principals, each with the headers that authenticate it.
    pub principals: Spanned<Vec<Principal>>,
    /// The operations the checks drive.
    pub operations: Operations,
    /// Optional hooks (crash, restart, fail_next).
    #[serde(default)]
    pub hooks: Hooks,
    /// Optional probe making side effects behind the API (nodes, leases) visible.
    #[serde(default)]
    pub side_effects: Option<SideEffectsProbe>,
    /// Optional: how idemspec starts the target itself, so it can kill it mid-flight and restart
    /// it (the process nemesis), as `--reference` does for leasebroker.
    #[serde(default)]
    pub process: Option<ProcessSpec>,
    /// Optional: how many checks the target can take at once, 1 to 64 (default: as many as
    /// `idemspec run --jobs`, 8). `1` for an API that keeps state per session or per principal
    /// that two checks side by side would disturb; `--jobs` cannot raise it.
    #[serde(default)]
    pub checks_at_once: Option<Spanned<ChecksAtOnce>>,
    /// Whose cookie jar a request uses (default: `per_principal` where a principal has a
    /// `login` or a `session`, else `off`).
    #[serde(default)]
    pub cookies: Option<CookieScope>,
    /// How an `https://` target is trusted (default: the platform's root certificates, the URL's
    /// host as the name to verify).
    #[serde(default)]
    pub tls: Option<TlsSpec>,
    /// Deviations from the article the API's own documentation states, each shown beside its
    /// check's FAIL or WARN "as documented" ([`Deviation`]). A documented FAIL does not fail the
    /// run unless `idemspec run --fail-documented`.
    #[serde(default)]
    pub documented: Vec<Deviation>,
    /// The directory the profile's relative file paths (`tls.ca_file`, `principals[].tls`) start
    /// from: the profile file's own, set by [`TargetProfile::load`].
    #[serde(skip)]
    pub dir: PathBuf,
}

impl TargetProfile {
    /// Expands `${VAR}` with `env`, parses `text` (the contents of `file`, a path whose directory
    /// relative file paths start from) and validates it.
    ///
    /// # Errors
    /// A [`LoadError`] with file, line and column for syntax errors, unknown fields, bad JSONPaths
    /// or templates, unset variables, TLS files that are missing or not PEM, and cross-field
    /// problems.
    pub fn load(
        file: &str,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        let mut profile: Self = load_profile(file, text, env, Self::validate)?;
        profile.dir = profile_dir(file);
        Ok(profile)
    }

    /// The deviation documented for check `id`, if any (`documented`).
    pub fn deviation(&self, id: &str) -> Option<&Deviation> {
        self.documented.iter().find(|d| d.check.value == id)
    }

    /// `written`, a file path as the profile has it, resolved against the profile's directory.
    pub fn file_path(&self, written: &str) -> PathBuf {
        resolve(&self.dir, written)
    }

    /// The pairs of principals (by name) that present the same client certificate
    /// ([`super::shared_certificates`]).
    pub fn shared_certificates(&self) -> Vec<(String, String)> {
        let identities = self
            .principals
            .value
            .iter()
            .filter_map(|p| Some((p.name.as_str(), p.tls.as_ref()?)));
        super::shared_certificates(identities, &self.dir)
    }

    /// What loads but is likely a mistake, one sentence each, located in `file` (this profile's
    /// path as named to the user), for `idemspec validate` and `idemspec run`: two principals
    /// that present one client certificate; a replay status only the preset's marker header
    /// tells from a refusal ([`Contract::replay_marker_warning`]); an id that leaves out the
    /// tenant a resource path adds ([`Operations::tenant_outside_id`]).
    pub fn warnings(&self, file: &str) -> Vec<String> {
        self.shared_certificates()
            .into_iter()
            .map(|(first, second)| {
                let at = self
                    .principal(&second)
                    .and_then(|p| p.tls.as_ref())
                    .map(|tls| &tls.cert_file.referenced)
                    .map_or_else(String::new, |at| format!(":{}:{}", at.line(), at.column()));
                format!(
                    "{file}{at}: principals `{first}` and `{second}` present the same client \
                     certificate: a server that names principals by their certificates sees \
                     them as one, so cross-tenant cannot tell them apart (a leak it sees is \
                     UNKNOWN, not FAIL); give each principal a certificate of its own"
                )
            })
            .chain(
                self.contract()
                    .replay_marker_warning()
                    .map(|warning| format!("{file}: {warning}")),
            )
            .chain(self.tenant_outside_id_warning(file))
            .collect()
    }

    /// The warning for an id that leaves its principal's tenant out
    /// ([`Operations::tenant_outside_id`]), at the path that puts it beside the id.
    fn tenant_outside_id_warning(&self, file: &str) -> Option<String> {
        let (field, at, var) = self.operations.tenant_outside_id()?;
        Some(format!(
            "{file}:{}:{}: `operations.{field}` puts `{{{{principal.{var}}}}}` beside `{{id}}`, \
             so the id the create's answer gives leaves the principal's `{var}` out, and the \
             create names its resource after its key (`{{{{key_name}}}}`), the same name for \
             both principals of cross-tenant: their two resources get one id, and cross-tenant \
             reads them as one. Read the resource's whole name as the id (`create.id_after` \
             cut before the `{var}`, e.g. `id_after: /compute/v1/` for \
             `projects/P/zones/Z/instances/NAME`) and insert it with `{{+id}}` \
             (`/compute/v1/{{+id}}`)",
            at.line(),
            at.column()
        ))
    }

    /// Whether a principal presents a client certificate (the target is mTLS).
    pub fn has_client_certificates(&self) -> bool {
        self.principals.value.iter().any(|p| p.tls.is_some())
    }

    /// Cross-field rules: version 1; at least one base URL, each a URL HTTP can use (scheme, host,
    /// port 1–65535); two principals with distinct names; header fields HTTP can carry (no CR/LF);
    /// hook and probe URLs that HTTP can use; `{id}` in every per-resource path; TLS files
    /// (relative to `file`'s directory) that exist and hold PEM of the right kind.
    ///
    /// # Errors
    /// A located [`LoadError`] for the first rule broken, with every other one in
    /// [`LoadError::more`].
    pub fn validate(&self, file: &str) -> Result<(), LoadError> {
        let mut errors = LoadErrors::new(file);
        check_version(&self.version, &mut errors);
        check_name(&self.name, &mut errors);
        self.check_base_urls(&mut errors);
        let dir = profile_dir(file);
        if let Some(tls) = &self.tls {
            tls.check(&dir, &mut errors);
        }
        check_principals(&self.principals, self.cookies, &dir, &mut errors);
        self.operations.check(&self.principals, &mut errors);
        if let Some(process) = &self.process {
            process.check(&self.base_urls.referenced, &mut errors);
        }
        self.hooks.check(&mut errors);
        if let Some(probe) = &self.side_effects {
            probe.check(&mut errors);
        }
        self.check_contract(&mut errors);
        self.operations.check_resource_paths(&mut errors);
        super::documented::check(&self.documented, &mut errors);
        errors.finish()
    }

    /// At least one base URL, each one HTTP can use, and (written between them) a
    /// `checks_at_once` in range.
    fn check_base_urls(&self, errors: &mut LoadErrors) {
        if self.base_urls.value.is_empty() {
            errors.at(&self.base_urls.referenced, "expected at least one base URL");
        }
        if let Some(n) = &self.checks_at_once {
            ChecksAtOnce::check(n, errors);
        }
        for url in &self.base_urls.value {
            if let Err(m) = check_url(url) {
                errors.at(&self.base_urls.referenced, format!("base_urls: {m}"));
            }
        }
    }

    /// The contract's own rules, then the ones a target profile adds: a key sent in one header
    /// (not a pattern, which only a client profile's observing can use), and the create's rules
    /// that depend on the contract ([`super::CreateOp::check_against`]).
    fn check_contract(&self, errors: &mut LoadErrors) {
        self.contract.value.check(&self.contract.referenced, errors);
        let key_at = self.contract.value.key_at.as_ref();
        if let Some((KeyAt::HeaderMatching(p), at)) = key_at.map(|k| (&k.value, &k.referenced)) {
            errors.at(
                at,
                format!(
                    "contract: `key_at: {{header_matching: \"{p}\"}}` names no header to send \
                     the key in; the checks send keys, so give `{{header: NAME}}` (a pattern is for \
                     client profiles, which observe a client)"
                ),
            );
        }
        let ops = &self.operations;
        let body_type = ops
            .own_content_type(Operation::Create)
            .unwrap_or(&ops.create.content_type);
        // A body of the wrong kind is located at `key_at` where the profile gives it (a
        // preset's place, at `contract:`).
        let key_at_written = key_at.map_or(&self.contract.referenced, |k| &k.referenced);
        ops.create
            .check_against(&self.contract(), body_type, key_at_written, errors);
    }

    /// How long after a request is sent a crash that does not arm kills the target: the
    /// `process`'s or the `crash` hook's `kill_after`, default 300 ms.
    pub fn kill_after(&self) -> std::time::Duration {
        self.process
            .as_ref()
            .and_then(|p| p.kill_after)
            .or_else(|| self.hooks.crash.as_ref().and_then(|c| c.kill_after))
            .map_or(std::time::Duration::from_millis(300), |d| d.0)
    }

    /// Whose cookie jar a request uses: the profile's `cookies`, or by default `per_principal`
    /// where a principal has a `login` or a `session` and `off` where none has.
    pub fn cookie_scope(&self) -> CookieScope {
        self.cookies.unwrap_or(
            if self.principals.value.iter().any(Principal::opens_session) {
                CookieScope::PerPrincipal
            } else {
                CookieScope::Off
            },
        )
    }

    /// The contract with the preset's defaults and the profile's overrides applied.
    pub fn contract(&self) -> Contract {
        self.contract.value.resolve()
    }

    /// Finds a principal by name, or by position: `A` (first), `B` (second).
    pub fn principal(&self, name: &str) -> Option<&Principal> {
        let list = &self.principals.value;
        list.iter().find(|p| p.name == name).or(match name {
            "A" => list.first(),
            "B" => list.get(1),
            _ => None,
        })
    }
}

fn default_contract() -> Spanned<ContractSpec> {
    Spanned {
        value: ContractSpec::default(),
        referenced: crate::load::Location::UNKNOWN,
        defined: crate::load::Location::UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 1-based line of `text` that first contains `needle`: where an error about it is
    /// located.
    fn line_of(text: &str, needle: &str) -> u64 {
        1 + text
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line holds {needle:?}")) as u64
    }

    /// A parse error on a line a `${VAR}` filled shows the line as written and the message names
    /// the variable, never its value: a secret must not reach a terminal through a typo.
    #[test]
    fn a_parse_error_never_shows_a_value_put_in() {
        let secret = "wJalrXUtnFEMI-K7MDENG-SECRETKEY";
        let env = |name: &str| (name == "SK").then(|| secret.to_owned());
        let text = "version: 1\nname: t\nbase_urls: [\"http://127.0.0.1:1\"]\nprincipals:\n  - {name: a, headers: {Authorization: \"Bearer ${SK}\"}, bogus: 1}\n";
        let err = TargetProfile::load("p.yaml", text, &env)
            .unwrap_err()
            .to_string();
        assert!(!err.contains(secret) && !err.contains("SECRETKEY"), "{err}");
        assert!(err.contains("${SK}"), "{err}");
        let text = "version: 1\nname: t\nbase_urls: [\"http://127.0.0.1:1\"]\nprincipals: ${SK}\n";
        let err = TargetProfile::load("p.yaml", text, &env)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("SECRETKEY"), "{err}");
    }

    const MINIMAL: &str = r#"version: 1
name: t
base_urls: ["http://127.0.0.1:1"]
principals:
  - {name: a, headers: {X-Api-Key: ka}}
  - {name: b, headers: {X-Api-Key: kb}}
operations:
  create: {path: /things, body: '{"m":"{{marker}}"}', id: $.data.uuid}
  list: {path: /things, items: "$.data[*]", marker: $.m}
  get: {path: "/things/{id}"}
"#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn minimal_profile_loads() {
        let p = TargetProfile::load("p.yaml", MINIMAL, &no_env).unwrap();
        assert_eq!(p.principal("B").unwrap().name, "b");
        assert_eq!(p.contract().mismatch_status, vec![409]);
    }

    #[test]
    fn refusal_statuses_are_one_code_or_a_list_and_a_bad_one_is_located_and_named() {
        let with = |contract: &str| format!("{MINIMAL}contract:\n{contract}\n");
        let p = TargetProfile::load("p.yaml", &with("  mismatch_status: 422"), &no_env).unwrap();
        assert_eq!(p.contract().mismatch_status, vec![422]);
        for null in [
            "  mismatch_status:",
            "  mismatch_status: ~",
            "  mismatch_status: null",
        ] {
            let p = TargetProfile::load("p.yaml", &with(null), &no_env).unwrap();
            assert_eq!(
                p.contract().mismatch_status,
                vec![409],
                "{null} keeps the preset's"
            );
        }
        let text = with("  in_flight_status: [409, 423, 409]\n  missing_key_status: ['428']");
        let p = TargetProfile::load("p.yaml", &text, &no_env).unwrap();
        assert_eq!(p.contract().in_flight_status, vec![409, 423]);
        assert_eq!(p.contract().missing_key_status, vec![428]);
        for (value, said) in [
            (
                "['4xx']",
                "`4xx` is not a status code; list the codes themselves",
            ),
            ("[999]", "999 is not an HTTP status code"),
            ("[201]", "201 is not a refusal"),
            ("304", "304 is not a refusal"),
            ("[]", "an empty list"),
            ("[-1]", "-1 is not an HTTP status code"),
            ("70000", "70000 is not an HTTP status code"),
        ] {
            let text = with(&format!("  preset: article\n  mismatch_status: {value}"));
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, 13, "{value}: {err}");
            assert!(err.message.contains(said), "{value}: {err}");
        }
    }

    /// A method is sent as written, so one no server would take as meant is a located error, and
    /// a login's path and body are no templates.
    #[test]
    fn a_method_not_sent_as_meant_and_a_templated_login_are_refused() {
        let get = MINIMAL.replace(
            "  get: {path: \"/things/{id}\"}",
            "  get: {path: \"/things/{id}\", method: post}",
        );
        assert_ne!(get, MINIMAL, "the minimal profile's get");
        let err = TargetProfile::load("p.yaml", &get, &no_env).unwrap_err();
        assert!(err.message.contains("methods are case-sensitive"), "{err}");
        assert_eq!(err.line, 10, "{err}");
        let empty = MINIMAL.replace(
            "  get: {path: \"/things/{id}\"}",
            "  get: {path: \"/things/{id}\", method: \"\"}",
        );
        let err = TargetProfile::load("p.yaml", &empty, &no_env).unwrap_err();
        assert!(err.message.contains("an empty method"), "{err}");
        let login = MINIMAL.replacen(
            "  - {name: a, headers: {X-Api-Key: ka}}",
            "  - {name: a, login: {path: \"/login?u={{principal.user}}\"}}",
            1,
        );
        assert_ne!(login, MINIMAL, "the minimal profile's principal");
        let err = TargetProfile::load("p.yaml", &login, &no_env).unwrap_err();
        assert!(
            err.message
                .contains("login.path and login.body are sent as written"),
            "{err}"
        );
    }

    /// A key placed in a body of another kind is refused at load, at `key_at`: a form field
    /// appended to a JSON body, or a JSON member in a form body, would be a request the API
    /// cannot read.
    #[test]
    fn a_key_in_a_body_of_another_kind_is_refused() {
        let form = format!("{MINIMAL}contract:\n  key_at: {{form: ClientToken}}\n");
        let err = TargetProfile::load("p.yaml", &form, &no_env).unwrap_err();
        assert!(
            err.message
                .contains("the key goes in a form field (`key_at: {form: ClientToken}`), but the create's body is `application/json`"),
            "{err}"
        );
        let key_at_line = line_of(&form, "key_at:");
        assert_eq!(err.line, key_at_line, "located at `key_at`: {err}");
        let typed = form.replace(
            "  create: {path: /things,",
            "  create: {content_type: application/x-www-form-urlencoded, path: /things,",
        );
        assert_ne!(typed, form, "the minimal profile's create");
        TargetProfile::load("p.yaml", &typed, &no_env).expect("a form body takes a form key");
        let json = format!("{MINIMAL}contract:\n  key_at: {{json: clientToken}}\n");
        TargetProfile::load("p.yaml", &json, &no_env).expect("a JSON body takes a JSON key");
    }

    /// `replay_status` takes the same form, of 2xx and 4xx codes: a replay of a success is never
    /// a 5xx, 1xx or 3xx.
    #[test]
    fn a_replay_status_is_a_2xx_or_4xx_code_or_a_list_of_them() {
        let with = |contract: &str| format!("{MINIMAL}contract:\n{contract}\n");
        let p =
            TargetProfile::load("p.yaml", &with("  replay_status: [409, 200]"), &no_env).unwrap();
        assert_eq!(p.contract().replay_status, vec![409, 200]);
        let p = TargetProfile::load("p.yaml", &with("  replay_status: ~"), &no_env).unwrap();
        assert!(p.contract().replay_status.is_empty());
        for (value, said) in [
            (
                "500",
                "500 is not a status a replay of a success comes under",
            ),
            (
                "[302]",
                "302 is not a status a replay of a success comes under",
            ),
            ("[]", "an empty list"),
            ("1000", "1000 is not an HTTP status code"),
        ] {
            let text = with(&format!("  replay_status: {value}"));
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, 12, "{value}: {err}");
            assert!(err.message.contains(said), "{value}: {err}");
        }
    }

    #[test]
    fn the_key_has_one_place_and_not_a_header_http_uses() {
        let with = |extra: &str| format!("{MINIMAL}contract:\n{extra}");
        for (contract, said) in [
            (
                "  header: X-Key\n  key_at: {json: clientToken}\n",
                "both say where the key goes",
            ),
            (
                "  header: X-Key\n  key_at: {header: Y-Key}\n",
                "both say where the key goes",
            ),
            (
                "  key_at: {header: Content-Length}\n",
                "the key cannot travel in `Content-Length`",
            ),
            ("  header: Host\n", "the key cannot travel in `Host`"),
            (
                "  key_at: {header: X-Idemspec-Step}\n",
                "the key cannot travel in",
            ),
            (
                "  key_at: {header_matching: \"X-*-Key\"}\n",
                "names no header to send the key in",
            ),
        ] {
            let err = TargetProfile::load("p.yaml", &with(contract), &no_env).unwrap_err();
            assert!(err.message.contains(said), "{contract}: {err}");
        }
        let same = with("  header: X-Key\n  key_at: {header: x-key}\n");
        assert!(TargetProfile::load("p.yaml", &same, &no_env).is_ok());
    }

    /// A create that names its resource after its key, and a resource path that adds the
    /// principal's tenant beside the id, is warned of at that path's line: two principals'
    /// resources of one name would share an id. The whole name as the id (`{+id}`) is not, nor
    /// a tenant path whose create does not name its resources.
    #[test]
    fn an_id_that_leaves_the_tenant_out_of_a_named_resource_is_warned_of() {
        let tenants = MINIMAL
            .replace("X-Api-Key: ka}", "X-Api-Key: ka}, vars: {p: pa}")
            .replace("X-Api-Key: kb}", "X-Api-Key: kb}, vars: {p: pb}")
            .replace(
                "create: {path: /things,",
                "create: {path: \"/p/{{principal.p}}/things\",",
            );
        let named = tenants.replace(
            "{\"m\":\"{{marker}}\"}",
            "{\"m\":\"{{marker}}\",\"n\":\"{{key_name}}\"}",
        );
        assert_ne!(named, tenants, "the minimal profile's create body");
        let warnings = |text: &str| {
            TargetProfile::load("p.yaml", text, &no_env)
                .unwrap()
                .warnings("p.yaml")
        };
        assert!(
            warnings(&named).is_empty(),
            "no resource path adds the tenant"
        );
        let beside = named.replace("\"/things/{id}\"", "\"/p/{{principal.p}}/things/{id}\"");
        let line = line_of(&beside, "get:");
        let said = warnings(&beside);
        assert!(
            said.len() == 1
                && said[0].starts_with(&format!("p.yaml:{line}:"))
                && said[0].contains("`operations.get.path` puts `{{principal.p}}` beside `{id}`"),
            "{said:?}"
        );
        let whole = named.replace("\"/things/{id}\"", "\"/{+id}\"");
        assert!(warnings(&whole).is_empty(), "the id is the whole name");
        let unnamed = tenants.replace("\"/things/{id}\"", "\"/p/{{principal.p}}/things/{id}\"");
        assert!(
            warnings(&unnamed).is_empty(),
            "the API names what it creates"
        );
    }

    #[test]
    fn a_wait_longer_than_the_limit_is_refused_where_it_is_written() {
        let text = format!("{MINIMAL}contract:\n  in_flight_wait: {{up_to: 5m, then: 408}}\n");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert!(
            err.message
                .contains("in_flight_wait.up_to: 5m is longer than the limit of 2m"),
            "{err}"
        );
        let written = line_of(&text, "in_flight_wait");
        assert_eq!(err.line, written, "{err}");
    }

    #[test]
    fn a_zero_ttl_or_a_slow_handler_that_does_not_outlive_it_is_refused() {
        let with = |extra: &str| format!("{MINIMAL}{extra}");
        let err = TargetProfile::load("p.yaml", &with("contract:\n  in_flight_ttl: 0s\n"), &no_env)
            .unwrap_err();
        assert!(err.message.contains("in_flight_ttl is 0s"), "{err}");
        let slow = |takes: &str, ttl: &str| {
            MINIMAL.replace(
                "id: $.data.uuid}",
                &format!("id: $.data.uuid, variants: {{slow: {{body: '{{}}', takes: {takes}}}}}}}"),
            ) + &format!("contract:\n  in_flight_ttl: {ttl}\n")
        };
        for (takes, ttl) in [("0s", "2s"), ("2s", "2s"), ("1s", "2s")] {
            let text = slow(takes, ttl);
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert!(
                err.message
                    .contains("must be longer than the contract's in-flight TTL (2s)"),
                "{takes}: {err}"
            );
            let written = line_of(&text, "takes:");
            assert_eq!(err.line, written, "the error points at `takes`: {err}");
        }
        TargetProfile::load("p.yaml", &slow("3s", "2s"), &no_env)
            .expect("a slow handler past the TTL");
    }

    #[test]
    fn bad_jsonpath_is_located() {
        let text = MINIMAL.replace("$.data.uuid", "'$.data['");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 8, "{err}");
        assert!(err.message.contains("invalid JSONPath"), "{err}");
    }

    #[test]
    fn missing_id_placeholder_is_located() {
        let text = MINIMAL.replace("/things/{id}", "/things/x");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 10, "{err}");
        assert!(err.message.contains("must contain `{id}`"), "{err}");
    }

    #[test]
    fn a_process_env_value_that_reads_as_null_is_located_and_says_to_quote_it() {
        let env = |name: &str| (name == "SECRET").then(|| "#secret".to_owned());
        let text = format!(
            "{MINIMAL}process:\n  command: ./run.sh\n  env:\n    PORT: 8080\n    TOKEN: ${{SECRET}}\n"
        );
        let err = TargetProfile::load("p.yaml", &text, &env).unwrap_err();
        assert!(
            err.message.contains("`TOKEN` has no value") && err.message.contains("quote it"),
            "{err}"
        );
        let quoted = text.replace("${SECRET}", "\"${SECRET}\"");
        let p = TargetProfile::load("p.yaml", &quoted, &env).expect("a quoted value loads");
        let env = &p.process.expect("a process").env;
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("#secret"));
        assert_eq!(env.get("PORT").map(String::as_str), Some("8080"));
    }

    #[test]
    fn a_path_that_does_not_start_with_a_slash_is_located() {
        for (from, to, line) in [
            ("create: {path: /things", "create: {path: things", 8),
            ("list: {path: /things", "list: {path: things", 9),
            ("/things/{id}", "things/{id}", 10),
        ] {
            let text = MINIMAL.replace(from, to);
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, line, "{err}");
            assert!(err.message.contains("must start with `/`"), "{err}");
        }
    }

    #[test]
    fn a_resource_path_is_a_template_whose_unknown_placeholder_is_located() {
        let text = MINIMAL.replace("/things/{id}", "/t/{{markr}}/{+id}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 10, "{err}");
        assert!(
            err.message.contains("unknown placeholder `{{markr}}`"),
            "{err}"
        );
        let text = MINIMAL.replace("/things/{id}", "/t/{{marker}}/{+id}");
        let p = TargetProfile::load("p.yaml", &text, &no_env).expect("`{+id}` names the id");
        let get = p.operations.get.expect("a get");
        assert_eq!(get.path.value.source(), "/t/{{marker}}/{+id}");
    }

    #[test]
    fn a_hook_with_both_or_neither_is_located() {
        let text = format!("{MINIMAL}hooks:\n  restart: {{arms: true}}\n");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 12, "{err}");
        assert!(
            err.message
                .contains("exactly one of `command` or `request`"),
            "{err}"
        );
    }

    #[test]
    fn what_http_cannot_carry_is_refused_at_load_with_every_problem() {
        let text = MINIMAL
            .replace("http://127.0.0.1:1", "http://127.0.0.1:99999\", \"http://")
            .replace("{X-Api-Key: kb}", "{X-Api-Key: \"kb\\r\\nX-Evil: 1\"}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        let all: Vec<String> = err.each().map(ToString::to_string).collect();
        assert_eq!(all.len(), 3, "{err}");
        assert!(
            all[0].starts_with("p.yaml:3:") && all[0].contains("port `99999`"),
            "{err}"
        );
        assert!(all[1].contains("`http://` has no host"), "{err}");
        assert!(
            all[2].starts_with("p.yaml:5:") && all[2].contains("CR and LF"),
            "{err}"
        );
    }

    #[test]
    fn a_key_header_http_cannot_carry_is_located() {
        let text = format!("{MINIMAL}contract:\n  header: \"Idempotency Key\"\n");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 12, "{err}");
        assert!(
            err.message
                .contains("contract: header name `Idempotency Key` is not a valid HTTP field name"),
            "{err}"
        );
    }

    #[test]
    fn unknown_placeholder_is_located() {
        let text = MINIMAL.replace("{{marker}}", "{{markr}}");
        let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
        assert_eq!(err.line, 8, "{err}");
        assert!(err.message.contains("unknown placeholder"), "{err}");
    }

    /// `documented` loads with its statuses, quotes `says (source)`, and refuses an empty `says`,
    /// a check named twice, a status class and (against the ids a run knows) a misspelt check,
    /// each at its line.
    #[test]
    fn documented_deviations_load_and_are_refused_at_their_line() {
        let text = format!(
            "{MINIMAL}documented:\n  - check: endpoint-scope\n    says: \"Another endpoint's \
             key is refused.\"\n    source: https://x.test/docs\n    answer: [400, 409]\n  - \
             {{check: lost-response, says: \"x\"}}\n"
        );
        let p = TargetProfile::load("p.yaml", &text, &no_env).expect("loads");
        let d = p.deviation("endpoint-scope").expect("the entry");
        assert_eq!(d.answer, Some(vec![400, 409]));
        assert_eq!(
            d.quoted(),
            "\"Another endpoint's key is refused.\" (https://x.test/docs)"
        );
        assert_eq!(
            p.deviation("lost-response").map(|d| d.answer.clone()),
            Some(None)
        );
        let known = ["endpoint-scope", "lost-response"];
        assert!(super::super::check_documented_checks(&p.documented, "p.yaml", &known).is_ok());
        let err = super::super::check_documented_checks(&p.documented, "p.yaml", &known[..1])
            .unwrap_err();
        assert_eq!(err.line, line_of(&text, "check: lost-response"), "{err}");
        assert!(
            err.message.contains("no check is named `lost-response`"),
            "{err}"
        );

        let long = format!(
            "  - check: lost-response\n    says: a\n    source: {}\n",
            "x".repeat(501)
        );
        for (entries, needle, said) in [
            (
                "  - {check: lost-response, says: \"  \"}\n",
                "says",
                "`says` is empty",
            ),
            (
                "  - {check: lost-response, says: a}\n  - {check: lost-response, says: b}\n",
                "says: b",
                "named twice",
            ),
            (
                "  - {check: lost-response, says: a, answer: 4xx}\n",
                "answer",
                "list the codes themselves",
            ),
            (
                "  - {check: lost-response, says: a, because: b}\n",
                "because",
                "unknown field",
            ),
            (
                "  - {check: lost-response, says: a, answer: [409, 201]}\n",
                "answer",
                "201 cannot mark a deviation",
            ),
            (
                "  - check: lost-response\n    says: \"two\\nlines\"\n",
                "says: \"two",
                "control character U+000A",
            ),
            (
                "  - check: lost-response\n    says: a\n    source: \"\\e[31mred\"\n",
                "source:",
                "control character U+001B",
            ),
            (long.as_str(), "source:", "`source` is 501 characters"),
        ] {
            let text = format!("{MINIMAL}documented:\n{entries}");
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, line_of(&text, needle), "{err}");
            assert!(err.to_string().contains(said), "{said}: {err}");
        }
    }

    /// A name with a terminal escape or a line break is refused at its line: every report shows
    /// the name, and a raw escape would reach a terminal through it.
    #[test]
    fn a_name_with_a_control_character_is_refused_at_its_line() {
        for name in ["\"evil\\e[31mred\"", "\"two\\nlines\""] {
            let text = MINIMAL.replace("name: t", &format!("name: {name}"));
            let err = TargetProfile::load("p.yaml", &text, &no_env).unwrap_err();
            assert_eq!(err.line, 2, "{err}");
            assert!(
                err.message.contains("name holds the control character"),
                "{err}"
            );
        }
        let p = TargetProfile::load("p.yaml", MINIMAL, &no_env).expect("a plain name loads");
        assert_eq!(p.name.value, "t");
    }
}
