//! The API aggregation layer, as kube-aggregator runs inside kube-apiserver (and so inside
//! karmada-apiserver): APIServices with a `service` route their group/version to a backend,
//! which receives the request over TLS with the front-proxy client certificate and the
//! caller's identity in `X-Remote-*` headers (kube-aggregator's `proxyHandler`); the
//! backend's discovery is merged into the server's own; a background controller keeps each
//! APIService's `Available` condition (kube-aggregator's remote and local availability
//! controllers).

pub mod apiservice;
pub mod available;
pub mod discovery;
pub mod front_proxy;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::proxy::forward::{self, Outbound, plain_error};
use crate::proxy::transport::HttpClient;
use crate::request_info::RequestInfo;
use crate::state::ApiState;
pub use front_proxy::FrontProxy;

/// A registered remote group/version and how to reach it.
#[derive(Clone)]
pub struct Backend {
    /// The APIService's name.
    pub api_service: String,
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// `groupPriorityMinimum`.
    pub group_priority: i64,
    /// `versionPriority`.
    pub version_priority: i64,
    /// The resolved endpoint and its pooled client; `None` when the Service does not resolve.
    pub target: Option<(http::uri::Authority, HttpClient)>,
    /// Why no client could be built.
    pub transport_error: Option<String>,
    /// The last availability check passed.
    pub available: bool,
    /// The backend's `APIResourceList` for this group/version, from the last check.
    pub discovery: Option<Arc<Value>>,
    /// The backend's OpenAPI documents, from the last check.
    pub openapi: Option<Arc<crate::openapi::Published>>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("api_service", &self.api_service)
            .field("available", &self.available)
            .finish_non_exhaustive()
    }
}

/// Remote group/versions by (group, version).
pub type RouteTable = HashMap<(String, String), Arc<Backend>>;

/// The aggregator's per-server state.
#[derive(Debug)]
pub struct Aggregator {
    /// The current routes; receivers learn of every change.
    routes: tokio::sync::watch::Sender<Arc<RouteTable>>,
    front_proxy: OnceLock<FrontProxy>,
    /// Re-check interval of available backends in milliseconds (0: the default).
    recheck_ms: AtomicU64,
}

impl Default for Aggregator {
    fn default() -> Aggregator {
        Aggregator {
            routes: tokio::sync::watch::channel(Arc::default()).0,
            front_proxy: OnceLock::new(),
            recheck_ms: AtomicU64::new(0),
        }
    }
}

impl Aggregator {
    /// How often available backends are checked again (kube-aggregator resyncs every 30 s).
    pub fn recheck_interval(&self) -> Duration {
        match self.recheck_ms.load(Ordering::Relaxed) {
            0 => available::RECHECK,
            ms => Duration::from_millis(ms),
        }
    }

    /// Changes how often available backends are checked again.
    pub fn set_recheck_interval(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        self.recheck_ms.store(ms, Ordering::Relaxed);
    }

    /// Sets the front-proxy identity used towards backends (once).
    pub fn set_front_proxy(&self, fp: FrontProxy) {
        let _ = self.front_proxy.set(fp);
    }

    /// The front-proxy identity, once configured.
    pub fn front_proxy(&self) -> Option<&FrontProxy> {
        self.front_proxy.get()
    }

    /// The current routes.
    pub fn table(&self) -> Arc<RouteTable> {
        self.routes.borrow().clone()
    }

    /// Replaces the routes; watchers of route changes are woken only when the set of
    /// remote group/versions changed.
    pub fn set_table(&self, t: RouteTable) {
        self.routes.send_if_modified(|cur| {
            let changed = cur.len() != t.len() || t.keys().any(|k| !cur.contains_key(k));
            *cur = Arc::new(t);
            changed
        });
    }

    /// Ends a watch served locally once its group/version is routed to a backend, with a
    /// `410 Expired` ERROR event: the client lists and watches again through the new route,
    /// whose resourceVersions come from another store (an APIService registered for a group
    /// this server also serves takes it over).
    pub fn end_when_remote(&self, group: &str, version: &str, resp: Response) -> Response {
        let key = (group.to_string(), version.to_string());
        let mut routes = self.routes.subscribe();
        if routes.borrow_and_update().contains_key(&key) {
            return resp;
        }
        let (parts, body) = resp.into_parts();
        let stream = futures::stream::unfold(
            Some((body.into_data_stream(), routes, key)),
            |state| async move {
                let (mut data, mut routes, key) = state?;
                loop {
                    tokio::select! {
                        item = futures::StreamExt::next(&mut data) => {
                            return item.map(|i| (i, Some((data, routes, key))));
                        }
                        changed = routes.changed() => {
                            if changed.is_err() {
                                return None;
                            }
                            if routes.borrow_and_update().contains_key(&key) {
                                let status = crate::error::ApiError::expired(format!(
                                    "{}/{} is now served by an APIService; list again",
                                    key.0, key.1
                                ))
                                .status_json();
                                let frame = crate::watch_cache::frame(
                                    "ERROR",
                                    status.to_string().as_bytes(),
                                );
                                return Some((Ok(frame), None));
                            }
                        }
                    }
                }
            },
        );
        Response::from_parts(parts, Body::from_stream(stream))
    }

