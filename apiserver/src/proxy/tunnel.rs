//! The reverse tunnel of Pull clusters: the cluster proxy reaches a member that the control
//! plane cannot dial through a connection its agent opened. The agent (authenticated by its
//! client certificate, authorized for `create` on `clusters/tunnel` of its own cluster) sends
//! `POST /apis/cluster.karmada.io/v1alpha1/clusters/NAME/tunnel` with `Upgrade:
//! karmada-tunnel` over HTTP/1.1; after `101 Switching Protocols` the control plane is an
//! HTTP/2 *client* on the upgraded stream and the agent an HTTP/2 server that forwards every
//! request to its member API server. Each proxied request is one HTTP/2 stream, so watches and
//! streamed answers share the one connection.
//!
//! Protocol upgrades (exec, attach, port-forward over SPDY or WebSocket) are carried as
//! RFC 8441 extended CONNECT streams: `:method CONNECT`, `:protocol` the caller's `Upgrade`
//! token, the proxied path and query and the end-to-end headers, plus
//! [`UPGRADE_METHOD_HEADER`] with the caller's method (CONNECT replaces it; the member sees
//! the caller's GET or POST). The agent makes the HTTP/1.1 upgrade request to its member; on
//! `101` it answers `200` with the member's headers and the member's `Upgrade` token in
//! [`UPGRADE_PROTOCOL_HEADER`] (HTTP/2 has no `Upgrade` header), and the control plane
//! answers the caller `101` and splices the two upgraded streams, as push mode does. Any
//! other answer of the member comes back as is; a 2xx one (which would open the CONNECT
//! stream) travels with a non-2xx status and its own status in [`UPGRADE_STATUS_HEADER`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderValue};
use http::{Method, StatusCode, Uri};
use hyper::client::conn::http2::SendRequest;
use hyper::ext::Protocol;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use karmada_api::cluster::v1alpha1::ClusterSyncMode;

use super::forward::{self, Outbound};
use super::target::{TargetError, read_cluster};
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::request_info::RequestInfo;
use crate::state::ApiState;

/// The subresource an agent opens its tunnel on.
pub const TUNNEL_SUBRESOURCE: &str = "tunnel";
/// The `Upgrade` protocol token of a tunnel.
pub const TUNNEL_PROTOCOL: &str = "karmada-tunnel";
/// How often the control plane pings a tunnel; an agent that does not answer within
/// [`KEEPALIVE_TIMEOUT`] is considered gone.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The caller's method on an upgrade's CONNECT stream (the agent's
/// `agent::tunnel::UPGRADE_METHOD_HEADER`).
pub const UPGRADE_METHOD_HEADER: &str = "x-karmada-tunnel-method";
/// The member's `Upgrade` token on the agent's `200` to a CONNECT (the agent's
/// `agent::tunnel::UPGRADE_PROTOCOL_HEADER`).
pub const UPGRADE_PROTOCOL_HEADER: &str = "x-karmada-tunnel-upgrade";
/// The member's status of a non-`101` answer to an upgrade whose CONNECT answer carries
/// another status (the agent's `agent::tunnel::UPGRADE_STATUS_HEADER`).
pub const UPGRADE_STATUS_HEADER: &str = "x-karmada-tunnel-status";

/// One connected tunnel.
struct Connected {
    id: u64,
    sender: SendRequest<Body>,
}

/// The connected tunnels, by cluster name: a reconnecting agent replaces its old tunnel, a
/// closed tunnel is removed.
#[derive(Default)]
pub struct Tunnels {
    connected: Mutex<HashMap<String, Connected>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Tunnels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnels").finish_non_exhaustive()
    }
}

impl Tunnels {
    /// The open tunnel of `cluster`, if any.
    pub fn sender(&self, cluster: &str) -> Option<SendRequest<Body>> {
        let m = self.connected.lock().ok()?;
        m.get(cluster)
            .filter(|c| !c.sender.is_closed())
            .map(|c| c.sender.clone())
    }

