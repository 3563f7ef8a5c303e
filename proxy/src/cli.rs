//! The standalone proxy's command line, mounted by the `idemspec` binary as `idemspec proxy`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use idemspec_scenarios::rules::{check_upstream, ListenTlsFile, Mode, ProxyFile, UpstreamTlsFile};
use idemspec_tls::LoopbackServer;

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
    /// throwaway CA made now; the CA's certificate is written to `ca.pem` in a directory of this
    /// process's under the temporary directory, removed when the proxy stops, and its path is
    /// printed (`idemspec-proxy CA certificate: PATH`), for clients to trust.
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
    /// Show this PEM certificate chain (leaf first) to an `https://` upstream that asks for a
    /// client certificate (mutual TLS); with `--tls-client-key`.
    #[arg(long, value_name = "FILE", requires = "tls_client_key")]
    pub tls_client_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-client-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_client_cert")]
    pub tls_client_key: Option<PathBuf>,
}

/// A proxy configuration from the command line, and what must live as long as the proxy runs.
#[derive(Debug)]
pub struct Configured {
    /// What to [`start`].
    pub config: ProxyConfig,
    /// `--tls-self-signed`'s server and CA certificate (`ca.pem` in an `idemspec-proxy-XXXXXX`
    /// directory), if the flag was given; the directory is removed when this is dropped.
    pub self_signed_ca: Option<LoopbackServer>,
}

impl TlsArgs {
    /// The upstream flags given, as spelled on the command line.
    fn upstream_flags(&self) -> Vec<&'static str> {
        [
            (self.tls_ca_file.is_some(), "--tls-ca-file"),
            (self.tls_server_name.is_some(), "--tls-server-name"),
            (self.tls_insecure_skip_verify, "--tls-insecure-skip-verify"),
            (self.tls_client_cert.is_some(), "--tls-client-cert"),
            (self.tls_client_key.is_some(), "--tls-client-key"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// The TLS settings of an `https://` upstream from the flags and the file's `upstream_tls`
    /// (its paths relative to `dir`), flags winning; `None` for another upstream.
    ///
    /// Errors: an upstream flag given for an upstream that is not `https://`.
    fn upstream(
        &self,
        upstream: &str,
        file: Option<&UpstreamTlsFile>,
        dir: &Path,
    ) -> anyhow::Result<Option<crate::UpstreamTls>> {
        if !upstream.starts_with("https://") {
            let flags = self.upstream_flags();
            if !flags.is_empty() {
                anyhow::bail!(
                    "{} appl{} to an https:// upstream only; `{upstream}` is not one: drop {}, \
                     or give an https:// upstream",
                    flags.join(", "),
                    if flags.len() == 1 { "ies" } else { "y" },
                    if flags.len() == 1 { "it" } else { "them" },
                );
            }
            return Ok(None);
        }
        let file = file.cloned().unwrap_or_default();
        let trust = idemspec_tls::TrustOptions {
            ca_file: self
                .tls_ca_file
                .clone()
                .or_else(|| file.ca_file.map(|f| dir.join(f))),
            server_name: self.tls_server_name.clone().or(file.server_name),
            insecure_skip_verify: self.tls_insecure_skip_verify || file.insecure_skip_verify,
            ..Default::default()
        };
        let client_identity = match (&self.tls_client_cert, &self.tls_client_key) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            _ => file
                .client_cert
                .zip(file.client_key)
                .map(|(cert, key)| (dir.join(cert), dir.join(key))),
        }
        .map(|(cert_file, key_file)| idemspec_tls::IdentityFiles {
            cert_file,
            key_file,
        });
        Ok(Some(crate::UpstreamTls {
            trust,
            identities: Default::default(),
            client_identity,
            advice: idemspec_tls::Advice::ProxyFlags,
            configs: Default::default(),
        }))
    }

    /// The server config of the proxy's port: from `--tls-cert`/`--tls-key`, a throwaway CA's
    /// certificate (a [`LoopbackServer`]), or the file's `listen_tls` (its paths
    /// relative to `dir`); `None` for plain HTTP.
    fn listen(
        &self,
        file: Option<&ListenTlsFile>,
        dir: &Path,
    ) -> anyhow::Result<(ServerTls, Option<LoopbackServer>)> {
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
            return Ok((Some(config), None));
        }
        if !self.tls_self_signed {
            return Ok((None, None));
        }
        let served =
            LoopbackServer::new("idemspec-proxy-").context("failed to serve --tls-self-signed")?;
        Ok((Some(served.server_config()), Some(served)))
    }
}

