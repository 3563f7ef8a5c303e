//! The control API's rule endpoints: any body to `PUT /rules` and `POST /rules` gets 200 or a 400
//! problem with a JSON pointer, never anything else, and what was accepted is listed and
//! accepted again. One proxy for the whole run; each input is sent through the router in
//! process.
#![no_main]

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{Method, Request};
use idemspec_proxy::{start, ProxyConfig, ProxyHandle};
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

struct Fixture {
    rt: tokio::runtime::Runtime,
    handle: ProxyHandle,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let handle = rt
            .block_on(start(ProxyConfig {
                // Nothing is forwarded: only the rules are exercised.
                upstream: "http://127.0.0.1:9".into(),
                ..ProxyConfig::default()
            }))
            .expect("proxy starts");
        Fixture { rt, handle }
    })
}

async fn call(handle: &ProxyHandle, method: Method, body: Vec<u8>) -> (u16, serde_json::Value) {
    let req = Request::builder()
        .method(method)
        .uri("/rules")
        .body(Body::from(body))
        .expect("request");
    let resp = idemspec_proxy::control::router(handle.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("a whole body");
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

fuzz_target!(|body: &[u8]| {
    let f = fixture();
    f.rt.block_on(async {
        for method in [Method::PUT, Method::POST] {
            let (status, answer) = call(&f.handle, method.clone(), body.to_vec()).await;
            match status {
                200 => {
                    let listed = serde_json::to_vec(&answer).expect("serialises");
                    let (again, relisted) = call(&f.handle, Method::PUT, listed).await;
                    assert_eq!((again, &relisted), (200, &answer));
                }
                400 => assert!(
                    answer["pointer"].is_string(),
                    "{method} unlocated: {answer}"
                ),
                other => panic!("{method}: {other} {answer}"),
            }
        }
        f.handle.clear_rules();
    });
});
