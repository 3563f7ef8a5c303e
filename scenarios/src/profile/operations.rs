//! The operations of the API under test (`operations:` — create, list, get, delete, action): how
//! each request is sent and its answer read, with their rules. The create, with its variants, is
//! `create.rs`; the long-running operation an answer names is `long_running.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check_header;
use super::method::{delete, essence, get, http_method, post};
use super::principal::Principal;
use super::{CreateOp, LongRunningOperation, ResourcePath};
use crate::load::{LoadErrors, Spanned};
use crate::scenario::Operation;
use crate::template::Template;
use crate::value::JsonPathExpr;

/// The operations of the API under test.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Operations {
    /// Create a resource (the idempotent POST under test).
    pub create: CreateOp,
    /// Count the principal's resources.
    pub list: ListOp,
    /// Read one resource (`{id}` in the path).
    #[serde(default)]
    pub get: Option<GetOp>,
    /// Delete one resource (`{id}` in the path).
    #[serde(default)]
    pub delete: Option<PathOp>,
    /// A mutating action on one resource (e.g. reboot), and how to observe its effect.
    #[serde(default)]
    pub action: Option<ActionOp>,
}

impl Operations {
    /// The long-running operation `op`'s answers name, where the profile declares one.
    pub fn long_running_of(&self, op: Operation) -> Option<&Spanned<LongRunningOperation>> {
        match op {
            Operation::Create => self.create.long_running.as_ref(),
            Operation::Delete => self.delete.as_ref()?.long_running.as_ref(),
            Operation::Action => self.action.as_ref()?.long_running.as_ref(),
            Operation::List | Operation::Get => None,
        }
    }

    /// The headers `op`'s requests carry besides the principal's, where the profile gives some.
    pub fn headers_of(&self, op: Operation) -> Option<&Spanned<BTreeMap<String, String>>> {
        match op {
            Operation::Create => self.create.headers.as_ref(),
            Operation::List => self.list.headers.as_ref(),
            Operation::Get => self.get.as_ref()?.headers.as_ref(),
            Operation::Delete => self.delete.as_ref()?.headers.as_ref(),
            Operation::Action => self.action.as_ref()?.headers.as_ref(),
        }
    }

    /// The `Content-Type` the operation's own `headers` give, if they give one (an API's vendor
    /// type, or a form body's).
    pub fn own_content_type(&self, op: Operation) -> Option<&str> {
        self.headers_of(op)?
            .value
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str())
    }

    /// Every operation that answers with a long-running operation, with its name.
    pub fn long_running(&self) -> Vec<(&'static str, &Spanned<LongRunningOperation>)> {
        Operation::ALL
            .into_iter()
            .filter_map(|op| Some((op.name(), self.long_running_of(op)?)))
            .collect()
    }

    /// Every operation's own headers, with the operation's name.
    pub fn headers(&self) -> Vec<(&'static str, &Spanned<BTreeMap<String, String>>)> {
        Operation::ALL
            .into_iter()
            .filter_map(|op| Some((op.name(), self.headers_of(op)?)))
            .collect()
    }

    /// Where the id the create's answer gives leaves its principal out although two principals'
    /// resources may share it: the create names what it makes after its key (`{{key_name}}`,
    /// the same name for every principal that sends that key, as cross-tenant does), and a
    /// resource path puts a principal's variable beside the id (`/projects/{{principal.project}}
    /// /machines/{id}`), so the id is a name only the principal's tenant makes unique. The first
    /// such path's field (`get.path`), where it is written, and the variable.
    pub fn tenant_outside_id(&self) -> Option<(&'static str, &crate::load::Location, &str)> {
        let create = &self.create;
        if !create.body.has_key_name() && !create.path.has_key_name() {
            return None;
        }
        let paths = [
            ("get.path", self.get.as_ref().map(|o| &o.path)),
            ("delete.path", self.delete.as_ref().map(|o| &o.path)),
            ("action.path", self.action.as_ref().map(|o| &o.path)),
        ];
        paths.into_iter().find_map(|(field, path)| {
            let path = path?;
            let var = *path.value.template().principal_vars().first()?;
            Some((field, &path.referenced, var))
        })
    }

    /// Every request template of the operations, with the field it is written in.
    pub fn templates(&self) -> Vec<(String, &Template)> {
        let mut out: Vec<(String, &Template)> = vec![
            ("create.path".into(), &self.create.path),
            ("create.body".into(), &self.create.body),
            ("list.path".into(), &self.list.path),
        ];
        if let Some(body) = &self.list.body {
            out.push(("list.body".into(), body));
        }
        let v = &self.create.variants;
        let variants = [
            (
                "always_fails",
                v.always_fails.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
            (
                "fails_once",
                v.fails_once.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
            ("slow", v.slow.as_ref().map(|x| (&x.body, x.path.as_ref()))),
            (
                "hangs",
                v.hangs.as_ref().map(|x| (&x.body, x.path.as_ref())),
            ),
        ];
        for (name, found) in variants {
            if let Some((body, path)) = found {
                out.push((format!("create.variants.{name}.body"), body));
                if let Some(path) = path {
                    out.push((format!("create.variants.{name}.path"), path));
                }
            }
        }
        if let Some(get) = &self.get {
            out.push(("get.path".into(), get.path.value.template()));
        }
        if let Some(delete) = &self.delete {
            out.push(("delete.path".into(), delete.path.value.template()));
        }
        if let Some(action) = &self.action {
            out.push(("action.path".into(), action.path.value.template()));
            if let Some(body) = &action.body {
                out.push(("action.body".into(), body));
            }
        }
        out
    }
}

/// How to count a principal's resources created by one check.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListOp {
    /// HTTP method (default `GET`; `POST` for an API whose list takes a body).
    #[serde(default = "get", deserialize_with = "http_method")]
    pub method: String,
    /// Path template, may filter by `{{marker}}`, e.g. `/v1/workers?label=run:{{marker}}`.
    #[serde(deserialize_with = "crate::template::path")]
    pub path: Template,
    /// Body template of a list that takes one (sent as `application/json`), e.g.
    /// `{"Filters":[{"Name":"tag:run","Values":["{{marker}}"]}]}`.
    #[serde(default)]
    pub body: Option<Template>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,

    /// The items, e.g. `$.items[*]`.
    pub items: JsonPathExpr,
    /// Optional path inside each item to the marker (e.g. `$.labels.run`); when given, only items whose
    /// value there equals the marker are counted.
    #[serde(default)]
    pub marker: Option<JsonPathExpr>,
}

