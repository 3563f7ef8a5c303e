//! Looking behind the responses: counting a check's resources with `list`, reading side-effect
//! counters, reading an action's effect counter.

use std::collections::BTreeMap;

use idemspec_scenarios::profile::Principal;

use super::api_ctx::{ApiCtx, RenderedRequest};
use crate::http_client::{Exchange, RequestSpec};

/// Client timeout for observation requests.
const OBSERVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Counts `principal`'s resources carrying `marker`, with the profile's `list` operation (direct);
/// `seen` are the exchanges the check made so far, paired with what the proxy did.
///
/// A count of zero when this check saw the API answer `principal` 2xx with a created id is not a
/// count: the profile's `list` cannot see what the API creates (an `items` or `marker` JSONPath
/// that matches nothing, a list that ignores the marker), and judging "0 resources, expected 1"
/// would FAIL a correct server. Two things make such a zero real: a delete the server carried out
/// (a request of the profile's `delete`, whatever its method: the client heard its 2xx, or the
/// proxy saw the upstream answer one while the client never
/// heard), and an id that is another principal's resource (the API answered `principal` with
/// someone else's response: a leak, not a blind list).
///
/// # Errors
/// A message when the list request fails, its body is not what the profile describes, or it
/// cannot see the resources this check created.
pub(crate) async fn count_created(
    ctx: &ApiCtx,
    principal: &Principal,
    marker: &str,
    seen: &[Exchange],
    is_delete: &(dyn Fn(&Exchange) -> bool + Sync),
) -> Result<u64, String> {
    let list = &ctx.profile.operations.list;
    let request = ctx.list_request(principal, marker);
    let (method, path) = (request.method.clone(), request.path.clone());
    let ex = send_list(ctx, principal, request, marker).await;
    let json = json_of(&ex, "list")?;
    let items = list.items.select(json);
    let count = match &list.marker {
        None => items.len(),
        Some(path) => items
            .iter()
            .filter(|item| path.first(item).and_then(|v| v.as_str()) == Some(marker))
            .count(),
    };
    if count == 0 {
        if let Some(blind) = blind_list(list, json, &items) {
            return Err(format!(
                "the profile's `list` ({method} {path}) cannot see resources: {blind}; check \
                 `operations.list` in the target profile"
            ));
        }
        if let Some(id) = unseen_created_id(ctx, principal, seen, is_delete) {
            return Err(format!(
                "the profile's `list` ({method} {path}, items `{}`{}) found {} item(s) and none of \
                 this check's, although the API answered 2xx with id `{id}` for {}: check \
                 `operations.list` in the target profile",
                list.items.source(),
                list.marker
                    .as_ref()
                    .map(|m| format!(", marker `{}`", m.source()))
                    .unwrap_or_default(),
                items.len(),
                principal.name
            ));
        }
    }
    Ok(count as u64)
}

/// Why a 2xx list response `ex` cannot be read as the profile's `list` describes: its body is not
/// JSON (named with its Content-Type and first bytes), or [`blind_list`] says it shows nothing by
/// construction. `None` when it can be read. The preflight asks this before any check runs.
pub(crate) fn unreadable_list(
    list: &idemspec_scenarios::profile::ListOp,
    ex: &Exchange,
) -> Option<String> {
    if ex.body.iter().all(u8::is_ascii_whitespace) {
        // A 204, or an empty body: an empty list as some APIs say it.
        return None;
    }
    if let Some(why) = &ex.parse_note {
        // A list read in part cannot be counted.
        return Some(why.clone());
    }
    let Some(json) = ex.json.as_deref() else {
        let start: String = String::from_utf8_lossy(&ex.body[..ex.body.len().min(40)])
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        return Some(format!(
            "its body is not JSON ({}, {} bytes, starting `{}`)",
            ex.header("content-type")
                .map_or("no Content-Type".to_owned(), |t| format!(
                    "Content-Type `{t}`"
                )),
            ex.body.len(),
            start.trim()
        ));
    };
    blind_list(list, json, &list.items.select(json))
}

