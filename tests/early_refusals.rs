//! End-to-end: an answer sent before the request body was read — 413 past the body limit,
//! 401 for credentials that do not authenticate, 429 past the in-flight limit — reaches a
//! client that writes its whole request before it reads (as Python's http.client does), every
//! time: over HTTP/1.1 the server half-closes and drains what the client still sends instead
//! of resetting the connection under it; over HTTP/2 the answer is followed by
//! RST_STREAM(NO_ERROR), as kube-apiserver (Go's net/http) does.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{DEADLINE, Server, wait_for};

/// A write past the 3 MiB body limit, the size of the ConfigMaps that lost their 413.
const OVERSIZED: usize = 3 * 1024 * 1024 + 512 * 1024;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// How long one exchange may take before the test fails (a server that stops reading
/// without closing would leave the client blocked in its write).
const EXCHANGE_DEADLINE: Duration = Duration::from_secs(20);

/// A ConfigMap whose JSON is `size` bytes long.
fn configmap_of_size(name: &str, size: usize) -> Vec<u8> {
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"blob": ""}});
    let overhead = serde_json::to_vec(&empty).expect("json").len();
    let mut cm = empty;
    cm["data"]["blob"] = Value::String("x".repeat(size.saturating_sub(overhead)));
    let body = serde_json::to_vec(&cm).expect("json");
    assert_eq!(body.len(), size.max(overhead));
    body
}

/// The client side of TLS for `s`, with ALPN `protocol`, presenting `identity` if given.
fn tls_client(
    s: &Server,
    identity: Option<&certs::IssuedCert>,
    protocol: &[u8],
) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(support::pem_to_der(&s.ca_pem())))
        .expect("CA");
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some(id) => {
            let chain = CertificateDer::pem_slice_iter(id.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .expect("cert");
            let key = PrivateKeyDer::from_pem_slice(id.key_pem.as_bytes()).expect("key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client auth")
        }
    };
    config.alpn_protocols = vec![protocol.to_vec()];
    Arc::new(config)
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// An HTTP/1.1 connection to `s` over TLS, whose reads and writes fail past the exchange's
/// deadline.
fn connect_h1(s: &Server, identity: Option<&certs::IssuedCert>) -> Tls {
    let addr = s.url.trim_start_matches("https://");
    let sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(EXCHANGE_DEADLINE))
        .expect("read timeout");
    sock.set_write_timeout(Some(EXCHANGE_DEADLINE))
        .expect("write timeout");
    let conn = rustls::ClientConnection::new(
        tls_client(s, identity, b"http/1.1"),
        "127.0.0.1".try_into().expect("server name"),
    )
    .expect("TLS client");
    rustls::StreamOwned::new(conn, sock)
}

