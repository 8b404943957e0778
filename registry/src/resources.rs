//! What one served resource is ([`ResourceDef`]: names, scope, subresources, storage and
//! where its behaviour comes from) and the fixed tables of resources the server serves:
//! the built-in kinds (named as kube-apiserver 1.32 names them) and Karmada's kinds. The
//! server's catalog adds the kinds of CustomResourceDefinitions.

pub use karmada_api::names::split_api_version;
use std::collections::HashSet;

use serde_json::Value;

/// Where a resource's behaviour comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A Kubernetes built-in kind (compiled-in schema, printers, strategic merge patch).
    BuiltIn,
    /// One of Karmada's kinds (served here as kube-apiserver serves Karmada's CRDs, or as the
    /// aggregated apiserver serves Cluster).
    Karmada,
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

    /// The key prefix of a stored resource.
    pub fn prefix(&self) -> Option<&str> {
        match &self.storage {
            Storage::Stored { prefix } => Some(prefix),
            Storage::Virtual => None,
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
    /// and Karmada's kinds but Cluster (which karmada-aggregated-apiserver serves from a typed
    /// registry). Their objects are decoded unstructured (nothing defaults `kind` or
    /// `apiVersion`), and apiextensions' rules apply to their field selectors and updates.
    pub fn served_as_crd(&self) -> bool {
        match self.source {
            Source::Custom(_) => true,
            Source::Karmada => !(self.group == "cluster.karmada.io" && self.kind == "Cluster"),
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

/// The key prefix kube's layout gives a group's resource (DESIGN.md "Key layout").
pub fn storage_prefix(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("/registry/{plural}/")
    } else {
        format!("/registry/{group}/{plural}/")
    }
}

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
    virtual_: bool,
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
        virtual_: false,
    }
}

impl Spec {
    const fn all(mut self) -> Spec {
        self.all = true;
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
        self.virtual_ = true;
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
    spec("", "v1", "pods", "Pod", &["po"], true).all().status(),
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
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        &[],
        false,
    )
    .generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        &[],
        false,
    )
    .generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        &[],
        false,
    )
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
        categories: if s.all { vec!["all".into()] } else { vec![] },
        namespaced: s.namespaced,
        status: s.status,
        scale: s.scale.then(ScaleDef::standard),
        extra_subresources: s.extra.iter().map(|x| x.to_string()).collect(),
        generation: s.generation,
        strategic_merge,
        storage: if s.virtual_ {
            Storage::Virtual
        } else {
            Storage::Stored {
                prefix: storage_prefix(s.group, s.plural),
            }
        },
        source,
    }
}

/// How storage keys name their resource: `/registry/<resource>/...` in the core group,
/// `/registry/<group>/<resource>/...` in the others (kube's default resource prefixes).
#[derive(Clone, Debug)]
pub struct StorageKeys {
    /// The resources of the core group (their keys have no group segment).
    core: HashSet<String>,
}

impl StorageKeys {
    /// The key layout of the built-in resources.
    pub fn new() -> StorageKeys {
        StorageKeys {
            core: built_in()
                .into_iter()
                .filter(|d| d.group.is_empty())
                .map(|d| d.plural)
                .collect(),
        }
    }

    /// The group (empty for the core group) and resource a storage key or prefix belongs to;
    /// the resource is empty for a prefix that names only a group.
    pub fn group_resource<'k>(&self, key: &'k str) -> Option<(&'k str, &'k str)> {
        let mut parts = key.strip_prefix("/registry/")?.split('/');
        let first = parts.next()?;
        if self.core.contains(first) {
            return Some(("", first));
        }
        Some((first, parts.next()?))
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

/// Karmada's resources, from the api crate's kind catalog (served as kube-apiserver serves
/// Karmada's CRDs, and Cluster as karmada-aggregated-apiserver does), one per served version.
pub fn karmada() -> Vec<ResourceDef> {
    karmada_api::kinds()
        .iter()
        .flat_map(|k| k.served_versions().map(move |version| (k, version)))
        .map(|(k, version)| ResourceDef {
            group: k.group.into(),
            version: version.into(),
            plural: k.plural.into(),
            singular: k.singular.into(),
            kind: k.kind.into(),
            list_kind: k.list_kind.into(),
            short_names: k.short_names.iter().map(|s| s.to_string()).collect(),
            categories: k.categories.iter().map(|s| s.to_string()).collect(),
            namespaced: k.namespaced,
            status: k.status_subresource,
            scale: None,
            extra_subresources: if k.proxy_subresource {
                vec!["proxy".into()]
            } else {
                vec![]
            },
            // Karmada's kinds are CRDs (or CRD-like): generation tracks every non-metadata change.
            generation: true,
            strategic_merge: k.strategic_merge,
            storage: Storage::Stored {
                prefix: storage_prefix(k.group, k.plural),
            },
            source: Source::Karmada,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::patch::{GroupVersionKindRef, Schema};

    /// kubectl's client-side apply and `kubectl patch` send strategic merge patches for every
    /// kind it knows: each stored built-in kind needs its merge table, or the patch is a 415.
    #[test]
    fn every_stored_built_in_kind_takes_strategic_merge_patches() {
        for def in built_in() {
            if matches!(def.storage, Storage::Virtual) {
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
