//! Well-known labels, annotations, finalizers, taints and condition vocabulary of Karmada v1.18.

/// Labels on policies, bindings, Works, resource templates and member objects.
pub mod labels {
    /// Unique, backup-stable identifier of a PropagationPolicy; set by the webhook on create.
    pub const PROPAGATION_POLICY_PERMANENT_ID: &str = "propagationpolicy.karmada.io/permanent-id";
    /// Unique identifier of a ClusterPropagationPolicy; set by the webhook on create.
    pub const CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: &str =
        "clusterpropagationpolicy.karmada.io/permanent-id";
    /// Unique identifier of a ResourceBinding; set by the webhook on create.
    pub const RESOURCE_BINDING_PERMANENT_ID: &str = "resourcebinding.karmada.io/permanent-id";
    /// Unique identifier of a ClusterResourceBinding; set by the webhook on create.
    pub const CLUSTER_RESOURCE_BINDING_PERMANENT_ID: &str =
        "clusterresourcebinding.karmada.io/permanent-id";
    /// Unique identifier of a Work; set by the webhook, and copied onto its manifests.
    pub const WORK_PERMANENT_ID: &str = "work.karmada.io/permanent-id";
    /// On a Namespace: `true` keeps the namespace controller from propagating it.
    pub const NAMESPACE_SKIP_AUTO_PROPAGATION: &str = "namespace.karmada.io/skip-auto-propagation";
    /// Marks member-cluster objects managed by Karmada (value `true`).
    pub const MANAGED_BY_KARMADA: &str = "karmada.io/managed";
    /// Value of `karmada.io/managed`.
    pub const MANAGED_BY_KARMADA_VALUE: &str = "true";
    /// Marks system-level objects managed by Karmada (value `true`).
    pub const KARMADA_SYSTEM: &str = "karmada.io/system";
    /// On a template: `true` keeps the member cluster's replicas (e.g. under an HPA).
    pub const RETAIN_REPLICAS: &str = "resourcetemplate.karmada.io/retain-replicas";
    /// Value of `resourcetemplate.karmada.io/retain-replicas` that retains.
    pub const RETAIN_REPLICAS_VALUE: &str = "true";
    /// On a template: which kind of object propagates it (e.g. MultiClusterService).
    pub const RESOURCE_TEMPLATE_CLAIMED_BY: &str = "resourcetemplate.karmada.io/claimed-by";
    /// On any object: `Always` makes deletion fail.
    pub const DELETION_PROTECTION: &str = "resourcetemplate.karmada.io/deletion-protected";
    /// Value of `resourcetemplate.karmada.io/deletion-protected` that protects.
    pub const DELETION_PROTECTION_ALWAYS: &str = "Always";
    /// On a binding: what kind of object manages it.
    pub const BINDING_MANAGED_BY: &str = "binding.karmada.io/managed-by";
    /// Prefix of the labels an attached (dependency) binding carries for each binding that
    /// depends on it.
    pub const DEPENDED_BY_PREFIX: &str = "resourcebinding.karmada.io/depended-by-";
    /// On EndpointSlice Works: the namespace of the service.
    pub const ENDPOINT_SLICE_SERVICE_NAMESPACE: &str = "endpointslice.karmada.io/namespace";
    /// On EndpointSlice Works: the name of the service.
    pub const ENDPOINT_SLICE_SERVICE_NAME: &str = "endpointslice.karmada.io/name";
    /// On collected EndpointSlice Works: the controller that manages them.
    pub const ENDPOINT_SLICE_WORK_MANAGED_BY: &str = "endpointslice.karmada.io/managed-by";
    /// On Works of a MultiClusterService: its namespace.
    pub const MULTI_CLUSTER_SERVICE_NAMESPACE: &str = "multiclusterservice.karmada.io/namespace";
    /// On Works of a MultiClusterService: its name.
    pub const MULTI_CLUSTER_SERVICE_NAME: &str = "multiclusterservice.karmada.io/name";
    /// On Works of a FederatedResourceQuota: its namespace.
    pub const FEDERATED_RESOURCE_QUOTA_NAMESPACE: &str =
        "federatedresourcequota.karmada.io/namespace";
    /// On Works of a FederatedResourceQuota: its name.
    pub const FEDERATED_RESOURCE_QUOTA_NAME: &str = "federatedresourcequota.karmada.io/name";

