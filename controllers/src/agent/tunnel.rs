//! The agent's end of the reverse tunnel: it keeps one outbound connection to the control
//! plane (`POST .../clusters/NAME/tunnel` with `Upgrade: karmada-tunnel`, over HTTP/1.1 with
//! the agent's own client certificate), serves HTTP/2 on it, and forwards each request the
//! cluster proxy sends to its member API server with the agent's member credentials, keeping
//! the proxy's `Impersonate-*` headers so the member's RBAC decides as in push mode. A lost
//! tunnel is opened again with capped, jittered exponential back-off. Request bodies are read
//! whole (the member client sends bytes); answers stream.
//!
//! Upgrade requests (exec, attach, port-forward) arrive as RFC 8441 extended CONNECT streams
//! (the control plane's `proxy::tunnel` describes the exchange): the agent makes the HTTP/1.1
//! upgrade request to its member with the caller's method, path, query and headers and the
//! CONNECT's protocol as `Upgrade`; on `101` it answers `200` with the member's headers and
//! splices the CONNECT stream with the member's upgraded connection, otherwise it sends the
//! member's answer back.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper::ext::Protocol;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::task::JoinHandle;

/// The `Upgrade` token of a tunnel (the control plane's `proxy::tunnel::TUNNEL_PROTOCOL`).
pub const TUNNEL_PROTOCOL: &str = "karmada-tunnel";
/// The largest request body forwarded (request bodies are read whole; answers stream).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;
/// First and largest delay between attempts to open the tunnel.
const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// A tunnel that stayed open this long resets the back-off.
const STABLE_AFTER: Duration = Duration::from_secs(30);
/// How often the agent pings the control plane over the tunnel, and how long it waits.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The caller's method on an upgrade's CONNECT stream (the control plane's
/// `proxy::tunnel::UPGRADE_METHOD_HEADER`).
pub const UPGRADE_METHOD_HEADER: &str = "x-karmada-tunnel-method";
/// The member's `Upgrade` token on the answer to a CONNECT (HTTP/2 has no `Upgrade` header).
pub const UPGRADE_PROTOCOL_HEADER: &str = "x-karmada-tunnel-upgrade";
/// The member's status of a 2xx answer that refused an upgrade: the CONNECT is answered
/// with [`REFUSED_UPGRADE`] instead, since a 2xx answer would open the stream.
pub const UPGRADE_STATUS_HEADER: &str = "x-karmada-tunnel-status";
const REFUSED_UPGRADE: StatusCode = StatusCode::BAD_GATEWAY;

type AnswerBody = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// The tunnel's path for `cluster`.
pub fn tunnel_path(cluster: &str) -> String {
    format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/tunnel")
}

/// Keeps `cluster`'s tunnel open until the task is aborted.
pub fn start(control_plane: kube::Client, member: kube::Client, cluster: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut delay = BACKOFF_START;
        loop {
            let opened = Instant::now();
            match serve_once(&control_plane, &member, &cluster).await {
                Ok(()) => tracing::info!(%cluster, "tunnel to the control plane closed"),
                Err(e) => {
                    tracing::warn!(%cluster, error = %e, "tunnel to the control plane failed")
                }
            }
            if opened.elapsed() >= STABLE_AFTER {
                delay = BACKOFF_START;
            }
            let wait = jittered(delay);
            tracing::info!(%cluster, retry_in_ms = wait.as_millis() as u64, "reopening the tunnel");
            tokio::time::sleep(wait).await;
            delay = (delay * 2).min(BACKOFF_CAP);
        }
    })
}

/// `d` scaled by a random factor in [0.5, 1.0), so that agents cut off together do not
/// reconnect together.
fn jittered(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let factor = 0.5 + f64::from(nanos % 1000) / 2000.0;
    d.mul_f64(factor)
}

/// Why a tunnel could not be opened or ended.
#[derive(Debug, thiserror::Error)]
enum TunnelError {
    #[error("opening the tunnel: {0}")]
    Open(#[from] kube::Error),
    #[error("the control plane refused the tunnel ({status}): {message}")]
    Refused { status: StatusCode, message: String },
    #[error("upgrading the connection: {0}")]
    Upgrade(#[source] hyper::Error),
    #[error("serving the tunnel: {0}")]
    Serve(#[source] hyper::Error),
}

async fn serve_once(
    control_plane: &kube::Client,
    member: &kube::Client,
    cluster: &str,
) -> Result<(), TunnelError> {
    let req = Request::builder()
        .method(Method::POST)
        .uri(tunnel_path(cluster))
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, TUNNEL_PROTOCOL)
        .body(kube::client::Body::empty())
        .map_err(|e| TunnelError::Open(kube::Error::HttpError(e)))?;
    let resp = control_plane.send(req).await?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        let status = resp.status();
        let body = resp.into_body().collect().await.map(|b| b.to_bytes());
        let message = body
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| status.to_string());
        return Err(TunnelError::Refused { status, message });
    }
    let io = hyper::upgrade::on(resp)
        .await
        .map_err(TunnelError::Upgrade)?;
    tracing::info!(%cluster, "tunnel to the control plane open");
    let member = member.clone();
    let cluster_name = cluster.to_owned();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let member = member.clone();
        let cluster = cluster_name.clone();
        async move { Ok::<_, Infallible>(handle(&member, &cluster, req).await) }
    });
    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .max_concurrent_streams(1000)
        .enable_connect_protocol()
        .serve_connection(io, service)
        .await
        .map_err(TunnelError::Serve)
}

