//! PropagationPolicy and ClusterPropagationPolicy: which resource templates go to which clusters.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::{karmada_resource, omit, string_enum};

/// A namespaced policy that propagates resource templates of its own namespace to member clusters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct PropagationPolicy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What to propagate and where.
    pub spec: PropagationSpec,
}

karmada_resource!(
    PropagationPolicy,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "propagationpolicies",
    scope: NamespaceResourceScope,
    status: none
);

/// A cluster-wide policy that propagates cluster-scoped resources and resources of any
/// non-reserved namespace to member clusters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ClusterPropagationPolicy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What to propagate and where.
    pub spec: PropagationSpec,
}

karmada_resource!(
    ClusterPropagationPolicy,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "clusterpropagationpolicies",
    scope: ClusterResourceScope,
    status: none
);

/// The desired behaviour shared by PropagationPolicy and ClusterPropagationPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropagationSpec {
    /// Resource templates this policy applies to. At least one selector is required: an empty
    /// list does not mean "everything", so that sensitive kinds such as Secrets are never
    /// propagated by accident.
    #[schemars(length(min = 1))]
    pub resource_selectors: Vec<ResourceSelector>,

    /// Deprecated: use propagateDeps instead.
    #[serde(default, skip_serializing_if = "omit::is_false")]
    pub association: bool,

    /// When true, objects the selected workloads depend on (ConfigMaps, Secrets,
    /// ServiceAccounts, PersistentVolumeClaims...) are propagated with them, and follow them
    /// on failover, without being listed in resourceSelectors. Defaults to false.
    #[serde(default, skip_serializing_if = "omit::is_false")]
    pub propagate_deps: bool,

    /// Rules that choose the target clusters and split replicas among them.
    #[serde(default)]
    pub placement: Placement,

    /// Precedence of this policy when several policies match one template: the highest value
    /// wins. Ties go to the policy with the most specific selector (name, then label
    /// selector, then kind), then to the alphabetically first name. A template already claimed
    /// by a policy is not taken over by a higher one unless preemption allows it. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = 0))]
    pub priority: Option<i32>,

    /// Whether this policy may take templates away from lower-priority policies: Always or
    /// Never. Defaults to Never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = "Never"))]
    pub preemption: Option<PreemptionBehavior>,

    /// Names of OverridePolicies that must exist before this policy takes effect, for users who
    /// create policies and resources together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependent_overrides: Vec<String>,

    /// The scheduler that places the selected resources. Defaults to default-scheduler.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("x-crd-default" = "default-scheduler"))]
    pub scheduler_name: String,

    /// How applications are migrated away from failed clusters or failed instances. Failover
    /// is disabled when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,

    /// What to do when a propagated resource already exists in a member cluster: Abort stops
    /// propagation to avoid clobbering it; Overwrite takes it over, which helps when migrating
    /// existing workloads. Defaults to Abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = "Abort"))]
    pub conflict_resolution: Option<ConflictResolution>,

    /// When Lazy, changes to this policy reach a template only when the template itself is
    /// next changed; when empty they apply at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_preference: Option<ActivationPreference>,

    /// Pauses parts of the propagation. Nothing is suspended when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,

    /// When true, objects already in member clusters are kept when the resource template is
    /// deleted. Defaults to false. Deleting the policy itself never deletes anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,

    /// Where the scheduling priority of the selected workloads comes from (alpha, behind the
    /// PriorityBasedScheduling feature gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<SchedulePriority>,
}

impl PropagationSpec {
    /// The declared priority, 0 when unset.
    pub fn explicit_priority(&self) -> i32 {
        self.priority.unwrap_or(0)
    }

    /// The conflict resolution in force, Abort when unset.
    pub fn conflict_resolution(&self) -> ConflictResolution {
        self.conflict_resolution
            .unwrap_or(ConflictResolution::Abort)
    }

    /// The preemption behaviour in force, Never when unset.
    pub fn preemption(&self) -> PreemptionBehavior {
        self.preemption.unwrap_or(PreemptionBehavior::Never)
    }