    /// Labels Karmada puts on objects in member clusters.
    pub const MANAGED_RESOURCE_LABELS: &[&str] = &[
        RESOURCE_BINDING_PERMANENT_ID,
        WORK_PERMANENT_ID,
        MANAGED_BY_KARMADA,
    ];
}

/// Annotations on policies, bindings, Works, resource templates and member objects.
pub mod annotations {
    /// On a template: the namespace of the PropagationPolicy that claimed it.
    pub const PROPAGATION_POLICY_NAMESPACE: &str = "propagationpolicy.karmada.io/namespace";
    /// On a template: the name of the PropagationPolicy that claimed it.
    pub const PROPAGATION_POLICY_NAME: &str = "propagationpolicy.karmada.io/name";
    /// On a template: the name of the ClusterPropagationPolicy that claimed it.
    pub const CLUSTER_PROPAGATION_POLICY_NAME: &str = "clusterpropagationpolicy.karmada.io/name";
    /// On member objects: the namespace of the Work they came from.
    pub const WORK_NAMESPACE: &str = "work.karmada.io/namespace";
    /// On member objects: the name of the Work they came from.
    pub const WORK_NAME: &str = "work.karmada.io/name";
    /// On Works and their manifests: the namespace of the ResourceBinding they derive from.
    pub const RESOURCE_BINDING_NAMESPACE: &str = "resourcebinding.karmada.io/namespace";
    /// On Works and their manifests: the name of the ResourceBinding they derive from.
    pub const RESOURCE_BINDING_NAME: &str = "resourcebinding.karmada.io/name";
    /// On Works and their manifests: the name of the ClusterResourceBinding they derive from.
    pub const CLUSTER_RESOURCE_BINDING_NAME: &str = "clusterresourcebinding.karmada.io/name";
    /// On propagated objects: the template's metadata.generation they were built from.
    pub const RESOURCE_TEMPLATE_GENERATION: &str = "resourcetemplate.karmada.io/generation";
    /// On manifests in Works: the UID of the resource template.
    pub const RESOURCE_TEMPLATE_UID: &str = "resourcetemplate.karmada.io/uid";
    /// On manifests: the sorted, comma-joined label keys that came from the template.
    pub const MANAGED_LABELS: &str = "resourcetemplate.karmada.io/managed-labels";
    /// On manifests: the sorted, comma-joined annotation keys that came from the template.
    pub const MANAGED_ANNOTATIONS: &str = "resourcetemplate.karmada.io/managed-annotations";
    /// On a template: `overwrite` or `abort`, overriding the policy's conflictResolution.
    pub const CONFLICT_RESOLUTION: &str = "work.karmada.io/conflict-resolution";
    /// Value of `work.karmada.io/conflict-resolution`: take over existing member objects.
    pub const CONFLICT_RESOLUTION_OVERWRITE: &str = "overwrite";
    /// Value of `work.karmada.io/conflict-resolution`: leave existing member objects alone.
    pub const CONFLICT_RESOLUTION_ABORT: &str = "abort";
    /// On bindings: the JSON of the placement last applied.
    pub const APPLIED_PLACEMENT: &str = "policy.karmada.io/applied-placement";
    /// On Works: the OverridePolicies applied, as JSON.
    pub const APPLIED_OVERRIDES: &str = "policy.karmada.io/applied-overrides";
    /// On Works: the ClusterOverridePolicies applied, as JSON.
    pub const APPLIED_CLUSTER_OVERRIDES: &str = "policy.karmada.io/applied-cluster-overrides";
    /// On independent bindings: the JSON list of their dependencies.
    pub const DEPENDENCIES: &str = "resourcebinding.karmada.io/dependencies";
    /// On EndpointSlice Works in consumer clusters: the providing cluster.
    pub const ENDPOINT_SLICE_PROVISION_CLUSTER: &str = "endpointslice.karmada.io/provision-cluster";
    /// On objects cached by karmada-search: the cluster they came from.
    pub const CACHED_FROM_CLUSTER: &str = "resource.karmada.io/cached-from-cluster";