/// Why a list response that shows no item of this check shows none by construction: its `items`
/// path spreads a node the response does not have while another member is an array (`$.data[*]`
/// on `{"items": []}`) or the response is no object, or it spreads a scalar.
/// `None` when an empty count can be real. Items that lack the `marker` path are not blindness:
/// resources made outside idemspec may carry no label.
fn blind_list(
    list: &idemspec_scenarios::profile::ListOp,
    json: &serde_json::Value,
    items: &[&serde_json::Value],
) -> Option<String> {
    if !items.is_empty() {
        return None;
    }
    let fields = || match json {
        serde_json::Value::Object(m) if !m.is_empty() => format!(
            "its top-level fields are {}",
            m.keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        serde_json::Value::Object(_) => "it is an empty object".to_owned(),
        serde_json::Value::Array(_) => "it is an array".to_owned(),
        other => format!("it is `{other}`"),
    };
    let container = list.items.container()?;
    // An absent node is an empty list where the encoder drops empty members (Go's `omitempty`,
    // proto3 JSON): blindness only where the list must be elsewhere (another member is an array)
    // or the response is no object at all.
    let elsewhere = match json {
        serde_json::Value::Object(m) => m.values().any(serde_json::Value::is_array),
        _ => true,
    };
    match container.first(json) {
        None if elsewhere => Some(format!(
            "items `{}` selects nothing because `{}` is not in the response ({})",
            list.items.source(),
            container.source(),
            fields()
        )),
        None | Some(serde_json::Value::Null) => None,
        Some(node) if !(node.is_array() || node.is_object()) => Some(format!(
            "items `{}` spreads `{}`, which is `{node}`, not an array",
            list.items.source(),
            container.source()
        )),
        Some(_) => None,
    }
}

/// A created id this check received for `principal` that the list should show: none when the
/// server carried out a delete of the check (`is_delete` tells which requests were deletes, by
/// the operation they drove, not by their method: a delete may be a POST, as a create is), and
/// none that another principal also received.
fn unseen_created_id(
    ctx: &ApiCtx,
    principal: &Principal,
    seen: &[Exchange],
    is_delete: &(dyn Fn(&Exchange) -> bool + Sync),
) -> Option<String> {
    let deleted = |ex: &Exchange| {
        let upstream_did = ex
            .evidence
            .proxy
            .as_ref()
            .and_then(|p| p.upstream_status)
            .is_some_and(|s| (200..300).contains(&s));
        is_delete(ex) && (ex.is_success() || upstream_did)
    };
    if seen.iter().any(deleted) {
        return None;
    }
    let ids_of = |mine: bool| {
        seen.iter()
            .filter(move |ex| {
                ex.is_success() && (ex.evidence.request.principal == principal.name) == mine
            })
            .filter_map(|ex| ctx.created_id(ex))
    };
    let others: Vec<String> = ids_of(false).collect();
    ids_of(true).find(|id| !others.contains(id))
}

/// Side-effect counters by name, as the profile's `side_effects` probe names them.
pub(crate) type Counters = BTreeMap<String, i64>;

/// Reads the side-effect counters (`side_effects` probe).
///
/// # Errors
/// A message when the probe fails or a counter is not an integer.
pub(crate) async fn read_counters(ctx: &ApiCtx) -> Result<Counters, String> {
    let probe = ctx
        .profile
        .side_effects
        .as_ref()
        .ok_or("the target profile has no `side_effects` probe")?;
    // Through the run's one client, as every request of the run: its answer read within the
    // client's bounds (8 MiB, the first values of a wide body).
    let url = reqwest::Url::parse(&probe.url.value)
        .map_err(|e| format!("side-effects probe {}: {e}", probe.url.value))?;
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let ex = ctx
        .client
        .send(RequestSpec {
            step: "side-effects".into(),
            base_url: url.origin().ascii_serialization(),
            origin: url.origin().ascii_serialization(),
            method: "GET".into(),
            path,
            principal: String::new(),
            headers: probe
                .headers
                .iter()
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
            key: None,
            body: None,
            timeout: OBSERVE_TIMEOUT,
            via_proxy: false,
            sent: None,
        })
        .await;
    let Some(status) = ex.status else {
        return Err(format!(
            "side-effects probe {}: {}",
            probe.url.value,
            ex.describe()
        ));
    };
    let json = match (ex.json.as_deref(), &ex.parse_note) {
        (Some(json), None) => json,
        (_, Some(why)) => {
            return Err(format!(
                "side-effects probe {} answered {status}: {why}",
                probe.url.value
            ))
        }
        (None, None) => {
            return Err(format!(
                "side-effects probe {} answered {status} without JSON",
                probe.url.value
            ))
        }
    };
    let mut out = BTreeMap::new();
    for (name, path) in &probe.counters {
        let v = path
            .first(json)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| {
                format!(
                    "side-effects counter `{name}` ({}) is not an integer in {}",
                    path.source(),
                    crate::http_client::excerpt(&ex.body)
                )
            })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// The action's effect counter in a `get` response.
pub(crate) fn effect_of(ctx: &ApiCtx, ex: &Exchange) -> Result<i64, String> {
    let action = ctx
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
    // An XML answer's counter is the text of its element (http_client::xml).
    path.first(json)
        .and_then(|v| v.as_i64().or_else(|| v.as_str()?.trim().parse().ok()))
        .ok_or_else(|| {
            format!(
                "the effect counter {} is not an integer in the get response",
                path.source()
            )
        })
}

/// Sends `request` as `principal`, direct, trying the next base URL while one does not answer.
/// `marker` is the check's (its cookie session, where the profile keeps one per check).
async fn send_list(
    ctx: &ApiCtx,
    principal: &Principal,
    request: RenderedRequest,
    marker: &str,
) -> Exchange {
    let urls = &ctx.profile.base_urls.value;
    let mut tries = urls.len();
    loop {
        let spec = request
            .clone()
            .direct("list", ctx.pick(urls), &principal.name, OBSERVE_TIMEOUT);
        let ex = ctx.send(spec, marker).await;
        tries -= 1;
        if ex.status.is_some() || tries == 0 {
            return ex;
        }
    }
}

fn json_of<'a>(ex: &'a Exchange, what: &str) -> Result<&'a serde_json::Value, String> {
    let request = &ex.evidence.request;
    if ex.status.is_none() {
        return Err(format!(
            "{what} {} {} got no answer: {}",
            request.method,
            request.path,
            ex.describe()
        ));
    }
    if !ex.is_success() {
        return Err(format!(
            "{what} {} answered {}",
            request.path,
            ex.describe()
        ));
    }
    if let Some(why) = &ex.parse_note {
        return Err(format!("{what} {}: {why}", ex.evidence.request.path));
    }
    ex.json
        .as_deref()
        .ok_or_else(|| format!("{what} {} did not answer JSON", ex.evidence.request.path))
}

