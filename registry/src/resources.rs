//! What one served resource is ([`ResourceDef`]: names, scope, subresources, storage and
//! where its behaviour comes from) and the fixed table of the built-in kinds (named as
//! kube-apiserver 1.32 names them). A layer above adds the kinds it registers
//! ([`Source::Registered`]) and the server's catalog the kinds of CustomResourceDefinitions.

pub use apimachinery::meta::split_api_version;
use std::collections::HashMap;

use serde_json::Value;

/// Where a resource's behaviour comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A Kubernetes built-in kind (compiled-in schema, printers, strategic merge patch).
    BuiltIn,
    /// A kind a layer above this library registers, with its behaviour (genericapiserver's
    /// `kinds::KindStrategy`): Karmada's kinds, served as kube-apiserver serves Karmada's CRDs
    /// or as karmada-aggregated-apiserver serves Cluster.
    Registered {
        /// Served as kube-apiserver serves a CustomResourceDefinition's kind rather than from
        /// a typed registry of its own ([`ResourceDef::served_as_crd`]).
        served_as_crd: bool,
    },
    /// A kind defined by a CustomResourceDefinition.
    Custom(Box<CustomSource>),
}

/// What a CRD says about one served version of its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomSource {
    /// The CRD's name (`<plural>.<group>`).
    pub crd_name: String,
    /// The version's `schema.openAPIV3Schema`, if any.
    pub schema: Option<Value>,
    /// The version's `additionalPrinterColumns`.
    pub printer_columns: Vec<Value>,
    /// The version's `selectableFields[].jsonPath`.
    pub selectable_fields: Vec<String>,
    /// `subresources.scale`, if any.
    pub scale: Option<ScaleDef>,
}

/// Paths of a scale subresource (as a CRD's `subresources.scale` names them).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleDef {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// JSON path of the label selector string, if any.
    pub label_selector_path: Option<String>,
}

impl ScaleDef {
    fn standard() -> ScaleDef {
        ScaleDef {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        }
    }
}

/// How the server keeps a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Objects are stored under this key prefix (ending with `/`).
    Stored {
        /// e.g. `/registry/apps/deployments/`.
        prefix: String,
    },
    /// Create-only request/response kinds that are never stored (access reviews, ...).
    Virtual,
    /// Read-only objects computed on each read, never stored: ComponentStatus, which
    /// kube-apiserver answers from its own probes of etcd, the scheduler and the
    /// controller-manager.
    Probed,
}

