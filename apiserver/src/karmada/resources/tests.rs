//! Karmada's resources as the generic server keys, encodes, discovers and documents them.

use serde_json::{Value, json};

use super::resources;
use crate::discovery::{aggregated, group, group_list, resource_list};
use crate::openapi::v2::tests::kubectl_parse_errors;
use crate::resources::{Catalog, StorageKeys, built_in, legacy_storage_prefix};
use crate::storage_codec::{Encoding, Typed};
use apimachinery::openapi::builtin::{OBJECT_META, SCHEMA_REF_PREFIX};

#[test]
fn works_are_keyed_as_karmadas_crd() {
    let work = resources()
        .into_iter()
        .find(|d| d.plural == "works")
        .and_then(|d| d.key("ns", "w"));
    assert_eq!(
        work.as_deref(),
        Some("/registry/work.karmada.io/works/ns/w")
    );
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
        for d in resources() {
            let Some(key) = d.key("ns", "name") else {
                continue;
            };
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
    }
}

/// As kube-apiserver writes Karmada's CRDs' objects, and karmada-aggregated-apiserver Clusters.
#[test]
fn each_resource_is_written_as_karmada_writes_it() {
    for def in resources() {
        let want_typed = def.kind == "Cluster";
        assert_eq!(def.served_as_crd(), !want_typed, "{}", def.qualified());
        assert_eq!(
            matches!(Encoding::of(&def), Encoding::Typed(Typed::Served)),
            want_typed,
            "{}",
            def.qualified()
        );
        assert_eq!(Encoding::of(&def).is_unstructured(), !want_typed);
    }
}

#[test]
fn bindings_are_served_at_both_versions_and_prefer_v1alpha2() {
    let cat = Catalog::new(resources());
    let snap = cat.snapshot();
    let g = group(&snap, "work.karmada.io").unwrap();
    assert_eq!(
        g["preferredVersion"]["groupVersion"],
        "work.karmada.io/v1alpha2"
    );
    let versions: Vec<&str> = g["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1alpha2", "v1alpha1"]);
    let names = |version: &str| -> Vec<String> {
        resource_list(&snap, "work.karmada.io", version).unwrap()["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names("v1alpha1"),
        [
            "works",
            "works/status",
            "resourcebindings",
            "resourcebindings/status",
            "clusterresourcebindings",
            "clusterresourcebindings/status"
        ]
    );
    assert_eq!(
        names("v1alpha2"),
        [
            "resourcebindings",
            "resourcebindings/status",
            "clusterresourcebindings",
            "clusterresourcebindings/status"
        ]
    );
    let apis = aggregated(&snap, false, "v2");
    let work = apis["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "work.karmada.io")
        .unwrap();
    assert_eq!(work["versions"][0]["version"], "v1alpha2");
    assert_eq!(work["versions"][1]["version"], "v1alpha1");
    let list = group_list(&snap);
    let work = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "work.karmada.io")
        .unwrap();
    assert_eq!(work["preferredVersion"]["version"], "v1alpha2");
}

/// The definition of a GVK, found as kubectl finds it (by its GVK extension).
fn by_gvk<'a>(doc: &'a Value, group: &str, version: &str, kind: &str) -> Option<&'a Value> {
    let want = json!({"group": group, "version": version, "kind": kind});
    doc["definitions"].as_object()?.values().find(|d| {
        d["x-kubernetes-group-version-kind"]
            .as_array()
            .is_some_and(|l| l.contains(&want))
    })
}

/// Karmada's schemas reach both documents through the installed strategy, and the v2
/// document reads as kubectl reads it.
#[test]
fn karmadas_schemas_are_documented() {
    super::super::install();
    let mut all = built_in();
    all.extend(resources());
    let catalog = Catalog::new(all);
    let snapshot = catalog.snapshot();

    let docs = crate::openapi::documents(&snapshot);
    let doc: Value = serde_json::from_slice(&docs.groups["apis/policy.karmada.io/v1alpha1"].bytes)
        .unwrap_or_default();
    let name = "io.karmada.policy.v1alpha1.PropagationPolicy";
    let pp = &doc["components"]["schemas"][name];
    assert_eq!(
        pp["x-kubernetes-group-version-kind"][0]["kind"],
        "PropagationPolicy"
    );
    assert!(pp["properties"]["spec"]["properties"]["placement"].is_object());
    assert_eq!(
        pp["properties"]["metadata"]["allOf"][0]["$ref"],
        format!("{SCHEMA_REF_PREFIX}{OBJECT_META}")
    );
    let gvk =
        json!({"group": "policy.karmada.io", "kind": "PropagationPolicy", "version": "v1alpha1"});
    let patches: Vec<&Value> = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
        .filter_map(|p| p.get("patch"))
        .filter(|op| op["x-kubernetes-group-version-kind"] == gvk)
        .collect();
    assert!(!patches.is_empty());
    assert!(patches.iter().all(|op| {
        op["parameters"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        })
    }));

    let swagger = crate::openapi::swagger(&snapshot, &[]);
    let v2: Value = serde_json::from_slice(&swagger.json.bytes).unwrap_or_default();
    let definitions = v2["definitions"].as_object().cloned().unwrap_or_default();
    let errors = kubectl_parse_errors(&definitions);
    assert!(errors.is_empty(), "{errors:#?}");
    for (g, v, k) in [
        ("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        ("cluster.karmada.io", "v1alpha1", "Cluster"),
        ("work.karmada.io", "v1alpha2", "ResourceBinding"),
    ] {
        let def = by_gvk(&v2, g, v, k).unwrap_or_else(|| panic!("{k}"));
        assert!(def["properties"]["spec"].is_object(), "{k}: {def}");
    }
}