/// `headers` without hop-by-hop headers and (for requests) credentials: the member sees the
/// agent's credentials and the proxy's impersonation headers only.
fn end_to_end(headers: &HeaderMap, request: bool) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (k, v) in headers {
        if netproxy::HOP_BY_HOP.contains(&k.as_str())
            || (request && (k == header::AUTHORIZATION || k == header::HOST))
        {
            continue;
        }
        out.append(k.clone(), v.clone());
    }
    out
}

/// Forwards one request to the member.
async fn handle(
    member: &kube::Client,
    cluster: &str,
    req: Request<Incoming>,
) -> Response<AnswerBody> {
    let answer = match req.extensions().get::<Protocol>() {
        Some(protocol) if req.method() == Method::CONNECT => {
            let protocol = protocol.as_str().to_owned();
            upgrade(member, req, &protocol).await
        }
        _ => forward(member, req).await,
    };
    match answer {
        Ok(r) => r,
        Err(message) => status_answer(
            StatusCode::BAD_GATEWAY,
            "BadGateway",
            &format!("error trying to reach cluster {cluster} from its agent: {message}"),
        ),
    }
}

async fn forward(
    member: &kube::Client,
    req: Request<Incoming>,
) -> Result<Response<AnswerBody>, String> {
    let pq = path_and_query(&req);
    let headers = end_to_end(req.headers(), true);
    let method = req.method().clone();
    let body = Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the request body: {e}"))?
        .to_bytes();
    let mut out = Request::new(kube::client::Body::from(body));
    *out.method_mut() = method;
    *out.uri_mut() = pq.parse().map_err(|e| format!("bad path {pq}: {e}"))?;
    *out.headers_mut() = headers;
    let resp = member.send(out).await.map_err(|e| e.to_string())?;
    let (parts, body) = resp.into_parts();
    let mut answer = Response::new(body.map_err(Into::into).boxed_unsync());
    *answer.status_mut() = parts.status;
    *answer.headers_mut() = end_to_end(&parts.headers, false);
    Ok(answer)
}

/// Makes an upgrade request (an extended CONNECT of `protocol`) to the member: on `101` the
/// CONNECT is answered `200` with the member's headers and both upgraded streams are spliced;
/// any other answer is sent back with the member's status.
async fn upgrade(
    member: &kube::Client,
    mut req: Request<Incoming>,
    protocol: &str,
) -> Result<Response<AnswerBody>, String> {
    let pq = path_and_query(&req);
    let method = match req.headers().get(UPGRADE_METHOD_HEADER) {
        Some(m) => Method::from_bytes(m.as_bytes()).map_err(|e| format!("bad method: {e}"))?,
        None => Method::GET,
    };
    let mut headers = end_to_end(req.headers(), true);
    headers.remove(UPGRADE_METHOD_HEADER);
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        header::UPGRADE,
        HeaderValue::from_str(protocol).map_err(|e| format!("bad protocol {protocol}: {e}"))?,
    );
    let caller = hyper::upgrade::on(&mut req);
    let mut out = Request::new(kube::client::Body::empty());
    *out.method_mut() = method;
    *out.uri_mut() = pq.parse().map_err(|e| format!("bad path {pq}: {e}"))?;
    *out.headers_mut() = headers;
    let mut resp = member.send(out).await.map_err(|e| e.to_string())?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        let upgraded = hyper::upgrade::on(&mut resp);
        let mut headers = answer_headers(resp.headers());
        // A successful CONNECT answer has no body, hence no length.
        headers.remove(header::CONTENT_LENGTH);
        if let Some(token) = resp.headers().get(header::UPGRADE) {
            headers.insert(UPGRADE_PROTOCOL_HEADER, token.clone());
        }
        let mut answer = Response::new(empty());
        *answer.headers_mut() = headers;
        tokio::spawn(netproxy::splice(caller, upgraded));
        return Ok(answer);
    }
    let (parts, body) = resp.into_parts();
    let mut answer = Response::new(body.map_err(Into::into).boxed_unsync());
    *answer.headers_mut() = answer_headers(&parts.headers);
    if parts.status.is_success() {
        *answer.status_mut() = REFUSED_UPGRADE;
        answer.headers_mut().insert(
            UPGRADE_STATUS_HEADER,
            HeaderValue::from(parts.status.as_u16()),
        );
    } else {
        *answer.status_mut() = parts.status;
    }
    Ok(answer)
}

/// The member's end-to-end answer headers to an upgrade, without any that would pass for the
/// agent's own signals to the control plane.
fn answer_headers(member: &HeaderMap) -> HeaderMap {
    let mut headers = end_to_end(member, false);
    headers.remove(UPGRADE_PROTOCOL_HEADER);
    headers.remove(UPGRADE_STATUS_HEADER);
    headers
}

/// The member path and query of a tunnelled request.
fn path_and_query(req: &Request<Incoming>) -> String {
    req.uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned()
}

/// An empty answer body.
fn empty() -> AnswerBody {
    Full::new(Bytes::new())
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A metav1.Status answer.
fn status_answer(code: StatusCode, reason: &str, message: &str) -> Response<AnswerBody> {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    let mut r = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_jittered_within_half_to_full() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(10));
            assert!(
                d >= Duration::from_secs(5) && d < Duration::from_secs(10),
                "{d:?}"
            );
        }
    }

    #[test]
    fn forwarded_requests_lose_credentials_and_connection_headers() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        h.insert("impersonate-user", HeaderValue::from_static("alice"));
        h.append("impersonate-group", HeaderValue::from_static("dev"));
        h.append("impersonate-group", HeaderValue::from_static("ops"));
        let out = end_to_end(&h, true);
        assert!(out.get(header::AUTHORIZATION).is_none());
        assert!(out.get(header::CONNECTION).is_none());
        assert_eq!(out["impersonate-user"], "alice");
        assert_eq!(out.get_all("impersonate-group").iter().count(), 2);
    }
}
