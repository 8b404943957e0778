//! The APIService availability controller: keeps the route table and each APIService's
//! `Available` condition, following kube-aggregator's `AvailableConditionController`
//! (pkg/controllers/status/remote/remote_available_controller.go) for APIServices with a
//! service — resolve the Service, then GET `/apis/<group>/<version>` as
//! `system:kube-aggregator` in `system:masters` with five parallel attempts, any 2xx/3xx
//! passing — and its local counterpart for APIServices without one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use futures::future::join_all;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::apiservice::{self, AVAILABLE, ApiService, Condition};
use super::{Aggregator, Backend, RouteTable};
use crate::openapi::Published;
use crate::proxy::forward::{self, Outbound};
use crate::proxy::transport::{self, Dialer, HttpClient, TlsSettings};
use crate::registry::{Registry, Subresource, WriteContext};
use crate::state::ApiState;

/// How often the controller looks for changed APIServices and Services.
const POLL: Duration = Duration::from_millis(250);
/// Default re-check interval of an available backend (kube-aggregator resyncs every 30 s).
pub const RECHECK: Duration = Duration::from_secs(30);
/// First re-check delay of an unavailable backend; doubles up to the re-check interval.
const RETRY: Duration = Duration::from_secs(1);
/// Parallel discovery attempts per check.
const ATTEMPTS: usize = 5;
/// Timeout of one attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery or OpenAPI document read from a backend.
const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// The running controller; dropping it stops it.
#[derive(Debug)]
pub struct Controller {
    task: JoinHandle<()>,
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the controller. Must run inside a runtime.
pub fn start(state: Arc<ApiState>, aggregator: Arc<Aggregator>) -> Controller {
    let mut tracked: HashMap<String, Tracked> = HashMap::new();
    prime(&state, &aggregator, &mut tracked);
    let weak = Arc::downgrade(&state);
    drop(state);
    let task = tokio::spawn(async move {
        loop {
            let Some(state) = weak.upgrade() else {
                return;
            };
            reconcile(&state, &aggregator, &mut tracked).await;
            drop(state);
            tokio::time::sleep(POLL).await;
        }
    });
    Controller { task }
}

/// What the controller remembers about one remote APIService.
struct Tracked {
    /// What the transport was built from; a change rebuilds it and re-checks at once.
    fingerprint: String,
    target: Option<(http::uri::Authority, HttpClient)>,
    transport_error: Option<String>,
    resolve_error: Option<Condition>,
    next_check: Instant,
    failures: u32,
    condition: Option<Condition>,
    discovery: Option<Arc<Value>>,
    openapi: Option<Arc<Published>>,
}

fn cache_objects(state: &ApiState, group: &str, version: &str, plural: &str) -> Vec<Value> {
    let snapshot = state.catalog.snapshot();
    let Some(def) = snapshot.get(group, version, plural) else {
        return vec![];
    };
    match state.cache(def) {
        Ok(c) => c.all().iter().map(|o| o.value()).collect(),
        Err(_) => vec![],
    }
}

fn service_object(state: &ApiState, ns: &str, name: &str) -> Option<(Value, i64)> {
    let snapshot = state.catalog.snapshot();
    let def = snapshot.get("", "v1", "services")?;
    let o = state.cache(def).ok()?.get(&def.key(ns, name)?)?;
    Some((o.value(), o.rv))
}

/// The APIServices the aggregator acts on. One for a group/version of registered kinds this
/// server serves itself (Karmada's `v1alpha1.cluster.karmada.io`, pointing at karmada-aggregated-apiserver,
/// in the etcd of a Karmada control plane this server took over) is left out unless
/// configured otherwise: neither routed nor checked, and its object left as it is, so that a
/// kube-apiserver started on the same etcd again finds it as it was.
fn api_services(state: &ApiState) -> Vec<ApiService> {
    let snapshot = state.catalog.snapshot();
    let native = |a: &ApiService| {
        !state.config.registered_groups_from_apiservices
            && snapshot.resources.iter().any(|r| {
                matches!(r.source, crate::resources::Source::Registered { .. })
                    && r.group == a.group
                    && r.version == a.version
            })
    };
    cache_objects(state, "apiregistration.k8s.io", "v1", "apiservices")
        .iter()
        .filter_map(ApiService::from_json)
        .filter(|a| a.service.is_none() || !native(a))
        .collect()
}

/// Routes from the stored APIServices and their stored conditions, before the first checks
/// (kube-aggregator serves a backend by its recorded `Available` condition, too).
fn prime(state: &ApiState, aggregator: &Aggregator, tracked: &mut HashMap<String, Tracked>) {
    let services = api_services(state);
    sync_entries(state, aggregator, &services, tracked, Instant::now());
    for a in &services {
        if let Some(entry) = tracked.get_mut(&a.name) {
            entry.condition = a.available.clone();
        }
    }
    publish(aggregator, &services, tracked);
}

/// Resolves and connects the remote APIServices whose Service or spec changed; returns the
/// indices of those due for a check.
fn sync_entries(
    state: &ApiState,
    aggregator: &Aggregator,
    services: &[ApiService],
    tracked: &mut HashMap<String, Tracked>,
    now: Instant,
) -> Vec<usize> {
    let mut due = Vec::new();
    for (i, a) in services.iter().enumerate() {
        let Some(svc_ref) = &a.service else {
            continue;
        };
        let svc = service_object(state, &svc_ref.namespace, &svc_ref.name);
        let fingerprint = format!(
            "{}|{}|{:?}|{}|{:?}|{}",
            a.group,
            a.version,
            svc_ref,
            a.insecure,
            svc.as_ref().map(|(_, rv)| *rv),
            String::from_utf8_lossy(&a.ca_bundle)
        );
        let entry = tracked.entry(a.name.clone()).or_insert_with(|| Tracked {
            fingerprint: String::new(),
            target: None,
            transport_error: None,
            resolve_error: None,
            next_check: now,
            failures: 0,
            condition: None,
            discovery: None,
            openapi: None,
        });
        if entry.fingerprint != fingerprint {
            entry.fingerprint = fingerprint;
            entry.next_check = now;
            entry.failures = 0;
            entry.target = None;
            entry.transport_error = None;
            entry.resolve_error = None;
            match apiservice::resolve(svc_ref, svc.as_ref().map(|(v, _)| v)) {
                Err(c) => entry.resolve_error = Some(c),
                Ok((host, port)) => match build_client(aggregator, a, &host, port) {
                    Ok(t) => entry.target = Some(t),
                    Err(e) => entry.transport_error = Some(e),
                },
            }
        }
        if entry.next_check <= now {
            due.push(i);
        }
    }
    let live: Vec<&str> = services.iter().map(|a| a.name.as_str()).collect();
    tracked.retain(|k, _| live.contains(&k.as_str()));
    due
}

/// Publishes the route table of the remote APIServices.
fn publish(aggregator: &Aggregator, services: &[ApiService], tracked: &HashMap<String, Tracked>) {
    let mut table = RouteTable::new();
    for a in services {
        if a.service.is_none() {
            continue;
        }
        let Some(entry) = tracked.get(&a.name) else {
            continue;
        };
        table.insert(
            (a.group.clone(), a.version.clone()),
            Arc::new(Backend {
                api_service: a.name.clone(),
                group: a.group.clone(),
                version: a.version.clone(),
                group_priority: a.group_priority,
                version_priority: a.version_priority,
                target: entry.target.clone(),
                transport_error: entry.transport_error.clone(),
                available: entry.condition.as_ref().is_some_and(Condition::is_true),
                discovery: entry.discovery.clone(),
                openapi: entry.openapi.clone(),
            }),
        );
    }
    aggregator.set_table(table);
}

async fn reconcile(
    state: &Arc<ApiState>,
    aggregator: &Aggregator,
    tracked: &mut HashMap<String, Tracked>,
) {
    let services = api_services(state);
    let recheck = aggregator.recheck_interval();
    for a in services.iter().filter(|a| a.service.is_none()) {
        let local = Condition::new("True", "Local", "Local APIServices are always available");
        if a.available.as_ref() != Some(&local) {
            write_condition(state, &a.name, &local).await;
        }
    }
    let due: Vec<&ApiService> = sync_entries(state, aggregator, &services, tracked, Instant::now())
        .into_iter()
        .map(|i| &services[i])
        .collect();

    let checks = join_all(due.iter().map(|a| {
        let entry = &tracked[&a.name];
        let target = entry.target.clone();
        let resolve_error = entry.resolve_error.clone();
        let transport_error = entry.transport_error.clone();
        let previous = entry.openapi.clone();
        async move {
            if let Some(c) = resolve_error {
                return (c, None, None);
            }
            if let Some(e) = transport_error {
                return (
                    Condition::new("False", "FailedDiscoveryCheck", e),
                    None,
                    None,
                );
            }
            match &target {
                Some((authority, client)) => {
                    let (cond, discovery) = check(client, authority, &a.group, &a.version).await;
                    let openapi = if cond.is_true() {
                        published(client, authority, &a.group, &a.version, previous).await
                    } else {
                        previous
                    };
                    (cond, discovery, openapi)
                }
                None => (
                    Condition::new("False", "FailedDiscoveryCheck", "no endpoint"),
                    None,
                    None,
                ),
            }
        }
    }))
    .await;
    for (a, (cond, discovery, openapi)) in due.iter().zip(checks) {
        let Some(entry) = tracked.get_mut(&a.name) else {
            continue;
        };
        if cond.is_true() {
            entry.failures = 0;
            entry.next_check = Instant::now() + recheck;
            if discovery.is_some() {
                entry.discovery = discovery.map(Arc::new);
            }
            entry.openapi = openapi;
        } else {
            entry.failures = entry.failures.saturating_add(1);
            let backoff = RETRY.saturating_mul(1u32 << entry.failures.min(5).saturating_sub(1));
            entry.next_check = Instant::now() + backoff.min(recheck);
            tracing::debug!(apiservice = %a.name, reason = %cond.reason, message = %cond.message, "APIService unavailable");
        }
        if a.available.as_ref() != Some(&cond) {
            write_condition(state, &a.name, &cond).await;
        }
        entry.condition = Some(cond);
    }

    publish(aggregator, &services, tracked);
}

/// A pooled client towards a backend: TLS verified as `<svc>.<ns>.svc` against the
/// APIService's caBundle (or not at all), presenting the front-proxy client certificate.
fn build_client(
    aggregator: &Aggregator,
    a: &ApiService,
    host: &str,
    port: u16,
) -> Result<(http::uri::Authority, HttpClient), String> {
    let fp = aggregator
        .front_proxy()
        .ok_or_else(|| "the front-proxy client certificate is not configured".to_string())?;
    let tls = transport::client_config(&TlsSettings {
        ca_bundle: a.ca_bundle.clone(),
        insecure: a.insecure,
        client_cert: Some((fp.client_cert_pem.clone(), fp.client_key_pem.clone())),
        tls13_only: false,
    })
    .map_err(|e| e.to_string())?;
    let server_name = a
        .server_name()
        .and_then(|n| rustls::pki_types::ServerName::try_from(n).ok());
    let authority: http::uri::Authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
    .parse()
    .map_err(|e| format!("invalid service address {host}:{port}: {e}"))?;
    Ok((
        authority,
        transport::http_client(Dialer::new(tls, server_name, netproxy::ProxySource::Direct)),
    ))
}

/// One availability check: [`ATTEMPTS`] parallel GETs of the group/version's discovery.
async fn check(
    client: &HttpClient,
    authority: &http::uri::Authority,
    group: &str,
    version: &str,
) -> (Condition, Option<Value>) {
    let url = format!("https://{authority}/apis/{group}/{version}");
    let attempts = (0..ATTEMPTS).map(|_| attempt(client, &url));
    let results = join_all(attempts).await;
    let mut last_error = String::new();
    for r in results {
        match r {
            Ok(body) => {
                return (
                    Condition::new("True", "Passed", "all checks passed"),
                    serde_json::from_slice::<Value>(&body).ok().filter(|v| {
                        v.get("kind").and_then(Value::as_str) == Some("APIResourceList")
                    }),
                );
            }
            Err(e) => last_error = e,
        }
    }
    (
        Condition::new("False", "FailedDiscoveryCheck", last_error),
        None,
    )
}

/// The OpenAPI documents a backend publishes, as kube-aggregator's downloaders fetch them:
/// `/openapi/v2`, and the `/openapi/v3` document its root links for the group/version. A
/// document that could not be fetched keeps its previous copy, one the backend does not
/// serve (404, or no link) is dropped; unchanged documents keep their previous `Arc`, so
/// the merged documents are not rebuilt.
async fn published(
    client: &HttpClient,
    authority: &http::uri::Authority,
    group: &str,
    version: &str,
    previous: Option<Arc<Published>>,
) -> Option<Arc<Published>> {
    let base = format!("https://{authority}");
    let v2 = match fetch(client, &format!("{base}/openapi/v2")).await {
        Ok((status, body)) if status.is_success() => serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(Value::is_object),
        Ok((StatusCode::NOT_FOUND, _)) => None,
        _ => previous.as_ref().and_then(|p| p.v2.clone()),
    };
    let v3 = match v3_document(client, &base, group, version).await {
        Ok(doc) => doc,
        Err(e) => {
            tracing::debug!(%group, %version, error = %e, "OpenAPI v3 of an APIService");
            previous.as_ref().and_then(|p| p.v3.clone())
        }
    };
    let fresh = Published { v2, v3 };
    match previous {
        Some(p) if p.same_as(&fresh) => Some(p),
        _ if fresh.v2.is_none() && fresh.v3.is_none() => None,
        _ => Some(Arc::new(fresh)),
    }
}

/// The backend's `/openapi/v3` document of a group/version, through its root's link.
async fn v3_document(
    client: &HttpClient,
    base: &str,
    group: &str,
    version: &str,
) -> Result<Option<crate::openapi::Document>, String> {
    let (status, body) = fetch(client, &format!("{base}/openapi/v3")).await?;
    if status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(format!("{base}/openapi/v3: {}", status.as_u16()));
    }
    let root: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let key = crate::openapi::document::gv_key(group, version);
    let Some(url) = root
        .get("paths")
        .and_then(|p| p.get(&key))
        .and_then(|e| e.get("serverRelativeURL"))
        .and_then(Value::as_str)
        .filter(|u| u.starts_with('/'))
    else {
        return Ok(None);
    };
    let (status, body) = fetch(client, &format!("{base}{url}")).await?;
    if !status.is_success() {
        return Err(format!("{base}{url}: {}", status.as_u16()));
    }
    Ok(Some(crate::openapi::Document::from_bytes(body)))
}

