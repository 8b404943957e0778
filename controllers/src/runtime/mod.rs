//! What every controller here is built from: the work queue, shared informers over typed and
//! dynamic resources, discovery, event recording, the shared [`Context`], and small helpers
//! (conditions, error classification).

pub mod bindings;
pub mod cache;
pub mod context;
pub mod discovery;
pub mod dynamic;
pub mod events;
pub mod informer;
pub mod object;
pub mod patch;
pub mod precedence;
pub mod queue;
pub mod reconcile_metrics;
pub mod selector;
pub mod text;
pub mod write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};

pub use cache::{CachedManifest, CachedWork};
pub use component_base::rate_limiter::{RateLimiter, RateLimiterOptions};
pub use context::Context;
pub use informer::{Change, Informer};
pub use object::{Key, ObjectKey, RawObject, split_api_version};
pub use queue::{Requeue, WorkQueue};

/// Aborts a task when dropped: the task lives as long as its owner (a controller's helper
/// task, stopped with the controllers).
#[derive(Debug)]
pub struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Errors of a reconcile pass; each is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API request failed.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// JSON could not be (de)serialized.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Anything else, with a message a person can act on.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// An error with a message.
    pub fn msg(m: impl Into<String>) -> Error {
        Error::Other(m.into())
    }
}

/// The result of a reconcile pass.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The current time as a Kubernetes timestamp.
pub fn now() -> Time {
    Time(jiff::Timestamp::now())
}

/// The HTTP status code of an API error response.
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// True for 404 Not Found.
pub fn is_not_found(e: &kube::Error) -> bool {
    api_code(e) == Some(404)
}

/// True for 409 Conflict (stale resourceVersion or AlreadyExists).
pub fn is_conflict(e: &kube::Error) -> bool {
    api_code(e) == Some(409)
}

/// True for 409 AlreadyExists.
pub fn is_already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// A label of an object.
pub fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// An annotation of an object.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// Sets a condition as apimachinery's meta.SetStatusCondition does: the transition time changes
/// only when the status does. Returns whether anything changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> bool {
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) {
        let mut changed = false;
        if c.status != status {
            c.status = status.to_owned();
            c.last_transition_time = now();
            changed = true;
        }
        if c.reason != reason {
            c.reason = reason.to_owned();
            changed = true;
        }
        if c.message != message {
            c.message = message.to_owned();
            changed = true;
        }
        if observed_generation.is_some() && c.observed_generation != observed_generation {
            c.observed_generation = observed_generation;
            changed = true;
        }
        return changed;
    }
    conditions.push(Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: now(),
        observed_generation,
    });
    true
}

/// The status of a condition, if present.
pub fn condition_status<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a str> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.as_str())
}

/// True when the cluster's Ready condition is True (util.IsClusterReady).
pub fn cluster_ready(c: &karmada_api::cluster::v1alpha1::Cluster) -> bool {
    c.ready_status() == Some("True")
}

/// Runs `reconcile` on the queue's keys with `workers` workers once the informers have their
/// first lists.
pub fn run_after_sync<K, F, Fut>(
    ctx: std::sync::Arc<Context>,
    queue: WorkQueue<K>,
    workers: usize,
    reconcile: F,
) -> tokio::task::JoinHandle<()>
where
    K: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Requeue>> + Send + 'static,
{
    tokio::spawn(async move {
        ctx.wait_synced().await;
        for h in queue.run(workers, reconcile) {
            let _ = h.await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_condition_keeps_transition_time_when_status_is_unchanged() {
        let mut c = Vec::new();
        assert!(set_condition(&mut c, "Applied", "True", "A", "m", None));
        let t = c[0].last_transition_time.clone();
        assert!(!set_condition(&mut c, "Applied", "True", "A", "m", None));
        assert!(set_condition(&mut c, "Applied", "True", "B", "m", None));
        assert_eq!(c[0].last_transition_time, t);
        assert!(set_condition(&mut c, "Applied", "False", "B", "m", None));
        assert_eq!(c.len(), 1);
    }
}
