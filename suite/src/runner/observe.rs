//! Looking behind the responses: counting a check's resources with `list`, reading side-effect
//! counters, reading an action's effect counter.

use std::collections::BTreeMap;

use idemspec_scenarios::profile::Principal;
use idemspec_scenarios::template::TemplateVars;

use super::context::Env;
use crate::client::{Exchange, RequestSpec};

/// Client timeout for observation requests.
const OBSERVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Counts `principal`'s resources carrying `marker`, with the profile's `list` operation (direct).
///
/// # Errors
/// A message when the list request fails or its body is not what the profile describes.
pub(crate) async fn count_created(
    env: &Env,
    principal: &Principal,
    marker: &str,
) -> Result<u64, String> {
    let list = &env.profile.operations.list;
    let vars = TemplateVars { marker, variant: 1 };
    let path = list.path.render(&vars, || uuid::Uuid::new_v4().to_string());
    let ex = get(env, principal, &path, "list").await;
    let json = json_of(&ex, "list")?;
    let items = list.items.select(json);
    let count = match &list.marker {
        None => items.len(),
        Some(path) => items
            .iter()
            .filter(|item| path.first(item).and_then(|v| v.as_str()) == Some(marker))
            .count(),
    };
    Ok(count as u64)
}

/// Reads the side-effect counters (`side_effects` probe).
///
/// # Errors
/// A message when the probe fails or a counter is not an integer.
pub(crate) async fn read_counters(env: &Env) -> Result<BTreeMap<String, i64>, String> {
    let probe = env
        .profile
        .side_effects
        .as_ref()
        .ok_or("the target profile has no `side_effects` probe")?;
    let mut req = reqwest::Client::new()
        .get(&probe.url)
        .timeout(OBSERVE_TIMEOUT);
    for (n, v) in &probe.headers {
        req = req.header(n, v);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| format!("side-effects probe {}: {e}", probe.url))?;
    let status = resp.status();
    let json: serde_json::Value = resp.json().await.map_err(|e| {
        format!(
            "side-effects probe {} answered {status} without JSON: {e}",
            probe.url
        )
    })?;
    let mut out = BTreeMap::new();
    for (name, path) in &probe.counters {
        let v = path
            .first(&json)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| {
                format!(
                    "side-effects counter `{name}` ({}) is not an integer in {json}",
                    path.source()
                )
            })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// The action's effect counter in a `get` response.
pub(crate) fn effect_of(env: &Env, ex: &Exchange) -> Result<i64, String> {
    let action = env
        .profile
        .operations
        .action
        .as_ref()
        .ok_or("the target profile has no `operations.action`")?;
    let path = action
        .effect
        .as_ref()
        .ok_or("the target profile declares no `operations.action.effect`")?;
    let json = json_of(ex, "get")?;
    path.first(json)
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| {
            format!(
                "the effect counter {} is not an integer in the get response",
                path.source()
            )
        })
}

async fn get(env: &Env, principal: &Principal, path: &str, step: &str) -> Exchange {
    let headers = principal
        .headers
        .iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    env.client
        .send(RequestSpec {
            step: step.into(),
            base_url: env.pick(&env.profile.base_urls.value).to_owned(),
            method: "GET".into(),
            path: path.to_owned(),
            principal: principal.name.clone(),
            headers,
            key: None,
            body: None,
            timeout: OBSERVE_TIMEOUT,
            via_proxy: false,
        })
        .await
}

fn json_of<'a>(ex: &'a Exchange, what: &str) -> Result<&'a serde_json::Value, String> {
    if !ex.is_success() {
        return Err(format!(
            "{what} {} answered {}",
            ex.evidence.request.path,
            ex.describe()
        ));
    }
    ex.json
        .as_ref()
        .ok_or_else(|| format!("{what} {} did not answer JSON", ex.evidence.request.path))
}