/// One discovery check: a 2xx or 3xx answer passes.
async fn attempt(client: &HttpClient, url: &str) -> Result<bytes::Bytes, String> {
    let (status, body) = fetch(client, url).await?;
    if status < StatusCode::OK || status >= StatusCode::MULTIPLE_CHOICES {
        return Err(format!(
            "failing or missing response from {url}: bad status from {url}: {}",
            status.as_u16()
        ));
    }
    Ok(body)
}

/// One GET as `system:kube-aggregator`: the status and body, or why there was none.
async fn fetch(client: &HttpClient, url: &str) -> Result<(StatusCode, bytes::Bytes), String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let mut headers = http::HeaderMap::new();
    let aggregator = crate::auth::UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec![crate::auth::MASTERS_GROUP.into()],
        ..Default::default()
    };
    forward::front_proxy(&mut headers, &aggregator).map_err(|e| e.message)?;
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let out = Outbound {
        method: http::Method::GET,
        uri,
        headers,
        body: Body::empty(),
        upgrade: None,
        upgrade_protocol: None,
    };
    let work = async {
        let resp = forward::forward(client, out, url)
            .await
            .map_err(|e| format!("failing or missing response from {url}: {}", e.message()))?;
        let status = resp.status();
        let body = http_body_util::Limited::new(resp.into_body(), MAX_DOCUMENT_BYTES)
            .collect()
            .await
            .map_err(|e| format!("failing or missing response from {url}: {e}"))?;
        Ok((status, body.to_bytes()))
    };
    tokio::time::timeout(ATTEMPT_TIMEOUT, work)
        .await
        .map_err(|_| format!("timed out waiting for {url}"))?
}

