//! The per-request service: build the context, pick the rule, run the fault's phases.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use idemspec_scenarios::rules::Fault;

use super::body::{RequestBody, ResponseBody, Source};
use super::ctl::ConnCtl;
use super::ctx::RequestCtx;
use super::forward::{Route, UpstreamLink};
use super::{request_phase, response_phase, upstream_phase};
use crate::server::{Shared, Upstream};

/// Handles one request from a downstream connection.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    ctl: Arc<ConnCtl>,
    link: Arc<UpstreamLink>,
    req: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let Upstream::Http(forwarder) = &shared.upstream else {
        unreachable!("HTTP connections are only served in HTTP mode")
    };
    let (mut parts, body) = req.into_parts();
    let mut ctx = RequestCtx::new(shared.events.clone(), &parts);
    let receipt = ctx.receipt().clone();
    let fwd = Route {
        fwd: forwarder,
        link: &link,
        receipt: &receipt,
    };
    // Pass-through (no rules in force) takes no lock and no reference count.
    let rule = shared
        .http_rules_for_request()
        .and_then(|rules| rules.select(&parts));
    // Rules see the control headers; the upstream must not.
    forwarder.prepare(&mut parts);
    let req = Request::from_parts(parts, RequestBody(Source::Stream(body)));
    let Some(rule) = rule else {
        return Ok(upstream_phase::forward(fwd, req, ctx).await);
    };
    ctx.apply(&rule.rule);
    let resp = match &rule.rule.fault {
        Fault::Refuse { reset } => request_phase::refuse(ctx, &ctl, *reset).await,
        Fault::Respond {
            status,
            body,
            content_type,
        } => request_phase::respond(ctx, *status, body, content_type.as_deref()),
        Fault::DelayRequest { duration } => {
            tokio::time::sleep(*duration).await;
            upstream_phase::forward(fwd, req, ctx).await
        }
        Fault::DelayResponse { duration } => {
            response_phase::delay_response(fwd, req, ctx, *duration).await
        }
        Fault::DropResponse {} => response_phase::drop_response(fwd, req, ctx, &ctl).await,
        Fault::ResetMidResponse { after_bytes } => {
            response_phase::reset_mid_response(fwd, req, ctx, &ctl, *after_bytes).await
        }
        Fault::Hang { forward } => {
            if *forward {
                response_phase::forward_and_discard(fwd, req, &mut ctx).await;
            } else {
                request_phase::drain(req.into_body()).await;
            }
            request_phase::hang(ctx, &ctl, &shared).await
        }
        Fault::Duplicate { mode } => upstream_phase::duplicate(fwd, req, ctx, *mode).await,
    };
    Ok(resp)
}
