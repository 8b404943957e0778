//! The cluster proxy: `/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy/PATH` forwards to
//! member cluster NAME as the caller, the way karmada-aggregated-apiserver's `ProxyREST`
//! (pkg/registry/cluster/storage/proxy.go) does: authenticated with the cluster's
//! impersonator token, with `Impersonate-User` and one `Impersonate-Group` per caller group,
//! so that the member's own RBAC decides. Authorization of `clusters/proxy` itself happened
//! before (the request info names resource `clusters`, subresource `proxy`).

pub mod aggregate;
pub mod secrets;
pub mod target;
pub mod tunnel;

// The generic transport and forwarding are the library's, shared with the aggregator.
pub use genericapiserver::proxy::{forward, transport};

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::response::Response;
use http::{Method, header};

use crate::auth::{InProcessIdentity, UserInfo};
use crate::error::ApiError;
use crate::request_info::RequestInfo;
use crate::state::ApiState;
use forward::Outbound;
pub use secrets::{RemoteSecrets, SecretSource};
pub use target::{CLUSTER_GROUP, CLUSTER_VERSION, Targets};

/// Karmada's name for "every cluster" (`matchAllClusters`).
pub const ALL_CLUSTERS: &str = "*";

/// HTTP methods the proxy subresource connects (`proxyMethods`).
pub const PROXY_METHODS: &[Method] = &[
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
];

/// Where `clusters/*/proxy` sends non-resource requests.
#[derive(Clone)]
pub enum ControlPlane {
    /// This server, in process, as the caller: the handler chain's router, passed in at
    /// launch (the proxy sits beside the handler chain, not under it); `None` once the server
    /// is gone.
    Local(Arc<dyn Fn() -> Option<axum::Router> + Send + Sync>),
    /// A host API server (in `--aggregated` mode), with the server's own client, as
    /// karmada-aggregated-apiserver forwards to karmada-apiserver.
    Remote(kube::Client),
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlPlane::Local(_) => f.write_str("Local"),
            ControlPlane::Remote(_) => f.write_str("Remote"),
        }
    }
}

/// The proxy's per-server state: cached targets (one connection pool per cluster) and where
/// credentials and non-resource requests go.
#[derive(Debug, Default)]
pub struct ClusterProxy {
    /// Targets by cluster.
    pub targets: Targets,
    /// Agents' tunnels to Pull clusters, by cluster.
    pub tunnels: tunnel::Tunnels,
    secrets: OnceLock<SecretSource>,
    control_plane: OnceLock<ControlPlane>,
}

/// One request for the proxy.
pub struct ProxyRequest {
    /// The caller's request head (credentials still in it; they are dropped when forwarded).
    pub parts: http::request::Parts,
    /// The request body, streamed.
    pub body: Body,
    /// The authenticated caller.
    pub user: UserInfo,
    /// The proxied path: what follows `.../proxy` (starts with `/`, or is empty).
    pub path: String,
}

impl ClusterProxy {
    /// Reads member credentials from `source` instead of this server's Secrets (once).
    pub fn set_secrets(&self, source: SecretSource) {
        let _ = self.secrets.set(source);
    }

    /// Sends `*`'s non-resource requests to `cp` instead of this server (once).
    pub fn set_control_plane(&self, cp: ControlPlane) {
        let _ = self.control_plane.set(cp);
    }

    fn secrets(&self) -> SecretSource {
        self.secrets.get().cloned().unwrap_or_default()
    }

    async fn to_control_plane(
        &self,
        state: &Arc<ApiState>,
        req: ProxyRequest,
    ) -> Result<Response, ApiError> {
        let pq = match req.parts.uri.query() {
            Some(q) => format!("{}?{q}", path_or_root(&req.path)),
            None => path_or_root(&req.path).to_string(),
        };
        let mut out = http::Request::new(());
        *out.method_mut() = req.parts.method.clone();
        *out.headers_mut() = forward::end_to_end(&req.parts.headers, true);
        let Some(control_plane) = self.control_plane.get().cloned() else {
            return Err(ApiError::unavailable(
                "the cluster proxy has no route to the control plane yet",
            ));
        };
        match control_plane {
            ControlPlane::Local(local) => {
                *out.uri_mut() = pq
                    .parse()
                    .map_err(|_| ApiError::bad_request("invalid proxied path"))?;
                out.extensions_mut()
                    .insert(InProcessIdentity(Arc::new(req.user)));
                let out = out.map(|_| req.body);
                let router =
                    local().ok_or_else(|| ApiError::unavailable("the server is shutting down"))?;
                match tower::ServiceExt::oneshot(router, out).await {
                    Ok(r) => Ok(r),
                    Err(e) => match e {},
                }
            }
            ControlPlane::Remote(client) => {
                *out.uri_mut() = pq
                    .parse()
                    .map_err(|_| ApiError::bad_request("invalid proxied path"))?;
                let bytes =
                    crate::body::read_limited(req.body, state.config.max_request_bytes).await?;
                let out = out.map(|_| kube::client::Body::from(bytes.to_vec()));
                let resp = client.send(out).await.map_err(|e| {
                    ApiError::internal(format!("error trying to reach the control plane: {e}"))
                })?;
                let (parts, body) = resp.into_parts();
                let mut answer = Response::new(Body::new(body));
                *answer.status_mut() = parts.status;
                *answer.headers_mut() = forward::end_to_end(&parts.headers, false);
                Ok(answer)
            }
        }
    }
}

