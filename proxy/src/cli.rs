//! The standalone proxy's command line, mounted by the `idemspec` binary as `idemspec proxy`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use idemspec_scenarios::rules::{check_upstream, ListenTlsFile, Mode, ProxyFile, UpstreamTlsFile};

use crate::toxiproxy::ToxiproxyServer;
use crate::{start, ProxyConfig};

/// `idemspec proxy`: run the fault-injecting proxy until Ctrl-C.
///
/// Flags override the scenario file's `listen`, `upstream` and `mode`: a flag given wins over
/// the file's field, and a field the file leaves out (`upstream:` among them) is the flag's.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProxyArgs {
    /// Address to accept downstream connections on (default: the file's `listen`, else
    /// 127.0.0.1:0, a free port; the bound address is printed).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Upstream: `http://host:port[/prefix]` or `https://host[:port][/prefix]` (reached over
    /// TLS, see `--tls-ca-file`) in HTTP mode, `host:port` in TCP mode. Wins over the --scenario
    /// file's `upstream:`, which may then be left out; one of the two is needed.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// A proxy file (`version: 1`, `listen`, `upstream`, `mode`, `rules` / `tcp_rules`).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Address for the control API (rules and events as JSON); none without it.
    #[arg(long, value_name = "ADDR")]
    pub control: Option<SocketAddr>,
    /// `http` (rules per request) or `tcp` (byte relay, rules per connection).
    #[arg(long, value_enum)]
    pub mode: Option<CliMode>,
    /// Threads serving connections, each with its own event loop; a connection stays on one
    /// (as haproxy's `nbthread`), the Toxiproxy proxies' too. Default: one per CPU. 0 serves them on the
    /// main runtime.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How long a client may take to send a request head (`10s`, `500ms`); a slower head gets
    /// 408 and the connection closes. `0` turns the limit off. Default 10s.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Option<std::time::Duration>,
    /// Serve Toxiproxy's REST API on ADDR (Toxiproxy listens on 127.0.0.1:8474): proxies and
    /// toxics per TCP connection, driven by Toxiproxy's own clients. Without `--upstream` or
    /// `--scenario` only this API runs. See docs/toxiproxy.md.
    #[arg(long, value_name = "ADDR")]
    pub toxiproxy_api: Option<SocketAddr>,
    /// The request header that carries the idempotency key: recorded as each event's
    /// `idempotency_key` and compared with a rule's `match.idempotency_key` (`PayPal-Request-Id`,
    /// say). Default `Idempotency-Key`.
    #[arg(long, value_name = "NAME", value_parser = parse_header_name)]
    pub key_header: Option<http::HeaderName>,
    /// TLS on the proxy's port and to an `https://` upstream.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// TLS on either side of `idemspec proxy` (HTTP mode).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Serve TLS on the proxy's port with this PEM certificate chain (leaf first); with
    /// `--tls-key`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve TLS on the proxy's port with a certificate for `localhost` and `127.0.0.1` from a
    /// throwaway CA made now; the CA's certificate is written to a file whose path is printed
    /// (`idemspec-proxy CA certificate: PATH`), for clients to trust.
    #[arg(long)]
    pub tls_self_signed: bool,
    /// Trust the CA certificates of this PEM file for an `https://` upstream, besides the
    /// platform's roots.
    #[arg(long, value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// The name an `https://` upstream's certificate must carry (and SNI), instead of the
    /// upstream URL's host.
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Accept any certificate from an `https://` upstream: no chain, name or date check. For a
    /// test endpoint only; a warning says so at start.
    #[arg(long)]
    pub tls_insecure_skip_verify: bool,
}

impl TlsArgs {
    /// The upstream's TLS settings, when a flag or the file's `upstream_tls` (its paths relative
    /// to `dir`) set one; flags win.
    fn upstream(&self, file: Option<&UpstreamTlsFile>, dir: &Path) -> Option<crate::UpstreamTls> {
        let file = file.cloned().unwrap_or_default();
        let trust = idemspec_tls::TrustOptions {
            ca_file: self
                .tls_ca_file
                .clone()
                .or_else(|| file.ca_file.map(|f| dir.join(f))),
            server_name: self.tls_server_name.clone().or(file.server_name),
            insecure_skip_verify: self.tls_insecure_skip_verify || file.insecure_skip_verify,
        };
        (trust != idemspec_tls::TrustOptions::default()).then(|| crate::UpstreamTls {
            trust,
            identities: Default::default(),
        })
    }

