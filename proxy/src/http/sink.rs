//! Reading a body the proxy does not pass on, with memory bounded whatever the other side sends:
//! [`discard`] reads it to its end a frame at a time and keeps only the count;
//! [`collect_within`] keeps at most a limit and says how much came when there was more.
//!
//! A fault reads bodies it never forwards — `drop_response` the upstream's answer, the drain of a
//! request it refuses, a detached exchange's answer, `duplicate`'s copies. Reading them whole
//! into one buffer let a 1.5 GB answer cost 3 GB of the proxy's memory; here a frame is dropped
//! as soon as it is counted.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

/// Reads `body` to its end, dropping each frame once counted. Returns the data bytes read, or
/// the body's error with the bytes read before it.
pub(crate) async fn discard<B>(body: B) -> Result<u64, (B::Error, u64)>
where
    B: hyper::body::Body + Unpin,
{
    let mut body = body;
    let mut read = 0u64;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    read += bytes::Buf::remaining(data) as u64;
                }
            }
            Err(err) => return Err((err, read)),
        }
    }
    Ok(read)
}

/// Why [`collect_within`] kept no body.
#[derive(Debug)]
pub(crate) enum Uncollected<E> {
    /// The body failed.
    Failed(E),
    /// The body was longer than the limit: this many bytes were read (the limit and one frame
    /// at most; the rest is unread).
    TooLong(u64),
}

/// Reads `body` whole into memory when it has at most `limit` data bytes; stops reading at the
/// first frame past the limit.
pub(crate) async fn collect_within<B>(body: B, limit: u64) -> Result<Bytes, Uncollected<B::Error>>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut body = body;
    let mut kept = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Uncollected::Failed)?;
        if let Some(data) = frame.data_ref() {
            let read = kept.len() as u64 + data.len() as u64;
            if read > limit {
                return Err(Uncollected::TooLong(read));
            }
            kept.extend_from_slice(data);
        }
    }
    Ok(kept.freeze())
}