/// Decodes `%XX` escapes (invalid ones are kept as they are).
pub use netproxy::percent_decode;

fn path_or_root(p: &str) -> &str {
    if p.is_empty() { "/" } else { p }
}

/// The proxied path of `/apis/G/V/clusters/NAME/proxy[/PATH]`, taken from the raw path so
/// that escapes and trailing slashes reach the member unchanged.
pub fn proxied_path(raw: &str) -> &str {
    let mut rest = raw;
    for _ in 0..6 {
        rest = rest.strip_prefix('/').unwrap_or(rest);
        match rest.find('/') {
            Some(i) => rest = &rest[i..],
            None => return "",
        }
    }
    rest
}

/// True for the requests the cluster proxy serves: `clusters/NAME/proxy` of
/// `cluster.karmada.io`, when this server serves Clusters.
pub fn is_proxy_request(state: &ApiState, info: &RequestInfo) -> bool {
    is_cluster_subresource(state, info, "proxy")
}

/// True for `clusters/NAME/<subresource>` of `cluster.karmada.io`, when this server serves
/// Clusters: the shape of the proxy's and the tunnel's requests.
pub(crate) fn is_cluster_subresource(
    state: &ApiState,
    info: &RequestInfo,
    subresource: &str,
) -> bool {
    info.is_resource_request
        && info.subresource == subresource
        && info.resource == "clusters"
        && info.api_group == CLUSTER_GROUP
        && info.namespace.is_empty()
        && !info.name.is_empty()
        && state
            .catalog
            .snapshot()
            .get(&info.api_group, &info.api_version, "clusters")
            .is_some()
}

/// Serves one proxy request (the caller is authenticated and authorized).
pub async fn serve(
    state: &Arc<ApiState>,
    proxy: &ClusterProxy,
    parts: http::request::Parts,
    body: Body,
    user: UserInfo,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    if !PROXY_METHODS.contains(&parts.method) {
        return Err(ApiError::method_not_allowed(
            &parts.method.as_str().to_lowercase(),
            "ClusterProxyOptions",
        ));
    }
    let path = proxied_path(parts.uri.path()).to_string();
    // kube-apiserver reads names from the decoded path: kubectl sends `*` as `%2A`.
    let name = percent_decode(&info.name);
    if name == ALL_CLUSTERS {
        let req = ProxyRequest {
            parts,
            body,
            user,
            path,
        };
        return aggregate::serve(proxy, state, req).await;
    }
    let req = ProxyRequest {
        parts,
        body,
        user,
        path,
    };
    to_cluster(proxy, state, &name, req).await
}

/// Forwards one request to cluster `name`: through its agent's tunnel when one is open (a
/// Pull cluster), else straight to its API endpoint with the cluster's credentials.
pub(crate) async fn to_cluster(
    proxy: &ClusterProxy,
    state: &Arc<ApiState>,
    name: &str,
    req: ProxyRequest,
) -> Result<Response, ApiError> {
    let ProxyRequest {
        mut parts,
        body,
        user,
        path,
    } = req;
    if let Some(sender) = proxy.tunnels.sender(name) {
        let uri = tunnel_uri(&path, parts.uri.query())?;
        let mut out = Outbound::from_parts(&mut parts, uri, body);
        forward::impersonate(&mut out.headers, &user)?;
        return tunnel::forward(sender, name, out).await;
    }
    let target = match proxy.targets.get(state, &proxy.secrets(), name).await {
        Ok(t) => t,
        Err(e) => return Err(tunnel::unreachable(state, name, e).await),
    };
    let uri = target.uri(&path, parts.uri.query())?;
    let mut out = Outbound::from_parts(&mut parts, uri, body);
    forward::impersonate(&mut out.headers, &user)?;
    out.headers
        .insert(header::AUTHORIZATION, target.authorization.clone());
    forward::forward(&target.client, out, &format!("cluster {}", target.cluster))
        .await
        .map_err(|e| ApiError::internal(e.message()))
}

/// A proxied path and query as a tunnel request's URI (relative to the member's API root).
pub(crate) fn tunnel_uri(path: &str, query: Option<&str>) -> Result<http::Uri, ApiError> {
    let uri = match query {
        Some(q) => format!("{}?{q}", path_or_root(path)),
        None => path_or_root(path).to_string(),
    };
    uri.parse()
        .map_err(|_| ApiError::bad_request("invalid proxied path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        for (input, want) in [
            ("%2A", "*"),
            ("member1", "member1"),
            ("a%2", "a%2"),
            ("%zz", "%zz"),
            ("%e2%9c%93", "✓"),
        ] {
            assert_eq!(percent_decode(input), want, "{input}");
        }
    }

    #[test]
    fn proxied_paths() {
        let cases: &[(&str, &str)] = &[
            ("/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy", ""),
            ("/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/", "/"),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
                "/api/v1/pods",
            ),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/namespaces/a%2Fb/pods/",
                "/api/v1/namespaces/a%2Fb/pods/",
            ),
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/*/proxy/apis",
                "/apis",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(proxied_path(raw), *want, "{raw}");
        }
    }
}