    /// The server config of the proxy's port: from `--tls-cert`/`--tls-key`, a throwaway CA's
    /// certificate written to [`self_signed_ca_path`], or the file's `listen_tls` (its paths
    /// relative to `dir`); `None` for plain HTTP.
    fn listen(
        &self,
        file: Option<&ListenTlsFile>,
        dir: &Path,
    ) -> anyhow::Result<Option<std::sync::Arc<idemspec_tls::rustls::ServerConfig>>> {
        let from_file = file
            .filter(|_| !self.tls_self_signed)
            .map(|f| (dir.join(&f.cert_file), dir.join(&f.key_file)));
        let files = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            _ => from_file,
        };
        if let Some((cert, key)) = files {
            let config = idemspec_tls::server_config(&cert, &key, None, false)
                .context("failed to serve TLS on the proxy's port")?;
            return Ok(Some(config));
        }
        if !self.tls_self_signed {
            return Ok(None);
        }
        let ca = idemspec_tls::ThrowawayCa::new()?;
        let (cert, key) = ca.server_cert(&["localhost", "127.0.0.1"])?;
        let path = self_signed_ca_path();
        std::fs::write(&path, ca.ca_pem())
            .with_context(|| format!("failed to write {}", path.display()))?;
        Ok(Some(idemspec_tls::server_config_pem(
            &cert, &key, None, false,
        )?))
    }
}

/// Where `--tls-self-signed` writes its CA's certificate: `idemspec-proxy-PID-ca.pem` in the
/// temporary directory.
pub fn self_signed_ca_path() -> PathBuf {
    std::env::temp_dir().join(format!("idemspec-proxy-{}-ca.pem", std::process::id()))
}

/// A `--key-header` value: an HTTP header name (RFC 9110 §5.1 token), any case.
fn parse_header_name(text: &str) -> Result<http::HeaderName, String> {
    http::HeaderName::from_bytes(text.as_bytes()).map_err(|_| {
        format!("`{text}` is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
    })
}

/// The proxy mode as a command-line value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CliMode {
    /// HTTP/1.1 reverse proxy.
    Http,
    /// TCP byte relay.
    Tcp,
}

/// Runs the proxy until Ctrl-C. Prints `idemspec-proxy listening on http://ADDR` (`tcp://` in TCP
/// mode) and, with `--control`, `idemspec-proxy control on http://ADDR`, one line each, on stdout;
/// with `--toxiproxy-api`, first `idemspec-proxy toxiproxy API on http://ADDR`.
///
/// Errors: an unreadable or invalid scenario file (with file, line and column), no upstream,
/// an address that cannot be bound.
pub async fn run(args: ProxyArgs) -> anyhow::Result<()> {
    let toxiproxy = match args.toxiproxy_api {
        Some(addr) => Some(
            ToxiproxyServer::start_with_threads(addr, io_threads(&args))
                .await
                .with_context(|| format!("failed to serve the Toxiproxy API on {addr}"))?,
        ),
        None => None,
    };
    if let Some(server) = &toxiproxy {
        println!("idemspec-proxy toxiproxy API on http://{}", server.addr());
        if args.upstream.is_none() && args.scenario.is_none() {
            wait_for_ctrl_c().await?;
            server_shutdown(toxiproxy).await;
            return Ok(());
        }
    }
    let config = config(&args)?;
    let mode = config.mode;
    let scheme = match (mode, &config.listen_tls) {
        (Mode::Tcp, _) => "tcp",
        (Mode::Http, Some(_)) => "https",
        (Mode::Http, None) => "http",
    };
    // The flag or the proxy file's `upstream_tls.insecure_skip_verify`: loud either way.
    if config
        .upstream_tls
        .as_ref()
        .is_some_and(|t| t.trust.insecure_skip_verify)
    {
        eprintln!("idemspec-proxy: WARNING: insecure_skip_verify (--tls-insecure-skip-verify or the proxy file's upstream_tls): the upstream's certificate is not checked at all");
    }
    let handle = start(config)
        .await
        .context("failed to start idemspec-proxy")?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "idemspec-proxy listening on {scheme}://{}",
        handle.addr()
    )?;
    if args.tls.tls_self_signed {
        let ca = self_signed_ca_path();
        writeln!(out, "idemspec-proxy CA certificate: {}", ca.display())?;
    }
    if let Some(control) = handle.control_addr() {
        writeln!(out, "idemspec-proxy control on http://{control}")?;
    }
    out.flush()?;
    drop(out);
    wait_for_ctrl_c().await?;
    eprintln!("idemspec-proxy: shutting down, letting exchanges in progress finish; Ctrl-C again to stop now");
    tokio::select! {
        () = async { handle.shutdown().await; server_shutdown(toxiproxy).await } => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}