#[cfg(test)]
mod tests {
    use super::{blind_list, json_of};
    use crate::http_client::{Exchange, RequestSpec};
    use serde_json::json;

    /// A list request that was never sent (its principal's token could not be fetched) names
    /// its method and path and says it got no answer, rather than "list  answered principal…".
    #[test]
    fn an_unsent_list_says_which_request_got_no_answer() {
        let spec = RequestSpec {
            step: "list".into(),
            base_url: "http://127.0.0.1:1".into(),
            origin: "http://127.0.0.1:1".into(),
            method: "GET".into(),
            path: "/v1/things?label=m".into(),
            principal: "alice".into(),
            headers: Vec::new(),
            key: None,
            body: None,
            timeout: std::time::Duration::from_secs(1),
            via_proxy: false,
            sent: None,
        };
        let problem = "principal `alice`: its token command exited 1".to_owned();
        let err = json_of(&Exchange::unsent(&spec, problem), "list").unwrap_err();
        assert_eq!(
            err,
            "list GET /v1/things?label=m got no answer: principal `alice`: its token command \
             exited 1"
        );
    }

    fn list(items: &str, marker: Option<&str>) -> idemspec_scenarios::profile::ListOp {
        serde_json::from_value(json!({"path": "/v1/things", "items": items, "marker": marker}))
            .expect("a list operation")
    }

    fn blind(items: &str, marker: Option<&str>, body: serde_json::Value) -> Option<String> {
        let list = list(items, marker);
        let selected = list.items.select(&body);
        blind_list(&list, &body, &selected)
    }

    #[test]
    fn an_empty_list_is_blind_only_when_its_items_path_misses_the_response() {
        let empty = json!({"items": [], "next": null});
        assert_eq!(blind("$.items[*]", None, empty.clone()), None);
        assert_eq!(
            blind("$.items[*]", Some("$.labels.run"), empty.clone()),
            None
        );
        let missed = blind("$.data[*]", None, empty).expect("blind");
        assert!(
            missed.contains("`$.data` is not in the response"),
            "{missed}"
        );
        assert!(missed.contains("`items`, `next`"), "{missed}");
        let scalar = blind("$.items[*]", None, json!({"items": 3})).expect("blind");
        assert!(scalar.contains("which is `3`, not an array"), "{scalar}");
        assert!(blind("$[*]", None, json!("<html>")).is_some());
        assert!(
            blind("$.items[*]", None, json!([])).is_some(),
            "an array is no object"
        );
        // Empty lists as encoders write them: null, or the member dropped.
        assert_eq!(blind("$.items[*]", None, json!({"items": null})), None);
        assert_eq!(blind("$.items[*]", None, json!({"count": 0})), None);
        assert_eq!(blind("$.items[*]", None, json!({})), None);
        // A path that is not a spread says nothing about an empty selection.
        assert_eq!(blind("$.items[?@.run]", None, json!({})), None);
    }

    #[test]
    fn items_without_the_marker_path_are_not_blindness() {
        let unmarked = json!({"items": [{"tags": {"run": "x"}}, {"id": 1}]});
        assert_eq!(blind("$.items[*]", Some("$.labels.run"), unmarked), None);
    }
}
