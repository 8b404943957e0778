//! The Karmada kinds this crate serves, with what discovery and the REST layer need to know.

use crate::validation::names::{is_dns1123_subdomain, validate_cluster_name};

/// Which server Karmada uses to serve a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedBy {
    /// A CustomResourceDefinition in karmada-apiserver: JSON merge patches only, CRD schema
    /// defaulting and pruning, webhooks.
    CustomResourceDefinition,
    /// karmada-aggregated-apiserver: a typed API with strategic merge patch.
    AggregatedApiServer,
}

/// Discovery and REST facts about one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// API group, e.g. `policy.karmada.io`.
    pub group: &'static str,
    /// API version, e.g. `v1alpha1`: the version objects are stored in (and the preferred one).
    pub version: &'static str,
    /// Older versions also served, converted to and from `version` (ResourceBinding and
    /// ClusterResourceBinding serve `v1alpha1` beside `v1alpha2`, as Karmada's CRDs do).
    pub other_versions: &'static [&'static str],
    /// Kind, e.g. `PropagationPolicy`.
    pub kind: &'static str,
    /// Kind of the list, e.g. `PropagationPolicyList`.
    pub list_kind: &'static str,
    /// Resource name used in URLs, e.g. `propagationpolicies`.
    pub plural: &'static str,
    /// Singular resource name, e.g. `propagationpolicy`.
    pub singular: &'static str,
    /// Short names kubectl accepts, e.g. `pp`.
    pub short_names: &'static [&'static str],
    /// Categories, so `kubectl get karmada-io` lists the kind.
    pub categories: &'static [&'static str],
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the kind has a `status` subresource.
    pub status_subresource: bool,
    /// Whether the kind has a `proxy` subresource (Cluster only).
    pub proxy_subresource: bool,
    /// Whether PATCH accepts `application/strategic-merge-patch+json`; CRDs do not.
    pub strategic_merge: bool,
    /// The server type Karmada uses for the kind.
    pub served_by: ServedBy,
}

impl KindInfo {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// Every served version, the storage version first.
    pub fn served_versions(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.version).chain(self.other_versions.iter().copied())
    }

    /// Checks `metadata.name` (or, with `prefix`, `metadata.generateName`) with the kind's
    /// rule: a DNS-1123 subdomain for CRDs, Karmada's cluster-name rule for Cluster. Returns
    /// the messages for `metadata.name: Invalid value: ...` errors.
    pub fn validate_name(&self, name: &str, prefix: bool) -> Vec<String> {
        match self.served_by {
            ServedBy::AggregatedApiServer => validate_cluster_name(name),
            ServedBy::CustomResourceDefinition => {
                // A generateName prefix may end with '-', the random suffix follows it.
                let masked;
                let name = if prefix && name.ends_with('-') {
                    masked = format!("{}a", &name[..name.len() - 1]);
                    masked.as_str()
                } else {
                    name
                };
                is_dns1123_subdomain(name)
            }
        }
    }
}

/// The category every Karmada CRD belongs to.
pub const KARMADA_CATEGORY: &str = "karmada-io";

/// Methods the Cluster proxy subresource accepts.
pub const CLUSTER_PROXY_METHODS: &[&str] =
    &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The fields every Karmada CRD shares; each entry below fills in the rest.
const CRD: KindInfo = KindInfo {
    group: "",
    version: "",
    kind: "",
    other_versions: &[],
    list_kind: "",
    plural: "",
    singular: "",
    short_names: &[],
    categories: &[KARMADA_CATEGORY],
    namespaced: true,
    status_subresource: false,
    proxy_subresource: false,
    strategic_merge: false,
    served_by: ServedBy::CustomResourceDefinition,
};

