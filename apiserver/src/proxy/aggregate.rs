//! `clusters/*/proxy/...`: one request over every cluster, as Karmada's
//! `ProxyREST.connectAllClusters` (pkg/registry/cluster/storage/aggregate.go) serves it:
//! non-resource paths go to the control plane itself; a request naming an object goes to the
//! one cluster that has it (404 when none does, 409 "conflict resource" when several do);
//! other requests must be lists, merged from every cluster that answered 200. Pull clusters
//! take part through their agents' tunnels, as in the single-cluster proxy.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use futures::future::join_all;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;

use super::forward::{self, Outbound, plain_error};
use super::target::{Target, list_clusters};
use super::{ClusterProxy, ProxyRequest, tunnel, tunnel_uri};
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::request_info::{RequestInfo, parse_query, request_info};
use crate::state::ApiState;

/// The largest member answer merged into an all-clusters list.
const MAX_MEMBER_LIST_BYTES: usize = 512 * 1024 * 1024;

/// Serves a request for cluster `*`.
pub async fn serve(
    proxy: &ClusterProxy,
    state: &Arc<ApiState>,
    req: ProxyRequest,
) -> Result<Response, ApiError> {
    let query = parse_query(req.parts.uri.query());
    let info = request_info(&req.parts.method, &req.path, &query);
    if !info.is_resource_request {
        return proxy.to_control_plane(state, req).await;
    }
    let targets = all_routes(proxy, state).await;
    if !info.name.is_empty() && !info.name_from_selector {
        return named(proxy, state, targets, req, &info).await;
    }
    if info.verb != "list" {
        return Ok(plain_error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("Request verb {} is not support", info.verb),
        ));
    }
    list(targets, req).await
}

/// How the proxy reaches one cluster.
enum Route {
    /// Its API endpoint, with its credentials.
    Direct(Arc<Target>),
    /// Its agent's tunnel (a Pull cluster).
    Tunnel {
        cluster: String,
        sender: hyper::client::conn::http2::SendRequest<Body>,
    },
}

impl Route {
    fn cluster(&self) -> &str {
        match self {
            Route::Direct(t) => &t.cluster,
            Route::Tunnel { cluster, .. } => cluster,
        }
    }
}

/// Every cluster the proxy can reach now; the others are left out of the answer.
async fn all_routes(proxy: &ClusterProxy, state: &Arc<ApiState>) -> Vec<Route> {
    let clusters = list_clusters(state);
    let secrets = proxy.secrets();
    let found = join_all(clusters.iter().map(|c| async {
        match proxy.tunnels.sender(&c.name) {
            Some(sender) => Ok(Route::Tunnel {
                cluster: c.name.clone(),
                sender,
            }),
            None => proxy
                .targets
                .for_cluster(state, &secrets, c)
                .await
                .map(Route::Direct),
        }
    }))
    .await;
    found
        .into_iter()
        .zip(&clusters)
        .filter_map(|(t, c)| match t {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::debug!(cluster = %c.name, error = %e, "skipping cluster");
                None
            }
        })
        .collect()
}

/// The URL Karmada probes to find an object's cluster (`requestURLStr`): the object's own
/// path, without the `exec`/`log` subresources (which cannot be read with GET).
fn object_path(info: &RequestInfo) -> String {
    let mut parts = vec![info.api_prefix.clone()];
    if !info.api_group.is_empty() {
        parts.push(info.api_group.clone());
    }
    parts.push(info.api_version.clone());
    if !info.namespace.is_empty() {
        parts.push("namespaces".into());
        parts.push(info.namespace.clone());
    }
    if !info.resource.is_empty() {
        parts.push(info.resource.clone());
    }
    if !info.name.is_empty() {
        parts.push(info.name.clone());
    }
    if !info.subresource.is_empty() && info.subresource != "exec" && info.subresource != "log" {
        parts.push(info.subresource.clone());
    }
    format!("/{}", parts.join("/"))
}

