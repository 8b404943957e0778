//! Karmada's served resources, one per served version of each kind of the api crate's kind
//! catalog: what kube-apiserver serves from Karmada's CRDs (Cluster as
//! karmada-aggregated-apiserver serves it), registered with the generic server beside the
//! built-in table.

use crate::resources::{ResourceDef, Source, Storage, storage_prefix};

/// The kind karmada-aggregated-apiserver serves from a typed registry (every other Karmada
/// kind is one of Karmada's CRDs).
fn served_as_crd(group: &str, kind: &str) -> bool {
    !(group == "cluster.karmada.io" && kind == "Cluster")
}

/// Karmada's resources.
pub fn resources() -> Vec<ResourceDef> {
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
            source: Source::Registered {
                served_as_crd: served_as_crd(k.group, k.kind),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests;
