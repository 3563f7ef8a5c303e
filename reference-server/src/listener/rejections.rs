//! Following hyper's output response by response, to swap hyper's own rejections for problem bodies.
//!
//! hyper refuses a request it cannot parse (bad header bytes, a control character in a value, a URI
//! over its limit, too many headers) before any service sees it, and answers with a status and an
//! empty body; it has no option to change that answer (hyperium/hyper#3844, PR #3911 unmerged).
//! leasebroker answers every error with an RFC 9457 problem, so the bytes hyper writes pass through
//! [`ResponseStream`], which tells hyper's rejections from the application's responses by one fact:
//! every application response answers a request hyper handed to the service ([`Awaiting`]), and a
//! rejection answers none. The stream is hyper's own well-formed output, so following it needs only
//! the status and `Content-Length` of each head (every leasebroker response has a `Content-Length`:
//! its bodies are buffered).

use std::collections::VecDeque;
use std::sync::Mutex;

use http::StatusCode;

use crate::edge::ApiError;

/// The longest response head followed; a longer one (never written by leasebroker) stops the
/// following for the rest of the connection, and everything passes through unchanged.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// The requests hyper handed to the service and whose responses have not been written yet, in order;
/// each entry says whether the request was a `HEAD` (its response has no body).
#[derive(Debug, Default)]
pub(super) struct Awaiting(Mutex<VecDeque<bool>>);

impl Awaiting {
    /// Notes a request handed to the service.
    pub(super) fn push(&self, head_request: bool) {
        self.queue().push_back(head_request);
    }

    /// The oldest request not yet answered, if any (whether it was a `HEAD`).
    fn pop(&self) -> Option<bool> {
        self.queue().pop_front()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<bool>> {
        // A panic while holding the lock leaves a plain queue of flags; it is still usable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where the stream is.
#[derive(Debug)]
enum State {
    /// At or inside a response head; the head's bytes so far.
    Head(Vec<u8>),
    /// Inside a body: this many bytes to go.
    Body(u64),
    /// Following stopped (a head without `Content-Length`, or an oversized head): pass through.
    Blind,
    /// A rejection was replaced; hyper closes the connection after it, so whatever it writes next
    /// (nothing, in hyper 1.x) is dropped.
    Replaced,
}

/// What one whole response head is.
enum Head {
    /// A 1xx interim response (`100 Continue`): no body, and the final response still to come.
    Interim,
    /// An application response with this many body bytes.
    Answer(u64),
    /// An application response whose length cannot be followed.
    Unframed,
    /// hyper's own rejection of an unparsable request, replaced by this problem response.
    Rejection(Vec<u8>),
}

/// hyper's output, response by response, with its rejections replaced (see the module docs).
#[derive(Debug)]
pub(super) struct ResponseStream {
    state: State,
    /// Heads passed or replaced so far (interim responses not counted).
    answered: u64,
}

impl ResponseStream {
    /// A stream at the start of a connection.
    pub(super) fn new() -> Self {
        Self {
            state: State::Head(Vec::new()),
            answered: 0,
        }
    }

    /// Whether any response (the application's, or a replaced rejection) has been written.
    pub(super) fn answered(&self) -> bool {
        self.answered > 0
    }

    /// Follows `bytes` written by hyper and appends what should go on the wire to `out`. A head is
    /// held back until it is whole, then decided; body bytes pass as they come.
    pub(super) fn write(&mut self, mut bytes: &[u8], awaiting: &Awaiting, out: &mut Vec<u8>) {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Blind => {
                    out.extend_from_slice(bytes);
                    return;
                }
                State::Replaced => return,
                State::Body(left) => {
                    let n = bytes
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    out.extend_from_slice(&bytes[..n]);
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::Head(Vec::new());
                    }
                    bytes = &bytes[n..];
                }
                State::Head(head) => {
                    // The blank line ending a head may straddle two writes: search from 3 bytes
                    // back. It was not in the buffer before, so it ends inside `bytes`.
                    let (kept, from) = (head.len(), head.len().saturating_sub(3));
                    head.extend_from_slice(bytes);
                    let Some(end) = find_blank_line(&head[from..]).map(|at| from + at) else {
                        if head.len() > MAX_RESPONSE_HEAD {
                            out.append(head);
                            self.state = State::Blind;
                        }
                        return;
                    };
                    head.truncate(end);
                    let head = std::mem::take(head);
                    self.decide(head, awaiting, out);
                    bytes = &bytes[end - kept..];
                }
            }
        }
    }

