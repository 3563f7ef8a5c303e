//! A standalone proxy file: where to listen, where to forward, and the rules.

use serde::{Deserialize, Serialize};

use super::values::{duplicate_message, duplicate_name};
use super::{Rule, TcpRule};
use crate::load::{from_yaml, LoadError, Spanned};

/// Whether the proxy speaks HTTP/1.1 (rules see requests) or relays bytes (rules see connections).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// HTTP/1.1 reverse proxy; `rules` apply per request.
    #[default]
    Http,
    /// Byte relay; `tcp_rules` apply per connection.
    Tcp,
}

/// A standalone proxy file (`idemspec proxy --scenario FILE`), version 1:
///
/// ```yaml
/// version: 1
/// listen: 127.0.0.1:8081        # optional; --listen overrides
/// upstream: http://127.0.0.1:8080
/// mode: http                    # or tcp (then upstream is host:port and rules go in tcp_rules)
/// upstream_tls:                 # optional, for an https:// upstream; --tls-* flags override
///   ca_file: ca.pem             # paths relative to this file's directory
///   client_cert: client.pem     # for an upstream that demands a client certificate
///   client_key: client-key.pem
/// listen_tls:                   # optional: serve TLS on the proxy's port
///   cert_file: proxy.pem
///   key_file: proxy-key.pem
/// rules:
///   - name: lose-first-create
///     match: {method: POST, path: /v1/workers, nth: 1}
///     fault: {drop_response: {}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProxyFile {
    /// The format version; only `1` exists.
    pub version: u32,
    /// The address to listen on (`127.0.0.1:8081`), if the file gives one.
    pub listen: Option<String>,
    /// HTTP mode: a base URL `http://host[:port]` or `https://host[:port]`, optionally with a
    /// path prefix that is put in front of every forwarded path. TCP mode: `host:port`.
    /// Optional: `idemspec proxy --upstream` gives it (and wins over the file's).
    pub upstream: Option<String>,
    /// How an `https://` upstream is reached (HTTP mode).
    pub upstream_tls: Option<UpstreamTlsFile>,
    /// TLS on the proxy's port (HTTP mode).
    pub listen_tls: Option<ListenTlsFile>,
    /// HTTP or TCP mode.
    pub mode: Mode,
    /// HTTP-mode rules, in order.
    pub rules: Vec<Rule>,
    /// TCP-mode rules, in order.
    pub tcp_rules: Vec<TcpRule>,
}

/// A proxy file's `upstream_tls`: whom an `https://` upstream's certificate must be issued by,
/// and for which name. Paths as written (relative ones to the file's directory).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTlsFile {
    /// A PEM file of CA certificates trusted besides the platform's roots.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// The name the upstream's certificate must carry (and SNI), instead of the URL's host.
    #[serde(default)]
    pub server_name: Option<String>,
    /// Accept any upstream certificate (no chain, name or date check).
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// A PEM certificate chain (leaf first) shown to an upstream that asks for a client
    /// certificate (mutual TLS), with `client_key`.
    #[serde(default)]
    pub client_cert: Option<String>,
    /// The PEM private key of `client_cert`.
    #[serde(default)]
    pub client_key: Option<String>,
}

/// A proxy file's `listen_tls`: the certificate chain and key the proxy's port serves TLS with.
/// Paths as written (relative ones to the file's directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenTlsFile {
    /// The PEM certificate chain, leaf first.
    pub cert_file: String,
    /// Its PEM private key.
    pub key_file: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProxyFile {
    version: Spanned<u32>,
    #[serde(default)]
    listen: Option<Spanned<String>>,
    #[serde(default)]
    upstream: Option<Spanned<String>>,
    #[serde(default)]
    upstream_tls: Option<Spanned<UpstreamTlsFile>>,
    #[serde(default)]
    listen_tls: Option<Spanned<ListenTlsFile>>,
    #[serde(default)]
    mode: Option<Spanned<Mode>>,
    #[serde(default)]
    rules: Option<Spanned<Vec<Spanned<Rule>>>>,
    #[serde(default)]
    tcp_rules: Option<Spanned<Vec<Spanned<TcpRule>>>>,
}

