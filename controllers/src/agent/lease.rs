//! The cluster Lease an agent renews (Karmada's cluster-status controller starts
//! k8s.io/component-helpers' lease controller for Pull clusters): `karmada-cluster/<cluster>`,
//! held by the cluster's name, 40 s long, renewed every quarter of that, owned by the Cluster
//! so it goes with it. The control plane's health monitor reads its `renewTime`.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::names::NAMESPACE_KARMADA_CLUSTER;
use kube::Api;
use kube::api::PostParams;
use tokio::task::JoinHandle;

/// Timings of the cluster Lease.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseSettings {
    /// `leaseDurationSeconds` (Karmada's `--cluster-lease-duration`, 40 s).
    pub duration: Duration,
    /// Renewal interval: the duration times `--cluster-lease-renew-interval-fraction` (0.25).
    pub renew_interval: Duration,
}

impl Default for LeaseSettings {
    fn default() -> LeaseSettings {
        LeaseSettings {
            duration: Duration::from_secs(40),
            renew_interval: Duration::from_secs(10),
        }
    }
}

/// Renews the Lease of `cluster` until the task is aborted. A failed renewal is retried
/// sooner (200 ms doubling up to the renewal interval), as the lease controller does.
pub fn start(client: kube::Client, cluster: String, settings: LeaseSettings) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut retry = Duration::from_millis(200);
        loop {
            let delay = match renew(&client, &cluster, &settings).await {
                Ok(()) => {
                    retry = Duration::from_millis(200);
                    settings.renew_interval
                }
                Err(e) => {
                    tracing::warn!(cluster = %cluster, error = %e, "renewing the cluster lease failed");
                    let d = retry;
                    retry = (retry * 2).min(settings.renew_interval);
                    d
                }
            };
            tokio::time::sleep(delay).await;
        }
    })
}

/// One renewal: creates the Lease when missing, else moves its renewTime (and puts back the
/// holder, duration and owner if someone changed them).
pub async fn renew(
    client: &kube::Client,
    cluster: &str,
    settings: &LeaseSettings,
) -> Result<(), kube::Error> {
    let leases = Api::<Lease>::namespaced(client.clone(), NAMESPACE_KARMADA_CLUSTER);
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let seconds = i32::try_from(settings.duration.as_secs()).unwrap_or(i32::MAX);
    match leases.get_opt(cluster).await? {
        Some(mut lease) => {
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            spec.holder_identity = Some(cluster.to_owned());
            spec.lease_duration_seconds = Some(seconds);
            spec.renew_time = Some(now);
            if lease
                .metadata
                .owner_references
                .as_deref()
                .unwrap_or_default()
                .is_empty()
            {
                lease.metadata.owner_references = owner(client, cluster).await?;
            }
            leases
                .replace(cluster, &PostParams::default(), &lease)
                .await?;
        }
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(cluster.to_owned()),
                    namespace: Some(NAMESPACE_KARMADA_CLUSTER.to_owned()),
                    owner_references: owner(client, cluster).await?,
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(cluster.to_owned()),
                    lease_duration_seconds: Some(seconds),
                    renew_time: Some(now),
                    ..Default::default()
                }),
            };
            leases.create(&PostParams::default(), &lease).await?;
        }
    }
    Ok(())
}

/// setClusterOwnerRef: the Lease belongs to its Cluster (none while the Cluster is missing).
async fn owner(
    client: &kube::Client,
    cluster: &str,
) -> Result<Option<Vec<OwnerReference>>, kube::Error> {
    let Some(c) = Api::<Cluster>::all(client.clone()).get_opt(cluster).await? else {
        return Ok(None);
    };
    Ok(Some(vec![OwnerReference {
        api_version: "cluster.karmada.io/v1alpha1".into(),
        kind: "Cluster".into(),
        name: cluster.to_owned(),
        uid: c.metadata.uid.unwrap_or_default(),
        ..Default::default()
    }]))
}
