//! The fast path's reading of request and response heads, case by case.

use super::*;

fn request(head: &str) -> (Request, String) {
    let mut out = Vec::new();
    let verdict = analyse_request(head.as_bytes(), "/base", "idempotency-key", None, &mut out);
    (verdict, String::from_utf8(out).unwrap())
}

fn plain(head: &str) -> (PlainRequest, String) {
    match request(head) {
        (Request::Plain(plan), out) => (plan, out),
        (other, _) => panic!("{head:?} is plain, got {other:?}"),
    }
}

#[test]
fn a_plain_head_is_rewritten_as_hypers_path_rewrites_it() {
    let head = "POST /v1/workers?x=1 HTTP/1.1\r\nHost: api\r\nIdempotency-Key: k-1\r\n\
                Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nX-Idemspec-Step: lost-1\r\n\
                X-IDEMSPEC-Other: y\r\nContent-Length: 2\r\n\r\n{}";
    let (plan, out) = plain(head);
    assert_eq!(plan.head_len, head.len() - 2);
    assert_eq!(plan.body_len, 2);
    assert!(!plan.close && !plan.head_method);
    assert_eq!(plan.method, "POST");
    assert_eq!(plan.path, "/v1/workers?x=1");
    assert_eq!(plan.key.as_deref(), Some("k-1"));
    assert_eq!(plan.step.as_deref(), Some("lost-1"));
    assert_eq!(
        out,
        "POST /base/v1/workers?x=1 HTTP/1.1\r\nHost: api\r\nIdempotency-Key: k-1\r\n\
         Content-Length: 2\r\n\r\n"
    );
}

#[test]
fn connection_close_and_head_are_noted() {
    let (plan, out) = plain("HEAD / HTTP/1.1\r\nhost: a\r\nconnection: Close\r\n\r\n");
    assert!(plan.close && plan.head_method);
    assert_eq!(out, "HEAD /base/ HTTP/1.1\r\nhost: a\r\n\r\n");
}

#[test]
fn a_partial_head_waits_and_an_overlong_one_goes_to_hyper() {
    assert_eq!(request("GET / HTTP/1.1\r\nHost: a\r\n").0, Request::Partial);
    let long = format!("GET / HTTP/1.1\r\nX-Long: {}", "a".repeat(MAX_REQUEST_HEAD));
    assert_eq!(request(&long).0, Request::Handoff);
}

#[test]
fn everything_but_the_plain_case_goes_to_hyper() {
    for head in [
        "GET / HTTP/1.0\r\nHost: a\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /a\"b HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: x-private\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: keep-alive\r\n\r\n",
        "GET / HTTP/1.1\r\nHo st: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
        "G\x01T / HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        assert_eq!(request(head).0, Request::Handoff, "{head:?}");
    }
    let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
    let head = format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n");
    assert_eq!(request(&head).0, Request::Handoff);
}

fn response(head: &str, head_method: bool, close_down: bool) -> (Response, String) {
    let mut out = Vec::new();
    let verdict = analyse_response(head.as_bytes(), head_method, close_down, &mut out);
    (verdict, String::from_utf8(out).unwrap())
}

fn answer(head: &str) -> (Answer, String) {
    match response(head, false, false) {
        (Response::Final(answer), out) => (answer, out),
        (other, _) => panic!("{head:?} is a final response, got {other:?}"),
    }
}

#[test]
fn response_heads_lose_hop_by_hop_headers_and_keep_their_framing() {
    let (a, out) = answer(
        "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nConnection: keep-alive, x-hop\r\n\
         X-Hop: 1\r\nKeep-Alive: timeout=5\r\nLocation: /w/1\r\n\r\nhello",
    );
    assert_eq!(
        (a.status, a.framing, a.upstream_closes),
        (201, Framing::Length(5), false)
    );
    assert_eq!(
        out,
        "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nLocation: /w/1\r\n\r\n"
    );
    let (a, out) =
        answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(a.framing, Framing::Chunked(Chunks::default()));
    assert_eq!(
        out,
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"
    );
}