/// One served resource of one group/version.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceDef {
    /// API group (`""` for core).
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment`.
    pub singular: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// List kind, e.g. `DeploymentList`.
    pub list_kind: String,
    /// Short names for kubectl.
    pub short_names: Vec<String>,
    /// Categories (e.g. `all`).
    pub categories: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `status` subresource (main-resource writes then ignore `.status`).
    pub status: bool,
    /// Has a `scale` subresource.
    pub scale: Option<ScaleDef>,
    /// Other subresources served by special handlers (`proxy`, `token`, `finalize`).
    pub extra_subresources: Vec<String>,
    /// Maintains `metadata.generation`.
    pub generation: bool,
    /// Accepts strategic merge patches.
    pub strategic_merge: bool,
    /// Stored or virtual.
    pub storage: Storage,
    /// Where its behaviour comes from.
    pub source: Source,
}

impl ResourceDef {
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The `apiVersion` its objects are stored in: its own, or the form it is converted to
    /// ([`crate::conversion::stored_api_version`]).
    pub fn storage_api_version(&self) -> String {
        crate::conversion::stored_api_version(&self.group, &self.version, &self.kind)
            .map_or_else(|| self.api_version(), String::from)
    }

    /// The key prefix of a stored resource.
    pub fn prefix(&self) -> Option<&str> {
        match &self.storage {
            Storage::Stored { prefix } => Some(prefix),
            Storage::Virtual | Storage::Probed => None,
        }
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> Option<String> {
        let prefix = self.prefix()?;
        Some(if self.namespaced {
            format!("{prefix}{namespace}/{name}")
        } else {
            format!("{prefix}{name}")
        })
    }

    /// The verbs served on the main resource.
    pub fn verbs(&self) -> Vec<&'static str> {
        match self.storage {
            Storage::Virtual => vec!["create"],
            Storage::Probed => vec!["get", "list"],
            // kube's namespace REST storage implements no DeleteCollection.
            Storage::Stored { .. } if self.group.is_empty() && self.plural == "namespaces" => {
                vec![
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ]
            }
            Storage::Stored { .. } => vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
        }
    }

    /// True for custom resources.
    pub fn is_custom(&self) -> bool {
        matches!(self.source, Source::Custom(_))
    }

    /// True for kinds kube-apiserver serves from a CustomResourceDefinition: custom resources
    /// and the registered kinds their layer marks so (Karmada's but Cluster, which
    /// karmada-aggregated-apiserver serves from a typed registry). Their objects are decoded unstructured (nothing defaults `kind` or
    /// `apiVersion`), and apiextensions' rules apply to their field selectors and updates.
    pub fn served_as_crd(&self) -> bool {
        match self.source {
            Source::Custom(_) => true,
            Source::Registered { served_as_crd } => served_as_crd,
            Source::BuiltIn => false,
        }
    }

    /// `deployments.apps`: the group-qualified resource.
    pub fn qualified(&self) -> String {
        qualified_resource(&self.group, &self.plural)
    }
}

/// `configmaps` or `clusters.cluster.karmada.io`: how kube names a resource in messages.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The key prefix of a custom resource (and of Karmada's kinds, which kube-apiserver serves from
/// CRDs): `/registry/<group>/<resource>/`, as apiextensions-apiserver stores custom resources.
pub fn storage_prefix(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("{ROOT}{plural}/")
    } else {
        format!("{ROOT}{group}/{plural}/")
    }
}

/// The root of every key, kube-apiserver's default `--etcd-prefix` (another one is applied
/// below the server, by the store).
pub const ROOT: &str = "/registry/";

/// kube-apiserver's resource prefix of a built-in resource, relative to the root
/// (pkg/kubeapiserver's `SpecialDefaultResourcePrefixes`, else the resource's name whatever
/// its group; the resources apiextensions-apiserver and kube-aggregator store keep
/// `<group>/<resource>`). Cohabiting resources share their prefix (`events.k8s.io` Events
/// are core Events, in `events`).
pub fn built_in_resource_prefix(group: &str, plural: &str) -> String {
    match (group, plural) {
        ("", "replicationcontrollers") => "controllers".into(),
        ("", "endpoints") => "services/endpoints".into(),
        ("", "nodes") => "minions".into(),
        ("", "services") => "services/specs".into(),
        ("extensions" | "networking.k8s.io", "ingresses") => "ingress".into(),
        ("apiextensions.k8s.io" | "apiregistration.k8s.io", _) => format!("{group}/{plural}"),
        _ => plural.into(),
    }
}

/// The key prefix of a built-in resource, as kube-apiserver keys it.
pub fn built_in_storage_prefix(group: &str, plural: &str) -> String {
    format!("{ROOT}{}/", built_in_resource_prefix(group, plural))
}

/// The key prefix earlier versions of this server gave a built-in resource (the custom
/// resources' layout for every group); objects found there are moved at start.
pub fn legacy_storage_prefix(group: &str, plural: &str) -> String {
    storage_prefix(group, plural)
}

/// Resources of kube-apiserver 1.32 this server does not serve, by their key prefix
/// (relative to the root), so that their keys are named for what they are (encryption
/// rules, metrics, `migrate check`).
const KUBE_ONLY: &[(&str, &str, &str)] = &[
    ("ipaddresses", "networking.k8s.io", "ipaddresses"),
    ("servicecidrs", "networking.k8s.io", "servicecidrs"),
    (
        "volumeattributesclasses",
        "storage.k8s.io",
        "volumeattributesclasses",
    ),
    (
        "clustertrustbundles",
        "certificates.k8s.io",
        "clustertrustbundles",
    ),
    ("leasecandidates", "coordination.k8s.io", "leasecandidates"),
    (
        "storageversions",
        "internal.apiserver.k8s.io",
        "storageversions",
    ),
    ("resourceclaims", "resource.k8s.io", "resourceclaims"),
    (
        "resourceclaimtemplates",
        "resource.k8s.io",
        "resourceclaimtemplates",
    ),
    ("resourceslices", "resource.k8s.io", "resourceslices"),
    ("deviceclasses", "resource.k8s.io", "deviceclasses"),
];

struct Spec {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    all: bool,
    status: bool,
    scale: bool,
    generation: bool,
    extra: &'static [&'static str],
    categories: &'static [&'static str],
    storage: SpecStorage,
}

/// How a built-in resource of the table is kept.
#[derive(Clone, Copy)]
enum SpecStorage {
    /// Under its own group's and resource's key prefix.
    Own,
    /// Under another group's resource's prefix: the same objects served in another group
    /// (events.k8s.io's events are core's).
    SharedWith(&'static str, &'static str),
    Virtual,
    Probed,
}

const fn spec(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
) -> Spec {
    Spec {
        group,
        version,
        plural,
        kind,
        short,
        namespaced,
        all: false,
        status: false,
        scale: false,
        generation: false,
        extra: &[],
        categories: &[],
        storage: SpecStorage::Own,
    }
}

impl Spec {
    const fn all(mut self) -> Spec {
        self.all = true;
        self
    }
    const fn categories(mut self, categories: &'static [&'static str]) -> Spec {
        self.categories = categories;
        self
    }
    const fn shared_with(mut self, group: &'static str, plural: &'static str) -> Spec {
        self.storage = SpecStorage::SharedWith(group, plural);
        self
    }
    const fn probed(mut self) -> Spec {
        self.storage = SpecStorage::Probed;
        self
    }
    const fn status(mut self) -> Spec {
        self.status = true;
        self
    }
    const fn scale(mut self) -> Spec {
        self.scale = true;
        self
    }
    const fn generation(mut self) -> Spec {
        self.generation = true;
        self
    }
    const fn extra(mut self, extra: &'static [&'static str]) -> Spec {
        self.extra = extra;
        self
    }
    const fn virtual_(mut self) -> Spec {
        self.storage = SpecStorage::Virtual;
        self
    }
}

/// The built-in kinds this server serves (names as kube-apiserver 1.32 gives them).
const BUILT_IN: &[Spec] = &[
    spec("", "v1", "namespaces", "Namespace", &["ns"], false)
        .status()
        .extra(&["finalize"]),
    spec("", "v1", "configmaps", "ConfigMap", &["cm"], true),
    spec("", "v1", "secrets", "Secret", &[], true),
    spec("", "v1", "services", "Service", &["svc"], true)
        .all()
        .status(),
    spec("", "v1", "serviceaccounts", "ServiceAccount", &["sa"], true).extra(&["token"]),
    spec("", "v1", "events", "Event", &["ev"], true),
    spec(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        &["pvc"],
        true,
    )
    .status(),
    spec(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        &["pv"],
        false,
    )
    .status(),
    spec("", "v1", "pods", "Pod", &["po"], true)
        .all()
        .status()
        .extra(&["binding", "eviction"]),
    spec("", "v1", "bindings", "Binding", &[], true).virtual_(),
    spec(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        &["cs"],
        false,
    )
    .probed(),
    spec("", "v1", "podtemplates", "PodTemplate", &[], true).generation(),
    spec(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        &["rc"],
        true,
    )
    .all()
    .status()
    .scale()
    .generation(),
    spec("", "v1", "nodes", "Node", &["no"], false).status(),
    spec("", "v1", "endpoints", "Endpoints", &["ep"], true),
    spec(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        &["quota"],
        true,
    )
    .status(),
    spec("", "v1", "limitranges", "LimitRange", &["limits"], true),
    spec("apps", "v1", "deployments", "Deployment", &["deploy"], true)
        .all()
        .status()
        .scale()
        .generation(),
    spec("apps", "v1", "statefulsets", "StatefulSet", &["sts"], true)
        .all()
        .status()
        .scale()
        .generation(),
    spec("apps", "v1", "daemonsets", "DaemonSet", &["ds"], true)
        .all()
        .status()
        .generation(),
    spec("apps", "v1", "replicasets", "ReplicaSet", &["rs"], true)
        .all()
        .status()
        .scale()
        .generation(),
    spec(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        &[],
        true,
    ),
    spec("batch", "v1", "jobs", "Job", &[], true)
        .all()
        .status()
        .generation(),
    spec("batch", "v1", "cronjobs", "CronJob", &["cj"], true)
        .all()
        .status()
        .generation(),
    spec("coordination.k8s.io", "v1", "leases", "Lease", &[], true),
    spec(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        &["csr"],
        false,
    )
    .status()
    .extra(&["approval"]),
    spec(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        &[],
        true,
    ),
    spec(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        &[],
        false,
    ),
    spec(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        &[],
        true,
    ),
    spec(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        &[],
        false,
    ),
    spec(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        &["crd", "crds"],
        false,
    )
    .categories(&["api-extensions"])
    .status()
    .generation(),
    spec(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        &[],
        false,
    )
    .categories(&["api-extensions"])
    .status(),
    spec(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        &["ing"],
        true,
    )
    .status()
    .generation(),
    spec(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        &["netpol"],
        true,
    )
    .generation(),
    spec(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        &["pdb"],
        true,
    )
    .status()
    .generation(),
    spec(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        &["hpa"],
        true,
    )
    .all()
    .status(),
    // The same objects as autoscaling/v2's, served in v1's form.
    spec(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        &["hpa"],
        true,
    )
    .all()
    .status()
    .shared_with("autoscaling", "horizontalpodautoscalers"),
    spec(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        &["pc"],
        false,
    ),
    spec(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        &["sc"],
        false,
    ),
    spec(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        &[],
        false,
    )
    .generation(),
    spec("storage.k8s.io", "v1", "csinodes", "CSINode", &[], false),
    spec(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        &[],
        true,
    ),
    spec(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        &[],
        false,
    )
    .status(),
    spec(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        &[],
        false,
    )
    .generation(),
    spec(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "RuntimeClass",
        &[],
        false,
    ),
    spec(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "FlowSchema",
        &[],
        false,
    )
    .status()
    .generation(),
    spec(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        &[],
        false,
    )
    .status()
    .generation(),
    spec(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        &[],
        true,
    )
    .generation(),
    // The same objects as core's events (one storage), served in events.k8s.io's form.
    spec("events.k8s.io", "v1", "events", "Event", &["ev"], true).shared_with("", "events"),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        &[],
        false,
    )
    .categories(&["api-extensions"])
    .generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        &[],
        false,
    )
    .categories(&["api-extensions"])
    .generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        &[],
        false,
    )
    .categories(&["api-extensions"])
    .status()
    .generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        &[],
        false,
    )
    .categories(&["api-extensions"])
    .generation(),
    spec(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        &[],
        false,
    )
    .virtual_(),
    spec(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        &[],
        false,
    )
    .virtual_(),
    spec(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        &[],
        false,
    )
    .virtual_(),
    spec(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        &[],
        true,
    )
    .virtual_(),
    spec(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        &[],
        false,
    )
    .virtual_(),
    spec(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        &[],
        false,
    )
    .virtual_(),
];

fn from_spec(s: &Spec, source: Source, strategic_merge: bool) -> ResourceDef {
    ResourceDef {
        group: s.group.into(),
        version: s.version.into(),
        plural: s.plural.into(),
        singular: s.kind.to_lowercase(),
        kind: s.kind.into(),
        list_kind: format!("{}List", s.kind),
        short_names: s.short.iter().map(|x| x.to_string()).collect(),
        categories: s
            .all
            .then_some("all")
            .into_iter()
            .chain(s.categories.iter().copied())
            .map(String::from)
            .collect(),
        namespaced: s.namespaced,
        status: s.status,
        scale: s.scale.then(ScaleDef::standard),
        extra_subresources: s.extra.iter().map(|x| x.to_string()).collect(),
        generation: s.generation,
        strategic_merge,
        storage: match s.storage {
            SpecStorage::Own => Storage::Stored {
                prefix: built_in_storage_prefix(s.group, s.plural),
            },
            SpecStorage::SharedWith(group, plural) => Storage::Stored {
                prefix: built_in_storage_prefix(group, plural),
            },
            SpecStorage::Virtual => Storage::Virtual,
            SpecStorage::Probed => Storage::Probed,
        },
        source,
    }
}

/// How storage keys name their resource: kube-apiserver's prefixes of built-in resources
/// (`/registry/deployments/...` is `deployments.apps`, `/registry/services/specs/...` is
/// `services`), and `/registry/<group>/<resource>/...` for the others (custom resources, and the
/// layout earlier versions of this server used for every group), under the etcd prefix.
#[derive(Clone, Debug)]
pub struct StorageKeys {
    /// What every key starts with: the etcd prefix and a `/`.
    root: String,
    /// Group and resource of each kube resource prefix (relative to the root), with the
    /// prefixes earlier versions of this server used for core resources kube keys otherwise.
    prefixes: HashMap<String, (String, String)>,
}

impl StorageKeys {
    /// The key layout under kube-apiserver's default etcd prefix, `/registry`.
    pub fn new() -> StorageKeys {
        StorageKeys::with_etcd_prefix(ROOT)
    }

    /// The key layout under `etcd_prefix` (kube-apiserver's `--etcd-prefix`).
    pub fn with_etcd_prefix(etcd_prefix: &str) -> StorageKeys {
        let mut prefixes: HashMap<String, (String, String)> = KUBE_ONLY
            .iter()
            .map(|(p, g, r)| (p.to_string(), (g.to_string(), r.to_string())))
            .collect();
        for d in built_in().into_iter().filter(|d| d.prefix().is_some()) {
            if d.group.is_empty() {
                // The core group's earlier keys (`/registry/endpoints/...`).
                prefixes.insert(d.plural.clone(), (String::new(), d.plural.clone()));
            }
            // Cohabiting resources share a prefix; its keys are named for the first, the
            // resource that owns them (core's events, not events.k8s.io's).
            let prefix = built_in_resource_prefix(&d.group, &d.plural);
            prefixes.entry(prefix).or_insert((d.group, d.plural));
        }
        StorageKeys {
            root: format!("{}/", etcd_prefix.trim_end_matches('/')),
            prefixes,
        }
    }

    /// The group (empty for the core group) and resource a storage key or prefix belongs to;
    /// the resource is empty for a prefix that names only a group.
    pub fn group_resource<'k>(&'k self, key: &'k str) -> Option<(&'k str, &'k str)> {
        let mut parts = key.strip_prefix(self.root.as_str())?.split('/');
        let first = parts.next().filter(|p| !p.is_empty())?;
        let second = parts.next();
        // Two-segment prefixes first (`services/specs`), then one (`deployments`).
        let two = second.and_then(|s| {
            let end = first.len() + 1 + s.len();
            let rel = &key[self.root.len()..self.root.len() + end];
            self.prefixes.get(rel)
        });
        if let Some((g, r)) = two.or_else(|| self.prefixes.get(first)) {
            return Some((g.as_str(), r.as_str()));
        }
        Some((first, second.unwrap_or("")))
    }
}

impl Default for StorageKeys {
    fn default() -> Self {
        StorageKeys::new()
    }
}

/// The built-in resources.
pub fn built_in() -> Vec<ResourceDef> {
    BUILT_IN
        .iter()
        .map(|s| from_spec(s, Source::BuiltIn, true))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::patch::{GroupVersionKindRef, Schema};

    /// kube-apiserver 1.32's keys (test/integration/etcd's ExpectedEtcdPath of each resource).
    #[test]
    fn built_in_keys_are_kube_apiservers() {
        let key = |group: &str, plural: &str, ns: &str, name: &str| {
            built_in()
                .into_iter()
                .find(|d| d.group == group && d.plural == plural)
                .and_then(|d| d.key(ns, name))
                .unwrap_or_else(|| panic!("{plural}.{group} is not stored"))
        };
        let cases = [
            (key("", "configmaps", "n", "c"), "/registry/configmaps/n/c"),
            (
                key("", "services", "n", "s"),
                "/registry/services/specs/n/s",
            ),
            (
                key("", "endpoints", "n", "e"),
                "/registry/services/endpoints/n/e",
            ),
            (key("", "nodes", "", "x"), "/registry/minions/x"),
            (key("", "namespaces", "", "n"), "/registry/namespaces/n"),
            (
                key("apps", "deployments", "n", "d"),
                "/registry/deployments/n/d",
            ),
            (key("batch", "cronjobs", "n", "c"), "/registry/cronjobs/n/c"),
            (
                key("coordination.k8s.io", "leases", "n", "l"),
                "/registry/leases/n/l",
            ),
            (
                key("rbac.authorization.k8s.io", "clusterroles", "", "r"),
                "/registry/clusterroles/r",
            ),
            (
                key("networking.k8s.io", "ingresses", "n", "i"),
                "/registry/ingress/n/i",
            ),
            (
                key("autoscaling", "horizontalpodautoscalers", "n", "h"),
                "/registry/horizontalpodautoscalers/n/h",
            ),
            (
                key("certificates.k8s.io", "certificatesigningrequests", "", "c"),
                "/registry/certificatesigningrequests/c",
            ),
            (
                key(
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    "",
                    "w.example.com",
                ),
                "/registry/apiextensions.k8s.io/customresourcedefinitions/w.example.com",
            ),
            (
                key("apiregistration.k8s.io", "apiservices", "", "v1.x"),
                "/registry/apiregistration.k8s.io/apiservices/v1.x",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn keys_name_their_resource_under_any_etcd_prefix() {
        for root in ["/registry", "/karmada/registry/"] {
            let keys = StorageKeys::with_etcd_prefix(root);
            let at = |key: &str| {
                format!(
                    "{}{}",
                    root.trim_end_matches('/'),
                    &key["/registry".len()..]
                )
            };
            for d in built_in() {
                let Some(key) = d.key("ns", "name") else {
                    continue;
                };
                // A resource stored in another's form is keyed as that one.
                if crate::conversion::converts(&d.group, &d.version, &d.kind) {
                    continue;
                }
                let key = at(&key);
                assert_eq!(
                    keys.group_resource(&key),
                    Some((d.group.as_str(), d.plural.as_str())),
                    "{key}"
                );
                // The layout of earlier versions names the same resource.
                let legacy = at(&format!(
                    "{}ns/name",
                    legacy_storage_prefix(&d.group, &d.plural)
                ));
                assert_eq!(
                    keys.group_resource(&legacy),
                    Some((d.group.as_str(), d.plural.as_str())),
                    "{legacy}"
                );
            }
            assert_eq!(
                keys.group_resource(&at("/registry/flowschemas/f")),
                Some(("flowcontrol.apiserver.k8s.io", "flowschemas"))
            );
            assert_eq!(
                keys.group_resource(&at("/registry/example.com/widgets/ns/w")),
                Some(("example.com", "widgets"))
            );
            assert_eq!(
                keys.group_resource(&at("/registry/example.com/")),
                Some(("example.com", ""))
            );
            assert_eq!(keys.group_resource("/elsewhere/configmaps/a/b"), None);
        }
    }

    /// kubectl's client-side apply and `kubectl patch` send strategic merge patches for every
    /// kind it knows: each stored built-in kind needs its merge table, or the patch is a 415.
    #[test]
    fn every_stored_built_in_kind_takes_strategic_merge_patches() {
        for def in built_in() {
            if def.prefix().is_none() {
                continue;
            }
            let gvk = GroupVersionKindRef {
                group: &def.group,
                version: &def.version,
                kind: &def.kind,
            };
            assert!(
                Schema::builtin(&gvk).is_some_and(|s| s.supports_strategic_merge()),
                "{} has no strategic merge table",
                def.kind
            );
        }
    }
}
