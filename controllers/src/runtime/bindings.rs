//! ResourceBinding and ClusterResourceBinding behind one trait: they share spec and status, and
//! Karmada's controllers treat them alike apart from names, labels and scope.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::well_known::{annotations, finalizers, labels};
use karmada_api::work::v1alpha2::{
    AggregatedStatusItem, ClusterResourceBinding, ResourceBinding, ResourceBindingSpec,
    ResourceBindingStatus,
};
use kube::{Api, Client};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::Context;
use super::informer::Informer;
use super::object::Key;

/// What the controllers need of a binding kind.
pub trait Binding:
    kube::Resource<DynamicType = ()>
    + Clone
    + Serialize
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The binding's own permanent-id label.
    const ID_LABEL: &'static str;
    /// The finalizer the binding controller keeps on it.
    const FINALIZER: &'static str;
    /// The Kind.
    const KIND: &'static str;

    /// A binding from metadata and spec.
    fn build(metadata: ObjectMeta, spec: ResourceBindingSpec) -> Self;
    /// The spec.
    fn spec(&self) -> &ResourceBindingSpec;
    /// The spec, mutable.
    fn spec_mut(&mut self) -> &mut ResourceBindingSpec;
    /// The status.
    fn status(&self) -> &ResourceBindingStatus;
    /// The status, mutable.
    fn status_mut(&mut self) -> &mut ResourceBindingStatus;
    /// The shared informer of this kind.
    fn informer(ctx: &Context) -> &Informer<Self>;
    /// The API for a binding with this key.
    fn api(client: Client, key: &Key) -> Api<Self>;
    /// The annotations a Work of this binding carries to point back at it.
    fn work_annotations(key: &Key) -> Vec<(&'static str, String)>;

    /// The binding's permanent id.
    fn id(&self) -> &str {
        super::label(self.meta(), Self::ID_LABEL).unwrap_or("")
    }

    /// Namespace/name.
    fn key(&self) -> Key {
        Key::of(self.meta())
    }
}

/// Replaces each cluster's reflected status by a digest of it (a number). The bindings' caches
/// keep aggregated statuses this way: the one reader (the binding-status controller) only asks
/// whether they changed, and a reflected status held as a JSON tree costs more memory than the
/// rest of a cached binding.
pub fn digest_statuses(items: &mut [AggregatedStatusItem]) {
    for item in items {
        if let Some(status) = &item.status {
            item.status = Some(Value::from(super::object::hash_value(status)));
        }
    }
}

impl Binding for ResourceBinding {
    const ID_LABEL: &'static str = labels::RESOURCE_BINDING_PERMANENT_ID;
    const FINALIZER: &'static str = finalizers::BINDING_CONTROLLER;
    const KIND: &'static str = "ResourceBinding";

    fn build(metadata: ObjectMeta, spec: ResourceBindingSpec) -> Self {
        ResourceBinding {
            metadata,
            spec,
            status: Default::default(),
        }
    }
    fn spec(&self) -> &ResourceBindingSpec {
        &self.spec
    }
    fn spec_mut(&mut self) -> &mut ResourceBindingSpec {
        &mut self.spec
    }
    fn status(&self) -> &ResourceBindingStatus {
        &self.status
    }
    fn status_mut(&mut self) -> &mut ResourceBindingStatus {
        &mut self.status
    }
    fn informer(ctx: &Context) -> &Informer<Self> {
        &ctx.rbs
    }
    fn api(client: Client, key: &Key) -> Api<Self> {
        Api::namespaced(client, &key.namespace)
    }
    fn work_annotations(key: &Key) -> Vec<(&'static str, String)> {
        vec![
            (
                annotations::RESOURCE_BINDING_NAMESPACE,
                key.namespace.clone(),
            ),
            (annotations::RESOURCE_BINDING_NAME, key.name.clone()),
        ]
    }
}