    /// Annotations Karmada puts on objects in member clusters.
    pub const MANAGED_RESOURCE_ANNOTATIONS: &[&str] = &[
        MANAGED_ANNOTATIONS,
        MANAGED_LABELS,
        RESOURCE_BINDING_NAMESPACE,
        RESOURCE_BINDING_NAME,
        RESOURCE_TEMPLATE_UID,
        RESOURCE_TEMPLATE_GENERATION,
        WORK_NAME,
        WORK_NAMESPACE,
    ];
}

/// Finalizers of Karmada's controllers.
pub mod finalizers {
    /// On Clusters: Works and the execution namespace are removed first.
    pub const CLUSTER_CONTROLLER: &str = "karmada.io/cluster-controller";
    /// On Works: the member objects are removed first.
    pub const EXECUTION_CONTROLLER: &str = "karmada.io/execution-controller";
    /// On ResourceBindings: their Works are removed first.
    pub const BINDING_CONTROLLER: &str = "karmada.io/binding-controller";
    /// On ClusterResourceBindings: their Works are removed first.
    pub const CLUSTER_RESOURCE_BINDING_CONTROLLER: &str =
        "karmada.io/cluster-resource-binding-controller";
    /// On PropagationPolicies: the templates they claimed are released first.
    pub const PROPAGATION_POLICY_CONTROLLER: &str = "karmada.io/propagation-policy-controller";
    /// On ClusterPropagationPolicies: the templates they claimed are released first.
    pub const CLUSTER_PROPAGATION_POLICY_CONTROLLER: &str =
        "karmada.io/cluster-propagation-policy-controller";
    /// On independent bindings: their attached bindings are cleaned up first.
    pub const BINDING_DEPENDENCIES_DISTRIBUTOR: &str =
        "karmada.io/binding-dependencies-distributor";
    /// On EndpointSlice Works: the collected EndpointSlices are removed first.
    pub const ENDPOINT_SLICE_CONTROLLER: &str = "karmada.io/endpointslice-controller";
    /// On MultiClusterServices: their service Works are removed first.
    pub const MULTI_CLUSTER_SERVICE_CONTROLLER: &str = "karmada.io/multiclusterservice-controller";
}

/// Taint keys Karmada manages on Clusters.
pub mod taints {
    /// The cluster is not ready (Ready is False).
    pub const NOT_READY: &str = "cluster.karmada.io/not-ready";
    /// The cluster cannot be reached (Ready is Unknown).
    pub const UNREACHABLE: &str = "cluster.karmada.io/unreachable";
    /// The cluster does not accept new workloads.
    pub const UNSCHEDULABLE: &str = "cluster.karmada.io/unschedulable";
}

/// Condition types, reasons and messages set by Karmada's controllers.
pub mod conditions {
    pub use crate::cluster::v1alpha1::{
        CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS, CLUSTER_CONDITION_READY,
    };
    pub use crate::work::v1alpha1::{
        WORK_APPLIED, WORK_AVAILABLE, WORK_DEGRADED, WORK_DISPATCHING, WORK_PROGRESSING,
    };
    pub use crate::work::v1alpha2::{
        BINDING_REASON_NO_CLUSTER_FIT, BINDING_REASON_QUOTA_EXCEEDED,
        BINDING_REASON_SCHEDULER_ERROR, BINDING_REASON_SUCCESS, BINDING_REASON_UNSCHEDULABLE,
        FULLY_APPLIED, SCHEDULED,
    };