/// The rules of one list, without their positions, once their names are known to be unique;
/// a repeated name is an error at the rule that repeats it.
fn unique<T>(
    file: &str,
    rules: Option<Spanned<Vec<Spanned<T>>>>,
    name: impl Fn(&T) -> &str,
) -> Result<Vec<T>, LoadError> {
    let rules = rules.map(|r| r.value).unwrap_or_default();
    if let Some((index, repeated)) = duplicate_name(rules.iter().map(|r| name(&r.value))) {
        let first = rules
            .iter()
            .position(|r| name(&r.value) == repeated)
            .unwrap_or_default();
        return Err(LoadError::at(
            file,
            &rules[index].referenced,
            duplicate_message(index, repeated, first),
        ));
    }
    Ok(rules.into_iter().map(|r| r.value).collect())
}

impl ProxyFile {
    /// Parses and validates a proxy file; `file` names it in errors.
    ///
    /// Errors: YAML syntax, unknown fields, bad values (located by the parser), and the
    /// cross-field checks: `version` other than 1, an upstream that does not fit the mode, a
    /// listen address that is not `ip:port`, rules of the other mode's kind, two rules of a list
    /// with one name, TLS settings in TCP mode or `upstream_tls` for an `http://` upstream.
    pub fn load(file: &str, text: &str) -> Result<Self, LoadError> {
        let raw: RawProxyFile = from_yaml(file, text)?;
        if raw.version.value != 1 {
            return Err(LoadError::at(
                file,
                &raw.version.referenced,
                format!("unsupported version {} (expected 1)", raw.version.value),
            ));
        }
        let mode = raw.mode.as_ref().map(|m| m.value).unwrap_or_default();
        if let Some(upstream) = &raw.upstream {
            check_upstream(mode, &upstream.value)
                .map_err(|msg| LoadError::at(file, &upstream.referenced, msg))?;
        }
        if let Some(listen) = &raw.listen {
            listen.value.parse::<std::net::SocketAddr>().map_err(|_| {
                LoadError::at(
                    file,
                    &listen.referenced,
                    format!("listen `{}` is not an ip:port address", listen.value),
                )
            })?;
        }
        check_tls(file, &raw, mode)?;
        match (mode, &raw.rules, &raw.tcp_rules) {
            (Mode::Tcp, Some(rules), _) if !rules.value.is_empty() => {
                return Err(LoadError::at(
                    file,
                    &rules.referenced,
                    "`rules` are HTTP rules but mode is tcp; use `tcp_rules`",
                ))
            }
            (Mode::Http, _, Some(rules)) if !rules.value.is_empty() => {
                return Err(LoadError::at(
                    file,
                    &rules.referenced,
                    "`tcp_rules` need `mode: tcp`",
                ))
            }
            _ => {}
        }
        Ok(Self {
            version: 1,
            listen: raw.listen.map(|l| l.value),
            upstream: raw.upstream.map(|u| u.value),
            upstream_tls: raw.upstream_tls.map(|t| t.value),
            listen_tls: raw.listen_tls.map(|t| t.value),
            mode,
            rules: unique(file, raw.rules, |r: &Rule| &r.name)?,
            tcp_rules: unique(file, raw.tcp_rules, |r: &TcpRule| &r.name)?,
        })
    }
}

