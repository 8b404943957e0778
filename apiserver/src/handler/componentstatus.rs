//! ComponentStatus (deprecated since Kubernetes 1.19, still served): kube-apiserver answers it
//! from its own probes, never from storage (pkg/registry/core/componentstatus and
//! `componentStatusStorage.serversToValidate` in pkg/registry/core/rest): the
//! controller-manager and the scheduler at their default secure ports on 127.0.0.1 (so a
//! control plane whose components run elsewhere shows them Unhealthy, as kube does), and
//! `etcd-N` for each storage backend.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::response::Response;
use futures::future::join_all;
use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::handler::{Ctx, ListItems, ListMeta, render_list, render_object};
use crate::proxy::transport::{self, Dialer, TlsSettings};

/// kube's `probeTimeOut` for component probes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of a probe's body becomes the message (kube's HTTP prober reads at most 10 KiB).
const MAX_BODY: usize = 10 * 1024;

/// One component kube-apiserver validates.
enum Server {
    /// An HTTPS health endpoint, certificate unchecked (`InsecureSkipVerify`).
    Http { port: u16 },
    /// The storage backend.
    Storage,
}

/// `serversToValidate`, in the order kube's map iteration happens to list them most often.
fn servers() -> [(&'static str, Server); 3] {
    [
        // ports.KubeControllerManagerPort and kubeschedulerconfig.DefaultKubeSchedulerPort.
        ("scheduler", Server::Http { port: 10259 }),
        ("controller-manager", Server::Http { port: 10257 }),
        ("etcd-0", Server::Storage),
    ]
}

/// (probe result, message, error) as kube's `DoServerCheck` returns them.
struct Check {
    status: &'static str,
    message: String,
    error: String,
}

async fn check(ctx: &Ctx, server: &Server) -> Check {
    match server {
        Server::Storage => match ctx.chain.state.store.health().await {
            Ok(()) => Check {
                status: "True",
                message: "ok".into(),
                error: String::new(),
            },
            Err(e) => Check {
                status: "False",
                message: String::new(),
                error: e.to_string(),
            },
        },
        Server::Http { port } => http_probe(*port).await,
    }
}

/// kube's HTTP prober: 2xx and 3xx are Success with the body as message; other statuses are
/// Failure; a request that fails is Failure with Go's error text as message.
async fn http_probe(port: u16) -> Check {
    let url = format!("https://127.0.0.1:{port}/healthz");
    let failure = |message: String| Check {
        status: "False",
        message,
        error: String::new(),
    };
    let tls = match transport::client_config(&TlsSettings {
        insecure: true,
        ..Default::default()
    }) {
        Ok(tls) => tls,
        Err(e) => {
            return Check {
                status: "Unknown",
                message: String::new(),
                error: e.to_string(),
            };
        }
    };
    let client = transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct));
    let req = match http::Request::get(&url).body(transport::Body::empty()) {
        Ok(req) => req,
        Err(e) => return failure(format!("Get \"{url}\": {e}")),
    };
    let work = async {
        let resp = client
            .request(req)
            .await
            .map_err(|e| go_error(&url, port, &e))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("Get \"{url}\": {e}"))?
            .to_bytes();
        let body = String::from_utf8_lossy(&body[..body.len().min(MAX_BODY)]).into_owned();
        Ok::<_, String>((status, body))
    };
    match tokio::time::timeout(PROBE_TIMEOUT, work).await {
        Err(_) => failure(format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
        Ok(Err(message)) => failure(message),
        Ok(Ok((status, body))) if status.is_success() || status.is_redirection() => Check {
            status: "True",
            message: body,
            error: String::new(),
        },
        Ok(Ok((status, _))) => failure(format!(
            "HTTP probe failed with statuscode: {}",
            status.as_u16()
        )),
    }
}

/// A failed request in Go's words (`Get "URL": dial tcp ADDR: connect: connection refused`).
fn go_error(url: &str, port: u16, e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = Some(e);
    let mut refused = false;
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            refused = true;
        }
        cause = c.source();
    }
    if refused {
        format!("Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused")
    } else {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        format!("Get \"{url}\": {text}")
    }
}

fn component_status(name: &str, c: Check) -> Value {
    let mut condition = json!({"type": "Healthy", "status": c.status});
    if !c.message.is_empty() {
        condition["message"] = json!(c.message);
    }
    if !c.error.is_empty() {
        condition["error"] = json!(c.error);
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// `GET /api/v1/componentstatuses/NAME`: kube answers an unknown name with a plain error (a
/// 500 whose message is `Component not found: NAME`); here it is the 404 it means.
pub async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let name = ctx.info.name.as_str();
    let Some((name, server)) = servers().into_iter().find(|(n, _)| *n == name) else {
        return Err(ApiError::not_found("", "componentstatuses", name));
    };
    let status = component_status(name, check(ctx, &server).await);
    render_object(ctx, StatusCode::OK, &status, vec![])
}

/// `GET /api/v1/componentstatuses`: every component, probed in parallel. Label and field
/// selectors filter as kube's predicate does (components have no labels, so any label
/// selector requirement leaves none).
pub async fn list(ctx: &Ctx) -> Result<Response, ApiError> {
    let servers = servers();
    let checks = join_all(servers.iter().map(|(_, s)| check(ctx, s))).await;
    let opts = crate::options::ListOptions::parse(&ctx.query)?;
    let items: Vec<Value> = servers
        .iter()
        .zip(checks)
        .map(|((name, _), c)| component_status(name, c))
        .filter(|item| {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            opts.label_selector.matches(&BTreeMap::new())
                && opts
                    .field_selector
                    .matches(|f| (f == "metadata.name").then(|| name.to_string()))
        })
        .collect();
    render_list(ctx, &ListMeta::default(), ListItems::Values(&items))
}