    /// Whether policy changes wait for the next template change.
    pub fn is_lazy(&self) -> bool {
        self.activation_preference == Some(ActivationPreference::Lazy)
    }
}

/// Selects resource templates by API version and kind, and optionally namespace, name or labels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// API version of the selected resources, e.g. apps/v1.
    pub api_version: String,
    /// Kind of the selected resources, e.g. Deployment.
    pub kind: String,
    /// Namespace of the selected resources. Empty means the policy's own namespace for a
    /// PropagationPolicy, and any namespace for a cluster-scoped policy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the selected resource. Empty selects every resource of the kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Label query over the resources; ignored when name is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Selects clusters by their fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    /// Requirements on the cluster fields provider, region or zone, with operator In or NotIn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
}

/// Which parts of propagation are paused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// When true, nothing is dispatched to any cluster. Only true is meaningful, and it cannot be
    /// combined with dispatchingOnClusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<bool>,
    /// Clusters to which dispatching is paused. Cannot be combined with dispatching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching_on_clusters: Option<SuspendClusters>,
}

/// A list of clusters whose dispatching is paused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspendClusters {
    /// Names of the paused clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

string_enum! {
    /// How the copy left on the cluster an application moves away from is cleaned up.
    PurgeMode {
        /// Deprecated spelling of Directly.
        Immediately = "Immediately",
        /// Deprecated spelling of Gracefully.
        Graciously = "Graciously",
        /// Never remove the old copy; the user cleans it up.
        Never = "Never",
        /// Remove the old copy before the new one is created, for applications that must never
        /// run twice at once.
        Directly = "Directly",
        /// Remove the old copy once the new one is healthy, or after a timeout.
        Gracefully = "Gracefully",
    }
}

/// How Karmada reacts to application and cluster failures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailoverBehavior {
    /// Failover of unhealthy applications. Disabled when unset; requires propagateDeps so that
    /// dependencies move with the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<ApplicationFailoverBehavior>,
    /// Failover when a whole cluster fails. When unset the controller's
    /// no-execute-taint-eviction-purge-mode setting decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterFailoverBehavior>,
}

/// Application failover settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationFailoverBehavior {
    /// Conditions that must all hold before failover starts.
    pub decision_conditions: DecisionConditions,
    /// How the old copy is removed: Directly, Gracefully, Never, or the deprecated Immediately
    /// and Graciously. Defaults to Gracefully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "x-crd-default" = "Gracefully",
        "enum" = ["Directly", "Gracefully", "Never", "Immediately", "Graciously"]
    ))]
    pub purge_mode: Option<PurgeMode>,
    /// Longest wait, in seconds, before the old copy is removed when purgeMode is Gracefully;
    /// the old copy goes even if the new one never becomes healthy. Must be positive; the
    /// webhook defaults it to 600 for Gracefully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// State to carry from the old copy to the new one (alpha, behind the
    /// StatefulFailoverInjection feature gate). Nothing is carried when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// Cluster failover settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailoverBehavior {
    /// How the old copy is removed: Directly or Gracefully. Defaults to Gracefully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = "Gracefully", "enum" = ["Directly", "Gracefully"]))]
    pub purge_mode: Option<PurgeMode>,
    /// State to carry from the old copy to the new one (alpha, behind the
    /// StatefulFailoverInjection feature gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// When failover may begin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionConditions {
    /// Seconds an application must stay unhealthy before failover starts. Defaults to 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = 300))]
    pub toleration_seconds: Option<i32>,
}

/// State carried across a failover.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePreservation {
    /// One rule per piece of state.
    pub rules: Vec<StatePreservationRule>,
}

/// One piece of state to carry: read with a JSONPath, passed on as a label.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePreservationRule {
    /// Label key under which the value is handed to the new cluster.
    pub alias_label_name: String,
    /// JSONPath evaluated against the object's status, e.g. {.availableReplicas}.
    pub json_path: String,
}