    fn decide(&mut self, head: Vec<u8>, awaiting: &Awaiting, out: &mut Vec<u8>) {
        match classify(&head, awaiting) {
            Head::Interim => {
                out.extend_from_slice(&head);
                self.state = State::Head(Vec::new());
            }
            Head::Answer(len) => {
                self.answered += 1;
                out.extend_from_slice(&head);
                self.state = if len == 0 {
                    State::Head(Vec::new())
                } else {
                    State::Body(len)
                };
            }
            Head::Unframed => {
                self.answered += 1;
                out.extend_from_slice(&head);
                self.state = State::Blind;
            }
            Head::Rejection(problem) => {
                self.answered += 1;
                out.extend_from_slice(&problem);
                self.state = State::Replaced;
            }
        }
    }
}

/// The index just past the first CRLFCRLF in `bytes`.
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// Decides what one whole head is; pops the request it answers from `awaiting`.
fn classify(head: &[u8], awaiting: &Awaiting) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(_)) = parsed.parse(head) else {
        return Head::Unframed;
    };
    let Some(status) = parsed.code.and_then(|c| StatusCode::from_u16(c).ok()) else {
        return Head::Unframed;
    };
    if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
        return Head::Interim;
    }
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    let Some(head_request) = awaiting.pop() else {
        return match ApiError::rejected_by_parser(status) {
            Some(problem) => {
                // Keep hyper's `date`, the one header its rejection carries that still holds.
                let date = header("date")
                    .map(|v| [b"date: ", v, b"\r\n"].concat())
                    .unwrap_or_default();
                Head::Rejection(problem.wire_response(&date))
            }
            None => Head::Unframed,
        };
    };
    if head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Head::Answer(0);
    }
    match header("content-length")
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(len) => Head::Answer(len),
        None => Head::Unframed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ndate: d\r\n\r\nok";
    const HEAD_OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n";
    const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
    const REJECTION: &[u8] =
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: d\r\n\r\n";

    /// Feeds `chunks` as separate writes after `requests` (HEAD or not) were handed to the service.
    fn follow(requests: &[bool], chunks: &[&[u8]]) -> (Vec<u8>, ResponseStream) {
        let awaiting = Awaiting::default();
        for &head in requests {
            awaiting.push(head);
        }
        let mut stream = ResponseStream::new();
        let mut out = Vec::new();
        for chunk in chunks {
            stream.write(chunk, &awaiting, &mut out);
        }
        (out, stream)
    }

    #[test]
    fn answers_pass_through_unchanged() {
        let all = [OK, HEAD_OK, CONTINUE, OK].concat();
        let (out, stream) = follow(&[false, true, false], &[&all]);
        assert_eq!(out, all);
        assert!(stream.answered());
    }

    #[test]
    fn a_rejection_with_no_request_awaiting_becomes_a_problem() {
        let (out, stream) = follow(&[false], &[OK, REJECTION, b"ignored"]);
        let expected = [
            OK,
            &ApiError::HeaderFieldsTooLarge.wire_response(b"date: d\r\n"),
        ]
        .concat();
        assert_eq!(out, expected);
        assert!(stream.answered());
    }

    #[test]
    fn an_unframed_answer_stops_following() {
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n";
        let (out, _) = follow(&[false], &[chunked, REJECTION]);
        assert_eq!(out, [&chunked[..], REJECTION].concat());
    }

    #[test]
    fn nothing_written_is_nothing_answered() {
        let (out, stream) = follow(&[], &[]);
        assert!(out.is_empty());
        assert!(!stream.answered());
    }

    proptest! {
        /// However hyper splits its writes, the output is the same: answers unchanged, the
        /// rejection replaced.
        #[test]
        fn splitting_writes_changes_nothing(cuts in proptest::collection::vec(0_usize..200, 0..8)) {
            let all = [OK, HEAD_OK, CONTINUE, OK, REJECTION].concat();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % all.len()).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts {
                chunks.push(&all[from..cut]);
                from = cut;
            }
            chunks.push(&all[from..]);
            let (whole, _) = follow(&[false, true, false], &[&all]);
            let (split, _) = follow(&[false, true, false], &chunks);
            prop_assert_eq!(split, whole);
        }
    }
}
