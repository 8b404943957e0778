//! The kube-controller-manager controllers Karmada runs beside its API server (Kubernetes'
//! controller-manager seam): the namespace controller, the garbage collector, and the Events'
//! time-to-live (an etcd lease in kube-apiserver). They run in the server's process and reach
//! it only through [`ApiServer`], which the server implements and passes to [`start`].
//!
//! This crate must not depend on the apiserver crate (nor on storage or an HTTP stack): what
//! it needs of the server goes through [`ApiServer`].

pub mod api_server;
pub mod event_ttl;
pub mod garbage_collector;
pub mod informer;
pub mod namespace_controller;
pub mod work_queue;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

pub use api_server::ApiServer;

/// Which controllers run, and their settings.
#[derive(Clone, Debug)]
pub struct KcmOptions {
    /// Run the namespace controller and the garbage collector.
    pub controllers: bool,
    /// Events are deleted this long after they were last recorded (kube-apiserver's
    /// `--event-ttl`); zero keeps them forever.
    pub event_ttl: Duration,
}

impl Default for KcmOptions {
    fn default() -> KcmOptions {
        KcmOptions {
            controllers: true,
            event_ttl: event_ttl::DEFAULT_EVENT_TTL,
        }
    }
}

/// The running controllers; dropping it stops them.
#[derive(Debug, Default)]
pub struct Kcm {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Kcm {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Starts the controllers `opts` enables. Must run inside a runtime.
pub fn start(state: &Arc<dyn ApiServer>, opts: &KcmOptions) -> Kcm {
    let mut kcm = Kcm::default();
    if opts.controllers {
        let s = state.clone();
        kcm.tasks.push(supervise("namespace", move || {
            namespace_controller::NamespaceController::new(s.clone()).run()
        }));
        let s = state.clone();
        kcm.tasks.push(supervise("garbagecollector", move || {
            garbage_collector::GarbageCollector::new(s.clone()).run()
        }));
    }
    if !opts.event_ttl.is_zero() {
        let (s, ttl) = (state.clone(), opts.event_ttl);
        kcm.tasks.push(supervise("event-ttl", move || {
            event_ttl::run(s.clone(), ttl)
        }));
    }
    kcm
}

/// The field manager of the controllers' writes (the one kube derives from
/// kube-controller-manager's user agent).
pub const FIELD_MANAGER: &str = "kube-controller-manager";

/// Aborts a task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a controller, restarting it with back-off if it panics (a bug, logged loudly) or ends.
fn supervise<F, Fut>(name: &'static str, make: F) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(500);
        loop {
            let mut task = AbortOnDrop(tokio::spawn(make()));
            match (&mut task.0).await {
                Err(e) if e.is_panic() => {
                    tracing::error!(controller = name, "controller panicked; restarting");
                }
                _ => tracing::warn!(controller = name, "controller stopped; restarting"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    })
}