/// Writes the Available condition through the status subresource, keeping the transition
/// time when the status did not change (`SetAPIServiceCondition`).
async fn write_condition(state: &Arc<ApiState>, name: &str, cond: &Condition) {
    let Some(def) = state
        .catalog
        .snapshot()
        .get("apiregistration.k8s.io", "v1", "apiservices")
        .cloned()
    else {
        return;
    };
    let ctx = WriteContext {
        manager: "kube-apiserver".into(),
        dry_run: false,
        apply: false,
    };
    let now = crate::object::now_rfc3339();
    let result = Registry::new(state, def)
        .guaranteed_update("", name, Subresource::Status, &ctx, |cur| {
            let mut next = cur.clone();
            let mut conditions: Vec<Value> = next
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let previous = conditions
                .iter()
                .position(|c| c.get("type").and_then(Value::as_str) == Some(AVAILABLE));
            let transition = previous
                .and_then(|i| {
                    let c = &conditions[i];
                    (c.get("status").and_then(Value::as_str) == Some(cond.status.as_str()))
                        .then(|| c.get("lastTransitionTime").cloned())
                        .flatten()
                })
                .unwrap_or_else(|| json!(now));
            let fresh = json!({
                "type": AVAILABLE,
                "status": cond.status,
                "lastTransitionTime": transition,
                "reason": cond.reason,
                "message": cond.message,
            });
            match previous {
                Some(i) => conditions[i] = fresh,
                None => conditions.push(fresh),
            }
            if !next.get("status").is_some_and(Value::is_object) {
                next["status"] = json!({});
            }
            next["status"]["conditions"] = Value::Array(conditions);
            Ok(next)
        })
        .await;
    if let Err(e) = result
        && e.code != 404
    {
        tracing::warn!(apiservice = %name, error = %e, "cannot update APIService status");
    }
}
