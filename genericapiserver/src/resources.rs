//! The catalog of served resources: built-in kinds, the kinds the server above registers
//! (Karmada's) and, dynamically, the kinds of CustomResourceDefinitions. What one served
//! resource is ([`ResourceDef`]) and the fixed table of built-in resources are the registry
//! crate's; the registered kinds' table is the layer's that registers them.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

pub use kube_registry::resources::{
    CustomSource, ROOT, ResourceDef, ScaleDef, Source, Storage, StorageKeys, built_in,
    built_in_storage_prefix, legacy_storage_prefix, split_api_version, storage_prefix,
};

/// Registered kinds for this library's tests, shaped as the server above registers Karmada's:
/// CRD-like namespaced and cluster-scoped kinds, a group served at two versions, and a
/// cluster-scoped kind with `status` and `proxy` that is not served as a CRD's kind. No
/// strategy is installed for them here.
#[cfg(test)]
pub fn registered() -> Vec<ResourceDef> {
    let def =
        |group: &str, version: &str, plural: &str, kind: &str, namespaced: bool| ResourceDef {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            short_names: vec![],
            categories: vec![],
            namespaced,
            status: false,
            scale: None,
            extra_subresources: vec![],
            generation: true,
            strategic_merge: false,
            storage: Storage::Stored {
                prefix: storage_prefix(group, plural),
            },
            source: Source::Registered {
                served_as_crd: true,
            },
        };
    let with_status = |mut d: ResourceDef| {
        d.status = true;
        d
    };
    let mut cluster = with_status(def(
        "cluster.karmada.io",
        "v1alpha1",
        "clusters",
        "Cluster",
        false,
    ));
    cluster.extra_subresources = vec!["proxy".into()];
    cluster.source = Source::Registered {
        served_as_crd: false,
    };
    vec![
        cluster,
        def(
            "policy.karmada.io",
            "v1alpha1",
            "propagationpolicies",
            "PropagationPolicy",
            true,
        ),
        def(
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            "ClusterPropagationPolicy",
            false,
        ),
        with_status(def("work.karmada.io", "v1alpha1", "works", "Work", true)),
        with_status(def(
            "work.karmada.io",
            "v1alpha1",
            "resourcebindings",
            "ResourceBinding",
            true,
        )),
        with_status(def(
            "work.karmada.io",
            "v1alpha2",
            "resourcebindings",
            "ResourceBinding",
            true,
        )),
    ]
}

/// A served built-in or [`registered`] resource, by group and plural (for tests).
#[cfg(test)]
pub fn served(group: &str, plural: &str) -> ResourceDef {
    built_in()
        .into_iter()
        .chain(registered())
        .find(|d| d.group == group && d.plural == plural)
        .unwrap_or_else(|| panic!("{plural}.{group} is not served"))
}

/// An immutable view of everything served at one moment.
#[derive(Debug, Default)]
pub struct CatalogSnapshot {
    /// Every resource, in discovery order.
    pub resources: Vec<Arc<ResourceDef>>,
    by_gvr: HashMap<(String, String, String), Arc<ResourceDef>>,
}

impl CatalogSnapshot {
    fn build(resources: Vec<Arc<ResourceDef>>) -> CatalogSnapshot {
        let by_gvr = resources
            .iter()
            .map(|r| {
                (
                    (r.group.clone(), r.version.clone(), r.plural.clone()),
                    r.clone(),
                )
            })
            .collect();
        CatalogSnapshot { resources, by_gvr }
    }

    /// Finds a resource by group, version and plural.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceDef>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
    }

    /// Finds a resource by group and kind (any version, preferring the first listed).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<ResourceDef>> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.kind == kind)
    }

    /// Finds a resource by apiVersion and kind.
    pub fn by_api_version_kind(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceDef>> {
        let (group, version) = split_api_version(api_version);
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }

    /// Group names in discovery order (first appearance), with their versions in kube's
    /// version priority, the preferred version first (as kube-apiserver orders a group served
    /// by several CRDs, e.g. `work.karmada.io`: `v1alpha2`, then `v1alpha1`).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in &self.resources {
            match out.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    if !versions.contains(&r.version) {
                        versions.push(r.version.clone());
                    }
                }
                None => out.push((r.group.clone(), vec![r.version.clone()])),
            }
        }
        for (_, versions) in &mut out {
            versions.sort_by(|a, b| apimachinery::version::compare_versions(a, b));
        }
        out
    }
}

/// The served catalog; changes when CRDs come and go.
#[derive(Debug)]
pub struct Catalog {
    fixed: Vec<Arc<ResourceDef>>,
    current: RwLock<Arc<CatalogSnapshot>>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Catalog {
    /// A catalog serving the given fixed resources.
    pub fn new(fixed: Vec<ResourceDef>) -> Catalog {
        let fixed: Vec<Arc<ResourceDef>> = fixed.into_iter().map(Arc::new).collect();
        let (changed, _) = tokio::sync::watch::channel(0);
        Catalog {
            current: RwLock::new(Arc::new(CatalogSnapshot::build(fixed.clone()))),
            fixed,
            changed,
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<CatalogSnapshot> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the dynamic (CRD-defined) resources.
    pub fn set_custom(&self, custom: Vec<ResourceDef>) {
        let mut all = self.fixed.clone();
        for c in custom {
            // A CRD may not shadow a built-in resource.
            if all
                .iter()
                .any(|r| r.group == c.group && r.version == c.version && r.plural == c.plural)
            {
                continue;
            }
            all.push(Arc::new(c));
        }
        let snapshot = Arc::new(CatalogSnapshot::build(all));
        match self.current.write() {
            Ok(mut g) => *g = snapshot,
            Err(poisoned) => *poisoned.into_inner() = snapshot,
        }
        self.changed.send_modify(|v| *v += 1);
    }

    /// Notified whenever the catalog changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
