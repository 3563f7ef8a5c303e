//! A run of the API checks end to end: the selection, the target (a profile, its process, or the
//! bundled reference), the preflight, the checks driven by the engine, and the report.

use std::sync::Arc;

use super::api_ctx::ApiCtx;
use super::check::{Limits, ScenarioCheck};
use super::{capabilities, observe, tls_preflight, RunError, RunOptions, Target, Unreachable};
use crate::engine::EventSink;
use crate::engine::{self, RunRecord};
use crate::hooks::{HookRunner, ProfileHooks};
use crate::http_client::{Exchange, TlsSettings};
use crate::model::RunReport;
use crate::reference::ReferenceServer;
use crate::target_process::{ProcessHooks, TargetProcess};
use idemspec_scenarios::profile::{Principal, TargetProfile};

/// Runs the selected checks and returns the report; progress goes to `events`
/// (`RunStarted`, then `CheckStarted`/`CheckFinished` per check, then `RunFinished`).
///
/// Checks run `opts.parallelism` at a time (each has its own marker, keys and proxy), except while
/// one disturbs the others: a check that reads the global counters, calls `fail_next` or says
/// `exclusive: true` runs alone, first; one that crashes and restarts the target runs alone until
/// it is back ([`engine::drive`]).
///
/// # Errors
/// [`RunError`] for configuration problems, an unknown `--only` id, a reference server or proxy that
/// would not start, or a target no base URL of which answers. Failed checks are not errors.
pub async fn run(opts: RunOptions, events: EventSink) -> Result<RunReport, RunError> {
    let mut record = RunRecord::new(events);
    let builtin = if opts.builtin {
        super::catalogue()
    } else {
        Vec::new()
    };
    let selected = capabilities::select(builtin, opts.scenarios, &opts.only, &opts.skip)?;
    let mut target_process = None;
    let (profile, hooks, reference): (_, Arc<dyn HookRunner>, _) = match opts.target {
        Target::Profile(p) if p.process.is_some() => {
            let process = TargetProcess::start(&p).await.map_err(RunError::Target)?;
            let hooks = Arc::new(ProcessHooks::new(process.clone(), profile_hooks(&p)?));
            target_process = Some(process);
            (*p, hooks, None)
        }
        Target::Profile(p) => {
            let hooks = Arc::new(profile_hooks(&p)?);
            (*p, hooks, None)
        }
        Target::Reference(r) => {
            let server = ReferenceServer::start(&r)
                .await
                .map_err(RunError::Reference)?;
            let profile = server.profile()?;
            (profile, server.hooks(), Some(server))
        }
    };
    let tls = TlsSettings::of_profile(&profile);
    let unverified = tls.trust.insecure_skip_verify;
    let ctx = ApiCtx::new(profile, tls, hooks, opts.lockout_bound).map_err(RunError::Tls)?;
    let ctx = Arc::new(ctx);
    let reached = tls_preflight::handshakes(&ctx).await?;
    preflight(&ctx).await?;
    record.reached_over_tls(reached, unverified);
    record.announce(
        &ctx.profile.name.value,
        ctx.contract.preset.name(),
        selected.len(),
    );
    let limits = Limits {
        check: opts.check_timeout,
        run_ends: record.started() + opts.run_timeout,
    };
    // The profile's `checks_at_once` is what the target can take; `--jobs` cannot raise it.
    let jobs = ctx
        .profile
        .checks_at_once
        .as_ref()
        .and_then(|n| n.value.get())
        .map_or(usize::MAX, |n| n as usize)
        .min(opts.parallelism)
        .max(1);
    let checks: Vec<ScenarioCheck> = selected
        .into_iter()
        .map(|s| ScenarioCheck::new(&ctx, s, limits))
        .collect();
    let checks = engine::drive(checks, ctx.clone(), &record, jobs).await;
    let target_log = target_process
        .as_ref()
        .map(|p| p.log().display().to_string());
    let report = record.finish(checks, target_log);
    if let Some(server) = reference {
        server.shutdown().await;
    }
    if let Some(process) = target_process {
        process.kill().await;
    }
    Ok(report)
}