async fn wait_for_ctrl_c() -> anyhow::Result<()> {
    tokio::signal::ctrl_c()
        .await
        .context("failed to wait for Ctrl-C")
}

async fn server_shutdown(server: Option<ToxiproxyServer>) {
    if let Some(server) = server {
        server.shutdown().await;
    }
}

/// `--threads`, by default one per CPU.
fn io_threads(args: &ProxyArgs) -> usize {
    args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    })
}

/// The proxy configuration the flags and the scenario file describe; flags win over the file.
///
/// Errors: an unreadable or invalid scenario file, no upstream, a bad `listen` in the file.
pub fn config(args: &ProxyArgs) -> anyhow::Result<ProxyConfig> {
    let file = match &args.scenario {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("failed to read {}", path.display()))?;
            Some(ProxyFile::load(&path.display().to_string(), &text)?)
        }
        None => None,
    };
    let mode = match args.mode {
        Some(CliMode::Http) => Mode::Http,
        Some(CliMode::Tcp) => Mode::Tcp,
        None => file.as_ref().map(|f| f.mode).unwrap_or_default(),
    };
    let listen = match (args.listen, file.as_ref().and_then(|f| f.listen.as_deref())) {
        (Some(addr), _) => addr,
        (None, Some(text)) => text
            .parse()
            .with_context(|| format!("listen address `{text}` is not ip:port"))?,
        (None, None) => ProxyConfig::default().listen,
    };
    let upstream = match (
        &args.upstream,
        file.as_ref().and_then(|f| f.upstream.clone()),
    ) {
        (Some(flag), _) => {
            check_upstream(mode, flag).map_err(|m| anyhow::anyhow!("--upstream: {m}"))?;
            flag.clone()
        }
        (None, Some(from_file)) => from_file,
        (None, None) => {
            anyhow::bail!("no upstream: pass --upstream or give `upstream:` in the --scenario file")
        }
    };
    let dir = args
        .scenario
        .as_deref()
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    let upstream_tls = args
        .tls
        .upstream(file.as_ref().and_then(|f| f.upstream_tls.as_ref()), dir);
    let listen_tls = args
        .tls
        .listen(file.as_ref().and_then(|f| f.listen_tls.as_ref()), dir)?;
    let (rules, tcp_rules) = file.map(|f| (f.rules, f.tcp_rules)).unwrap_or_default();
    if mode == Mode::Tcp && listen_tls.is_some() {
        anyhow::bail!("TLS on the proxy's port (--tls-cert, --tls-self-signed) needs HTTP mode; in TCP mode TLS passes through as bytes");
    }
    Ok(ProxyConfig {
        listen,
        upstream,
        upstream_tls,
        listen_tls,
        mode,
        rules,
        tcp_rules,
        control: args.control,
        header_read_timeout: Some(
            args.header_read_timeout
                .unwrap_or(ProxyConfig::HEADER_READ_TIMEOUT),
        ),
        io_threads: io_threads(args),
        key_at: idemspec_scenarios::profile::KeyAt::Header(
            args.key_header
                .clone()
                .unwrap_or(crate::http::IDEMPOTENCY_KEY)
                .as_str()
                .to_owned(),
        ),
        ..ProxyConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ProxyArgs,
    }

    fn parse(argv: &[&str]) -> ProxyArgs {
        Cli::try_parse_from(std::iter::once("idemspec-proxy").chain(argv.iter().copied()))
            .expect("valid flags")
            .args
    }

    fn scenario_file(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("idemspec-proxy-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("temp file");
        path
    }

    #[test]
    fn flags_override_the_file() {
        let path = scenario_file(
            "a.yaml",
            "version: 1\nlisten: 127.0.0.1:9001\nupstream: http://127.0.0.1:9002\nrules:\n  - name: r\n    fault: refuse\n",
        );
        let from_file = config(&parse(&["--scenario", path.to_str().unwrap()])).unwrap();
        assert_eq!(from_file.listen.port(), 9001);
        assert_eq!(from_file.upstream, "http://127.0.0.1:9002");
        assert_eq!(from_file.rules.len(), 1);
        let overridden = config(&parse(&[
            "--scenario",
            path.to_str().unwrap(),
            "--listen",
            "127.0.0.1:9003",
            "--upstream",
            "http://127.0.0.1:9004",
            "--control",
            "127.0.0.1:9005",
        ]))
        .unwrap();
        let header = |c: &ProxyConfig| match &c.key_at {
            idemspec_scenarios::profile::KeyAt::Header(name) => name.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(header(&from_file), "idempotency-key");
        let keyed = config(&parse(&[
            "--scenario",
            path.to_str().unwrap(),
            "--key-header",
            "PayPal-Request-Id",
        ]))
        .unwrap();
        assert_eq!(header(&keyed), "paypal-request-id");
        assert!(Cli::try_parse_from(["idemspec-proxy", "--key-header", "bad header"]).is_err());
        assert_eq!(overridden.listen.port(), 9003);
        assert_eq!(overridden.upstream, "http://127.0.0.1:9004");
        assert_eq!(overridden.control.map(|c| c.port()), Some(9005));
        assert_eq!(overridden.rules.len(), 1, "rules still come from the file");
        assert!(
            from_file.io_threads >= 1,
            "one I/O thread per CPU by default"
        );
        let flags = ["--upstream", "http://a:1", "--threads", "0"];
        assert_eq!(config(&parse(&flags)).unwrap().io_threads, 0);
        assert_eq!(
            from_file.header_read_timeout,
            Some(ProxyConfig::HEADER_READ_TIMEOUT),
            "10 s by default"
        );
        let flags = ["--upstream", "http://a:1", "--header-read-timeout", "250ms"];
        assert_eq!(
            config(&parse(&flags)).unwrap().header_read_timeout,
            Some(std::time::Duration::from_millis(250))
        );
        let flags = ["--upstream", "http://a:1", "--header-read-timeout", "0s"];
        let off = config(&parse(&flags)).unwrap().header_read_timeout;
        assert!(off.is_some_and(|t| t.is_zero()), "0 is passed on: no limit");
        assert!(Cli::try_parse_from(["x", "--header-read-timeout", "10"]).is_err());
        let toxi = parse(&["--toxiproxy-api", "127.0.0.1:8474"]).toxiproxy_api;
        assert_eq!(toxi.map(|a| a.port()), Some(8474));
        assert!(Cli::try_parse_from(["x", "--toxiproxy-api", "8474"]).is_err());
        std::fs::remove_file(path).unwrap();
    }

    /// A file without `upstream:` takes `--upstream`'s, and the proxy it describes forwards
    /// there; without either, the error names both ways to give one.
    #[tokio::test]
    async fn a_file_without_upstream_takes_the_flags() {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nup";
            let _ = s.write_all(answer).await;
        });
        let path = scenario_file(
            "no-upstream.yaml",
            "version: 1\nrules:\n  - name: never\n    match: {path: /never}\n    fault: refuse\n",
        );
        let file = path.to_str().unwrap();
        let err = config(&parse(&["--scenario", file])).unwrap_err();
        assert!(err.to_string().contains("--upstream"), "{err:#}");
        let err = config(&parse(&["--scenario", file, "--upstream", "a:1"])).unwrap_err();
        assert!(
            err.to_string().contains("--upstream: upstream `a:1`"),
            "{err:#}"
        );
        let url = format!("http://{at}");
        let config = config(&parse(&["--scenario", file, "--upstream", &url])).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            (config.upstream.as_str(), config.rules.len()),
            (url.as_str(), 1)
        );
        let proxy = start(config).await.expect("the proxy starts");
        let got = reqwest::get(format!("http://{}/v1/x", proxy.addr()))
            .await
            .expect("an answer through the proxy");
        assert_eq!(got.text().await.unwrap(), "up", "forwarded to --upstream");
        proxy.shutdown().await;
    }

    #[test]
    fn tls_flags_set_both_sides() {
        let flags = [
            "--upstream",
            "https://api.example",
            "--tls-ca-file",
            "/etc/ca.pem",
            "--tls-server-name",
            "api.internal",
        ];
        let given = config_of(&flags);
        let trust = given.upstream_tls.expect("upstream TLS").trust;
        assert_eq!(
            trust.ca_file.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        assert_eq!(trust.server_name.as_deref(), Some("api.internal"));
        assert!(!trust.insecure_skip_verify && given.listen_tls.is_none());
        let plain = config_of(&["--upstream", "https://api.example"]);
        assert!(
            plain.upstream_tls.is_none(),
            "the platform's roots, by default"
        );
        let served = config_of(&["--upstream", "http://a:1", "--tls-self-signed"]);
        assert!(served.listen_tls.is_some());
        let pem = std::fs::read_to_string(self_signed_ca_path()).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(
            Cli::try_parse_from(["x", "--tls-cert", "c.pem"]).is_err(),
            "a key too"
        );
        let both = [
            "x",
            "--tls-cert",
            "c",
            "--tls-key",
            "k",
            "--tls-self-signed",
        ];
        assert!(Cli::try_parse_from(both).is_err());
        let tcp = ["--upstream", "a:1", "--mode", "tcp", "--tls-self-signed"];
        assert!(config(&parse(&tcp)).is_err());
    }

    #[test]
    fn the_files_tls_settings_are_relative_to_it_and_flags_win() {
        let path = scenario_file(
            "tls.yaml",
            "version: 1\nupstream: https://api.example\nupstream_tls: {ca_file: ca.pem, server_name: api.internal}\nlisten_tls: {cert_file: c.pem, key_file: k.pem}\n",
        );
        let dir = path.parent().unwrap();
        let file = ["--scenario", path.to_str().unwrap(), "--tls-self-signed"];
        let from_file = config_of(&file);
        let trust = from_file.upstream_tls.unwrap().trust;
        assert_eq!(trust.ca_file, Some(dir.join("ca.pem")));
        assert_eq!(trust.server_name.as_deref(), Some("api.internal"));
        let flags = [&file[..], &["--tls-server-name", "other"]].concat();
        let trust = config_of(&flags).upstream_tls.unwrap().trust;
        assert_eq!(trust.server_name.as_deref(), Some("other"));
        let err = config(&parse(&file[..2])).unwrap_err();
        assert!(
            format!("{err:#}").contains(&dir.join("c.pem").display().to_string()),
            "{err:#}"
        );
        std::fs::remove_file(path).unwrap();
        let plain = scenario_file(
            "plain-tls.yaml",
            "version: 1\nupstream: http://a:1\nupstream_tls: {ca_file: ca.pem}\n",
        );
        let err = format!(
            "{:#}",
            config(&parse(&["--scenario", plain.to_str().unwrap()])).unwrap_err()
        );
        assert!(
            err.contains("plain-tls.yaml:3:") && err.contains("https://"),
            "{err}"
        );
        std::fs::remove_file(plain).unwrap();
    }

    fn config_of(flags: &[&str]) -> ProxyConfig {
        config(&parse(flags)).unwrap()
    }

    #[test]
    fn errors_name_the_file_and_what_is_missing() {
        let err = config(&parse(&[])).unwrap_err();
        assert!(err.to_string().contains("--upstream"), "{err:#}");
        let path = scenario_file("bad.yaml", "version: 1\nupstream: http://a:1\nrules:\n  - name: r\n    match: {nth: 0}\n    fault: refuse\n");
        let err = config(&parse(&["--scenario", path.to_str().unwrap()])).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("bad.yaml:5:"), "{text}");
        std::fs::remove_file(path).unwrap();
        let err = config(&parse(&["--scenario", "/nonexistent/p.yaml"])).unwrap_err();
        assert!(
            format!("{err:#}").contains("/nonexistent/p.yaml"),
            "{err:#}"
        );
        assert!(Cli::try_parse_from(["x", "--mode", "udp"]).is_err());
    }
}