/// Rules that choose target clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// A single set of candidate clusters. Cannot be combined with clusterAffinities; when both
    /// are unset every cluster is a candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,

    /// Ordered groups of candidate clusters: the scheduler tries each group in turn and uses the
    /// first one that can take the workload. Cannot be combined with clusterAffinity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_affinities: Vec<ClusterAffinityTerm>,

    /// Cluster taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_tolerations: Vec<Toleration>,

    /// Constraints on how many cluster groups are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraint>,

    /// How replicas of workloads such as Deployments are handed out to clusters. When unset
    /// every cluster gets all replicas (Duplicated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,

    /// Co-location and separation rules between workloads (alpha, behind the WorkloadAffinity
    /// feature gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity: Option<WorkloadAffinity>,
}

impl Placement {
    /// Duplicated or Divided; Duplicated when replicaScheduling is unset. A replicaScheduling
    /// without a type is treated as Divided, the API default.
    pub fn replica_scheduling_type(&self) -> ReplicaSchedulingType {
        match &self.replica_scheduling {
            None => ReplicaSchedulingType::Duplicated,
            Some(strategy) => strategy
                .replica_scheduling_type
                .unwrap_or(ReplicaSchedulingType::Divided),
        }
    }
}

string_enum! {
    /// A cluster field usable to group clusters for spreading.
    SpreadFieldValue {
        /// Each cluster is its own group.
        Cluster = "cluster",
        /// Clusters are grouped by region.
        Region = "region",
        /// Clusters are grouped by zone.
        Zone = "zone",
        /// Clusters are grouped by provider.
        Provider = "provider",
    }
}

/// Bounds on the number of cluster groups a workload is spread over.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraint {
    /// Cluster field used to form groups: cluster, region, zone or provider. Cannot be combined
    /// with spreadByLabel; set to cluster when neither is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_by_field: Option<SpreadFieldValue>,
    /// Cluster label key used to form groups. Cannot be combined with spreadByField.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spread_by_label: String,
    /// Most groups to select.
    #[serde(default, skip_serializing_if = "omit::is_zero_i64")]
    pub max_groups: i64,
    /// Fewest groups to select. Defaults to 1.
    #[serde(default, skip_serializing_if = "omit::is_zero_i64")]
    pub min_groups: i64,
}

/// A filter over member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Selects clusters by label; when set and not empty only matching clusters qualify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Selects clusters by provider, region or zone with In or NotIn; when set and not empty
    /// only matching clusters qualify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<FieldSelector>,
    /// Clusters selected by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    /// Clusters never selected.
    #[serde(default, rename = "exclude", skip_serializing_if = "Vec::is_empty")]
    pub exclude_clusters: Vec<String>,
}

impl ClusterAffinity {
    /// True when the affinity sets no criterion at all.
    pub fn is_empty(&self) -> bool {
        self.label_selector.is_none()
            && self.field_selector.is_none()
            && self.cluster_names.is_empty()
            && self.exclude_clusters.is_empty()
    }
}

/// A named group of candidate clusters, with optional overflow groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinityTerm {
    /// Name of the group, 1 to 32 characters.
    #[schemars(length(min = 1, max = 32))]
    pub affinity_name: String,

    /// The primary group's filter.
    #[serde(flatten)]
    pub cluster_affinity: ClusterAffinity,

    /// Further groups the scheduler adds, in order, when the primary group lacks capacity, and
    /// removes in reverse order when scaling down. Only valid with an inline filter and with
    /// Aggregated or dynamically weighted division. A cluster listed in several overflow groups
    /// belongs to the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflow_affinities: Vec<OverflowClusterAffinity>,
}

/// One overflow group of candidate clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverflowClusterAffinity {
    /// Name of the group, 1 to 32 characters.
    #[schemars(length(min = 1, max = 32))]
    pub affinity_name: String,

    /// The group's filter.
    #[serde(flatten)]
    pub cluster_affinity: ClusterAffinity,
}

/// Inter-workload affinity and anti-affinity; both terms are hard requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinity {
    /// Place the workload only where workloads of its affinity group already run. The first
    /// workload of a group is never blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<WorkloadAffinityTerm>,
    /// Keep the workload away from clusters running workloads of its anti-affinity group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity: Option<WorkloadAntiAffinityTerm>,
}