#[test]
fn a_body_without_length_runs_to_the_close_and_closes_both_sides() {
    let (a, out) = answer("HTTP/1.0 200 OK\r\nServer: old\r\n\r\n");
    assert_eq!(a.framing, Framing::UntilClose);
    assert!(a.upstream_closes);
    assert_eq!(
        out,
        "HTTP/1.1 200 OK\r\nServer: old\r\nconnection: close\r\n\r\n"
    );
    let (a, _) = answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
    assert_eq!(a.framing, Framing::UntilClose);
}

#[test]
fn bodiless_responses_and_keep_alive_rules() {
    for (head, head_method) in [
        ("HTTP/1.1 204 No Content\r\n\r\n", false),
        (
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
            false,
        ),
        ("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true),
    ] {
        match response(head, head_method, false).0 {
            Response::Final(a) => assert_eq!(a.framing, Framing::Empty, "{head:?}"),
            other => panic!("{other:?}"),
        }
    }
    let (a, _) = answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert!(a.upstream_closes);
    let (a, _) = answer("HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
    assert!(!a.upstream_closes);
    let (a, _) = answer("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok");
    assert_eq!(
        a.framing,
        Framing::Length(2),
        "a list of one value is that value"
    );
    let (a, out) =
        answer("HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\n");
    assert_eq!(a.framing, Framing::Length(2));
    assert!(
        out.contains("Content-Length: 2"),
        "framing is never hop-by-hop: {out}"
    );
    let (_, out) = response("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, true);
    assert_eq!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nconnection: close\r\n\r\n"
    );
}

#[test]
fn interim_heads_pass_and_bad_ones_are_named() {
    let (r, out) = response(
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200",
        false,
        true,
    );
    assert_eq!(r, Response::Interim { head_len: 40 });
    assert_eq!(out, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
    for head in [
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        "HTTX/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
    ] {
        assert!(
            matches!(response(head, false, false).0, Response::Invalid(_)),
            "{head:?}"
        );
    }
    assert_eq!(
        response("HTTP/1.1 200 OK\r\n", false, false).0,
        Response::Partial
    );
}

/// Feeds `body` to a scanner in pieces of `step` bytes; returns (used, data, done).
fn scan(body: &[u8], step: usize) -> Result<(usize, u64, bool), &'static str> {
    let mut chunks = Chunks::default();
    let (mut used, mut data) = (0, 0);
    for piece in body.chunks(step) {
        let fed = chunks.feed(piece);
        used += fed.used;
        data += fed.data;
        if fed.outcome? {
            return Ok((used, data, true));
        }
    }
    Ok((used, data, false))
}

#[test]
fn a_chunked_body_ends_where_its_last_chunk_and_trailers_do_in_any_split() {
    let body = b"5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
    let end = body.len() - 4;
    for step in 1..=body.len() {
        assert_eq!(scan(body, step), Ok((end, 15, true)), "step {step}");
    }
    assert_eq!(scan(b"0\r\n\r\n", 64), Ok((5, 0, true)));
    assert_eq!(scan(b"5\r\nhel", 64), Ok((6, 3, false)));
}

#[test]
fn the_data_before_a_malformed_chunk_still_counts() {
    let mut chunks = Chunks::default();
    let fed = chunks.feed(b"5\r\nhelloX");
    assert_eq!((fed.used, fed.data), (8, 5));
    assert!(fed.outcome.is_err());
}

#[test]
fn a_malformed_chunked_body_is_an_error() {
    for body in [
        &b"\r\n"[..],
        b"g\r\n",
        b"5\r\nhelloX",
        b"11111111111111111\r\n",
        b"0\r\nX: y\rZ",
        b"0\r\n\rZ",
        b"5\rX",
        b"5;a\nb\r\nhello\r\n0\r\n\r\n",
        b"0\r\nX: y\n\r\n",
        b"0\r\n\n",
    ] {
        assert!(
            scan(body, 64).is_err(),
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn the_key_is_read_from_any_header_even_one_the_upstream_head_drops() {
    let mut out = Vec::new();
    let head = b"GET / HTTP/1.1\r\nHost: a\r\nKeep-Alive: k-7\r\n\r\n";
    let Request::Plain(plan) = analyse_request(head, "", "keep-alive", None, &mut out) else {
        panic!("plain");
    };
    assert_eq!(plan.key.as_deref(), Some("k-7"));
    assert_eq!(out, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
}
