use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::testing::ForwardProxy;
use super::*;

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parses_proxy_urls_as_go_does() {
    let p = Proxy::parse(
        "http://user:p%40ss@proxy.example:3128",
        &headers(&[("X-Tenant", "a,b")]),
    )
    .unwrap();
    assert_eq!(p.scheme(), ProxyScheme::Http);
    assert_eq!(p.authority(), "proxy.example:3128");
    let auth = p.connect_headers[http::header::PROXY_AUTHORIZATION]
        .to_str()
        .unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim_start_matches("Basic "))
        .unwrap();
    assert_eq!(decoded, b"user:p@ss");
    let tenants: Vec<_> = p.connect_headers.get_all("x-tenant").iter().collect();
    assert_eq!(tenants, ["a", "b"]);

    for (url, scheme, authority) in [
        ("http://[::1]", ProxyScheme::Http, "[::1]:80"),
        ("https://proxy", ProxyScheme::Https, "proxy:443"),
        ("socks5://10.0.0.1", ProxyScheme::Socks5, "10.0.0.1:1080"),
        (
            "socks5://u:p@10.0.0.1:9050",
            ProxyScheme::Socks5,
            "10.0.0.1:9050",
        ),
    ] {
        let p = Proxy::parse(url, &BTreeMap::new()).unwrap();
        assert_eq!(
            (p.scheme(), p.authority().as_str()),
            (scheme, authority),
            "{url}"
        );
    }
    let socks = Proxy::parse("socks5://us%3Aer:pw@h:1", &BTreeMap::new()).unwrap();
    assert_eq!(socks.socks_auth, Some(("us:er".into(), "pw".into())));
    assert!(socks.connect_headers.is_empty());

    assert_eq!(
        Proxy::parse("ftp://h:21", &BTreeMap::new())
            .unwrap_err()
            .to_string(),
        "proxy URL \"ftp://h:21\": unsupported scheme \"ftp\", must be http, https, or socks5"
    );
    for bad in ["proxy:3128", "http://", "not a url"] {
        assert!(Proxy::parse(bad, &BTreeMap::new()).is_err(), "{bad}");
    }
    assert!(matches!(
        Proxy::parse("http://h", &headers(&[("bad header", "x")])),
        Err(ProxyError::Header { .. })
    ));
    assert!(matches!(
        Proxy::parse("http://h", &headers(&[("X-Ok", "line\nbreak")])),
        Err(ProxyError::Header { .. })
    ));
    // Credentials never reach Debug output.
    let shown = format!(
        "{:?}",
        Proxy::parse("http://u:secret@h", &BTreeMap::new()).unwrap()
    );
    assert!(!shown.contains("secret"), "{shown}");
}

/// An echo server on 127.0.0.1, known to the proxies as `echo.invalid`.
async fn echo() -> (u16, BTreeMap<String, IpAddr>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = c.read(&mut buf).await {
                    if n == 0 || c.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let hosts = BTreeMap::from([("echo.invalid".to_string(), IpAddr::from([127, 0, 0, 1]))]);
    (port, hosts)
}

async fn round_trip(stream: &mut ProxyStream) {
    stream.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    stream.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
}

#[tokio::test]
async fn http_connect_sends_proxy_header_and_credentials() {
    let (port, hosts) = echo().await;
    let proxy = ForwardProxy::http(hosts).await.unwrap();
    let url = proxy.url().replace("http://", "http://u:p@");
    let p = Proxy::parse(&url, &headers(&[("X-Tenant", "t1,t2")])).unwrap();
    let mut s = connect(Some(&p), "echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    let log = proxy.log();
    assert_eq!(log.connections, 1);
    assert_eq!(log.targets, [format!("echo.invalid:{port}")]);
    let head = &log.heads[0];
    assert!(
        head.starts_with(&format!(
            "CONNECT echo.invalid:{port} HTTP/1.1\r\nHost: echo.invalid:{port}\r\n"
        )),
        "{head}"
    );
    assert!(
        head.contains("proxy-authorization: Basic dTpw\r\n"),
        "{head}"
    );
    assert!(head.contains("x-tenant: t1\r\nx-tenant: t2\r\n"), "{head}");

    // A target the proxy cannot reach: its refusal, with the status line.
    let err = connect(Some(&p), "nowhere.invalid", 1, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "proxy refused CONNECT to nowhere.invalid:1: HTTP/1.1 502 Bad Gateway"
    );
    // No proxy listening.
    let gone = Proxy::parse("http://127.0.0.1:1", &BTreeMap::new()).unwrap();
    let err = connect(Some(&gone), "echo.invalid", port, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("dial proxy 127.0.0.1:1: "),
        "{err}"
    );
}

/// TLS settings trusting `ca`.
fn trusting(ca: &certs::Ca) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    use rustls_pki_types::pem::PemObject;
    for c in rustls_pki_types::CertificateDer::pem_slice_iter(ca.cert_pem().as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn https_proxies_are_verified_with_the_callers_tls_settings() {
    let (port, hosts) = echo().await;
    let ca = certs::Ca::generate().unwrap();
    let served = ca.issue_serving("proxy", &["localhost".into()]).unwrap();
    let proxy = ForwardProxy::https(hosts, &served.cert_pem, &served.key_pem)
        .await
        .unwrap();
    let url = format!("https://localhost:{}", proxy.addr().port());
    let p = Proxy::parse(&url, &headers(&[("X-Tenant", "t1")])).unwrap();
    let trusting = trusting(&ca);
    let mut s = connect(Some(&p), "echo.invalid", port, Some(&trusting))
        .await
        .unwrap();
    assert!(matches!(s, MaybeTls::Tls(_)));
    round_trip(&mut s).await;
    assert!(proxy.log().heads[0].contains("x-tenant: t1\r\n"));

    // A proxy certificate the settings do not trust is refused.
    let other = {
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        TlsConnector::from(Arc::new(config))
    };
    let err = connect(Some(&p), "echo.invalid", port, Some(&other))
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "TLS handshake with proxy localhost:{}",
            proxy.addr().port()
        )),
        "{err}"
    );
    assert!(connect(Some(&p), "echo.invalid", port, None).await.is_err());
}

