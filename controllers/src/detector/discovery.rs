//! Keeps one template informer per served kind (ResourceDetector.discoverResources): discovery
//! runs at start, periodically, and shortly after any CustomResourceDefinition changes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Notify;

use super::Detector;
use crate::runtime::discovery::{ServedResource, served_resources};

/// Karmada's default skipped APIs (util.NewSkippedResourceConfig): its own groups, events and
/// leases.
const SKIPPED_GROUPS: &[&str] = &[
    "cluster.karmada.io",
    "policy.karmada.io",
    "work.karmada.io",
    "config.karmada.io",
    "networking.karmada.io",
    "autoscaling.karmada.io",
    "remedy.karmada.io",
    "apps.karmada.io",
    "events.k8s.io",
];

/// Whether the detector watches a resource: listable, watchable and deletable (as
/// GetDeletableResources requires), and not skipped.
pub fn propagatable(r: &ServedResource) -> bool {
    if !r.supports(&["list", "watch", "delete"]) {
        return false;
    }
    if SKIPPED_GROUPS.contains(&r.group.as_str()) {
        return false;
    }
    if r.group.is_empty() && r.version == "v1" && r.kind == "Event" {
        return false;
    }
    !(r.group == "coordination.k8s.io" && r.version == "v1")
}

pub(super) async fn run(d: Arc<Detector>) {
    let wake = Arc::new(Notify::new());
    let w = wake.clone();
    let client = d.ctx.client.clone();
    let crd_watch = tokio::spawn(async move {
        let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client);
        let mut s = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = s.next().await {
            if let Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) = ev {
                w.notify_one();
            }
        }
    });
    struct Abort(tokio::task::JoinHandle<()>);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let _crd_watch = Abort(crd_watch);
    let interval = d.ctx.settings.discovery_interval;
    // Passes still owed at a short interval (after a failure or a CRD change).
    let mut quick_passes = 0u32;
    loop {
        match served_resources(&d.ctx.client).await {
            Ok(all) => {
                let wanted: Vec<ServedResource> =
                    all.iter().filter(|r| propagatable(r)).cloned().collect();
                d.ctx.served.send_replace(Arc::new(all));
                let keys: HashSet<(String, String)> = wanted
                    .iter()
                    .map(|r| (r.api_version(), r.kind.clone()))
                    .collect();
                for r in &wanted {
                    d.ctx.templates.ensure(r);
                }
                for r in d.ctx.templates.resources() {
                    if !keys.contains(&(r.api_version(), r.kind.clone())) {
                        tracing::info!(resource = %r.plural, "no longer served; stopping its informer");
                        d.ctx.templates.stop(&r.api_version(), &r.kind);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "discovery failed");
                quick_passes = quick_passes.max(1);
            }
        }
        let wait = if quick_passes > 0 {
            quick_passes -= 1;
            Duration::from_secs(1)
        } else {
            interval
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = wake.notified() => {
                // A CRD changed: its resources are served once it is established, which takes
                // a moment; look now and twice more shortly.
                tokio::time::sleep(Duration::from_millis(200)).await;
                quick_passes = 2;
            }
        }
    }
}
