//! The cluster health monitor of the cluster controller (monitorClusterHealth and
//! tryUpdateClusterHealth in pkg/controllers/cluster/cluster_controller.go): every
//! `--cluster-monitor-period` it looks at each cluster's Ready condition and, for Pull-mode
//! clusters, at the cluster Lease in `karmada-cluster` their agent renews. A Pull cluster
//! whose status and Lease have not moved for `--cluster-monitor-grace-period` (or, before
//! any status was posted, `--cluster-startup-grace-period` since it was created) gets
//! Ready=Unknown, and the cluster controller then taints it `unreachable`.
//!
//! As in Karmada, Push clusters are left alone here: the cluster-status controller of the
//! control plane probes them itself and reports Ready=False when they stop answering.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use karmada_api::cluster::v1alpha1::{CLUSTER_CONDITION_READY, Cluster, ClusterSyncMode};
use karmada_api::names;
use karmada_api::well_known::conditions as reasons;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, ResourceExt};
use serde_json::json;

/// What the monitor last saw of a cluster (clusterHealthData).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HealthData {
    /// The Ready condition last seen (None: never posted).
    ready: Option<Condition>,
    /// When the status or the Lease last moved.
    probe: Timestamp,
    /// The Lease's renewTime last seen.
    lease_renew: Option<Timestamp>,
}

/// The monitor's timings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MonitorSettings {
    /// `--cluster-monitor-period` (5 s).
    pub period: Duration,
    /// `--cluster-monitor-grace-period` (40 s).
    pub grace_period: Duration,
    /// `--cluster-startup-grace-period` (60 s).
    pub startup_grace_period: Duration,
}

impl Default for MonitorSettings {
    fn default() -> Self {
        MonitorSettings {
            period: Duration::from_secs(5),
            grace_period: Duration::from_secs(40),
            startup_grace_period: Duration::from_secs(60),
        }
    }
}

fn ready_of(cluster: &Cluster) -> Option<&Condition> {
    cluster
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == CLUSTER_CONDITION_READY)
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

/// tryUpdateClusterHealth without the writes: the health data to keep and, when the cluster
/// must be marked Unknown, the conditions to write. `lease_renew` is the renewTime of the
/// cluster's Lease (Pull clusters only).
pub(crate) fn assess(
    cluster: &Cluster,
    saved: Option<&HealthData>,
    lease_renew: Option<Timestamp>,
    now: Timestamp,
    settings: &MonitorSettings,
) -> (HealthData, Option<Vec<Condition>>) {
    let current = ready_of(cluster);
    let created = cluster
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let grace = if current.is_some() {
        settings.grace_period
    } else {
        settings.startup_grace_period
    };
    // A status never posted counts from the cluster's creation; a changed Ready condition
    // (a newly posted status) restarts the clock.
    let mut health = match saved {
        Some(s) if s.ready.as_ref() == current => s.clone(),
        Some(s) if current.is_none() => HealthData {
            ready: None,
            ..s.clone()
        },
        None if current.is_none() => HealthData {
            ready: None,
            probe: created,
            lease_renew: None,
        },
        _ => HealthData {
            ready: current.cloned(),
            probe: now,
            lease_renew: saved.and_then(|s| s.lease_renew),
        },
    };
    if cluster.spec.sync_mode == ClusterSyncMode::Push {
        return (health, None);
    }
    if let Some(renew) = lease_renew
        && health.lease_renew.is_none_or(|seen| seen < renew)
    {
        health.lease_renew = Some(renew);
        health.probe = now;
    }
    if now <= after(health.probe, grace) {
        return (health, None);
    }
    let stamp = Time(now);
    let mut conditions = cluster.status.conditions.clone();
    match conditions
        .iter_mut()
        .find(|c| c.type_ == CLUSTER_CONDITION_READY)
    {
        None => conditions.push(Condition {
            type_: CLUSTER_CONDITION_READY.to_owned(),
            status: "Unknown".to_owned(),
            reason: reasons::REASON_CLUSTER_STATUS_NEVER_UPDATED.to_owned(),
            message: reasons::MESSAGE_CLUSTER_STATUS_NEVER_UPDATED.to_owned(),
            last_transition_time: stamp,
            observed_generation: None,
        }),
        Some(c) if c.status != "Unknown" => {
            c.status = "Unknown".to_owned();
            c.reason = reasons::REASON_CLUSTER_STATUS_UNKNOWN.to_owned();
            c.message = reasons::MESSAGE_CLUSTER_STATUS_UNKNOWN.to_owned();
            c.last_transition_time = stamp;
        }
        Some(_) => return (health, None),
    }
    // What is written becomes what was seen, so it does not count as a newly posted status.
    health.ready = conditions
        .iter()
        .find(|c| c.type_ == CLUSTER_CONDITION_READY)
        .cloned();
    (health, Some(conditions))
}