#[tokio::test]
async fn socks5_resolves_names_at_the_proxy_and_authenticates() {
    let (port, hosts) = echo().await;
    let open = ForwardProxy::socks5(hosts.clone(), None).await.unwrap();
    let p = Proxy::parse(&open.url(), &headers(&[("X-Ignored", "1")])).unwrap();
    let mut s = connect(Some(&p), "echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    let mut s = connect(Some(&p), "127.0.0.1", port, None).await.unwrap();
    round_trip(&mut s).await;
    assert_eq!(
        open.log().targets,
        [format!("echo.invalid:{port}"), format!("127.0.0.1:{port}")]
    );

    let locked = ForwardProxy::socks5(hosts, Some(("alice".into(), "s3cret".into())))
        .await
        .unwrap();
    let url = locked.url().replace("socks5://", "socks5://alice:s3cret@");
    let p = Proxy::parse(&url, &BTreeMap::new()).unwrap();
    let mut s = connect(Some(&p), "echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    let wrong = Proxy::parse(
        &locked.url().replace("socks5://", "socks5://alice:nope@"),
        &BTreeMap::new(),
    )
    .unwrap();
    let err = connect(Some(&wrong), "echo.invalid", port, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("user name/password authentication failed"),
        "{err}"
    );
    let anonymous = Proxy::parse(&locked.url(), &BTreeMap::new()).unwrap();
    let err = connect(Some(&anonymous), "echo.invalid", port, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("no acceptable authentication methods"),
        "{err}"
    );
    let err = connect(Some(&p), "nowhere.invalid", 1, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "SOCKS5 proxy {}: connect to nowhere.invalid:1: host unreachable",
            locked.addr()
        )
    );
}

#[tokio::test]
async fn the_connector_dials_direct_or_through_the_proxy() {
    use tower::ServiceExt;
    let (port, hosts) = echo().await;
    let direct = Connector::new(ProxySource::Direct, None, Some(Duration::from_secs(5)));
    let io = direct
        .clone()
        .oneshot(format!("https://127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    let mut s = io.into_inner();
    round_trip(&mut s).await;
    let proxy = ForwardProxy::socks5(hosts, None).await.unwrap();
    let via = Connector::new(
        Some(Proxy::parse(&proxy.url(), &BTreeMap::new()).unwrap()).into(),
        None,
        Some(Duration::from_secs(5)),
    );
    let io = via
        .oneshot(format!("http://echo.invalid:{port}/path").parse().unwrap())
        .await
        .unwrap();
    let mut s = io.into_inner();
    round_trip(&mut s).await;
    assert_eq!(proxy.log().targets, [format!("echo.invalid:{port}")]);
}

#[test]
fn percent_decoding() {
    for (input, want) in [
        ("a%40b", "a@b"),
        ("%3a%3A", "::"),
        ("100%", "100%"),
        ("%zz", "%zz"),
        ("%4", "%4"),
        ("", ""),
    ] {
        assert_eq!(percent_decode(input), want, "{input}");
    }
}

/// Proxy settings a test changes at will. Each read records how many connections `watched`
/// had accepted by then, and fails while `failing` is set.
#[derive(Clone, Default)]
struct Settings {
    proxy: Arc<std::sync::Mutex<Option<Proxy>>>,
    failing: Arc<std::sync::atomic::AtomicBool>,
    watched: Option<Arc<ForwardProxy>>,
    reads: Arc<std::sync::Mutex<Vec<usize>>>,
}

impl Settings {
    fn set(&self, proxy: Option<Proxy>) {
        *self.proxy.lock().unwrap() = proxy;
    }

    fn reads(&self) -> Vec<usize> {
        self.reads.lock().unwrap().clone()
    }
}

impl ProxySettings for Settings {
    fn current(
        &self,
    ) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Option<Proxy>>> + Send + '_>> {
        Box::pin(async move {
            let accepted = self.watched.as_ref().map_or(0, |p| p.log().connections);
            self.reads.lock().unwrap().push(accepted);
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::other("cluster c not found"));
            }
            Ok(self.proxy.lock().unwrap().clone())
        })
    }
}