/// The headers of a probe: impersonation, the cluster's credentials (the agent adds its own
/// on the far side of a tunnel), and the caller's Accept when kept.
fn member_headers(
    route: &Route,
    user: &UserInfo,
    accept: Option<HeaderValue>,
) -> Result<HeaderMap, ApiError> {
    let mut h = HeaderMap::new();
    forward::impersonate(&mut h, user)?;
    if let Route::Direct(t) = route {
        h.insert(header::AUTHORIZATION, t.authorization.clone());
    }
    if let Some(a) = accept {
        h.insert(header::ACCEPT, a);
    }
    Ok(h)
}

/// GETs `path?query` from a cluster; returns the status and (when asked) the body.
async fn probe(
    route: &Route,
    user: &UserInfo,
    path: &str,
    query: Option<&str>,
    accept: Option<HeaderValue>,
    read_body: bool,
) -> Option<(StatusCode, Option<bytes::Bytes>, HeaderMap)> {
    let uri = match route {
        Route::Direct(t) => t.uri(path, query).ok()?,
        Route::Tunnel { .. } => tunnel_uri(path, query).ok()?,
    };
    let out = Outbound {
        method: Method::GET,
        uri,
        headers: member_headers(route, user, accept).ok()?,
        body: Body::empty(),
        upgrade: None,
        upgrade_protocol: None,
    };
    let cluster = route.cluster();
    let answer = match route {
        Route::Direct(t) => forward::forward(&t.client, out, &format!("cluster {cluster}"))
            .await
            .map_err(|e| e.message()),
        Route::Tunnel { sender, .. } => tunnel::forward(sender.clone(), cluster, out)
            .await
            .map_err(|e| e.to_string()),
    };
    let resp = match answer {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(%cluster, error = %e, "cluster request failed");
            return None;
        }
    };
    let status = resp.status();
    let headers = resp.headers().clone();
    if !read_body || status != StatusCode::OK {
        return Some((status, None, headers));
    }
    let limited = http_body_util::Limited::new(resp.into_body(), MAX_MEMBER_LIST_BYTES);
    match limited.collect().await {
        Ok(c) => Some((status, Some(c.to_bytes()), headers)),
        Err(e) => {
            tracing::debug!(%cluster, error = %e, "reading a cluster's answer failed");
            None
        }
    }
}

async fn named(
    proxy: &ClusterProxy,
    state: &Arc<ApiState>,
    targets: Vec<Route>,
    req: ProxyRequest,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    let path = object_path(info);
    let results = join_all(
        targets
            .iter()
            .map(|t| probe(t, &req.user, &path, None, None, false)),
    )
    .await;
    let owners: Vec<&Route> = targets
        .iter()
        .zip(results)
        .filter(|(_, r)| matches!(r, Some((StatusCode::OK, _, _))))
        .map(|(t, _)| t)
        .collect();
    match owners.as_slice() {
        [] => Ok(plain_error(
            StatusCode::NOT_FOUND,
            "resource not found or don't have permission to get it",
        )),
        [owner] => super::to_cluster(proxy, state, owner.cluster(), req).await,
        many => {
            let names: Vec<&str> = many.iter().map(|t| t.cluster()).collect();
            Ok(plain_error(
                StatusCode::CONFLICT,
                &format!(
                    "conflict resource, exist in more than one cluster: {}",
                    names.join(",")
                ),
            ))
        }
    }
}

/// Keeps a caller's Table request (so that `kubectl get` prints columns): only the JSON
/// forms of the Accept header, which every member answers and which can be merged.
fn mergeable_accept(headers: &HeaderMap) -> Option<HeaderValue> {
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    let kept: Vec<&str> = accept
        .split(',')
        .map(str::trim)
        .filter(|r| r.starts_with("application/json"))
        .collect();
    if kept.iter().any(|r| r.contains("as=Table")) {
        HeaderValue::from_str(&kept.join(",")).ok()
    } else {
        None
    }
}