static KINDS: &[KindInfo] = &[
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "PropagationPolicy",
        list_kind: "PropagationPolicyList",
        plural: "propagationpolicies",
        singular: "propagationpolicy",
        short_names: &["pp"],
        namespaced: true,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "ClusterPropagationPolicy",
        list_kind: "ClusterPropagationPolicyList",
        plural: "clusterpropagationpolicies",
        singular: "clusterpropagationpolicy",
        short_names: &["cpp"],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "OverridePolicy",
        list_kind: "OverridePolicyList",
        plural: "overridepolicies",
        singular: "overridepolicy",
        short_names: &["op"],
        namespaced: true,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "ClusterOverridePolicy",
        list_kind: "ClusterOverridePolicyList",
        plural: "clusteroverridepolicies",
        singular: "clusteroverridepolicy",
        short_names: &["cop"],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "ClusterTaintPolicy",
        list_kind: "ClusterTaintPolicyList",
        plural: "clustertaintpolicies",
        singular: "clustertaintpolicy",
        short_names: &[],
        categories: &[],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "FederatedResourceQuota",
        list_kind: "FederatedResourceQuotaList",
        plural: "federatedresourcequotas",
        singular: "federatedresourcequota",
        short_names: &[],
        namespaced: true,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "remedy.karmada.io",
        version: "v1alpha1",
        kind: "Remedy",
        list_kind: "RemedyList",
        plural: "remedies",
        singular: "remedy",
        short_names: &[],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "apps.karmada.io",
        version: "v1alpha1",
        kind: "WorkloadRebalancer",
        list_kind: "WorkloadRebalancerList",
        plural: "workloadrebalancers",
        singular: "workloadrebalancer",
        short_names: &[],
        categories: &[],
        namespaced: false,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "networking.karmada.io",
        version: "v1alpha1",
        kind: "MultiClusterService",
        list_kind: "MultiClusterServiceList",
        plural: "multiclusterservices",
        singular: "multiclusterservice",
        short_names: &["mcs"],
        namespaced: true,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "networking.karmada.io",
        version: "v1alpha1",
        kind: "MultiClusterIngress",
        list_kind: "MultiClusterIngressList",
        plural: "multiclusteringresses",
        singular: "multiclusteringress",
        short_names: &["mci"],
        namespaced: true,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "work.karmada.io",
        version: "v1alpha1",
        kind: "Work",
        list_kind: "WorkList",
        plural: "works",
        singular: "work",
        short_names: &["wk"],
        namespaced: true,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "work.karmada.io",
        version: "v1alpha2",
        other_versions: &["v1alpha1"],
        kind: "ResourceBinding",
        list_kind: "ResourceBindingList",
        plural: "resourcebindings",
        singular: "resourcebinding",
        short_names: &["rb"],
        namespaced: true,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "work.karmada.io",
        version: "v1alpha2",
        other_versions: &["v1alpha1"],
        kind: "ClusterResourceBinding",
        list_kind: "ClusterResourceBindingList",
        plural: "clusterresourcebindings",
        singular: "clusterresourcebinding",
        short_names: &["crb"],
        namespaced: false,
        status_subresource: true,
        ..CRD
    },
    KindInfo {
        group: "config.karmada.io",
        version: "v1alpha1",
        kind: "ResourceInterpreterCustomization",
        list_kind: "ResourceInterpreterCustomizationList",
        plural: "resourceinterpretercustomizations",
        singular: "resourceinterpretercustomization",
        short_names: &["ric"],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "config.karmada.io",
        version: "v1alpha1",
        kind: "ResourceInterpreterWebhookConfiguration",
        list_kind: "ResourceInterpreterWebhookConfigurationList",
        plural: "resourceinterpreterwebhookconfigurations",
        singular: "resourceinterpreterwebhookconfiguration",
        short_names: &[],
        namespaced: false,
        status_subresource: false,
        ..CRD
    },
    KindInfo {
        group: "cluster.karmada.io",
        version: "v1alpha1",
        other_versions: &[],
        kind: "Cluster",
        list_kind: "ClusterList",
        plural: "clusters",
        singular: "cluster",
        short_names: &[],
        categories: &[],
        namespaced: false,
        status_subresource: true,
        proxy_subresource: true,
        strategic_merge: true,
        served_by: ServedBy::AggregatedApiServer,
    },
];

/// Every kind this crate defines, in a stable order.
pub fn kinds() -> &'static [KindInfo] {
    KINDS
}

/// The kind with this name, e.g. `Work`.
pub fn kind_info(kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.kind == kind)
}

/// The kind served at `group` under this resource name (plural, e.g. `works`).
pub fn kind_by_resource(group: &str, plural: &str) -> Option<&'static KindInfo> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.plural == plural)
}