/// Groups workloads that should run together.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityTerm {
    /// Label key on resource templates whose value names the affinity group. Groups are
    /// namespace-scoped. Must be a valid label key.
    pub group_by_label_key: String,
}

/// Groups workloads that should run apart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAntiAffinityTerm {
    /// Label key on resource templates whose value names the anti-affinity group. Groups are
    /// namespace-scoped. Must be a valid label key.
    pub group_by_label_key: String,
}

string_enum! {
    /// How replicas are scheduled.
    ReplicaSchedulingType {
        /// Every selected cluster runs the full replica count.
        Duplicated = "Duplicated",
        /// The replica count is split among the selected clusters.
        Divided = "Divided",
    }
}

string_enum! {
    /// How divided replicas are split.
    ReplicaDivisionPreference {
        /// Use as few clusters as capacity allows.
        Aggregated = "Aggregated",
        /// Split by weight.
        Weighted = "Weighted",
    }
}

/// How replicas are assigned to clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSchedulingStrategy {
    /// Duplicated gives every cluster all replicas; Divided splits them according to
    /// replicaDivisionPreference. Defaults to Divided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = "Divided"))]
    pub replica_scheduling_type: Option<ReplicaSchedulingType>,
    /// For Divided: Aggregated packs replicas into as few clusters as capacity allows; Weighted
    /// splits them by weightPreference. The webhook sets Weighted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<ReplicaDivisionPreference>,
    /// Cluster weights for Weighted division; all clusters weigh the same when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_preference: Option<ClusterPreferences>,
}

/// Weights of clusters for Weighted division.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPreferences {
    /// Fixed weights per group of clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_weight_list: Vec<StaticClusterWeight>,
    /// Derive weights from a live factor instead; staticWeightList is then ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_weight: Option<DynamicWeightFactor>,
}

/// A fixed weight for the clusters a filter selects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterWeight {
    /// The clusters this weight applies to.
    pub target_cluster: ClusterAffinity,
    /// The weight, at least 1.
    #[schemars(range(min = 1))]
    pub weight: i64,
}

string_enum! {
    /// The source of dynamic cluster weights.
    DynamicWeightFactor {
        /// Weigh clusters by how many replicas they can still run.
        AvailableReplicas = "AvailableReplicas",
    }
}

string_enum! {
    /// Whether a policy may take templates from lower-priority policies.
    PreemptionBehavior {
        /// Preempt lower-priority policies. A PropagationPolicy may also take templates from any
        /// ClusterPropagationPolicy; a ClusterPropagationPolicy only from other
        /// ClusterPropagationPolicies.
        Always = "Always",
        /// Never preempt.
        Never = "Never",
    }
}

string_enum! {
    /// What to do when the resource already exists in the member cluster.
    ConflictResolution {
        /// Leave it alone and stop propagating.
        Abort = "Abort",
        /// Overwrite the existing resource with the template.
        Overwrite = "Overwrite",
    }
}

string_enum! {
    /// When policy changes reach the templates they select.
    ActivationPreference {
        /// Only when the template itself next changes.
        Lazy = "Lazy",
    }
}

/// Where the scheduling priority of a workload comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePriority {
    /// Where to look up the priority class; only KubePriorityClass is implemented.
    #[schemars(extend("enum" = ["KubePriorityClass"]))]
    pub priority_class_source: PriorityClassSource,
    /// Name of the priority class to use.
    pub priority_class_name: String,
}

string_enum! {
    /// Where priority classes are looked up.
    #[derive(Default)]
    PriorityClassSource {
        /// Karmada FederatedPriorityClass (not implemented).
        FederatedPriorityClass = "FederatedPriorityClass",
        /// Kubernetes scheduling.k8s.io/v1 PriorityClass.
        #[default]
        KubePriorityClass = "KubePriorityClass",
        /// The priorityClassName of the workload's pod template (not implemented).
        PodPriorityClass = "PodPriorityClass",
    }
}
