//! A request body as its sender meant it: undone of the content codings its `Content-Encoding`
//! names (RFC 9110 §8.4: `gzip`, `deflate`, `br`, in the order applied), within a bound on the
//! decoded size, so that a key in a compressed form or JSON body is read where it is (some SDKs
//! compress their Query-protocol bodies) and a decompression bomb is refused by name.

use std::borrow::Cow;
use std::io::Read;

/// The most bytes a body may decode to: 1 MiB (a provisioning request is a few hundred bytes).
pub const MAX_DECODED_BODY: usize = 1024 * 1024;

/// `body` decoded of the codings `content_encoding` lists (the header's value; `None` or
/// `identity`: as it is).
///
/// # Errors
/// Why the body cannot be read as sent: a coding idemspec does not decode (named), a body that
/// is not what its coding says, or one that decodes to more than [`MAX_DECODED_BODY`].
pub fn decoded<'b>(
    content_encoding: Option<&[u8]>,
    body: &'b [u8],
) -> Result<Cow<'b, [u8]>, String> {
    let Some(header) = content_encoding else {
        return Ok(Cow::Borrowed(body));
    };
    let header = String::from_utf8_lossy(header).to_ascii_lowercase();
    let codings: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && *c != "identity")
        .collect();
    let mut out = Cow::Borrowed(body);
    // The last coding listed was applied last, so it is undone first.
    for coding in codings.iter().rev() {
        out = Cow::Owned(undo(coding, &out)?);
    }
    Ok(out)
}

/// `body` with one coding undone, within the bound.
fn undo(coding: &str, body: &[u8]) -> Result<Vec<u8>, String> {
    match coding {
        "gzip" | "x-gzip" => bounded(flate2::read::MultiGzDecoder::new(body), coding),
        // HTTP's `deflate` is zlib's format; some senders send a raw deflate stream instead.
        "deflate" => bounded(flate2::read::ZlibDecoder::new(body), coding)
            .or_else(|_| bounded(flate2::read::DeflateDecoder::new(body), coding)),
        "br" => bounded(brotli_decompressor::Decompressor::new(body, 4096), coding),
        other => Err(format!(
            "the body is encoded `{other}` (Content-Encoding), which idemspec does not decode \
             (it reads gzip, deflate and br)"
        )),
    }
}

/// Reads `reader` to its end when that is at most [`MAX_DECODED_BODY`] bytes.
fn bounded(reader: impl Read, coding: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let read = reader
        .take(MAX_DECODED_BODY as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("the body is not valid `{coding}` (Content-Encoding): {e}"))?;
    if read > MAX_DECODED_BODY {
        return Err(format!(
            "the body decodes to more than {} KiB (Content-Encoding `{coding}`), more than \
             idemspec reads: a decompression bomb, or not a request's body",
            MAX_DECODED_BODY / 1024
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn codings_are_undone_in_reverse_and_a_bomb_is_refused_by_name() {
        let form = b"Action=RunInstances&ClientToken=k-1";
        assert_eq!(decoded(None, form).unwrap().as_ref(), form);
        assert_eq!(decoded(Some(b"identity"), form).unwrap().as_ref(), form);
        assert_eq!(decoded(Some(b"gzip"), &gzip(form)).unwrap().as_ref(), form);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(form).unwrap();
        let deflated = z.finish().unwrap();
        assert_eq!(decoded(Some(b"deflate"), &deflated).unwrap().as_ref(), form);
        assert_eq!(
            decoded(Some(b"deflate, gzip"), &gzip(&deflated))
                .unwrap()
                .as_ref(),
            form
        );
        let zstd = decoded(Some(b"zstd"), form).unwrap_err();
        assert!(zstd.contains("`zstd`"), "{zstd}");
        let broken = decoded(Some(b"gzip"), form).unwrap_err();
        assert!(broken.contains("not valid `gzip`"), "{broken}");
        // 64 MiB of zeros compress to about 64 KiB.
        let bomb = gzip(&vec![0u8; 64 * 1024 * 1024]);
        assert!(bomb.len() < 128 * 1024);
        let refused = decoded(Some(b"GZIP"), &bomb).unwrap_err();
        assert!(refused.contains("decompression bomb"), "{refused}");
    }
}
