//! Hooks as the target profile declares them: `sh -c COMMAND` or an HTTP request.

use std::time::Duration;

use futures::future::BoxFuture;
use idemspec_scenarios::profile::{HookSpec, Hooks};
use idemspec_scenarios::scenario::HookName;

use super::{hook_name, HookError, HookRunner};

/// How long a hook may take before it counts as failed.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The profile's hooks.
#[derive(Debug, Clone)]
pub struct ProfileHooks {
    hooks: Hooks,
    client: reqwest::Client,
}

impl ProfileHooks {
    /// Hooks from a profile's `hooks:` block.
    pub fn new(hooks: Hooks) -> Self {
        Self {
            hooks,
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(HOOK_TIMEOUT)
                .build()
                .expect("a plain HTTP client without TLS always builds"),
        }
    }

    fn spec(&self, hook: HookName) -> Option<&HookSpec> {
        match hook {
            HookName::Crash => self.hooks.crash.as_ref(),
            HookName::Restart => self.hooks.restart.as_ref(),
            HookName::FailNext => self.hooks.fail_next.as_ref(),
        }
    }

    async fn run_spec(&self, name: &'static str, spec: &HookSpec) -> Result<(), HookError> {
        let failed = |reason: String| HookError::Failed { hook: name, reason };
        if let Some(command) = &spec.command {
            let run = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .kill_on_drop(true)
                .output();
            let out = tokio::time::timeout(HOOK_TIMEOUT, run)
                .await
                .map_err(|_| failed(format!("`{command}` took longer than {HOOK_TIMEOUT:?}")))?
                .map_err(|e| failed(format!("could not run `{command}`: {e}")))?;
            if !out.status.success() {
                return Err(failed(format!(
                    "`{command}` exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            return Ok(());
        }
        let Some(req) = &spec.request else {
            return Err(failed("neither `command` nor `request` is set".into()));
        };
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| failed(format!("invalid method `{}`", req.method)))?;
        let mut builder = self.client.request(method, &req.url);
        for (n, v) in &req.headers {
            builder = builder.header(n, v);
        }
        if let Some(body) = &req.body {
            builder = builder
                .header("content-type", "application/json")
                .body(body.clone());
        }
        let resp = builder
            .send()
            .await
            .map_err(|e| failed(format!("{} {}: {e}", req.method, req.url)))?;
        if !resp.status().is_success() {
            return Err(failed(format!(
                "{} {} answered {}",
                req.method,
                req.url,
                resp.status()
            )));
        }
        Ok(())
    }
}

impl HookRunner for ProfileHooks {
    fn run(&self, hook: HookName) -> BoxFuture<'_, Result<(), HookError>> {
        Box::pin(async move {
            let name = hook_name(hook);
            let spec = self.spec(hook).ok_or(HookError::Missing(name))?;
            self.run_spec(name, spec).await
        })
    }

    fn has(&self, hook: HookName) -> bool {
        self.spec(hook).is_some()
    }

    fn crash_arms(&self) -> bool {
        self.hooks.crash.as_ref().is_some_and(|c| c.arms)
    }
}
