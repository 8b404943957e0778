//! Karmada's naming rules (pkg/util/names): execution spaces, bindings, Works and friends.

/// Namespace of Karmada's own components.
pub const NAMESPACE_KARMADA_SYSTEM: &str = "karmada-system";
/// Namespace holding member credentials and leases.
pub const NAMESPACE_KARMADA_CLUSTER: &str = "karmada-cluster";
/// The default namespace.
pub const NAMESPACE_DEFAULT: &str = "default";
/// Prefix of execution namespaces: `karmada-es-<cluster>`.
pub const EXECUTION_SPACE_PREFIX: &str = "karmada-es-";

/// The characters Kubernetes uses for random and hash-derived name suffixes (no vowels, to
/// avoid spelling words).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A namespace name that is not an execution space.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the execution space name is in wrong format")]
pub struct NotExecutionSpace;

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub use apimachinery::meta::split_api_version;

/// The execution namespace of a member cluster (GenerateExecutionSpaceName).
pub fn execution_space_name(cluster: &str) -> String {
    format!("{EXECUTION_SPACE_PREFIX}{cluster}")
}

/// The member cluster an execution namespace belongs to (GetClusterName).
pub fn cluster_name_from_execution_space(namespace: &str) -> Result<&str, NotExecutionSpace> {
    namespace
        .strip_prefix(EXECUTION_SPACE_PREFIX)
        .ok_or(NotExecutionSpace)
}

/// Whether a namespace is reserved for Karmada: karmada-system, karmada-cluster and every
/// execution space (IsReservedNamespace).
pub fn is_reserved_namespace(namespace: &str) -> bool {
    namespace == NAMESPACE_KARMADA_SYSTEM
        || namespace == NAMESPACE_KARMADA_CLUSTER
        || namespace.starts_with(EXECUTION_SPACE_PREFIX)
}

/// The name of the binding of a resource template: `lower(<name>-<kind>)`, with ':' (common in
/// RBAC object names) replaced by '.' so the result is a valid object name
/// (GenerateBindingName).
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", name.replace(':', "."), kind).to_lowercase()
}

/// The name of the Work of a resource in a cluster: `<lower(name)>-<hash>`, where the hash is
/// the FNV-1a 32-bit hash of `lower(<namespace>-<name>-<kind>)` (without the namespace part for
/// cluster-scoped resources), printed in decimal and re-encoded with [`safe_encode_string`]
/// (GenerateWorkName).
pub fn work_name(kind: &str, name: &str, namespace: &str) -> String {
    let name = name.replace(':', ".").to_lowercase();
    let hashed = if namespace.is_empty() {
        format!("{name}-{kind}")
    } else {
        format!("{namespace}-{name}-{kind}")
    }
    .to_lowercase();
    format!("{name}-{}", hash_suffix(&hashed))
}

/// The key of a binding used in `resourcebinding.karmada.io/depended-by-<key>` labels: the
/// encoded FNV-1a hash of `<namespace>/<name>`, or of `<name>` for a cluster-scoped binding
/// (GenerateBindingReferenceKey).
pub fn binding_reference_key(namespace: &str, name: &str) -> String {
    let key = if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    };
    hash_suffix(&key)
}

/// The name of a policy generated for a resource: `lower(<name>-<hash of namespace+gvk>)`, with
/// ':' replaced by '.' (GeneratePolicyName).
pub fn policy_name(namespace: &str, name: &str, gvk: &str) -> String {
    let suffix = hash_suffix(&format!("{namespace}{gvk}"));
    format!("{}-{suffix}", name.replace(':', ".")).to_lowercase()
}

/// The service account Karmada creates in a member cluster: `karmada-<cluster>`.
pub fn service_account_name(cluster: &str) -> String {
    format!("karmada-{cluster}")
}

/// The (Cluster)Role bound to that service account: `karmada-controller-manager:<sa>`.
pub fn role_name(service_account: &str) -> String {
    format!("karmada-controller-manager:{service_account}")
}

/// The secret holding a cluster's impersonator token: `<cluster>-impersonator`.
pub fn impersonation_secret_name(cluster: &str) -> String {
    format!("{cluster}-impersonator")
}

/// The name of an EndpointSlice collected from a member cluster:
/// `imported-<cluster>-<slice>`.
pub fn endpoint_slice_name(slice: &str, cluster: &str) -> String {
    format!("imported-{cluster}-{slice}")
}

/// The Service derived from a ServiceImport: `derived-<service>`.
pub fn derived_service_name(service: &str) -> String {
    format!("derived-{service}")
}

/// `namespace/name`, or `name` when the namespace is empty.
pub fn namespaced_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// FNV-1a 32-bit hash.
pub fn fnv32a(data: &[u8]) -> u32 {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    data.iter()
        .fold(OFFSET, |h, b| (h ^ u32::from(*b)).wrapping_mul(PRIME))
}

/// Maps each character to Kubernetes' suffix alphabet (rand.SafeEncodeString).
pub fn safe_encode_string(s: &str) -> String {
    s.chars()
        .map(|c| char::from(ALPHANUMS[(c as usize) % ALPHANUMS.len()]))
        .collect()
}

/// The hash-derived suffix Karmada appends to generated names.
fn hash_suffix(input: &str) -> String {
    safe_encode_string(&fnv32a(input.as_bytes()).to_string())
}