impl Binding for ClusterResourceBinding {
    const ID_LABEL: &'static str = labels::CLUSTER_RESOURCE_BINDING_PERMANENT_ID;
    const FINALIZER: &'static str = finalizers::CLUSTER_RESOURCE_BINDING_CONTROLLER;
    const KIND: &'static str = "ClusterResourceBinding";

    fn build(metadata: ObjectMeta, spec: ResourceBindingSpec) -> Self {
        ClusterResourceBinding {
            metadata,
            spec,
            status: Default::default(),
        }
    }
    fn spec(&self) -> &ResourceBindingSpec {
        &self.spec
    }
    fn spec_mut(&mut self) -> &mut ResourceBindingSpec {
        &mut self.spec
    }
    fn status(&self) -> &ResourceBindingStatus {
        &self.status
    }
    fn status_mut(&mut self) -> &mut ResourceBindingStatus {
        &mut self.status
    }
    fn informer(ctx: &Context) -> &Informer<Self> {
        &ctx.crbs
    }
    fn api(client: Client, _key: &Key) -> Api<Self> {
        Api::all(client)
    }
    fn work_annotations(key: &Key) -> Vec<(&'static str, String)> {
        vec![(annotations::CLUSTER_RESOURCE_BINDING_NAME, key.name.clone())]
    }
}

/// The resource template a binding is for, as an event target.
pub fn template_target(spec: &ResourceBindingSpec) -> super::events::EventTarget {
    super::events::EventTarget {
        api_version: spec.resource.api_version.clone(),
        kind: spec.resource.kind.clone(),
        namespace: spec.resource.namespace.clone(),
        name: spec.resource.name.clone(),
        uid: spec.resource.uid.clone(),
    }
}

/// The clusters a binding's Works belong on: its scheduling result plus the clusters of the
/// bindings that require it (mergeTargetClusters).
pub fn target_clusters(
    spec: &ResourceBindingSpec,
) -> Vec<karmada_api::work::v1alpha2::TargetCluster> {
    let mut out = spec.clusters.clone();
    for rb in &spec.required_by {
        for c in &rb.clusters {
            if !out.iter().any(|t| t.name == c.name) {
                out.push(c.clone());
            }
        }
    }
    out
}

/// The clusters whose Works a binding keeps: its result, the clusters of the bindings requiring
/// it, and clusters being gracefully evicted from (ObtainBindingSpecExistingClusters).
pub fn existing_clusters(spec: &ResourceBindingSpec) -> std::collections::HashSet<String> {
    use karmada_api::policy::v1alpha1::PurgeMode;
    let mut out: std::collections::HashSet<String> =
        target_clusters(spec).into_iter().map(|t| t.name).collect();
    for t in &spec.graceful_eviction_tasks {
        if !matches!(
            t.purge_mode,
            Some(PurgeMode::Immediately | PurgeMode::Directly)
        ) {
            out.insert(t.from_cluster.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(cluster: &str, status: Option<Value>) -> AggregatedStatusItem {
        AggregatedStatusItem {
            cluster_name: cluster.into(),
            status,
            applied: true,
            ..Default::default()
        }
    }

    #[test]
    fn digested_statuses_compare_as_the_statuses_do() {
        let digest = |items: &[AggregatedStatusItem]| {
            let mut v = items.to_vec();
            digest_statuses(&mut v);
            v
        };
        let a = [
            item("m1", Some(json!({"readyReplicas": 2, "replicas": 2}))),
            item("m2", None),
        ];
        // Key order does not matter (the status came back through the API).
        let same = [
            item("m1", Some(json!({"replicas": 2, "readyReplicas": 2}))),
            item("m2", None),
        ];
        let other = [
            item("m1", Some(json!({"readyReplicas": 1, "replicas": 2}))),
            item("m2", None),
        ];
        assert_eq!(digest(&a), digest(&same));
        assert_ne!(digest(&a), digest(&other));
        let d = digest(&a);
        assert!(d[0].status.as_ref().is_some_and(Value::is_number));
        assert_eq!(d[1].status, None);
        assert_eq!(d[0].cluster_name, "m1");
    }
}
