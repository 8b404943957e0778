//! Discovery: `/version`, `/api`, `/apis`, `/api/v1`, `/apis/G[/V]`, in the legacy form and
//! the aggregated form (apidiscovery.k8s.io v2 and v2beta1) that kubectl 1.32 asks for.

use serde_json::{Value, json};

use crate::resources::{CatalogSnapshot, ResourceDef};

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Verbs of a subresource, as kube lists them.
fn subresource_verbs(sub: &str) -> Vec<&'static str> {
    match sub {
        "status" | "scale" => vec!["get", "patch", "update"],
        "finalize" => vec!["update"],
        "approval" => vec!["get", "update"],
        "token" | "binding" | "eviction" => vec!["create"],
        "proxy" => vec!["create", "delete", "get", "patch", "update"],
        _ => vec!["get"],
    }
}

/// (name, kind, group, version) of a subresource's response kind.
fn subresource_kind(def: &ResourceDef, sub: &str) -> (String, String, String) {
    match sub {
        "scale" => ("Scale".into(), "autoscaling".into(), "v1".into()),
        "token" => (
            "TokenRequest".into(),
            "authentication.k8s.io".into(),
            "v1".into(),
        ),
        "binding" => ("Binding".into(), String::new(), "v1".into()),
        "eviction" => ("Eviction".into(), "policy".into(), "v1".into()),
        "proxy" => (
            "ClusterProxyOptions".into(),
            def.group.clone(),
            def.version.clone(),
        ),
        _ => (def.kind.clone(), def.group.clone(), def.version.clone()),
    }
}

fn subresources(def: &ResourceDef) -> Vec<String> {
    let mut subs = Vec::new();
    if def.status {
        subs.push("status".to_string());
    }
    if def.scale.is_some() {
        subs.push("scale".to_string());
    }
    subs.extend(def.extra_subresources.iter().cloned());
    subs
}

/// `GET /api/v1` or `/apis/G/V`: an APIResourceList.
pub fn resource_list(snapshot: &CatalogSnapshot, group: &str, version: &str) -> Option<Value> {
    let defs: Vec<_> = snapshot
        .resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if defs.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for d in defs {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs(),
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        resources.push(r);
        for sub in subresources(d) {
            let (kind, g, v) = subresource_kind(d, &sub);
            let mut s = json!({
                "name": format!("{}/{sub}", d.plural),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": kind,
                "verbs": subresource_verbs(&sub),
            });
            if g != d.group || v != d.version {
                s["group"] = json!(g);
                s["version"] = json!(v);
            }
            resources.push(s);
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    }))
}

/// `GET /api` (legacy): APIVersions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": group_version(group, v), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis` (legacy): APIGroupList (the core group is not listed).
pub fn group_list(snapshot: &CatalogSnapshot) -> Value {
    let groups: Vec<Value> = snapshot
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/G`: APIGroup.
pub fn group(snapshot: &CatalogSnapshot, name: &str) -> Option<Value> {
    let (g, vs) = snapshot
        .groups()
        .into_iter()
        .find(|(g, _)| g == name && !g.is_empty())?;
    let mut v = group_entry(&g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// The aggregated discovery document of `/api` (core only) or `/apis` (all other groups).
pub fn aggregated(snapshot: &CatalogSnapshot, core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    for (g, versions) in snapshot.groups() {
        if g.is_empty() != core {
            continue;
        }
        let mut vs = Vec::new();
        for v in &versions {
            let mut resources = Vec::new();
            for d in snapshot
                .resources
                .iter()
                .filter(|r| r.group == g && &r.version == v)
            {
                let subs: Vec<Value> = subresources(d)
                    .iter()
                    .map(|sub| {
                        let (kind, sg, sv) = subresource_kind(d, sub);
                        json!({
                            "subresource": sub,
                            "responseKind": {"group": sg, "version": sv, "kind": kind},
                            "verbs": subresource_verbs(sub),
                        })
                    })
                    .collect();
                let mut r = json!({
                    "resource": d.plural,
                    "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
                    "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": d.singular,
                    "verbs": d.verbs(),
                });
                if !d.short_names.is_empty() {
                    r["shortNames"] = json!(d.short_names);
                }
                if !d.categories.is_empty() {
                    r["categories"] = json!(d.categories);
                }
                if !subs.is_empty() {
                    r["subresources"] = json!(subs);
                }
                resources.push(r);
            }
            vs.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({
            "metadata": {"name": g, "creationTimestamp": null},
            "versions": vs,
        }));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{Catalog, built_in, registered};

    #[test]
    fn documents() {
        let mut all = built_in();
        all.extend(registered());
        let cat = Catalog::new(all);
        let snap = cat.snapshot();
        let core = aggregated(&snap, true, "v2");
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        assert_eq!(core["items"][0]["metadata"]["name"], "");
        let apis = aggregated(&snap, false, "v2");
        let names: Vec<&str> = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"cluster.karmada.io"));
        let list = resource_list(&snap, "cluster.karmada.io", "v1alpha1").unwrap();
        let rs: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(rs, vec!["clusters", "clusters/status", "clusters/proxy"]);
        let dl = resource_list(&snap, "apps", "v1").unwrap();
        let scale = dl["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
    }
}
