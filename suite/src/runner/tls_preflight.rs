//! The TLS half of the preflight: one handshake with each `https://` base URL before any check,
//! so a target the runner cannot trust (or that will not take its certificate) stops the run with
//! the cause in words, and the report can say how the target was reached.

use super::api_ctx::ApiCtx;
use super::{RunError, Unreachable};
use crate::http_client::Exchange;
use crate::model::TlsReached;

/// Makes one TLS handshake with each `https://` base URL, presenting the first principal's client
/// certificate that there is (a target that demands one is told apart from one that refuses it),
/// and returns what each handshake found.
///
/// # Errors
/// [`RunError::Tls`] when the TLS configuration cannot be built from the profile's files;
/// [`RunError::TargetUnreachable`] with [`Unreachable::Tls`] naming the cause (unknown issuer, name
/// mismatch, expired, certificate required or refused, a plain-HTTP port) when a handshake fails.
pub(crate) async fn handshakes(ctx: &ApiCtx) -> Result<Vec<TlsReached>, RunError> {
    let https: Vec<&String> = ctx
        .profile
        .base_urls
        .value
        .iter()
        .filter(|u| u.starts_with("https://"))
        .collect();
    if https.is_empty() {
        return Ok(Vec::new());
    }
    let identity = ctx
        .profile
        .principals
        .value
        .iter()
        .find_map(|p| ctx.tls.identity(&p.name));
    let config = idemspec_tls::client_config(&ctx.tls.trust, identity).map_err(RunError::Tls)?;
    let mut reached = Vec::with_capacity(https.len());
    for url in https {
        let authority = authority(url);
        let host = authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(host, _)| host);
        let server_name = ctx.tls.trust.server_name.as_deref().unwrap_or(host);
        let server_name = server_name.trim_start_matches('[').trim_end_matches(']');
        let facts = idemspec_tls::probe(&authority, &config, server_name)
            .await
            .map_err(
                |cause| match cause.starts_with(idemspec_tls::CONNECT_FAILED) {
                    // Nothing listens: no TLS cause, the target is not running there.
                    true => RunError::TargetUnreachable {
                        url: url.clone(),
                        reason: Unreachable::Silent(cause),
                    },
                    false => unreachable(url, cause),
                },
            )?;
        reached.push(TlsReached {
            url: url.trim_end_matches('/').to_owned(),
            version: facts.version,
            subject: facts.subject,
            issuer: facts.issuer,
        });
    }
    Ok(reached)
}

/// Where a plain `http://` base URL's preflight got no usable answer (`exchange`) because its
/// port speaks TLS: the answer is a TLS server's refusal of plain HTTP
/// ([`idemspec_tls::explain_plain_answer`]), or nothing came back and a TLS handshake there
/// succeeds. The cause in words, or `None` where the port does not speak TLS.
pub(crate) async fn plain_to_tls(url: &str, exchange: &Exchange) -> Option<RunError> {
    let rest = url.strip_prefix("http://")?;
    if exchange.status.is_some_and(|s| (200..300).contains(&s)) {
        return None;
    }
    let said = match exchange.status {
        Some(_) => idemspec_tls::explain_plain_answer(&exchange.body),
        None => {
            let https = format!("https://{rest}");
            let authority = authority(&https);
            let any = idemspec_tls::TrustOptions {
                insecure_skip_verify: true,
                ..idemspec_tls::TrustOptions::default()
            };
            let config = idemspec_tls::client_config(&any, None).ok()?;
            let host = authority.rsplit_once(':').map_or("localhost", |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let answered = idemspec_tls::probe(&authority, &config, host).await.is_ok();
            answered.then(|| {
                "plain HTTP was sent to a port that speaks TLS: use an https:// URL".to_owned()
            })
        }
    };
    said.map(|cause| unreachable(url, cause))
}

/// The TLS failure of a handshake with `url`.
pub(crate) fn unreachable(url: &str, cause: String) -> RunError {
    RunError::TargetUnreachable {
        url: url.to_owned(),
        reason: Unreachable::Tls(cause),
    }
}

/// `host:port` of an `https://` URL, with the default port 443 where it names none (a URL
/// without a host, which profile validation refuses, as written).
fn authority(url: &str) -> String {
    let https = url.replacen("http://", "https://", 1);
    reqwest::Url::parse(&https)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_else(|| url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::authority;

    #[test]
    fn an_authority_has_a_port_443_by_default() {
        assert_eq!(authority("https://api.internal"), "api.internal:443");
        assert_eq!(
            authority("https://api.internal:8443/v1"),
            "api.internal:8443"
        );
        assert_eq!(authority("https://[::1]/x"), "[::1]:443");
        assert_eq!(authority("https://[::1]:8443"), "[::1]:8443");
        assert_eq!(authority("https://u:p@h:1"), "h:1");
    }
}