/// The head of a POST of `len` body bytes to `path`, with `extra` header lines.
fn post_head(s: &Server, path: &str, len: usize, extra: &[&str]) -> String {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len}\r\n",
        s.url.trim_start_matches("https://")
    );
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// One HTTP/1.1 response.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    /// The body as a metav1.Status.
    fn status_object(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "a Status body, not {e}: {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Reads one response (its head and, by Content-Length or up to the end of the connection,
/// its body); interim 1xx answers are returned as they come.
fn read_answer(tls: &mut Tls) -> Result<Answer, String> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tls.read(&mut buf) {
            Ok(0) => return Err(format!("connection ended before an answer: {data:?}")),
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line: {head}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = data[head_end..].to_vec();
    if status < 200 {
        return Ok(Answer {
            status,
            headers,
            body,
        });
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    loop {
        if length.is_some_and(|l| body.len() >= l) {
            break;
        }
        match tls.read(&mut buf) {
            Ok(0) if length.is_none() => break,
            Ok(0) => return Err(format!("connection ended inside the body: {body:?}")),
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("reading the body: {e}")),
        }
    }
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// POSTs `body` to `path` as a client that writes its whole request before reading anything,
/// then reads the answer.
fn write_all_then_read(
    s: &Server,
    identity: Option<&certs::IssuedCert>,
    path: &str,
    extra: &[&str],
    body: &[u8],
) -> Result<Answer, String> {
    let mut tls = connect_h1(s, identity);
    let head = post_head(s, path, body.len(), extra);
    tls.write_all(head.as_bytes())
        .and_then(|()| tls.write_all(body))
        .and_then(|()| tls.flush())
        .map_err(|e| format!("writing the request: {e}"))?;
    read_answer(&mut tls)
}

/// Ten requests in a row, each answered in full with `code` and `reason`.
fn ten_refusals(
    what: &str,
    code: u16,
    reason: &str,
    mut exchange: impl FnMut(usize) -> Result<Answer, String>,
) -> Vec<Answer> {
    (0..10)
        .map(|i| {
            let answer = exchange(i).unwrap_or_else(|e| panic!("{what} #{i}: {e}"));
            assert_eq!(
                answer.status,
                code,
                "{what} #{i}: {}",
                String::from_utf8_lossy(&answer.body)
            );
            let status = answer.status_object();
            assert_eq!(status["kind"], "Status", "{what} #{i}: {status}");
            assert_eq!(status["code"], code, "{what} #{i}: {status}");
            assert_eq!(status["reason"], reason, "{what} #{i}: {status}");
            answer
        })
        .collect()
}

#[test]
fn early_refusals_reach_a_client_that_writes_its_whole_request_first() {
    let s = Server::start_with(
        support::Backend::Embedded,
        &[
            // One mutating slot, so a held write makes the next one a 429 (kube's plain
            // in-flight limit; with priority and fairness the limit is per priority level).
            "--max-mutating-requests-inflight",
            "1",
            "--enable-priority-and-fairness=false",
        ],
    );
    let admin = s
        .ca()
        .issue_client("refusal-admin", &["system:masters"])
        .expect("admin certificate");

    // 413 after the server read 3 MiB of the 3.5: the rest is still on its way.
    ten_refusals(
        "an oversized ConfigMap",
        413,
        "RequestEntityTooLarge",
        |i| {
            let cm = configmap_of_size(&format!("big-{i}"), OVERSIZED);
            write_all_then_read(&s, Some(&admin), CONFIGMAPS, &[], &cm)
        },
    );

    // 401 before a byte of the body was read.
    ten_refusals("a write with a bad token", 401, "Unauthorized", |i| {
        let cm = configmap_of_size(&format!("unauthenticated-{i}"), OVERSIZED);
        write_all_then_read(
            &s,
            None,
            CONFIGMAPS,
            &["Authorization: Bearer not-a-token"],
            &cm,
        )
    });

    // 429: bob's write holds the only mutating slot, waiting for a body he never sends;
    // alice's writes are refused before their bodies are read.
    s.kubectl_ok(&[
        "create",
        "role",
        "configmap-writer",
        "--verb=create",
        "--resource=configmaps",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-writes-configmaps",
        "--role=configmap-writer",
        "--user=bob",
    ]);
    let bob = s.ca().issue_client("bob", &[]).expect("bob's certificate");
    let alice = s
        .ca()
        .issue_client("alice", &[])
        .expect("alice's certificate");
    // The holder asks for 100-continue, which the server sends once the create handler reads
    // the body: past the limit, authentication and authorization, so the slot is bob's. A
    // controller's write in that slot gets bob a 429 instead; he then tries again.
    let _holder = wait_for("bob's write to hold the mutating slot", DEADLINE, || {
        let mut tls = connect_h1(&s, Some(&bob));
        let head = post_head(&s, CONFIGMAPS, 100, &["Expect: 100-continue"]);
        tls.write_all(head.as_bytes()).expect("bob's request head");
        tls.flush().expect("flush");
        let answer = read_answer(&mut tls).expect("an answer to bob");
        match answer.status {
            100 => Some(tls),
            429 => None,
            other => panic!(
                "bob's write: {other} {}",
                String::from_utf8_lossy(&answer.body)
            ),
        }
    });
    let refused = ten_refusals(
        "a write past the in-flight limit",
        429,
        "TooManyRequests",
        |i| {
            let cm = configmap_of_size(&format!("limited-{i}"), OVERSIZED);
            write_all_then_read(&s, Some(&alice), CONFIGMAPS, &[], &cm)
        },
    );
    for answer in refused {
        assert!(
            answer
                .headers
                .iter()
                .any(|(k, v)| k == "retry-after" && v == "1"),
            "{:?}",
            answer.headers
        );
    }
}

/// The same refusals over HTTP/2: the client reads each answer in full, and the stream whose
/// body the server did not read ends with RST_STREAM(NO_ERROR) after it (RFC 9113 §8.1), not
/// a CANCEL that clients may take for a failure; the connection serves the next request.
#[test]
fn early_refusals_over_http2_end_the_stream_with_no_error() {
    let s = Server::start();
    let admin = s
        .ca()
        .issue_client("refusal-admin", &["system:masters"])
        .expect("admin certificate");
    // The admin's connection, and one without a client certificate (which would
    // authenticate the request whatever its token).
    let as_admin = tls_client(&s, Some(&admin), b"h2");
    let anonymous = tls_client(&s, None, b"h2");
    let addr = s.url.trim_start_matches("https://").to_string();
    s.block_on(async move {
        let mut admin = h2_connect(&addr, as_admin).await;
        let mut anonymous = h2_connect(&addr, anonymous).await;
        let mut resets = 0;
        for i in 0..10 {
            for (client, name, authorization, code, reason) in [
                (
                    &mut admin,
                    format!("big-{i}"),
                    None,
                    413,
                    "RequestEntityTooLarge",
                ),
                (
                    &mut anonymous,
                    format!("unauthenticated-{i}"),
                    Some("Bearer not-a-token"),
                    401,
                    "Unauthorized",
                ),
            ] {
                let body = configmap_of_size(&name, OVERSIZED);
                let mut req = http::Request::post(format!("https://{addr}{CONFIGMAPS}"))
                    .header("content-type", "application/json")
                    .header("content-length", body.len());
                if let Some(a) = authorization {
                    req = req.header("authorization", a);
                }
                let (status, text, reset) = tokio::time::timeout(
                    EXCHANGE_DEADLINE,
                    h2_exchange(client, req.body(()).expect("request"), body),
                )
                .await
                .unwrap_or_else(|_| panic!("{name}: no answer within {EXCHANGE_DEADLINE:?}"));
                assert_eq!(status, code, "{name}: {text}");
                let st: Value = serde_json::from_str(&text).expect("a Status");
                assert_eq!(st["reason"], reason, "{name}: {st}");
                if let Some(reason) = reset {
                    assert_eq!(reason, h2::Reason::NO_ERROR, "{name}");
                }
                resets += usize::from(reset.is_some());
            }
        }
        // At least the 401s: their 3.5 MiB never fit the server's 1 MiB windows unread.
        assert!(resets >= 10, "{resets} streams reset");
    });
}

/// An HTTP/2 connection to `addr` (driven by a task of its own until the client is dropped).
async fn h2_connect(
    addr: &str,
    config: Arc<rustls::ClientConfig>,
) -> h2::client::SendRequest<bytes::Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect("127.0.0.1".try_into().expect("server name"), tcp)
        .await
        .expect("TLS");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (client, connection) = h2::client::handshake(tls).await.expect("h2 handshake");
    tokio::spawn(connection);
    client
}

/// Sends `req` with `body` as flow control allows until the answer comes; returns its status,
/// its body, and the reason the server reset the stream with, if it did. A stream whose body
/// was not all sent must be reset, or the client would wait for window forever.
async fn h2_exchange(
    client: &mut h2::client::SendRequest<bytes::Bytes>,
    req: http::Request<()>,
    body: Vec<u8>,
) -> (u16, String, Option<h2::Reason>) {
    let ready = client.clone().ready().await.expect("connection ready");
    *client = ready;
    let (response, mut stream) = client.send_request(req, false).expect("send request");
    let mut left = bytes::Bytes::from(body);
    let sending = async {
        while !left.is_empty() {
            stream.reserve_capacity(left.len());
            match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
                Some(Ok(n)) => {
                    let chunk = left.split_to(n.min(left.len()));
                    if stream.send_data(chunk, left.is_empty()).is_err() {
                        break;
                    }
                }
                // The server ended the stream.
                Some(Err(_)) | None => break,
            }
        }
        // Nothing more to send: wait for the answer.
        std::future::pending::<()>().await
    };
    let response = tokio::select! {
        r = response => r.expect("an answer"),
        _ = sending => unreachable!("sending never ends first"),
    };
    let status = response.status().as_u16();
    let mut recv = response.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.expect("the answer's body");
        let _ = recv.flow_control().release_capacity(chunk.len());
        text.extend_from_slice(&chunk);
    }
    let reset = std::future::poll_fn(|cx| stream.poll_reset(cx));
    let reset = if left.is_empty() {
        // All sent: the stream may have closed without a reset.
        futures::FutureExt::now_or_never(reset)
    } else {
        Some(reset.await)
    };
    let reset = reset.map(|r| r.expect("the stream's reset"));
    (status, String::from_utf8_lossy(&text).into_owned(), reset)
}
