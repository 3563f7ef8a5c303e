//! The per-request service: build the request's context, pick the rule, and pass the request
//! through or hand it to its fault.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;

use super::body::{RequestBody, ResponseBody, Source};
use super::conn_signals::ConnSignals;
use super::ctx::RequestCtx;
use super::faults;
use super::flight::Flight;
use super::link::UpstreamLink;
use super::synthetic;
use super::upstream::NoResponse;
use crate::http::{Shared, Upstream};

/// Handles one request from a downstream connection.
pub(super) async fn handle(
    shared: Arc<Shared>,
    signals: Arc<ConnSignals>,
    link: Arc<UpstreamLink>,
    req: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let Upstream::Http(forwarder) = &shared.upstream else {
        unreachable!("HTTP connections are only served in HTTP mode")
    };
    let (mut parts, body) = req.into_parts();
    let key = shared.key.in_head(&parts);
    let mut ctx = RequestCtx::new(shared.events.clone(), &parts, key, signals);
    let body = if shared.key.in_body() {
        match shared.key.read_body(&parts, body).await {
            Ok((key, body)) => {
                match key {
                    Ok(key) => ctx.event.idempotency_key = key,
                    Err(why) => ctx.event.key_unread = Some(why),
                }
                body
            }
            Err(err) => return Ok(synthetic::bad_request(ctx, NoResponse::body_unread(&err))),
        }
    } else {
        Source::Stream(body)
    };
    // Pass-through (no rules in force) takes no lock and no reference count.
    let rule = shared
        .http_rules_for_request()
        .and_then(|rules| rules.select(&parts, ctx.event.idempotency_key.as_deref()));
    // Rules see the control headers; the upstream must not.
    forwarder.prepare(&mut parts);
    let req = Request::from_parts(parts, RequestBody(body));
    let Some(rule) = rule else {
        return Ok(Flight::new(req, ctx, forwarder, &link, &shared)
            .pass()
            .await);
    };
    ctx.apply(&rule.rule);
    let flight = Flight::new(req, ctx, forwarder, &link, &shared);
    Ok(faults::apply(&rule.rule.fault, flight).await)
}