    fn register(&self, cluster: &str, sender: SendRequest<Body>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = self.connected.lock() {
            m.insert(cluster.to_string(), Connected { id, sender });
        }
        id
    }

    fn unregister(&self, cluster: &str, id: u64) {
        if let Ok(mut m) = self.connected.lock()
            && m.get(cluster).is_some_and(|c| c.id == id)
        {
            m.remove(cluster);
        }
    }
}

/// True for `clusters/NAME/tunnel` of `cluster.karmada.io`, when this server serves Clusters.
pub fn is_tunnel_request(state: &ApiState, info: &RequestInfo) -> bool {
    super::is_cluster_subresource(state, info, TUNNEL_SUBRESOURCE)
}

/// Accepts an agent's tunnel (the caller is authenticated and authorized for `create` on
/// `clusters/tunnel` of this cluster): answers `101` and, once the connection is upgraded,
/// serves it as the cluster's tunnel until it closes.
pub async fn accept(
    state: &std::sync::Arc<ApiState>,
    proxy: &std::sync::Arc<super::ClusterProxy>,
    mut parts: http::request::Parts,
    user: &UserInfo,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed(
            &parts.method.as_str().to_lowercase(),
            "Cluster",
        ));
    }
    let asks_tunnel = forward::is_upgrade(&parts.headers)
        && parts
            .headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case(TUNNEL_PROTOCOL));
    if !asks_tunnel {
        return Err(ApiError::bad_request(format!(
            "a tunnel is opened with an HTTP/1.1 request carrying \"Connection: Upgrade\" and \"Upgrade: {TUNNEL_PROTOCOL}\""
        )));
    }
    let name = super::percent_decode(&info.name);
    let cluster = read_cluster(state, &name).await?.parse()?;
    if cluster.spec.sync_mode != ClusterSyncMode::Pull {
        return Err(ApiError::bad_request(format!(
            "cluster {name} is in Push mode: only the agent of a Pull cluster opens a tunnel"
        )));
    }
    let Some(upgrade) = parts.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
        return Err(ApiError::bad_request(
            "the connection cannot be upgraded (a tunnel needs HTTP/1.1, not HTTP/2)",
        ));
    };
    let proxy = proxy.clone();
    let agent = user.name.clone();
    tokio::spawn(async move {
        let io = match upgrade.await {
            Ok(io) => io,
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "tunnel upgrade failed");
                return;
            }
        };
        let handshake = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true)
            .handshake::<_, Body>(io)
            .await;
        let (sender, conn) = match handshake {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "tunnel handshake failed");
                return;
            }
        };
        let tunnels = &proxy.tunnels;
        let id = tunnels.register(&name, sender);
        tracing::info!(cluster = %name, %agent, "agent tunnel connected");
        match conn.await {
            Ok(()) => tracing::info!(cluster = %name, "agent tunnel closed"),
            Err(e) => tracing::info!(cluster = %name, error = %e, "agent tunnel lost"),
        }
        tunnels.unregister(&name, id);
    });
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    resp.headers_mut()
        .insert(header::UPGRADE, HeaderValue::from_static(TUNNEL_PROTOCOL));
    Ok(resp)
}

/// The error of a cluster the proxy cannot build a direct target for: a Pull cluster without
/// an API endpoint or credentials for it is reached only through its agent's tunnel, which is
/// not connected.
pub async fn unreachable(state: &ApiState, name: &str, err: TargetError) -> ApiError {
    if let TargetError::Config(_) = &err
        && let Ok(rec) = read_cluster(state, name).await
        && let Ok(c) = rec.parse()
        && c.spec.sync_mode == ClusterSyncMode::Pull
        // No way to it but the tunnel: an agent records the member's own address (karmadactl
        // passes it) but no credentials for the control plane to use it.
        && (c.spec.api_endpoint.is_empty() || c.spec.impersonator_secret_ref.is_none())
    {
        return not_connected(name);
    }
    err.into()
}

fn not_connected(name: &str) -> ApiError {
    ApiError::unavailable(format!(
        "the agent of cluster {name} is not connected: a Pull cluster is reached through its agent's tunnel, which is down"
    ))
}

