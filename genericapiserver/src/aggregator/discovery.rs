//! Merging backends' discovery into the server's own, as kube-aggregator's `apisHandler`
//! (legacy `/apis` and `/apis/<group>`) and its aggregated-discovery manager
//! (pkg/apiserver/handler_discovery.go) do: a group/version registered to a backend replaces
//! any local one; available backends' group/versions are added, their resources converted
//! from the backend's `APIResourceList`.

use serde_json::{Value, json};

use super::{Backend, RouteTable};

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Available backends by group, each group's versions by descending `versionPriority`;
/// groups by descending `groupPriorityMinimum`, then name.
fn available_by_group(table: &RouteTable) -> Vec<(String, Vec<&Backend>)> {
    let mut groups: Vec<(String, Vec<&Backend>)> = Vec::new();
    for b in table.values().filter(|b| b.available) {
        match groups.iter_mut().find(|(g, _)| *g == b.group) {
            Some((_, vs)) => vs.push(b),
            None => groups.push((b.group.clone(), vec![b])),
        }
    }
    for (_, vs) in &mut groups {
        vs.sort_by(|a, b| {
            b.version_priority
                .cmp(&a.version_priority)
                .then_with(|| a.version.cmp(&b.version))
        });
    }
    groups.sort_by(|(ga, va), (gb, vb)| {
        let pa = va.iter().map(|b| b.group_priority).max().unwrap_or(0);
        let pb = vb.iter().map(|b| b.group_priority).max().unwrap_or(0);
        pb.cmp(&pa).then_with(|| ga.cmp(gb))
    });
    groups
}

fn overridden(table: &RouteTable, group: &str, version: &str) -> bool {
    table.contains_key(&(group.to_string(), version.to_string()))
}

fn drop_overridden_versions(groups: &mut Vec<Value>, table: &RouteTable, key: &str) {
    for g in groups.iter_mut() {
        let name = g
            .pointer(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(Value::Array(vs)) = g.get_mut("versions") {
            vs.retain(|v| {
                let version = v.get("version").and_then(Value::as_str).unwrap_or_default();
                !overridden(table, &name, version)
            });
        }
    }
    groups.retain(|g| {
        g.get("versions")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty())
    });
}

fn legacy_versions(backends: &[&Backend]) -> Vec<Value> {
    backends
        .iter()
        .map(|b| json!({"groupVersion": group_version(&b.group, &b.version), "version": b.version}))
        .collect()
}

fn fix_preferred(g: &mut Value) {
    let first = g
        .get("versions")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
        .cloned();
    let preferred_ok = g
        .get("preferredVersion")
        .and_then(|p| p.get("version"))
        .and_then(Value::as_str)
        .is_some_and(|pv| {
            g.get("versions")
                .and_then(Value::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v.get("version").and_then(Value::as_str) == Some(pv))
                })
        });
    if !preferred_ok && let Some(f) = first {
        g["preferredVersion"] = f;
    }
}

/// Merges into a legacy `APIGroupList` (`GET /apis`).
pub fn merge_group_list(doc: &mut Value, table: &RouteTable) {
    if table.is_empty() {
        return;
    }
    let Some(Value::Array(groups)) = doc.get_mut("groups") else {
        return;
    };
    drop_overridden_versions(groups, table, "/name");
    for (name, backends) in available_by_group(table) {
        let versions = legacy_versions(&backends);
        match groups
            .iter_mut()
            .find(|g| g.get("name").and_then(Value::as_str) == Some(name.as_str()))
        {
            Some(g) => {
                if let Some(Value::Array(vs)) = g.get_mut("versions") {
                    vs.extend(versions);
                }
                fix_preferred(g);
            }
            None => groups.push(json!({
                "name": name,
                "versions": versions,
                "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
            })),
        }
    }
    for g in groups.iter_mut() {
        fix_preferred(g);
    }
}