    /// The backend serving a request's group/version (`/apis/G/V...`), if it is remote.
    pub fn route(&self, info: &RequestInfo) -> Option<Arc<Backend>> {
        if info.api_prefix != "apis" || info.api_group.is_empty() || info.api_version.is_empty() {
            return None;
        }
        let table = self.table();
        if table.is_empty() {
            return None;
        }
        table
            .get(&(info.api_group.clone(), info.api_version.clone()))
            .cloned()
    }
}

/// The OpenAPI documents of the available backends, in group/version order, for
/// `/openapi/v2` and `/openapi/v3` (kube-aggregator's OpenAPI aggregation controllers).
pub fn openapi(table: &RouteTable) -> Vec<crate::openapi::Remote> {
    let mut out: Vec<crate::openapi::Remote> = table
        .values()
        .filter(|b| b.available)
        .filter_map(|b| {
            Some(crate::openapi::Remote {
                group: b.group.clone(),
                version: b.version.clone(),
                published: b.openapi.clone()?,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.group, &a.version).cmp(&(&b.group, &b.version)));
    out
}

/// Proxies a request to its group/version's backend as the caller (kube-aggregator's
/// `proxyHandler.ServeHTTP`): 503 `service unavailable` while the APIService is not
/// available, the original path and query, the caller's identity as front-proxy headers.
pub async fn proxy(
    backend: &Backend,
    mut parts: http::request::Parts,
    body: Body,
    user: &UserInfo,
) -> Response {
    if !backend.available {
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    if let Some(e) = &backend.transport_error {
        return plain_error(StatusCode::INTERNAL_SERVER_ERROR, e);
    }
    let Some((authority, client)) = &backend.target else {
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    };
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let uri = match http::Uri::builder()
        .scheme("https")
        .authority(authority.clone())
        .path_and_query(pq)
        .build()
    {
        Ok(u) => u,
        Err(e) => return plain_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let mut out = Outbound::from_parts(&mut parts, uri, body);
    if let Err(e) = forward::front_proxy(&mut out.headers, user) {
        return plain_error(StatusCode::BAD_REQUEST, &e.message);
    }
    match forward::forward(client, out, &format!("APIService {}", backend.api_service)).await {
        Ok(r) => r,
        Err(e) => plain_error(StatusCode::SERVICE_UNAVAILABLE, &e.message()),
    }
}

/// Whether an object exists in the backend serving its group, for owners referenced by
/// objects stored here (`None`: the group is not routed to a backend). kube's garbage
/// collector reaches such owners through the aggregator; this one asks before treating an
/// owner as gone. Unknown kinds and unavailable backends are reported as existing or as an
/// error, never as absent.
pub async fn remote_object_exists(
    aggregator: &Aggregator,
    group: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Option<Result<bool, crate::error::ApiError>> {
    let table = aggregator.table();
    let mut backends: Vec<&Arc<Backend>> = table.values().filter(|b| b.group == group).collect();
    if backends.is_empty() {
        return None;
    }
    backends.sort_by_key(|b| std::cmp::Reverse(b.version_priority));
    for b in backends {
        let Some(resource) = b.discovery.as_ref().and_then(|d| {
            d.get("resources")?
                .as_array()?
                .iter()
                .find(|r| {
                    r.get("kind").and_then(Value::as_str) == Some(kind)
                        && r.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| !n.contains('/'))
                })
                .cloned()
        }) else {
            continue;
        };
        let plural = resource
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let namespaced = resource
            .get("namespaced")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let path = if namespaced {
            format!(
                "/apis/{group}/{}/namespaces/{namespace}/{plural}/{name}",
                b.version
            )
        } else {
            format!("/apis/{group}/{}/{plural}/{name}", b.version)
        };
        let Ok(req) = http::Request::get(path.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Body::empty())
        else {
            return Some(Ok(true));
        };
        let (parts, body) = req.into_parts();
        let resp = proxy(b, parts, body, &crate::auth::system_user()).await;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Some(Ok(false));
        }
        if !status.is_success() {
            return Some(Err(crate::error::ApiError::unavailable(format!(
                "cannot look up {kind} {name} in APIService {}: {status}",
                b.api_service
            ))));
        }
        let bytes = match crate::body::read_limited(resp.into_body(), 16 * 1024 * 1024).await {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        let found = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| {
            v.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        return Some(Ok(found.is_none_or(|u| u == uid)));
    }
    // The backend's discovery does not name the kind (yet): assume it exists.
    Some(Ok(true))
}

/// Everything this server's aggregation layer needs at start: the front-proxy identity
/// (created in `pki_dir` when missing) and, published for aggregated servers, the
/// `extension-apiserver-authentication` ConfigMap naming `client_ca_pem` and the front-proxy
/// CA. Returns the running availability controller.
pub async fn start(
    state: &Arc<ApiState>,
    aggregator: &Arc<Aggregator>,
    pki_dir: &std::path::Path,
    client_ca_pem: &str,
) -> Result<available::Controller, AggregatorError> {
    let fp = front_proxy::ensure(pki_dir)?;
    front_proxy::publish(state, front_proxy::authentication_data(client_ca_pem, &fp))
        .await
        .map_err(|e| AggregatorError::Publish(e.message))?;
    aggregator.set_front_proxy(fp);
    Ok(available::start(state.clone(), aggregator.clone()))
}

/// Why the aggregation layer could not start.
#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    /// The front-proxy files failed.
    #[error(transparent)]
    FrontProxy(#[from] front_proxy::FrontProxyError),
    /// The authentication ConfigMap could not be written.
    #[error("publishing extension-apiserver-authentication: {0}")]
    Publish(String),
}