/// Reading one resource.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetOp {
    /// HTTP method (default `GET`; `POST` for an API that reads by a request body, as EC2's
    /// `DescribeInstances`).
    #[serde(default = "get", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}`, e.g. `/v1/workers/{id}` (or without it, where `body` names the id).
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// Whether an operation on an existing resource carries an idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyUse {
    /// The key is sent (and the operation is expected to honour it).
    #[default]
    Send,
    /// The operation takes no key; checks that need one SKIP.
    Never,
}

/// Deleting one resource.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathOp {
    /// HTTP method (default `DELETE`).
    #[serde(default = "delete", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}` (or without it, where `body` names the id).
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Whether the key is sent (default `send`).
    #[serde(default)]
    pub key: KeyUse,
    /// The long-running operation the answer names, where it names one (`operation:`).
    #[serde(default, rename = "operation")]
    pub long_running: Option<Spanned<LongRunningOperation>>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// A mutating action on one resource (e.g. reboot).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActionOp {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path with `{id}`, e.g. `/v1/workers/{id}/reboot`.
    pub path: Spanned<ResourcePath>,
    /// Optional body template; `{id}` in it is the resource's id (see [`id_in_body`]).
    #[serde(default)]
    pub body: Option<Template>,
    /// Where the action's effect counter is in the `get` response (e.g. `$.reboot_count`).
    #[serde(default)]
    pub effect: Option<JsonPathExpr>,
    /// The long-running operation the answer names, where it names one (`operation:`).
    #[serde(default, rename = "operation")]
    pub long_running: Option<Spanned<LongRunningOperation>>,
    /// Headers sent with this operation's requests besides the principal's (e.g. `X-Amz-Target:
    /// Service.CreateThing` for an API that tells its operations apart by a header).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
}

/// The resource's id in a get, delete or action body.
pub const ID_IN_BODY: &str = "{id}";

/// `body` (rendered) with each `{id}` replaced by `id` encoded for the body's `content_type`: a
/// form body's value form-urlencoded, a JSON body's the content of a JSON string (escaped,
/// without its quotes), any other as it is.
pub fn id_in_body(body: &str, id: &str, content_type: &str) -> String {
    let essence = essence(content_type);
    let encoded = if essence == "application/x-www-form-urlencoded" {
        form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
    } else if essence.contains("json") {
        let quoted = serde_json::Value::String(id.to_owned()).to_string();
        quoted[1..quoted.len() - 1].to_owned()
    } else {
        id.to_owned()
    };
    body.replace(ID_IN_BODY, &encoded)
}

impl Operations {
    /// The operations' own rules, in this order: each long-running operation's
    /// ([`LongRunningOperation::problems`]), the create's `id_after`, headers HTTP can carry, and
    /// every `{{principal.NAME}}` a template uses given by every principal. The errors of the
    /// create's `id_after` and of the templates point at `principals`.
    pub(crate) fn check(&self, principals: &Spanned<Vec<Principal>>, errors: &mut LoadErrors) {
        for (op, long) in self.long_running() {
            for m in long.value.problems() {
                errors.at(&long.referenced, format!("operations.{op}.operation.{m}"));
            }
        }
        self.create.check_id_after(&principals.referenced, errors);
        for (op, headers) in self.headers() {
            for (name, value) in &headers.value {
                if let Err(m) = check_header(name, value) {
                    errors.at(&headers.referenced, format!("operations.{op}.headers: {m}"));
                }
            }
        }
        for (field, template) in self.templates() {
            for var in template.principal_vars() {
                for p in principals
                    .value
                    .iter()
                    .filter(|p| !p.vars.contains_key(var))
                {
                    errors.at(
                        &principals.referenced,
                        format!(
                            "`operations.{field}` uses `{{{{principal.{var}}}}}`, but principal \
                             `{}` has no `{var}` in its `vars`; give every principal one",
                            p.name
                        ),
                    );
                }
            }
        }
    }

    /// Every per-resource operation (get, delete, action) names the resource: `{id}` (or `{+id}`)
    /// in its path, or `{id}` in its body.
    pub(crate) fn check_resource_paths(&self, errors: &mut LoadErrors) {
        let with_id = [
            self.get.as_ref().map(|g| (&g.path, g.body.as_ref())),
            self.delete.as_ref().map(|d| (&d.path, d.body.as_ref())),
            self.action.as_ref().map(|a| (&a.path, a.body.as_ref())),
        ];
        for (path, body) in with_id.into_iter().flatten() {
            let in_body = body.is_some_and(|b| b.source().contains(ID_IN_BODY));
            if !path.value.has_id() && !in_body {
                errors.at(
                    &path.referenced,
                    format!(
                        "path `{}` must contain `{{id}}` (or `{{+id}}` for an id with `/` in it), \
                         or the operation's body `{{id}}`",
                        path.value.source()
                    ),
                );
            }
        }
    }
}