/// The server config of the proxy's port, `None` for plain HTTP.
type ServerTls = Option<std::sync::Arc<idemspec_tls::rustls::ServerConfig>>;

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
            wait_for_stop().await?;
            server_shutdown(toxiproxy).await;
            return Ok(());
        }
    }
    let Configured {
        config,
        self_signed_ca,
    } = config(&args)?;
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
    if let Some(ca) = &self_signed_ca {
        writeln!(
            out,
            "idemspec-proxy CA certificate: {}",
            ca.ca_file().display()
        )?;
    }
    if let Some(control) = handle.control_addr() {
        writeln!(out, "idemspec-proxy control on http://{control}")?;
    }
    out.flush()?;
    drop(out);
    wait_for_stop().await?;
    eprintln!("idemspec-proxy: shutting down, letting exchanges in progress finish; Ctrl-C again to stop now");
    tokio::select! {
        () = async { handle.shutdown().await; server_shutdown(toxiproxy).await } => {}
        _ = wait_for_stop() => {}
    }
    drop(self_signed_ca);
    Ok(())
}

/// Waits for Ctrl-C or, on Unix, SIGTERM (what a CI job's cancel, `docker stop` and systemd
/// send), so either stops the proxy the same way: exchanges finish, a `--tls-self-signed` CA's
/// directory is removed.
async fn wait_for_stop() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("failed to wait for SIGTERM")?;
        tokio::select! {
            stopped = tokio::signal::ctrl_c() => stopped.context("failed to wait for Ctrl-C"),
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
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
/// Errors: an unreadable or invalid scenario file, no upstream, a bad `listen` in the file,
/// upstream TLS flags for an upstream that is not `https://`, TLS files that cannot be used.
pub fn config(args: &ProxyArgs) -> anyhow::Result<Configured> {
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
    let tls_of = file
        .as_ref()
        .map(|f| (f.upstream_tls.as_ref(), f.listen_tls.as_ref()));
    let (upstream_of, listen_of) = tls_of.unwrap_or_default();
    let upstream_tls = args.tls.upstream(&upstream, upstream_of, dir)?;
    let (listen_tls, self_signed_ca) = args.tls.listen(listen_of, dir)?;
    let (rules, tcp_rules) = file.map(|f| (f.rules, f.tcp_rules)).unwrap_or_default();
    if mode == Mode::Tcp && listen_tls.is_some() {
        anyhow::bail!("TLS on the proxy's port (--tls-cert, --tls-self-signed) needs HTTP mode; in TCP mode TLS passes through as bytes");
    }
    let config = ProxyConfig {
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
    };
    Ok(Configured {
        config,
        self_signed_ca,
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
        let from_file = config(&parse(&["--scenario", path.to_str().unwrap()]))
            .unwrap()
            .config;
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
        .unwrap()
        .config;
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
        .unwrap()
        .config;
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
        assert_eq!(config_of(&flags).io_threads, 0);
        assert_eq!(
            from_file.header_read_timeout,
            Some(ProxyConfig::HEADER_READ_TIMEOUT),
            "10 s by default"
        );
        let flags = ["--upstream", "http://a:1", "--header-read-timeout", "250ms"];
        assert_eq!(
            config_of(&flags).header_read_timeout,
            Some(std::time::Duration::from_millis(250))
        );
        let flags = ["--upstream", "http://a:1", "--header-read-timeout", "0s"];
        let off = config_of(&flags).header_read_timeout;
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
        let config = config_of(&["--scenario", file, "--upstream", &url]);
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
        let plain = plain.upstream_tls.expect("an https upstream's settings");
        assert_eq!(
            plain.trust,
            idemspec_tls::TrustOptions::default(),
            "the platform's roots, by default"
        );
        assert_eq!(plain.advice, idemspec_tls::Advice::ProxyFlags);
        let served = config(&parse(&["--upstream", "http://a:1", "--tls-self-signed"])).unwrap();
        assert!(served.config.listen_tls.is_some());
        let ca = served.self_signed_ca.expect("a CA certificate written");
        let pem = std::fs::read_to_string(ca.ca_file()).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let dir = ca.ca_file().parent().unwrap().to_path_buf();
        drop(ca);
        assert!(!dir.exists(), "the CA's directory goes with the proxy");
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

    /// The upstream's trust and client certificate flags name an https:// upstream's settings:
    /// given for a plain one, they are refused, each named, instead of silently unused.
    #[test]
    fn upstream_tls_flags_are_refused_for_a_plain_upstream() {
        let given: [&[&str]; 4] = [
            &["--tls-ca-file", "ca.pem"],
            &["--tls-server-name", "api.internal"],
            &["--tls-insecure-skip-verify"],
            &["--tls-client-cert", "c.pem", "--tls-client-key", "k.pem"],
        ];
        for flags in given {
            for upstream in ["http://a:1", "http://a:1/api"] {
                let argv = [&["--upstream", upstream][..], flags].concat();
                let err = format!("{:#}", config(&parse(&argv)).unwrap_err());
                assert!(
                    err.contains(flags[0]) && err.contains("to an https:// upstream only"),
                    "{err}"
                );
            }
            let argv = [&["--upstream", "https://a"][..], flags].concat();
            assert!(config(&parse(&argv)).is_ok(), "{flags:?} for https://");
        }
        let both = [
            "--upstream",
            "http://a:1",
            "--tls-ca-file",
            "c",
            "--tls-server-name",
            "n",
        ];
        let err = format!("{:#}", config(&parse(&both)).unwrap_err());
        assert!(
            err.contains("--tls-ca-file, --tls-server-name apply"),
            "{err}"
        );
    }

    /// `--tls-client-cert`/`--tls-client-key` and the file's `upstream_tls.client_cert` and
    /// `client_key` (relative to it) set the certificate shown when no principal picks one.
    #[test]
    fn the_client_certificate_comes_from_the_flags_or_the_file() {
        let flags = [
            "--upstream",
            "https://a",
            "--tls-client-cert",
            "/pki/c.pem",
            "--tls-client-key",
            "/pki/k.pem",
        ];
        let shown = config_of(&flags).upstream_tls.unwrap().client_identity;
        let shown = shown.expect("a client certificate");
        assert_eq!(shown.cert_file, PathBuf::from("/pki/c.pem"));
        assert_eq!(shown.key_file, PathBuf::from("/pki/k.pem"));
        assert!(Cli::try_parse_from(["x", "--tls-client-cert", "c"]).is_err());
        let path = scenario_file(
            "mtls.yaml",
            "version: 1\nupstream: https://a\nupstream_tls: {client_cert: c.pem, client_key: k.pem}\n",
        );
        let from_file = config_of(&["--scenario", path.to_str().unwrap()]);
        let shown = from_file.upstream_tls.unwrap().client_identity.unwrap();
        assert_eq!(shown.cert_file, path.parent().unwrap().join("c.pem"));
        std::fs::remove_file(path).unwrap();
    }

    fn config_of(flags: &[&str]) -> ProxyConfig {
        config(&parse(flags)).unwrap().config
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