async fn list(targets: Vec<Route>, req: ProxyRequest) -> Result<Response, ApiError> {
    let accept = mergeable_accept(&req.parts.headers);
    let query = req.parts.uri.query().map(str::to_string);
    let (user, path) = (&req.user, &req.path);
    let results = join_all(
        targets
            .iter()
            .map(|t| probe(t, user, path, query.as_deref(), accept.clone(), true)),
    )
    .await;
    let mut merged: Option<Value> = None;
    let mut first_headers: Option<HeaderMap> = None;
    for (t, r) in targets.iter().zip(results) {
        let Some((status, Some(body), headers)) = r else {
            continue;
        };
        if status != StatusCode::OK {
            tracing::debug!(cluster = %t.cluster(), %status, "list not ok");
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&body) else {
            tracing::debug!(cluster = %t.cluster(), "answer is not a JSON list");
            continue;
        };
        match merged.as_mut() {
            None => {
                merged = Some(v);
                first_headers = Some(headers);
            }
            Some(acc) => append_items(acc, v),
        }
    }
    let Some(merged) = merged else {
        return Ok(plain_error(StatusCode::NOT_FOUND, "not found"));
    };
    let bytes = serde_json::to_vec(&merged).map_err(ApiError::internal)?;
    let mut resp = Response::new(Body::from(bytes));
    if let Some(h) = first_headers {
        for (k, v) in &h {
            if k != header::CONTENT_LENGTH && k != header::CONTENT_TYPE {
                resp.headers_mut().append(k.clone(), v.clone());
            }
        }
    }
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

/// Appends another cluster's `items` (or, for Tables, `rows`) to the merged list.
fn append_items(acc: &mut Value, other: Value) {
    let field = if acc.get("kind").and_then(|k| k.as_str()) == Some("Table") {
        "rows"
    } else {
        "items"
    };
    let Value::Object(mut other) = other else {
        return;
    };
    let Some(Value::Array(more)) = other.remove(field) else {
        return;
    };
    match acc.get_mut(field) {
        Some(Value::Array(items)) => items.extend(more),
        _ => {
            if let Value::Object(m) = acc {
                m.insert(field.to_string(), Value::Array(more));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_paths() {
        let cases: &[(&str, &str)] = &[
            (
                "/api/v1/namespaces/default/pods/p1",
                "/api/v1/namespaces/default/pods/p1",
            ),
            (
                "/api/v1/namespaces/default/pods/p1/log",
                "/api/v1/namespaces/default/pods/p1",
            ),
            (
                "/api/v1/namespaces/default/pods/p1/exec",
                "/api/v1/namespaces/default/pods/p1",
            ),
            (
                "/apis/apps/v1/namespaces/ns/deployments/d/scale",
                "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            ),
            ("/api/v1/nodes/n1", "/api/v1/nodes/n1"),
        ];
        for (path, want) in cases {
            let info = request_info(&Method::GET, path, &Default::default());
            assert_eq!(object_path(&info), *want, "{path}");
        }
    }

    #[test]
    fn merging() {
        let mut a = json!({"kind": "PodList", "items": [{"n": 1}]});
        append_items(
            &mut a,
            json!({"kind": "PodList", "items": [{"n": 2}, {"n": 3}]}),
        );
        assert_eq!(a["items"].as_array().unwrap().len(), 3);
        let mut t = json!({"kind": "Table", "columnDefinitions": [], "rows": [{"cells": [1]}]});
        append_items(&mut t, json!({"kind": "Table", "rows": [{"cells": [2]}]}));
        assert_eq!(t["rows"].as_array().unwrap().len(), 2);
        let mut empty = json!({"kind": "PodList", "items": null});
        append_items(&mut empty, json!({"items": [{"n": 1}]}));
        assert_eq!(empty["items"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn accept_for_tables_only() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
            ),
        );
        assert_eq!(
            mergeable_accept(&h).unwrap(),
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/vnd.kubernetes.protobuf,application/json"),
        );
        assert!(mergeable_accept(&h).is_none());
    }
}
