//! The server while it starts, as kube-apiserver's: the HTTPS listener answers from the first
//! moment, `/livez` passes, `/readyz` and `/healthz` name what is not done yet (etcd not
//! reachable, a post-start hook still running), and every other request gets a 503 with
//! `Retry-After` until the handler chain is in place. Steps that need storage are retried with
//! back-off while it is away instead of ending the process.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;

use crate::error::ApiError;
use crate::healthz::{HEALTH_AND_READY, Health, Probe};

/// The first and the longest pause between attempts of a start-up step.
const BACKOFF_MIN: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What a starting server answers with: its health checks, then the full chain once set.
#[derive(Clone)]
pub struct Startup {
    health: Arc<Health>,
    chain: Arc<OnceLock<Router>>,
    /// Why storage is not reachable yet (the start-up's `etcd` check until the state's
    /// replaces it).
    storage: Arc<Mutex<Option<String>>>,
}

impl Startup {
    /// A starting server's view: `ping`, `log`, and `etcd` failing until storage answers.
    pub fn new() -> Startup {
        let health = Arc::new(Health::new());
        let storage = Arc::new(Mutex::new(Some("not connected yet".to_string())));
        let seen = storage.clone();
        health.add(
            "etcd",
            HEALTH_AND_READY,
            crate::healthz::check(
                move || match &*seen.lock().unwrap_or_else(|p| p.into_inner()) {
                    Some(why) => Err(why.clone()),
                    None => Ok(()),
                },
            ),
        );
        Startup {
            health,
            chain: Arc::new(OnceLock::new()),
            storage,
        }
    }

    /// The checks (shared with the state once it exists).
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Records why storage cannot be reached (None: it answers).
    pub fn storage_failing(&self, why: Option<String>) {
        *self.storage.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }

    /// The router to serve from the start.
    pub fn router(&self) -> Router {
        let me = self.clone();
        Router::new().fallback(move |req: http::Request<Body>| {
            let me = me.clone();
            async move { me.handle(req).await }
        })
    }

    /// From now on every request goes to `chain`.
    pub fn serve(&self, chain: Router) {
        let _ = self.chain.set(chain);
    }

    async fn handle(&self, req: http::Request<Body>) -> Response {
        if let Some(chain) = self.chain.get() {
            return match chain.clone().oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
        }
        // Only the public endpoints answer before there is anyone to authenticate or
        // authorize a caller: single checks, which carry reasons, wait for the chain.
        if req.method() == http::Method::GET || req.method() == http::Method::HEAD {
            let path = req.uri().path().trim_end_matches('/');
            if let Some((probe, None)) = Probe::of_path(path)
                && let Some(resp) = self.health.respond(probe, None, req.uri().query()).await
            {
                return resp;
            }
        }
        let waiting = self.health.failing(Probe::Readyz).await;
        ApiError::unavailable_retry(
            format!(
                "the server is starting (waiting for: {})",
                if waiting.is_empty() {
                    "the handler chain".to_string()
                } else {
                    waiting.join(", ")
                }
            ),
            1,
        )
        .into_response()
    }
}

impl Default for Startup {
    fn default() -> Startup {
        Startup::new()
    }
}

/// Runs a start-up step until it succeeds, pausing with jittered exponential back-off
/// between attempts and logging each failure; `what` names it in the log.
pub async fn retrying<T, E, F, Fut>(what: &str, mut step: F) -> T
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut backoff = BACKOFF_MIN;
    loop {
        match step().await {
            Ok(v) => return v,
            Err(e) => {
                tracing::warn!(step = what, error = %e, retry_in = ?backoff, "start-up step failed; retrying");
                let jitter = backoff.mul_f64(rand::random::<f64>() * 0.2);
                tokio::time::sleep(backoff + jitter).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}