#[tokio::test]
async fn a_live_source_sends_the_headers_in_force_when_it_connects() {
    let (port, hosts) = echo().await;
    let proxy = ForwardProxy::http(hosts).await.unwrap();
    let url = proxy.url();
    let tenant = |t: &str| Proxy::parse(&url, &headers(&[("X-Tenant", t)])).unwrap();
    let settings = Settings::default();
    settings.set(Some(tenant("blue")));
    // Built believing the settings have no header (a client built from an old Cluster).
    let source = ProxySource::live(
        settings.clone(),
        Some(Proxy::parse(&url, &BTreeMap::new()).unwrap()),
    );
    let mut s = source.connect("echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    settings.set(Some(tenant("green")));
    let mut s = source.connect("echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    let heads = proxy.log().heads;
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(heads[0].contains("x-tenant: blue\r\n"), "{}", heads[0]);
    assert!(heads[1].contains("x-tenant: green\r\n"), "{}", heads[1]);
    // One read per connection, and the proxy was dialed once each time.
    assert_eq!(settings.reads().len(), 2);
    assert_eq!(proxy.log().connections, 2);

    // Settings that cannot be read fail the connection: nothing is sent with stale ones.
    settings
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let err = source
        .connect("echo.invalid", port, None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "cluster c not found");
    assert_eq!(proxy.log().heads.len(), 2);
}

#[tokio::test]
async fn a_live_source_reads_the_settings_after_the_handshake_with_the_proxy() {
    let (port, hosts) = echo().await;
    let ca = certs::Ca::generate().unwrap();
    let served = ca.issue_serving("proxy", &["localhost".into()]).unwrap();
    let proxy = Arc::new(
        ForwardProxy::https(hosts, &served.cert_pem, &served.key_pem)
            .await
            .unwrap(),
    );
    let url = format!("https://localhost:{}", proxy.addr().port());
    let settings = Settings {
        watched: Some(proxy.clone()),
        ..Settings::default()
    };
    settings.set(Some(
        Proxy::parse(&url, &headers(&[("X-Tenant", "blue")])).unwrap(),
    ));
    let source = ProxySource::live(
        settings.clone(),
        Some(Proxy::parse(&url, &BTreeMap::new()).unwrap()),
    );
    assert!(source.may_use_tls());
    let tls = trusting(&ca);
    let mut s = source
        .connect("echo.invalid", port, Some(&tls))
        .await
        .unwrap();
    round_trip(&mut s).await;
    // The proxy had accepted the connection (its TLS handshake done) when the settings were
    // read: a change made while the handshake ran is still sent.
    assert_eq!(settings.reads(), [1]);
    assert!(proxy.log().heads[0].contains("x-tenant: blue\r\n"));
}

#[tokio::test]
async fn a_live_source_follows_the_proxy_where_the_settings_move_it() {
    let (port, hosts) = echo().await;
    let first = ForwardProxy::http(hosts.clone()).await.unwrap();
    let second = ForwardProxy::socks5(hosts, None).await.unwrap();
    let settings = Settings::default();
    settings.set(Some(Proxy::parse(&second.url(), &BTreeMap::new()).unwrap()));
    let source = ProxySource::live(
        settings.clone(),
        Some(Proxy::parse(&first.url(), &BTreeMap::new()).unwrap()),
    );
    let mut s = source.connect("echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    // The first proxy was dialed, as expected, but asked nothing once the settings named
    // the second.
    assert!(first.log().targets.is_empty(), "{:?}", first.log());
    assert_eq!(second.log().targets, [format!("echo.invalid:{port}")]);
    // The next connection goes to the second proxy straight away.
    let mut s = source.connect("echo.invalid", port, None).await.unwrap();
    round_trip(&mut s).await;
    assert_eq!(second.log().connections, 2);
    assert_eq!(settings.reads().len(), 3);
    // No proxy any more: straight to the target.
    settings.set(None);
    let mut s = source.connect("127.0.0.1", port, None).await.unwrap();
    round_trip(&mut s).await;
    assert_eq!(second.log().targets.len(), 2);
}