/// TLS settings are HTTP mode's (TCP mode relays TLS as bytes), and `upstream_tls` an `https://`
/// upstream's.
fn check_tls(file: &str, raw: &RawProxyFile, mode: Mode) -> Result<(), LoadError> {
    if mode == Mode::Tcp {
        let referenced = raw
            .upstream_tls
            .as_ref()
            .map(|t| &t.referenced)
            .or(raw.listen_tls.as_ref().map(|t| &t.referenced));
        if let Some(at) = referenced {
            let msg = "TLS settings need `mode: http`; TCP mode relays TLS as bytes";
            return Err(LoadError::at(file, at, msg));
        }
    }
    if let Some(tls) = &raw.upstream_tls {
        let (cert, key) = (&tls.value.client_cert, &tls.value.client_key);
        if cert.is_some() != key.is_some() {
            let msg = "`upstream_tls.client_cert` and `client_key` go together: give both (the \
                       certificate chain and its private key) or neither";
            return Err(LoadError::at(file, &tls.referenced, msg));
        }
    }
    let plain = raw
        .upstream
        .as_ref()
        .filter(|u| !u.value.starts_with("https://"));
    match (&raw.upstream_tls, plain) {
        (Some(tls), Some(upstream)) => Err(LoadError::at(
            file,
            &tls.referenced,
            format!(
                "`upstream_tls` applies to an https:// upstream; `{}` is plain HTTP",
                upstream.value
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks that `upstream` suits `mode`: for HTTP a base URL `http://host[:port]` or
/// `https://host[:port]` (the proxy speaks TLS to the latter; ports 80 and 443 by default),
/// optionally with a path prefix (`http://host:port/api`: the proxy forwards `/v1/x` to
/// `/api/v1/x`) but no query; for TCP `host:port`. The message says what was expected.
pub fn check_upstream(mode: Mode, upstream: &str) -> Result<(), String> {
    let authority = match mode {
        Mode::Http => {
            let rest = upstream
                .strip_prefix("http://")
                .or_else(|| upstream.strip_prefix("https://"))
                .ok_or_else(|| {
                    format!("upstream `{upstream}` must be an http:// or https:// base URL such as http://127.0.0.1:8080")
                })?;
            if rest.contains(['?', '#']) {
                return Err(format!(
                    "upstream `{upstream}` has a query or fragment; give http(s)://host[:port][/path-prefix]"
                ));
            }
            let authority = rest
                .split_once('/')
                .map_or(rest, |(authority, _path)| authority);
            // Without a port, the scheme's: what follows the last `:` outside an IPv6 `[...]`.
            let has_port = authority
                .rsplit_once(':')
                .is_some_and(|(_, port)| !port.contains(']'));
            if !has_port {
                return match authority.is_empty() {
                    true => Err(format!("upstream `{upstream}` has no host")),
                    false => Ok(()),
                };
            }
            authority
        }
        Mode::Tcp => upstream,
    };
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(()),
        _ => Err(format!(
            "upstream `{upstream}` needs a host and a port (e.g. 127.0.0.1:8080)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_upstream_is_http_or_https_with_the_schemes_port_by_default() {
        for ok in [
            "http://127.0.0.1:8080",
            "https://api.example:8443/v1",
            "https://api.example",
            "http://[::1]",
            "https://[::1]:443",
        ] {
            assert_eq!(check_upstream(Mode::Http, ok), Ok(()), "{ok}");
        }
        for bad in [
            "ftp://h:1",
            "https://",
            "https://h:port",
            "http://h:1/?q",
            "h:1",
        ] {
            assert!(check_upstream(Mode::Http, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tls_settings_in_tcp_mode_are_an_error_at_their_line() {
        let text =
            "version: 1\nupstream: a:1\nmode: tcp\nlisten_tls: {cert_file: c, key_file: k}\n";
        let err = ProxyFile::load("p.yaml", text).unwrap_err().to_string();
        assert!(
            err.contains("p.yaml:4:") && err.contains("mode: http"),
            "{err}"
        );
        let text = "version: 1\nupstream: https://a\nupstream_tls: {ca_file: ca.pem}\n";
        let file = ProxyFile::load("p.yaml", text).unwrap();
        let tls = file.upstream_tls.unwrap();
        assert_eq!(tls.ca_file.as_deref(), Some("ca.pem"));
        let text = "version: 1\nupstream: https://a\nupstream_tls: {client_cert: c.pem, client_key: k.pem}\n";
        let tls = ProxyFile::load("p.yaml", text)
            .unwrap()
            .upstream_tls
            .unwrap();
        assert_eq!(
            (tls.client_cert.as_deref(), tls.client_key.as_deref()),
            (Some("c.pem"), Some("k.pem"))
        );
        let text = "version: 1\nupstream: https://a\nupstream_tls: {client_cert: c.pem}\n";
        let err = ProxyFile::load("p.yaml", text).unwrap_err().to_string();
        assert!(
            err.contains("p.yaml:3:") && err.contains("client_key"),
            "{err}"
        );
    }
}
