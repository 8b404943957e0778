//! Which served resources hold the same objects as another (k8s.io/apimachinery pkg/runtime
//! `EquivalentResourceMapper`, which kube-apiserver fills from the storage each resource is
//! installed with): every resource stored under the same key prefix. That is the other
//! served versions of a custom resource or of Karmada's bindings, `autoscaling/v1` and `v2`
//! HorizontalPodAutoscalers, and core and `events.k8s.io` Events. `matchPolicy: Equivalent`
//! of webhooks and of ValidatingAdmissionPolicies reaches a request through these.

use std::sync::Arc;

use genericapiserver::conversion;
use genericapiserver::resources::{CatalogSnapshot, ResourceDef, Storage};
use serde_json::Value;

/// Whether `def` serves `subresource` (`""` is the resource itself).
fn serves(def: &ResourceDef, subresource: &str) -> bool {
    match subresource {
        "" => true,
        "status" => def.status,
        "scale" => def.scale.is_some(),
        s => def.extra_subresources.iter().any(|e| e == s),
    }
}

/// Whether two defs are the same served resource.
pub(crate) fn same(a: &ResourceDef, b: &ResourceDef) -> bool {
    a.group == b.group && a.version == b.version && a.plural == b.plural
}

/// The other served resources stored with `def`, which serve `subresource` too, in
/// discovery order.
pub fn equivalents(
    snapshot: &CatalogSnapshot,
    def: &ResourceDef,
    subresource: &str,
) -> Vec<Arc<ResourceDef>> {
    let Storage::Stored { prefix } = &def.storage else {
        return Vec::new();
    };
    snapshot
        .resources
        .iter()
        .filter(|d| {
            !same(d, def)
                && matches!(&d.storage, Storage::Stored { prefix: p } if p == prefix)
                && serves(d, subresource)
        })
        .cloned()
        .collect()
}

/// The object as `target` serves it, from the form admission holds it in for a request to
/// `def` (the storage version, for resources served by conversion); `None` when that is the
/// object as it is.
pub fn view(def: &ResourceDef, target: &ResourceDef, obj: &Value) -> Option<Value> {
    if same(def, target) && !conversion::converts(def) {
        return None;
    }
    Some(conversion::served(target, obj.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use genericapiserver::resources::{Catalog, built_in};

    fn names(defs: &[Arc<ResourceDef>]) -> Vec<String> {
        defs.iter()
            .map(|d| format!("{}/{}/{}", d.group, d.version, d.plural))
            .collect()
    }

    #[test]
    fn resources_stored_together_are_equivalent() {
        let catalog = Catalog::new(built_in());
        let snapshot = catalog.snapshot();
        let def = |g: &str, v: &str, p: &str| snapshot.get(g, v, p).cloned().expect("served");
        let hpa_v1 = def("autoscaling", "v1", "horizontalpodautoscalers");
        assert_eq!(
            names(&equivalents(&snapshot, &hpa_v1, "")),
            ["autoscaling/v2/horizontalpodautoscalers"]
        );
        assert_eq!(
            names(&equivalents(&snapshot, &hpa_v1, "status")),
            ["autoscaling/v2/horizontalpodautoscalers"]
        );
        assert_eq!(
            names(&equivalents(&snapshot, &def("", "v1", "events"), "")),
            ["events.k8s.io/v1/events"]
        );
        assert!(equivalents(&snapshot, &def("apps", "v1", "deployments"), "").is_empty());
        // Events have no status subresource.
        assert!(equivalents(&snapshot, &def("", "v1", "events"), "status").is_empty());
    }

    #[test]
    fn an_object_is_viewed_in_the_version_of_the_matched_resource() {
        let catalog = Catalog::new(built_in());
        let snapshot = catalog.snapshot();
        let def = |g: &str, v: &str, p: &str| snapshot.get(g, v, p).cloned().expect("served");
        let (v1, v2) = (
            def("autoscaling", "v1", "horizontalpodautoscalers"),
            def("autoscaling", "v2", "horizontalpodautoscalers"),
        );
        // Admission holds an autoscaling/v1 write in its storage version, v2.
        let mut stored = serde_json::json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                     "targetCPUUtilizationPercentage": 70}
        });
        conversion::to_storage(&v1, &mut stored).expect("converts");
        assert_eq!(stored["apiVersion"], "autoscaling/v2");
        // A v2 write seen as v2 is the object itself; seen as v1 it is converted back.
        assert!(view(&v2, &v2, &stored).is_none());
        let as_v1 = view(&v2, &v1, &stored).expect("converted");
        assert_eq!(as_v1["apiVersion"], "autoscaling/v1");
        assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 70);
        // A v1 write is shown to a v1 rule as v1, not in its storage form.
        let same = view(&v1, &v1, &stored).expect("converted");
        assert_eq!(same["spec"]["targetCPUUtilizationPercentage"], 70);
    }
}