/// `GET /apis/<group>`: the local APIGroup (if any) merged with the group's backends.
pub fn group(local: Option<Value>, name: &str, table: &RouteTable) -> Option<Value> {
    let mut list = json!({"groups": local.into_iter().collect::<Vec<_>>()});
    merge_group_list(&mut list, table);
    let mut g = list["groups"]
        .as_array()?
        .iter()
        .find(|g| g.get("name").and_then(Value::as_str) == Some(name))?
        .clone();
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// Converts a backend's `APIResourceList` into aggregated discovery resources
/// (`APIResourceDiscovery`, subresources folded under their parent).
pub fn aggregated_resources(b: &Backend, list: &Value) -> Vec<Value> {
    let items = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let kind_of = |r: &Value| {
        json!({
            "group": r.get("group").and_then(Value::as_str).unwrap_or(&b.group),
            "version": r.get("version").and_then(Value::as_str).unwrap_or(&b.version),
            "kind": r.get("kind").and_then(Value::as_str).unwrap_or_default(),
        })
    };
    let mut out: Vec<Value> = Vec::new();
    for r in items.iter() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() || name.contains('/') {
            continue;
        }
        let mut d = json!({
            "resource": name,
            "responseKind": kind_of(r),
            "scope": if r.get("namespaced").and_then(Value::as_bool).unwrap_or(false) { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").cloned().unwrap_or(json!("")),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for k in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                d[k] = v.clone();
            }
        }
        let subs: Vec<Value> = items
            .iter()
            .filter_map(|s| {
                let n = s.get("name").and_then(Value::as_str)?;
                let (parent, sub) = n.split_once('/')?;
                (parent == name).then(|| {
                    json!({
                        "subresource": sub,
                        "responseKind": kind_of(s),
                        "verbs": s.get("verbs").cloned().unwrap_or(json!([])),
                    })
                })
            })
            .collect();
        if !subs.is_empty() {
            d["subresources"] = Value::Array(subs);
        }
        out.push(d);
    }
    out
}

/// Merges into an aggregated `APIGroupDiscoveryList` (`GET /apis` as kubectl asks for it).
pub fn merge_aggregated(doc: &mut Value, table: &RouteTable) {
    if table.is_empty() {
        return;
    }
    let Some(Value::Array(items)) = doc.get_mut("items") else {
        return;
    };
    drop_overridden_versions(items, table, "/metadata/name");
    for (name, backends) in available_by_group(table) {
        let versions: Vec<Value> = backends
            .iter()
            .filter_map(|b| {
                let list = b.discovery.as_ref()?;
                Some(json!({
                    "version": b.version,
                    "resources": aggregated_resources(b, list),
                    "freshness": "Current",
                }))
            })
            .collect();
        if versions.is_empty() {
            continue;
        }
        match items
            .iter_mut()
            .find(|g| g.pointer("/metadata/name").and_then(Value::as_str) == Some(name.as_str()))
        {
            Some(g) => {
                if let Some(Value::Array(vs)) = g.get_mut("versions") {
                    vs.extend(versions);
                }
            }
            None => items.push(json!({
                "metadata": {"name": name, "creationTimestamp": null},
                "versions": versions,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn backend(group: &str, version: &str, available: bool, vp: i64) -> Arc<Backend> {
        Arc::new(Backend {
            api_service: format!("{version}.{group}"),
            group: group.into(),
            version: version.into(),
            group_priority: 2000,
            version_priority: vp,
            target: None,
            transport_error: None,
            available,
            openapi: None,
            discovery: Some(Arc::new(json!({
                "kind": "APIResourceList",
                "groupVersion": group_version(group, version),
                "resources": [
                    {"name": "clusters", "singularName": "cluster", "namespaced": false, "kind": "Cluster", "verbs": ["get", "list"], "categories": ["karmada"]},
                    {"name": "clusters/status", "singularName": "", "namespaced": false, "kind": "Cluster", "verbs": ["get", "patch", "update"]},
                    {"name": "clusters/proxy", "singularName": "", "namespaced": false, "kind": "ClusterProxyOptions", "verbs": ["create", "get"]},
                ],
            }))),
        })
    }

    fn table(bs: Vec<Arc<Backend>>) -> RouteTable {
        bs.into_iter()
            .map(|b| ((b.group.clone(), b.version.clone()), b))
            .collect()
    }

    #[test]
    fn legacy_list_replaces_and_adds() {
        let mut doc = json!({"groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
            {"name": "cluster.karmada.io", "versions": [{"groupVersion": "cluster.karmada.io/v1alpha1", "version": "v1alpha1"}], "preferredVersion": {"groupVersion": "cluster.karmada.io/v1alpha1", "version": "v1alpha1"}},
        ]});
        let t = table(vec![
            backend("cluster.karmada.io", "v1alpha1", false, 10),
            backend("metrics.k8s.io", "v1beta1", true, 100),
        ]);
        merge_group_list(&mut doc, &t);
        let names: Vec<&str> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        // The unavailable backend hides the local version and is not listed itself.
        assert_eq!(names, vec!["apps", "metrics.k8s.io"]);
        assert_eq!(
            doc["groups"][1]["preferredVersion"]["groupVersion"],
            "metrics.k8s.io/v1beta1"
        );

        let t = table(vec![
            backend("search.karmada.io", "v1alpha1", true, 10),
            backend("search.karmada.io", "v1beta1", true, 20),
        ]);
        let g = group(None, "search.karmada.io", &t).unwrap();
        assert_eq!(g["kind"], "APIGroup");
        assert_eq!(g["preferredVersion"]["version"], "v1beta1");
        assert_eq!(g["versions"].as_array().unwrap().len(), 2);
        assert!(group(None, "nope", &t).is_none());
    }

    #[test]
    fn aggregated_list_converts_resources() {
        let mut doc = json!({"items": [
            {"metadata": {"name": "cluster.karmada.io"}, "versions": [{"version": "v1alpha1", "resources": []}]},
        ]});
        let t = table(vec![backend("cluster.karmada.io", "v1alpha1", true, 10)]);
        merge_aggregated(&mut doc, &t);
        let items = doc["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        let versions = items[0]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1);
        let r = &versions[0]["resources"][0];
        assert_eq!(r["resource"], "clusters");
        assert_eq!(r["scope"], "Cluster");
        assert_eq!(r["responseKind"]["group"], "cluster.karmada.io");
        assert_eq!(r["categories"], json!(["karmada"]));
        let subs: Vec<&str> = r["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["subresource"].as_str().unwrap())
            .collect();
        assert_eq!(subs, vec!["status", "proxy"]);
        assert_eq!(
            r["subresources"][1]["responseKind"]["kind"],
            "ClusterProxyOptions"
        );
    }
}
