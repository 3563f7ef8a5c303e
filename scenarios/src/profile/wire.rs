//! What HTTP can carry: checks for the URLs and header fields a profile gives, so a value the wire
//! cannot carry is a located configuration error at load, never "unreachable" at run time.

/// Why `url` cannot be a base URL, hook or probe URL: it must be `http://` or `https://` with a
/// host and, if given, a port in 1–65535 (RFC 3986 §3.2; RFC 9110 §4.2).
///
/// # Errors
/// A message naming the URL and what is wrong with it.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("URL `{url}` must start with http:// or https://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() || host_port.starts_with(':') || host_port.starts_with("[]") {
        return Err(format!("URL `{url}` has no host"));
    }
    url.parse::<http::Uri>()
        .map_err(|e| format!("URL `{url}` is not a valid URL: {e}"))?;
    // `http::Uri` accepts any digits after the colon and drops a port it cannot represent, so the
    // port is read from the authority itself.
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").map(|(_, p)| p),
        None => host_port.split_once(':').map(|(_, p)| p),
    };
    if let Some(port) = port {
        if !matches!(port.parse::<u16>(), Ok(1..=65535)) {
            return Err(format!(
                "URL `{url}` has port `{port}`; expected 1 to 65535"
            ));
        }
    }
    Ok(())
}

/// Why `name: value` cannot be sent as an HTTP header field: the name must be a token, the value
/// free of control characters such as CR and LF (RFC 9110 §5.1, §5.5).
///
/// # Errors
/// A message naming the header and what is wrong with it.
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("header name `{name}` is not a valid HTTP field name"))?;
    http::HeaderValue::from_str(value).map_err(|_| {
        format!(
            "header `{name}` has a value HTTP cannot carry ({:?}): control characters such as CR and LF are not allowed",
            value
        )
    })?;
    Ok(())
}

/// What HTTP cannot carry in a request idemspec makes beside the API (a hook's, the probe's): the
/// URL ([`check_url`]), then each header ([`check_header`]), each problem in words.
pub(crate) fn request_problems(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    let headers = headers
        .iter()
        .filter_map(|(name, value)| check_header(name, value).err());
    check_url(url).err().into_iter().chain(headers).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_the_wire_cannot_use_are_refused() {
        for ok in [
            "http://127.0.0.1:8080",
            "https://api.example.com/v1",
            "http://[::1]:8080/p",
            "http://localhost",
        ] {
            assert_eq!(check_url(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("http://", "no host"),
            ("http://127.0.0.1:99999", "port `99999`"),
            ("http://h:0", "port `0`"),
            ("http://host:port", "port `port`"),
            ("ftp://h", "must start with http"),
            ("http://a b", "not a valid URL"),
            ("http://:80", "no host"),
        ] {
            let err = check_url(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn header_fields_the_wire_cannot_carry_are_refused() {
        assert_eq!(check_header("Authorization", "Bearer x"), Ok(()));
        assert!(check_header("X-Key", "a\r\nInjected: 1")
            .expect_err("CRLF")
            .contains("CR and LF"));
        assert!(check_header("Bad Name", "v")
            .expect_err("space in name")
            .contains("field name"));
        assert!(check_header("X", "nul\0").is_err());
    }
}