    /// Applied reason: the manifests were applied.
    pub const REASON_APPLIED_SUCCESSFUL: &str = "AppliedSuccessful";
    /// Applied message on success.
    pub const MESSAGE_APPLIED_SUCCESSFUL: &str = "Manifest has been successfully applied";
    /// Applied reason: applying failed.
    pub const REASON_APPLIED_FAILED: &str = "AppliedFailed";
    /// Dispatching reason: the Work is being dispatched.
    pub const REASON_DISPATCHING: &str = "Dispatching";
    /// Dispatching message when dispatching.
    pub const MESSAGE_DISPATCHING: &str = "Work is being dispatched to member clusters.";
    /// Dispatching reason: dispatching is suspended.
    pub const REASON_SUSPEND_DISPATCHING: &str = "SuspendDispatching";
    /// Dispatching message when suspended.
    pub const MESSAGE_SUSPEND_DISPATCHING: &str = "Work dispatching is in a suspended state.";
    /// FullyApplied reason: every Work is applied.
    pub const REASON_FULLY_APPLIED_SUCCESS: &str = "FullyAppliedSuccess";
    /// FullyApplied message on success.
    pub const MESSAGE_FULLY_APPLIED_SUCCESS: &str = "All works have been successfully applied";
    /// FullyApplied reason: some Work is not applied.
    pub const REASON_FULLY_APPLIED_FAILED: &str = "FullyAppliedFailed";
    /// FullyApplied message on failure.
    pub const MESSAGE_FULLY_APPLIED_FAILED: &str =
        "Failed to apply all works, see status.aggregatedStatus for details";
    /// Cluster Ready reason: healthy.
    pub const REASON_CLUSTER_READY: &str = "ClusterReady";
    /// Cluster Ready message when healthy.
    pub const MESSAGE_CLUSTER_READY: &str = "cluster is healthy and ready to accept workloads";
    /// Cluster Ready reason: reachable but not healthy.
    pub const REASON_CLUSTER_NOT_READY: &str = "ClusterNotReady";
    /// Cluster Ready message when reachable but not healthy.
    pub const MESSAGE_CLUSTER_NOT_READY: &str =
        "cluster is reachable but health endpoint responded without ok";
    /// Cluster Ready reason: unreachable.
    pub const REASON_CLUSTER_NOT_REACHABLE: &str = "ClusterNotReachable";
    /// Cluster Ready message when unreachable.
    pub const MESSAGE_CLUSTER_NOT_REACHABLE: &str = "cluster is not reachable";
    /// Cluster condition reason: status has never been posted.
    pub const REASON_CLUSTER_STATUS_NEVER_UPDATED: &str = "ClusterStatusNeverUpdated";
    /// Message for a cluster whose status has never been posted.
    pub const MESSAGE_CLUSTER_STATUS_NEVER_UPDATED: &str =
        "Cluster status controller never posted cluster status.";
    /// Cluster condition reason: status stopped being posted.
    pub const REASON_CLUSTER_STATUS_UNKNOWN: &str = "ClusterStatusUnknown";
    /// Message for a cluster whose status stopped being posted.
    pub const MESSAGE_CLUSTER_STATUS_UNKNOWN: &str =
        "Cluster status controller stopped posting cluster status.";
    /// CompleteAPIEnablements reason: the list is complete.
    pub const REASON_API_ENABLEMENTS_COMPLETE: &str = "Complete";
    /// CompleteAPIEnablements reason: some groups failed discovery.
    pub const REASON_API_ENABLEMENTS_PARTIAL: &str = "Partial";
    /// CompleteAPIEnablements reason: discovery returned nothing.
    pub const REASON_API_ENABLEMENTS_EMPTY: &str = "Empty";
    /// Eviction reason: a taint is not (or no longer) tolerated.
    pub const EVICTION_REASON_TAINT_UNTOLERATED: &str = "TaintUntolerated";
    /// Eviction reason: the application failed.
    pub const EVICTION_REASON_APPLICATION_FAILURE: &str = "ApplicationFailure";
    /// Eviction producer: the taint manager.
    pub const EVICTION_PRODUCER_TAINT_MANAGER: &str = "TaintManager";
}

/// Cluster fields usable in fieldSelector and spreadByField.
pub mod cluster_fields {
    /// The provider field.
    pub const PROVIDER: &str = "provider";
    /// The region field.
    pub const REGION: &str = "region";
    /// The zone field.
    pub const ZONE: &str = "zone";
}