/// Sends one proxied request (path and query relative to the member's API root) through a
/// tunnel and streams the answer back; an upgrade request becomes an extended CONNECT stream
/// spliced with the caller's upgraded connection once the member has switched protocols.
pub async fn forward(
    mut sender: SendRequest<Body>,
    cluster: &str,
    out: Outbound,
) -> Result<Response, ApiError> {
    let pq = out
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    // The agent ignores the authority; HTTP/2 needs a scheme and one.
    let uri: Uri = format!("http://{}{pq}", authority_of(cluster))
        .parse()
        .map_err(|_| ApiError::bad_request("invalid proxied path"))?;
    let Outbound {
        method,
        mut headers,
        body,
        upgrade,
        upgrade_protocol,
        ..
    } = out;
    let upgrading = upgrade.zip(upgrade_protocol);
    let mut req = match &upgrading {
        Some((_, protocol)) => {
            let token = protocol
                .to_str()
                .map_err(|_| ApiError::bad_request("invalid Upgrade header"))?;
            // An extended CONNECT carries no body: the stream itself becomes the tunnel.
            let mut req = http::Request::new(Body::empty());
            *req.method_mut() = Method::CONNECT;
            req.extensions_mut().insert(Protocol::from(token));
            headers.remove(header::CONTENT_LENGTH);
            headers.insert(
                UPGRADE_METHOD_HEADER,
                HeaderValue::from_str(method.as_str())
                    .map_err(|_| ApiError::bad_request("invalid method"))?,
            );
            req
        }
        None => {
            let mut req = http::Request::new(body);
            *req.method_mut() = method;
            req
        }
    };
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    futures::future::poll_fn(|cx| sender.poll_ready(cx))
        .await
        .map_err(|_| not_connected(cluster))?;
    let mut resp = sender.send_request(req).await.map_err(|e| {
        ApiError::unavailable(format!(
            "error trying to reach cluster {cluster} through its agent's tunnel: {e}"
        ))
    })?;
    if let Some((caller, requested)) = upgrading {
        if resp.status() == StatusCode::OK {
            return Ok(switched(caller, requested, &mut resp));
        }
        restore_status(&mut resp);
    }
    let (parts, body) = resp.into_parts();
    let mut answer = Response::new(Body::new(body));
    *answer.status_mut() = parts.status;
    *answer.headers_mut() = forward::end_to_end(&parts.headers, false);
    Ok(answer)
}

/// The caller's `101` once the agent's member switched protocols: the member's headers, its
/// `Upgrade` token (the caller's when the agent names none), and the caller's connection
/// spliced with the CONNECT stream.
fn switched(
    caller: hyper::upgrade::OnUpgrade,
    requested: HeaderValue,
    resp: &mut http::Response<hyper::body::Incoming>,
) -> Response {
    let stream = hyper::upgrade::on(&mut *resp);
    let mut headers = forward::end_to_end(resp.headers(), false);
    let token = headers.remove(UPGRADE_PROTOCOL_HEADER).unwrap_or(requested);
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, token);
    let mut answer = Response::new(Body::empty());
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *answer.headers_mut() = headers;
    tokio::spawn(netproxy::splice(caller, stream));
    answer
}

/// Puts back the member's own status of a refused upgrade that the agent sent with another
/// one (a 2xx answer would have opened the CONNECT stream).
fn restore_status(resp: &mut http::Response<hyper::body::Incoming>) {
    let status = resp
        .headers_mut()
        .remove(UPGRADE_STATUS_HEADER)
        .and_then(|v| StatusCode::from_bytes(v.as_bytes()).ok());
    if let Some(status) = status {
        *resp.status_mut() = status;
    }
}

/// A URI authority for a cluster name (names are DNS subdomains; anything else is replaced).
fn authority_of(cluster: &str) -> String {
    let ok = !cluster.is_empty()
        && cluster
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if ok {
        cluster.to_string()
    } else {
        "cluster".to_string()
    }
}
