//! Karmada's multi-cluster service controllers.
//!
//! The Multi-Cluster Services API (pkg/controllers/mcs): [`collect`] reports the EndpointSlices
//! of the Services a member exports (ServiceExport) to the control plane as suspended Works,
//! [`endpoint_slice`] turns those Works into `imported-<cluster>-<slice>` EndpointSlices of the
//! `derived-<service>` Service, and [`service_import`] keeps that derived Service in step with
//! each ServiceImport. A PropagationPolicy selecting the ServiceImport gets `propagateDeps` from
//! the policy webhook, and the dependencies distributor sends the derived Service and its
//! EndpointSlices along.
//!
//! MultiClusterService with `types: [CrossCluster]` (pkg/controllers/multiclusterservice, behind
//! the MultiClusterService gate): [`multi_cluster_service`] propagates the Service to the
//! provider and consumer clusters and marks the providers, [`collect`] reports the providers'
//! EndpointSlices, and [`dispatch`] sends them to the consumers.
//!
//! A cluster whose `remedyActions` include TrafficControl is taken out of traffic: its
//! endpoints are neither imported nor dispatched until the action is lifted.

pub mod collect;
pub mod dispatch;
pub mod endpoint_slice;
pub mod multi_cluster_service;
pub mod service_import;

use std::collections::BTreeSet;

use kube::api::ApiResource;

/// Labels a collected EndpointSlice Work with the namespace of its Service
/// (`util.ServiceNamespaceLabel`).
pub const SERVICE_NAMESPACE_LABEL: &str = "endpointslice.karmada.io/namespace";
/// Labels a collected EndpointSlice Work with the name of its Service (`util.ServiceNameLabel`).
pub const SERVICE_NAME_LABEL: &str = "endpointslice.karmada.io/name";
/// Which controllers manage a collected EndpointSlice Work, joined with `.`
/// (`util.EndpointSliceWorkManagedByLabel`).
pub const WORK_MANAGED_BY_LABEL: &str = "endpointslice.karmada.io/managed-by";
/// Labels a Work with the namespace of the MultiClusterService that manages it.
pub const MCS_NAMESPACE_LABEL: &str = "multiclusterservice.karmada.io/namespace";
/// Labels a Work with the name of the MultiClusterService that manages it.
pub const MCS_NAME_LABEL: &str = "multiclusterservice.karmada.io/name";
/// Keeps a collected EndpointSlice Work until its EndpointSlices on the control plane are gone.
pub const ENDPOINTSLICE_CONTROLLER_FINALIZER: &str = "karmada.io/endpointslice-controller";
/// Keeps a MultiClusterService's collected EndpointSlice Work until the dispatch controller has
/// removed what it dispatched from it.
pub const MCS_DISPATCH_FINALIZER: &str = "karmada.io/mcs-endpointslice-dispatch-controller";
/// Keeps a MultiClusterService until its Works are gone.
pub const MCS_CONTROLLER_FINALIZER: &str = "karmada.io/multiclusterservice-controller";
/// Names, on a dispatched EndpointSlice and its Work, the cluster the endpoints come from.
pub const PROVISION_CLUSTER_ANNOTATION: &str = "endpointslice.karmada.io/provision-cluster";
/// The group and version of Karmada's networking kinds.
pub const NETWORKING_API_VERSION: &str = "networking.karmada.io/v1alpha1";
/// `endpointslice.kubernetes.io/managed-by` of the EndpointSlices the endpointslice controller
/// writes on the control plane.
pub const ENDPOINTSLICE_CONTROLLER_VALUE: &str = "endpointslice-controller.karmada.io";
/// `endpointslice.kubernetes.io/managed-by` of the EndpointSlices the dispatch controller
/// writes in consumer clusters.
pub const ENDPOINTSLICE_DISPATCH_CONTROLLER_VALUE: &str =
    "endpointslice-dispatch-controller.karmada.io";
/// The `managed-by` entry of the service export controller.
pub const SERVICE_EXPORT_KIND: &str = "ServiceExport";
/// The `managed-by` entry of the MultiClusterService collect controller.
pub const MULTI_CLUSTER_SERVICE_KIND: &str = "MultiClusterService";
/// The label naming an EndpointSlice's Service.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming an EndpointSlice's manager.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The Multi-Cluster Services API group and version.
pub const MCS_API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";

/// `IsEndpointSliceManagedByKarmada`: written by Karmada (collected or dispatched), never to
/// be collected again.
pub fn managed_by_karmada(manager: Option<&str>) -> bool {
    matches!(
        manager,
        Some(ENDPOINTSLICE_CONTROLLER_VALUE | ENDPOINTSLICE_DISPATCH_CONTROLLER_VALUE)
    )
}

/// The entries of a `managed-by` label value.
pub fn managers(value: &str) -> BTreeSet<String> {
    value
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The served resource of a Multi-Cluster Services API kind.
pub fn mcs_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "multicluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: MCS_API_VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The remedy action that takes a cluster out of traffic.
pub const TRAFFIC_CONTROL: &str = "TrafficControl";

/// Whether a cluster is out of traffic (its `remedyActions` include TrafficControl).
pub fn out_of_traffic(cluster: &karmada_api::cluster::v1alpha1::Cluster) -> bool {
    cluster
        .status
        .remedy_actions
        .iter()
        .any(|a| a == TRAFFIC_CONTROL)
}

/// Whether a Cluster change matters to where endpoints go: a cluster added or removed, its
/// readiness, or its being out of traffic. Status refreshes that change neither are not.
pub fn traffic_changed(
    ch: &crate::runtime::Change<'_, karmada_api::cluster::v1alpha1::Cluster>,
) -> bool {
    match ch {
        crate::runtime::Change::Update(old, new) => {
            crate::runtime::cluster_ready(old) != crate::runtime::cluster_ready(new)
                || out_of_traffic(old) != out_of_traffic(new)
        }
        _ => true,
    }
}

/// `names.GenerateEndpointSliceName`: `imported-<cluster>-<slice>`.
pub fn imported_slice_name(slice: &str, cluster: &str) -> String {
    format!("imported-{cluster}-{slice}")
}
