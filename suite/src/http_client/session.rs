//! A cookie session: the cookies a target set on one client's answers, sent back on its next
//! requests, as a browser or an SDK with a cookie jar does. The jar is reqwest's (RFC 6265:
//! expiry, `Max-Age`, paths); a session is opened at most once, by its first request.

use reqwest::cookie::CookieStore as _;

/// One client's cookies and whether its login ran.
#[derive(Debug, Default)]
pub struct Session {
    jar: reqwest::cookie::Jar,
    /// The login's outcome, once it ran: `Err` says why the session could not be opened.
    opened: tokio::sync::OnceCell<Result<(), String>>,
}

impl Session {
    /// A session with no cookies, not yet opened.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the session once: the first caller runs `login` (which stores what it got with
    /// [`Session::store`]), every other caller waits for it and gets its outcome.
    ///
    /// # Errors
    /// What `login` returned: the session could not be opened.
    pub async fn open<F, Fut>(&self, login: F) -> Result<(), String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        self.opened.get_or_init(login).await.clone()
    }

    /// The `Cookie` header value for a request to `url`, if the jar holds any cookie for it.
    pub fn cookie_header(&self, url: &reqwest::Url) -> Option<String> {
        self.jar
            .cookies(url)
            .and_then(|v| v.to_str().ok().map(str::to_owned))
    }

    /// Keeps the cookies `headers` set (`Set-Cookie`) on an answer from `url`.
    pub fn store(&self, headers: &http::HeaderMap, url: &reqwest::Url) {
        let mut set = headers.get_all(http::header::SET_COOKIE).iter();
        self.jar.set_cookies(&mut set, url);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_set_is_sent_back_and_one_expired_is_not() {
        let session = Session::new();
        let url: reqwest::Url = "http://127.0.0.1:8080/api/login".parse().unwrap();
        let mut headers = http::HeaderMap::new();
        headers.append("set-cookie", "sid=abc; Path=/; HttpOnly".parse().unwrap());
        headers.append("set-cookie", "theme=dark; Path=/".parse().unwrap());
        session.store(&headers, &url);
        let other: reqwest::Url = "http://127.0.0.1:9090/api/machines".parse().unwrap();
        let sent = session
            .cookie_header(&other)
            .expect("cookies for the host, any port");
        assert!(
            sent.contains("sid=abc") && sent.contains("theme=dark"),
            "{sent}"
        );
        let mut gone = http::HeaderMap::new();
        gone.append("set-cookie", "sid=; Path=/; Max-Age=0".parse().unwrap());
        session.store(&gone, &url);
        assert_eq!(session.cookie_header(&other).as_deref(), Some("theme=dark"));
    }
}
