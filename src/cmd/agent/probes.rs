//! The agent's metrics and health probe endpoints, which karmada-agent serves through
//! controller-runtime on `--metrics-bind-address` and `--health-probe-bind-address`: plain
//! HTTP `/metrics` (the controllers' and work queues' series and the leader election's
//! `leader_election_master_status`) and `/healthz`, `/readyz` (its `ping` check: the process
//! answers).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use axum::Router;
use axum::http::header;
use axum::routing::get;
use controllers::runtime::AbortOnDrop;
use leaderelection::MasterStatus;

/// The election gauge of the current campaign (each certificate starts a new elector).
pub type StatusSlot = Arc<Mutex<Option<MasterStatus>>>;

/// Where an endpoint listens; `None`: it is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

/// An address flag as controller-runtime reads it: `0` turns the endpoint off, `:PORT`
/// listens on every interface.
pub fn parse_bind_address(s: &str) -> Result<BindAddress, String> {
    let s = s.trim();
    if s == "0" || s.is_empty() {
        return Ok(BindAddress(None));
    }
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.replacen("localhost:", "127.0.0.1:", 1),
    };
    full.parse().map(|a| BindAddress(Some(a))).map_err(|_| {
        format!("invalid bind address {s:?}: expected HOST:PORT with an IP address, :PORT, or 0 to disable")
    })
}

fn metrics_text(status: &StatusSlot) -> String {
    let mut text = component_base::metrics::global().render();
    if let Some(s) = status.lock().ok().and_then(|s| s.clone()) {
        text.push_str(&s.render());
    }
    text
}

async fn listen(addr: SocketAddr, what: &str, app: Router) -> anyhow::Result<AbortOnDrop> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening for {what} on {addr}"))?;
    let what = what.to_owned();
    Ok(AbortOnDrop(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "serving {what} stopped");
        }
    })))
}

/// Starts the endpoints that are on; they stop when the returned handles are dropped.
pub async fn serve(
    metrics: BindAddress,
    health: BindAddress,
    status: StatusSlot,
) -> anyhow::Result<Vec<AbortOnDrop>> {
    let mut tasks = Vec::new();
    if let Some(addr) = metrics.0 {
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let text = metrics_text(&status);
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        );
        tasks.push(listen(addr, "metrics", app).await?);
    }
    if let Some(addr) = health.0 {
        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/healthz/ping", get(|| async { "ok" }))
            .route("/readyz", get(|| async { "ok" }));
        tasks.push(listen(addr, "health probes", app).await?);
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_read_as_controller_runtime_reads_them() {
        let parsed = |s: &str| parse_bind_address(s).map(|a| a.0);
        assert_eq!(parsed("0"), Ok(None));
        assert_eq!(parsed(":8080"), Ok(Some("0.0.0.0:8080".parse().unwrap())));
        assert_eq!(
            parsed("127.0.0.1:10357"),
            Ok(Some("127.0.0.1:10357".parse().unwrap()))
        );
        assert_eq!(
            parsed("localhost:9"),
            Ok(Some("127.0.0.1:9".parse().unwrap()))
        );
        assert!(parse_bind_address("example.com:80").is_err());
        assert!(parse_bind_address(":http").is_err());
    }
}
