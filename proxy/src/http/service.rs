//! The per-request service: build the request's context, pick the rule, and pass the request
//! through or hand it to its fault.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctl::ConnCtl;
use super::ctx::RequestCtx;
use super::faults;
use super::flight::Flight;
use super::link::UpstreamLink;
use crate::server::{Shared, Upstream};

/// Handles one request from a downstream connection.
pub(super) async fn handle(
    shared: Arc<Shared>,
    ctl: Arc<ConnCtl>,
    link: Arc<UpstreamLink>,
    req: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let Upstream::Http(forwarder) = &shared.upstream else {
        unreachable!("HTTP connections are only served in HTTP mode")
    };
    let (mut parts, body) = req.into_parts();
    let mut ctx = RequestCtx::new(shared.events.clone(), &parts, &shared.key_header, ctl);
    // Pass-through (no rules in force) takes no lock and no reference count.
    let rule = shared
        .http_rules_for_request()
        .and_then(|rules| rules.select(&parts, shared.key_header.as_str()));
    // Rules see the control headers; the upstream must not.
    forwarder.prepare(&mut parts);
    let req = Request::from_parts(parts, RequestBody(Source::Stream(body)));
    let Some(rule) = rule else {
        return Ok(Flight::new(req, ctx, forwarder, &link, &shared)
            .pass()
            .await);
    };
    ctx.apply(&rule.rule);
    let flight = Flight::new(req, ctx, forwarder, &link, &shared);
    Ok(faults::apply(&rule.rule.fault, flight).await)
}