/// Runs the monitor over the clusters of `store` until aborted.
pub(crate) async fn run(client: kube::Client, store: Store<Cluster>, settings: MonitorSettings) {
    let leases = Api::<Lease>::namespaced(client.clone(), names::NAMESPACE_KARMADA_CLUSTER);
    let clusters = Api::<Cluster>::all(client);
    let mut health: HashMap<String, HealthData> = HashMap::new();
    let mut tick = tokio::time::interval(settings.period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let state = store.state();
        health.retain(|name, _| state.iter().any(|c| c.name_any() == *name));
        for cluster in state {
            let name = cluster.name_any();
            let lease_renew = if cluster.spec.sync_mode == ClusterSyncMode::Pull {
                match leases.get_opt(&name).await {
                    Ok(lease) => lease
                        .and_then(|l| l.spec)
                        .and_then(|s| s.renew_time)
                        .map(|t| t.0),
                    Err(e) => {
                        tracing::debug!(cluster = %name, error = %e, "reading the cluster lease");
                        None
                    }
                }
            } else {
                None
            };
            let (data, write) = assess(
                &cluster,
                health.get(&name),
                lease_renew,
                Timestamp::now(),
                &settings,
            );
            if let Some(conditions) = write {
                // Guarded by the resourceVersion read: a status posted meanwhile wins, and the
                // next period looks again.
                let patch = json!({
                    "metadata": {"resourceVersion": cluster.resource_version()},
                    "status": {"conditions": conditions},
                });
                match clusters
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {
                        tracing::info!(cluster = %name, "cluster status is stale: Ready=Unknown");
                    }
                    Err(e) => {
                        tracing::warn!(cluster = %name, error = %e, "marking the cluster Unknown");
                        continue;
                    }
                }
            }
            health.insert(name, data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn cluster(mode: ClusterSyncMode, ready: Option<&str>) -> Cluster {
        let mut c = Cluster {
            metadata: ObjectMeta {
                name: Some("m1".into()),
                creation_timestamp: Some(Time(ts(0))),
                ..Default::default()
            },
            ..Default::default()
        };
        c.spec.sync_mode = mode;
        if let Some(s) = ready {
            c.status.conditions.push(Condition {
                type_: CLUSTER_CONDITION_READY.into(),
                status: s.into(),
                reason: "ClusterReady".into(),
                message: "m".into(),
                last_transition_time: Time(ts(0)),
                observed_generation: None,
            });
        }
        c
    }

    fn settings() -> MonitorSettings {
        MonitorSettings {
            period: Duration::from_secs(1),
            grace_period: Duration::from_secs(40),
            startup_grace_period: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_pull_cluster_whose_status_stops_goes_unknown_after_the_grace_period() {
        let c = cluster(ClusterSyncMode::Pull, Some("True"));
        let (h, w) = assess(&c, None, None, ts(10), &settings());
        assert!(w.is_none());
        assert_eq!(h.probe, ts(10));
        let (h, w) = assess(&c, Some(&h), None, ts(50), &settings());
        assert!(w.is_none(), "exactly at the grace period it is still fresh");
        let (h, w) = assess(&c, Some(&h), None, ts(51), &settings());
        let w = w.expect("stale");
        assert_eq!(w[0].status, "Unknown");
        assert_eq!(w[0].reason, "ClusterStatusUnknown");
        assert_eq!(
            w[0].message,
            "Cluster status controller stopped posting cluster status."
        );
        assert_eq!(w[0].last_transition_time, Time(ts(51)));
        // Once written, the Unknown condition is not rewritten.
        let mut written = c.clone();
        written.status.conditions = w;
        let (_, again) = assess(&written, Some(&h), None, ts(60), &settings());
        assert!(again.is_none());
    }

    #[test]
    fn a_renewed_lease_keeps_a_pull_cluster_fresh() {
        let c = cluster(ClusterSyncMode::Pull, Some("True"));
        let (h, _) = assess(&c, None, Some(ts(0)), ts(0), &settings());
        let (h, w) = assess(&c, Some(&h), Some(ts(30)), ts(30), &settings());
        assert!(w.is_none());
        assert_eq!(h.probe, ts(30));
        let (h, w) = assess(&c, Some(&h), Some(ts(30)), ts(65), &settings());
        assert!(w.is_none(), "35 s since the last renewal");
        let (_, w) = assess(&c, Some(&h), Some(ts(30)), ts(71), &settings());
        assert!(w.is_some(), "41 s since the last renewal");
    }

    #[test]
    fn a_newly_posted_status_restarts_the_clock() {
        let c = cluster(ClusterSyncMode::Pull, Some("True"));
        let (h, _) = assess(&c, None, None, ts(0), &settings());
        let mut posted = c.clone();
        posted.status.conditions[0].last_transition_time = Time(ts(35));
        posted.status.conditions[0].status = "False".into();
        let (h, w) = assess(&posted, Some(&h), None, ts(35), &settings());
        assert!(w.is_none());
        let (_, w) = assess(&posted, Some(&h), None, ts(70), &settings());
        assert!(w.is_none());
    }

    #[test]
    fn a_status_never_posted_gets_the_startup_grace_period_from_creation() {
        let c = cluster(ClusterSyncMode::Pull, None);
        let (h, w) = assess(&c, None, None, ts(59), &settings());
        assert!(w.is_none());
        assert_eq!(h.probe, ts(0));
        let (_, w) = assess(&c, Some(&h), None, ts(61), &settings());
        let w = w.expect("never posted");
        assert_eq!(w[0].status, "Unknown");
        assert_eq!(w[0].reason, "ClusterStatusNeverUpdated");
        assert_eq!(
            w[0].message,
            "Cluster status controller never posted cluster status."
        );
    }

    #[test]
    fn push_clusters_are_left_to_the_status_controller() {
        let c = cluster(ClusterSyncMode::Push, Some("True"));
        let (h, _) = assess(&c, None, None, ts(0), &settings());
        let (_, w) = assess(&c, Some(&h), None, ts(1000), &settings());
        assert!(w.is_none());
        let never = cluster(ClusterSyncMode::Push, None);
        let (_, w) = assess(&never, None, None, ts(1000), &settings());
        assert!(w.is_none());
    }
}