/// The profile's hooks, an `https://` hook trusted as the profile's `tls` says.
fn profile_hooks(profile: &TargetProfile) -> Result<ProfileHooks, RunError> {
    ProfileHooks::with_tls(profile.hooks.clone(), &TlsSettings::of_profile(profile))
        .map_err(RunError::Tls)
}

/// Error codes AWS and its emulators answer a signature they refuse with, as their bodies name them.
const SIGNATURE_CODES: &[&str] = &[
    "SignatureDoesNotMatch",
    "InvalidSignatureException",
    "IncompleteSignature",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureExpired",
];

/// What of `principal` carries its credentials, for a preflight answer `ex` other than a 2xx:
/// its signature, where it signs and the API answered 401 or 403 (naming the refusal's code
/// where the body gives one of [`SIGNATURE_CODES`]); its `login`'s cookie; else its headers.
fn credentials_of(principal: &Principal, ex: &Exchange) -> String {
    if principal.sign.is_some() && matches!(ex.status, Some(401 | 403)) {
        let body = String::from_utf8_lossy(&ex.body);
        let code = SIGNATURE_CODES
            .iter()
            .find(|code| body.contains(*code))
            .map(|code| format!(" (`{code}`)"))
            .unwrap_or_default();
        return format!(
            "`sign.aws_sigv4`: the API rejected the request's signature{code}; check its \
             `access_key_id`, `secret_access_key`, `region` and `service`, and this machine's clock"
        );
    }
    if principal.opens_session() {
        let field = if principal.login.is_some() {
            "login"
        } else {
            "session"
        };
        return format!(
            "`{field}` (does the cookie it sets apply to this path: its `Path`, `Domain`, \
             `Max-Age`?)"
        );
    }
    "headers".into()
}

/// Asks each base URL for each principal's list. A transport failure means the target is
/// unreachable; an answer other than 2xx means the profile does not work with it (wrong path or
/// credentials) — both stop the run before any check could report a verdict it did not earn.
async fn preflight(ctx: &ApiCtx) -> Result<(), RunError> {
    let list = &ctx.profile.operations.list;
    for url in &ctx.profile.base_urls.value {
        for principal in &ctx.profile.principals.value {
            if let Err(why) = ctx.open_session(&principal.name, "preflight").await {
                return Err(RunError::TargetUnreachable {
                    url: url.clone(),
                    reason: Unreachable::Session(why),
                });
            }
            let request = ctx.list_request(principal, "preflight").direct(
                "preflight",
                url.trim_end_matches('/'),
                &principal.name,
                std::time::Duration::from_secs(10),
            );
            let ex = ctx.send(request, "preflight").await;
            if let Some(plain_to_tls) = tls_preflight::plain_to_tls(url, &ex).await {
                return Err(plain_to_tls);
            }
            let path = format!(
                "{} {}",
                ex.evidence.request.method, ex.evidence.request.path
            );
            // A principal's own certificate refused (another than the TLS preflight showed).
            if let Some(cause) = ex.tls_failure() {
                let cause = format!("principal `{}`: {cause}", principal.name);
                return Err(tls_preflight::unreachable(url, cause));
            }
            let reason = match ex.status {
                None => Unreachable::Silent(format!(
                    "{path} as principal `{}`: {}",
                    principal.name,
                    ex.describe()
                )),
                Some(status @ 200..=299) => match observe::unreadable_list(list, &ex) {
                    None => continue,
                    Some(why) => Unreachable::Unreadable {
                        path,
                        principal: principal.name.clone(),
                        status,
                        why,
                    },
                },
                Some(_) => Unreachable::Answered {
                    path,
                    principal: principal.name.clone(),
                    answer: ex.describe(),
                    credentials: credentials_of(principal, &ex),
                },
            };
            return Err(RunError::TargetUnreachable {
                url: url.clone(),
                reason,
            });
        }
    }
    Ok(())
}
