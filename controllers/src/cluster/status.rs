//! The cluster-status controller (pkg/controllers/status/cluster_status_controller.go and
//! cluster_condition_cache.go): probes a push-mode member, keeps the Ready condition behind
//! the success/failure thresholds, and records version, API enablements, node and resource
//! summaries through the status subresource when something changed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::cluster::v1alpha1::{
    CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS, CLUSTER_CONDITION_READY, Cluster, ClusterStatus,
};
use karmada_api::well_known::conditions as reasons;
use karmada_api::well_known::finalizers::CLUSTER_CONTROLLER;
use kube::api::PostParams;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::task::JoinHandle;

use super::{ClusterControllers, ClusterError, Reconciler, kube_err, probe, summary};
use crate::member_clients::MemberClients;

/// Reason of a Ready=False condition when no client could be built.
const REASON_STATUS_COLLECTION_FAILED: &str = "StatusCollectionFailed";
/// How many times a status write is retried on conflicts (retry.DefaultRetry).
const STATUS_RETRIES: usize = 5;

/// A condition as the controller computes it, before it is merged into the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Observed {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Observed {
    fn new(
        type_: &'static str,
        status: &'static str,
        reason: &str,
        message: impl Into<String>,
    ) -> Self {
        Observed {
            type_,
            status,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// generateReadyCondition.
pub(crate) fn ready_condition(health: probe::Health) -> Observed {
    if !health.online {
        Observed::new(
            CLUSTER_CONDITION_READY,
            "False",
            reasons::REASON_CLUSTER_NOT_REACHABLE,
            reasons::MESSAGE_CLUSTER_NOT_REACHABLE,
        )
    } else if !health.healthy {
        Observed::new(
            CLUSTER_CONDITION_READY,
            "False",
            reasons::REASON_CLUSTER_NOT_READY,
            reasons::MESSAGE_CLUSTER_NOT_READY,
        )
    } else {
        Observed::new(
            CLUSTER_CONDITION_READY,
            "True",
            reasons::REASON_CLUSTER_READY,
            reasons::MESSAGE_CLUSTER_READY,
        )
    }
}

/// The condition threshold cache of one cluster (clusterConditionStore): a change of the
/// observed Ready status is only reported once it has lasted the success or failure
/// threshold.
#[derive(Debug, Default)]
pub(crate) struct Thresholds {
    /// Last observed Ready status and since when (None: since the cluster joined).
    saved: Option<(String, Option<Instant>)>,
}

impl Thresholds {
    /// thresholdAdjustedReadyCondition: the condition to report, given the observed one and
    /// the one currently on the Cluster.
    pub(crate) fn adjust(
        &mut self,
        current: Option<&Condition>,
        observed: Observed,
        success: Duration,
        failure: Duration,
        now: Instant,
    ) -> Observed {
        let Some((saved_status, since)) = self.saved.as_mut() else {
            self.saved = Some((observed.status.to_owned(), None));
            return observed;
        };
        let Some(current) = current else {
            return observed;
        };
        if saved_status != observed.status {
            *saved_status = observed.status.to_owned();
            *since = Some(now);
        }
        let threshold = if observed.status == "True" {
            success
        } else {
            failure
        };
        let flips = (observed.status == "True") != (current.status == "True");
        let within = since.is_some_and(|s| now < s + threshold);
        if flips && within {
            return Observed {
                type_: CLUSTER_CONDITION_READY,
                status: if current.status == "True" {
                    "True"
                } else if current.status == "False" {
                    "False"
                } else {
                    "Unknown"
                },
                reason: current.reason.clone(),
                message: current.message.clone(),
            };
        }
        observed
    }
}

/// meta.SetStatusCondition: the transition time moves only when the status changes.
pub(crate) fn set_condition(conditions: &mut Vec<Condition>, c: &Observed, now: &Time) {
    if let Some(existing) = conditions.iter_mut().find(|x| x.type_ == c.type_) {
        if existing.status != c.status {
            existing.status = c.status.to_owned();
            existing.last_transition_time = now.clone();
        }
        existing.reason = c.reason.clone();
        existing.message = c.message.clone();
        existing.observed_generation = None;
    } else {
        conditions.push(Condition {
            type_: c.type_.to_owned(),
            status: c.status.to_owned(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: now.clone(),
            observed_generation: None,
        });
    }
}

/// Node and pod caches of a member (the typed informers Karmada starts per cluster).
struct MemberCaches {
    key: u64,
    nodes: Store<Node>,
    pods: Store<Pod>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for MemberCaches {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl MemberCaches {
    fn start(client: &kube::Client, key: u64) -> MemberCaches {
        let (nodes, node_writer) = reflector::store::<Node>();
        let (pods, pod_writer) = reflector::store::<Pod>();
        let node_stream = reflector::reflector(
            node_writer,
            watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
                .default_backoff()
                .modify(slim_node),
        );
        let pod_stream = reflector::reflector(
            pod_writer,
            watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
                .default_backoff()
                .modify(slim_pod),
        );
        let tasks = vec![
            tokio::spawn(drain(node_stream, "nodes")),
            tokio::spawn(drain(pod_stream, "pods")),
        ];
        MemberCaches {
            key,
            nodes,
            pods,
            tasks,
        }
    }

    async fn wait_synced(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, async {
            let _ = self.nodes.wait_until_ready().await;
            let _ = self.pods.wait_until_ready().await;
        })
        .await
        .is_ok()
    }
}

async fn drain<S, T>(stream: S, what: &'static str)
where
    S: futures::Stream<Item = Result<T, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        if let Err(e) = ev {
            tracing::debug!(error = %e, resource = what, "member cache watch failed");
        }
    }
}

/// Keeps what the summaries read of a node: name, allocatable and conditions.
fn slim_node(node: &mut Node) {
    node.metadata.managed_fields = None;
    node.metadata.annotations = None;
    node.metadata.labels = None;
    node.spec = None;
    if let Some(s) = node.status.as_mut() {
        s.images = None;
        s.capacity = None;
        s.node_info = None;
        s.addresses = None;
        s.volumes_attached = None;
        s.volumes_in_use = None;
    }
}

/// Keeps what the summaries read of a pod: node, requests and phase.
fn slim_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.metadata.annotations = None;
    pod.metadata.labels = None;
    pod.metadata.owner_references = None;
    if let Some(spec) = pod.spec.take() {
        let slim_containers = |cs: Vec<k8s_openapi::api::core::v1::Container>| {
            cs.into_iter()
                .map(|c| k8s_openapi::api::core::v1::Container {
                    name: c.name,
                    resources: c.resources,
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        pod.spec = Some(PodSpec {
            node_name: spec.node_name,
            containers: slim_containers(spec.containers),
            init_containers: spec.init_containers.map(slim_containers),
            overhead: spec.overhead,
            ..Default::default()
        });
    }
    if let Some(status) = pod.status.take() {
        pod.status = Some(PodStatus {
            phase: status.phase,
            ..Default::default()
        });
    }
}

/// Collects and reports the status of one cluster.
pub(super) struct StatusReconciler {
    client: kube::Client,
    members: MemberClients,
    name: String,
    interval: Duration,
    success: Duration,
    failure: Duration,
    probe_timeout: Duration,
    cache_sync_timeout: Duration,
    modeling: bool,
    thresholds: Thresholds,
    caches: Option<MemberCaches>,
    scope: crate::Scope,
}

impl StatusReconciler {
    pub(super) fn new(ctx: &ClusterControllers, name: &str) -> StatusReconciler {
        StatusReconciler {
            client: ctx.client.clone(),
            members: ctx.members.clone(),
            name: name.to_owned(),
            interval: ctx.settings.cluster_status_interval,
            success: ctx.settings.cluster_success_threshold,
            failure: ctx.settings.cluster_failure_threshold,
            probe_timeout: ctx.settings.probe_timeout,
            cache_sync_timeout: ctx.settings.cache_sync_timeout,
            modeling: ctx.settings.enable_resource_modeling,
            thresholds: Thresholds::default(),
            caches: None,
            scope: ctx.scope.clone(),
        }
    }

    /// syncClusterStatus.
    async fn sync(&mut self, cluster: &Cluster) -> Result<(), ClusterError> {
        let current_ready = cluster
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == CLUSTER_CONDITION_READY)
            .cloned();
        let (client, key) = match self.members.for_cluster_keyed(cluster).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(cluster = %self.name, error = %e, "no client for member cluster");
                let observed = Observed::new(
                    CLUSTER_CONDITION_READY,
                    "False",
                    REASON_STATUS_COLLECTION_FAILED,
                    format!("failed to create a ClusterClient: {e}"),
                );
                let ready = self.adjust(current_ready.as_ref(), observed);
                return self.write(cluster, None, vec![ready]).await;
            }
        };

        let health = probe::health(&client, self.probe_timeout).await;
        let ready = self.adjust(current_ready.as_ref(), ready_condition(health));
        if !health.online && ready.status != "True" {
            tracing::debug!(cluster = %self.name, "member cluster is offline");
            return self.write(cluster, None, vec![ready]).await;
        }
        if !(health.online && health.healthy && ready.status == "True") {
            return self.write(cluster, None, vec![ready]).await;
        }

        let mut collected = cluster.status.clone();
        // A member that stops answering in the middle (frozen, partitioned) must not hold
        // this worker: each collection step gets the probe's timeout, and the next pass
        // probes again and reports the member offline.
        let timed_out = || ClusterError::Timeout(self.name.clone());
        let version = tokio::time::timeout(self.probe_timeout, probe::kubernetes_version(&client))
            .await
            .map_err(|_| timed_out())?
            .unwrap_or_else(|e| {
                tracing::warn!(cluster = %self.name, error = %e, "failed to get the Kubernetes version");
                String::new()
            });
        collected.kubernetes_version = version;
        let (enablements, complete) =
            tokio::time::timeout(self.probe_timeout, probe::api_enablements(&client))
                .await
                .map_err(|_| timed_out())?;
        let api_condition = if enablements.is_empty() {
            Observed::new(
                CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS,
                "False",
                reasons::REASON_API_ENABLEMENTS_EMPTY,
                "collected empty APIEnablements from the cluster",
            )
        } else if !complete {
            Observed::new(
                CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS,
                "False",
                reasons::REASON_API_ENABLEMENTS_PARTIAL,
                format!(
                    "might collect partial APIEnablements({}) from the cluster",
                    enablements.len()
                ),
            )
        } else {
            Observed::new(
                CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS,
                "True",
                reasons::REASON_API_ENABLEMENTS_COMPLETE,
                "collected complete APIEnablements from the cluster",
            )
        };
        collected.api_enablements = enablements;

        if self.modeling {
            if self.caches.as_ref().is_none_or(|c| c.key != key) {
                self.caches = Some(MemberCaches::start(&client, key));
            }
            let Some(caches) = self.caches.as_ref() else {
                return Ok(());
            };
            if !caches.wait_synced(self.cache_sync_timeout).await {
                self.caches = None;
                return Err(ClusterError::CacheSync(self.name.clone()));
            }
            let nodes = caches.nodes.state();
            let pods = caches.pods.state();
            let node_refs: Vec<&Node> = nodes.iter().map(AsRef::as_ref).collect();
            let pod_refs: Vec<&Pod> = pods.iter().map(AsRef::as_ref).collect();
            collected.node_summary = Some(summary::node_summary(node_refs.iter().copied()));
            let mut resources = summary::resource_summary(&node_refs, &pod_refs);
            resources.allocatable_modelings = summary::allocatable_modelings(
                &cluster.spec.resource_models,
                &node_refs,
                &pod_refs,
            );
            collected.resource_summary = Some(resources);
        }
        self.write(cluster, Some(collected), vec![api_condition, ready])
            .await
    }

    fn adjust(&mut self, current: Option<&Condition>, observed: Observed) -> Observed {
        self.thresholds.adjust(
            current,
            observed,
            self.success,
            self.failure,
            Instant::now(),
        )
    }

    /// updateStatusIfNeeded / updateStatusCondition: applies the collected fields (if any)
    /// and conditions to the latest Cluster and writes the status when it changed, retrying
    /// on conflicts.
    async fn write(
        &self,
        cluster: &Cluster,
        collected: Option<ClusterStatus>,
        conditions: Vec<Observed>,
    ) -> Result<(), ClusterError> {
        let api = Api::<Cluster>::all(self.client.clone());
        let mut latest = cluster.clone();
        for attempt in 0..STATUS_RETRIES {
            let mut status = latest.status.clone();
            if let Some(c) = &collected {
                status.kubernetes_version = c.kubernetes_version.clone();
                status.api_enablements = c.api_enablements.clone();
                status.node_summary = c.node_summary.clone();
                status.resource_summary = c.resource_summary.clone();
            }
            let now = Time(k8s_openapi::jiff::Timestamp::now());
            for c in &conditions {
                set_condition(&mut status.conditions, c, &now);
            }
            crate::metrics::record_cluster_status(&self.name, &status);
            if status == latest.status {
                return Ok(());
            }
            let mut updated = latest.clone();
            updated.status = status;
            match api
                .replace_status(&self.name, &PostParams::default(), &updated)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt + 1 < STATUS_RETRIES => {
                    match api
                        .get_opt(&self.name)
                        .await
                        .map_err(kube_err(format!("reading cluster {}", self.name)))?
                    {
                        Some(fresh) => latest = fresh,
                        None => return Ok(()),
                    }
                }
                Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(()),
                Err(e) => {
                    return Err(kube_err(format!(
                        "updating the status of cluster {}",
                        self.name
                    ))(e));
                }
            }
        }
        Ok(())
    }
}

impl Reconciler for StatusReconciler {
    async fn reconcile(&mut self, cluster: Arc<Cluster>) -> Result<Option<Duration>, ClusterError> {
        // Karmada's controller-manager collects the status of push clusters only; the agent
        // does it for its pull cluster.
        if !self.scope.serves(&cluster) {
            self.caches = None;
            return Ok(None);
        }
        // Wait for the cluster controller's finalizer so the two do not race on a new
        // Cluster; adding it wakes this worker.
        if !cluster.finalizers().iter().any(|f| f == CLUSTER_CONTROLLER) {
            return Ok(None);
        }
        let started = Instant::now();
        let synced = self.sync(&cluster).await;
        crate::metrics::registry().observe_duration(
            &crate::metrics::CLUSTER_SYNC_STATUS_DURATION,
            &[&self.name],
            started.elapsed(),
        );
        synced?;
        Ok(Some(self.interval))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(status: &str) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: format!("was-{status}"),
            message: String::new(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }
    }

    fn obs(status: &'static str) -> Observed {
        Observed::new(CLUSTER_CONDITION_READY, status, "observed", "")
    }

    #[test]
    fn thresholds_delay_flips() {
        let s = Duration::from_secs(30);
        let f = Duration::from_secs(20);
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        let mut th = Thresholds::default();

        // First observation after joining is reported as is.
        assert_eq!(th.adjust(None, obs("True"), s, f, at(0)).status, "True");
        // Healthy and reported healthy.
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("True"), s, f, at(1))
                .reason,
            "observed"
        );
        // A failure keeps True until it lasted the failure threshold.
        let kept = th.adjust(Some(&cond("True")), obs("False"), s, f, at(2));
        assert_eq!((kept.status, kept.reason.as_str()), ("True", "was-True"));
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("False"), s, f, at(21))
                .status,
            "True"
        );
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("False"), s, f, at(22))
                .status,
            "False"
        );
        // Recovery keeps False until it lasted the success threshold.
        assert_eq!(
            th.adjust(Some(&cond("False")), obs("True"), s, f, at(30))
                .status,
            "False"
        );
        assert_eq!(
            th.adjust(Some(&cond("False")), obs("True"), s, f, at(59))
                .status,
            "False"
        );
        assert_eq!(
            th.adjust(Some(&cond("False")), obs("True"), s, f, at(60))
                .status,
            "True"
        );
        // A blip shorter than the threshold never shows.
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("False"), s, f, at(61))
                .status,
            "True"
        );
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("True"), s, f, at(62))
                .status,
            "True"
        );
        assert_eq!(
            th.adjust(Some(&cond("True")), obs("False"), s, f, at(63))
                .status,
            "True"
        );
        // Unknown to False is not a flip between ready and not ready.
        assert_eq!(
            th.adjust(Some(&cond("Unknown")), obs("False"), s, f, at(64))
                .status,
            "False"
        );
    }

    #[test]
    fn a_cluster_without_a_condition_takes_the_observation() {
        let mut th = Thresholds::default();
        let now = Instant::now();
        let d = Duration::from_secs(30);
        th.adjust(None, obs("True"), d, d, now);
        assert_eq!(th.adjust(None, obs("False"), d, d, now).status, "False");
    }

    #[test]
    fn conditions_keep_their_transition_time() {
        let t1 = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let t2 = Time(k8s_openapi::jiff::Timestamp::now());
        let mut conditions = Vec::new();
        set_condition(&mut conditions, &obs("True"), &t1);
        assert_eq!(conditions[0].last_transition_time, t1);
        let mut again = obs("True");
        again.message = "new message".into();
        set_condition(&mut conditions, &again, &t2);
        assert_eq!(conditions[0].last_transition_time, t1);
        assert_eq!(conditions[0].message, "new message");
        set_condition(&mut conditions, &obs("False"), &t2);
        assert_eq!(conditions[0].last_transition_time, t2);
        assert_eq!(conditions.len(), 1);
    }

    #[test]
    fn ready_conditions() {
        let cases = [
            (false, false, "False", "ClusterNotReachable"),
            (true, false, "False", "ClusterNotReady"),
            (true, true, "True", "ClusterReady"),
        ];
        for (online, healthy, status, reason) in cases {
            let c = ready_condition(probe::Health { online, healthy });
            assert_eq!((c.status, c.reason.as_str()), (status, reason));
        }
    }

    #[test]
    fn slimming_keeps_what_summaries_read() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
            ]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        }))
        .unwrap();
        slim_pod(&mut pod);
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["spec"]["nodeName"], "n1");
        assert_eq!(
            v["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "1"
        );
        assert!(v["spec"]["containers"][0].get("image").is_none());
        assert_eq!(v["status"], serde_json::json!({"phase": "Running"}));
        assert_eq!(v["metadata"]["namespace"], "ns");
    }
}
