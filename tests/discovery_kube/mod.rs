//! Discovery compared with kube-apiserver 1.32's and Karmada's (tests/data/kube-1.32-discovery.txt):
//! `/api`, `/apis`, every group/version's resource list (verbs, short names, categories,
//! subresources and their kinds), and the aggregated documents, which must say the same. Every
//! difference must be listed below with its reason, and every listed difference must still be
//! one.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::Server;

const EXPECTED: &str = include_str!("../data/kube-1.32-discovery.txt");

/// Differences from kube-apiserver 1.32, by group/version and resource (a trailing `*`
/// covers a whole group/version), with why.
const NOT_LIKE_KUBE: &[(&str, &str, &str)] = &[
    (
        "v1",
        "pods/attach",
        "no containers run behind this control plane (Karmada's has no nodes)",
    ),
    (
        "v1",
        "pods/exec",
        "no containers run behind this control plane (Karmada's has no nodes)",
    ),
    (
        "v1",
        "pods/portforward",
        "no containers run behind this control plane (Karmada's has no nodes)",
    ),
    (
        "v1",
        "pods/log",
        "no containers run behind this control plane (Karmada's has no nodes)",
    ),
    (
        "v1",
        "pods/proxy",
        "no pod network behind this control plane to proxy to",
    ),
    (
        "v1",
        "services/proxy",
        "no service network behind this control plane to proxy to",
    ),
    (
        "v1",
        "nodes/proxy",
        "no kubelets behind this control plane to proxy to",
    ),
    (
        "v1",
        "pods/ephemeralcontainers",
        "a pod here is a template that never runs; ephemeral containers are added to the \
         running copy on a member",
    ),
    (
        "certificates.k8s.io/v1",
        "certificatesigningrequests/approval",
        "approval takes update (kubectl certificate approve) but not patch",
    ),
    (
        "autoscaling.karmada.io/v1alpha1",
        "*",
        "Karmada's FederatedHPA and CronFederatedHPA are not served yet",
    ),
];

/// One resource or subresource as discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    kind: String,
    namespaced: bool,
    verbs: BTreeSet<String>,
    short: Vec<String>,
    categories: Vec<String>,
}

/// (group/version, resource) → description, and the group/versions in order.
type Doc = (BTreeMap<(String, String), Line>, Vec<String>);

fn list_field(s: &str) -> Vec<String> {
    if s == "-" {
        vec![]
    } else {
        s.split(',').map(str::to_string).collect()
    }
}

fn expected(section: &str) -> Doc {
    let mut lines = BTreeMap::new();
    let mut gvs: Vec<String> = Vec::new();
    let mut in_section = false;
    for raw in EXPECTED.lines() {
        if let Some(title) = raw.strip_prefix("## ") {
            in_section = title.starts_with(section);
            continue;
        }
        if !in_section || raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = raw.split_whitespace().collect();
        assert_eq!(f.len(), 7, "malformed expectation line: {raw}");
        let verbs = if f[4] == "*" {
            "create,delete,deletecollection,get,list,patch,update,watch"
        } else {
            f[4]
        };
        if !gvs.iter().any(|g| g == f[0]) {
            gvs.push(f[0].to_string());
        }
        lines.insert(
            (f[0].to_string(), f[1].to_string()),
            Line {
                kind: f[2].to_string(),
                namespaced: f[3] == "ns",
                verbs: list_field(verbs).into_iter().collect(),
                short: list_field(f[5]),
                categories: list_field(f[6]),
            },
        );
    }
    (lines, gvs)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn get(s: &Server, path: &str) -> Value {
    let out = s.kubectl_ok(&["get", "--raw", path]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{path}: {e}: {out}"))
}

/// The legacy documents: `/api`, `/apis` and each group/version's APIResourceList.
fn served_legacy(s: &Server) -> (Doc, Value) {
    let api = get(s, "/api");
    assert_eq!(strings(&api["versions"]), ["v1"], "{api}");
    let apis = get(s, "/apis");
    let mut gvs = vec!["v1".to_string()];
    for g in apis["groups"].as_array().expect("groups") {
        let versions: Vec<String> = g["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .map(|v| v["groupVersion"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            g["preferredVersion"]["groupVersion"].as_str(),
            versions.first().map(String::as_str),
            "preferred version of {g}"
        );
        gvs.extend(versions);
    }
    let mut lines = BTreeMap::new();
    for gv in &gvs {
        let path = if gv == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{gv}")
        };
        let list = get(s, &path);
        assert_eq!(list["groupVersion"].as_str(), Some(gv.as_str()), "{list}");
        for r in list["resources"].as_array().expect("resources") {
            let kind = r["kind"].as_str().unwrap_or_default();
            let kind = match (r["group"].as_str(), r["version"].as_str()) {
                (Some(g), Some(v)) => {
                    let other = if g.is_empty() {
                        v.to_string()
                    } else {
                        format!("{g}/{v}")
                    };
                    format!("{other}.{kind}")
                }
                _ => kind.to_string(),
            };
            lines.insert(
                (
                    gv.clone(),
                    r["name"].as_str().unwrap_or_default().to_string(),
                ),
                Line {
                    kind,
                    namespaced: r["namespaced"].as_bool().unwrap_or(false),
                    verbs: strings(&r["verbs"]).into_iter().collect(),
                    short: strings(&r["shortNames"]),
                    categories: strings(&r["categories"]),
                },
            );
        }
    }
    ((lines, gvs), apis)
}

/// The aggregated documents (`/api` and `/apis` as kubectl 1.32 asks for them), in the same
/// form.
fn served_aggregated(s: &Server) -> Doc {
    let mut lines = BTreeMap::new();
    let mut gvs = Vec::new();
    for path in ["/api", "/apis"] {
        let doc: Value = s.block_on(async {
            let client = s.client().await;
            let req = http::Request::get(path)
                .header(
                    "Accept",
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                )
                .body(Vec::new())
                .expect("request");
            let text = client
                .request_text(req)
                .await
                .expect("aggregated discovery");
            serde_json::from_str(&text).expect("aggregated discovery JSON")
        });
        assert_eq!(doc["kind"], "APIGroupDiscoveryList", "{path}: {doc}");
        for g in doc["items"].as_array().expect("items") {
            let group = g["metadata"]["name"].as_str().unwrap_or_default();
            for v in g["versions"].as_array().expect("versions") {
                let version = v["version"].as_str().unwrap_or_default();
                let gv = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                gvs.push(gv.clone());
                for r in v["resources"].as_array().into_iter().flatten() {
                    let name = r["resource"].as_str().unwrap_or_default();
                    let namespaced = r["scope"] == "Namespaced";
                    lines.insert(
                        (gv.clone(), name.to_string()),
                        Line {
                            kind: r["responseKind"]["kind"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            namespaced,
                            verbs: strings(&r["verbs"]).into_iter().collect(),
                            short: strings(&r["shortNames"]),
                            categories: strings(&r["categories"]),
                        },
                    );
                    for sub in r["subresources"].as_array().into_iter().flatten() {
                        let rk = &sub["responseKind"];
                        let (g, v) = (
                            rk["group"].as_str().unwrap_or_default(),
                            rk["version"].as_str().unwrap_or_default(),
                        );
                        let own = g == group && v == version;
                        let kind = rk["kind"].as_str().unwrap_or_default();
                        let kind = if own {
                            kind.to_string()
                        } else if g.is_empty() {
                            format!("{v}.{kind}")
                        } else {
                            format!("{g}/{v}.{kind}")
                        };
                        lines.insert(
                            (
                                gv.clone(),
                                format!("{name}/{}", sub["subresource"].as_str().unwrap_or("")),
                            ),
                            Line {
                                kind,
                                namespaced,
                                verbs: strings(&sub["verbs"]).into_iter().collect(),
                                short: vec![],
                                categories: vec![],
                            },
                        );
                    }
                }
            }
        }
    }
    (lines, gvs)
}

fn excused(gv: &str, name: &str) -> Option<usize> {
    NOT_LIKE_KUBE
        .iter()
        .position(|(g, n, _)| *g == gv && (*n == "*" || *n == name))
}

/// Compares the server's discovery with kube-apiserver 1.32's and Karmada's.
pub fn matches_kube_and_karmada(s: &Server) {
    let (kube, kube_gvs) = expected("kube-apiserver");
    let (karmada, karmada_gvs) = expected("Karmada");
    let ((served, served_gvs), _) = served_legacy(s);
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let mut note =
        |gv: &str, name: &str, what: String, problems: &mut Vec<String>| match excused(gv, name) {
            Some(i) => {
                used.insert(i);
            }
            None => problems.push(format!("{gv} {name}: {what}")),
        };
    let all_expected: BTreeMap<_, _> = kube.iter().chain(karmada.iter()).collect();
    for ((gv, name), want) in &all_expected {
        match served.get(&(gv.clone(), name.clone())) {
            None => note(gv, name, "not served".into(), &mut problems),
            Some(got) if got != *want => note(
                gv,
                name,
                format!("served as {got:?}, kube/Karmada: {want:?}"),
                &mut problems,
            ),
            Some(_) => {}
        }
    }
    for ((gv, name), got) in &served {
        if !all_expected.contains_key(&(gv.clone(), name.clone())) {
            note(
                gv,
                name,
                format!("served ({got:?}) but not by kube/Karmada"),
                &mut problems,
            );
        }
    }
    // Group/versions in their order of preference within each group.
    let wanted_gvs: Vec<&String> = kube_gvs
        .iter()
        .chain(karmada_gvs.iter())
        .filter(|gv| excused(gv, "*").is_none())
        .collect();
    let group_of = |gv: &str| gv.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    for gv in &wanted_gvs {
        let group = group_of(gv);
        let order = |list: &[&String]| -> Vec<String> {
            list.iter()
                .filter(|g| group_of(g) == group)
                .map(|g| g.to_string())
                .collect()
        };
        let served_refs: Vec<&String> = served_gvs.iter().collect();
        if order(&wanted_gvs) != order(&served_refs) {
            problems.push(format!(
                "group {group:?}: versions {:?}, kube/Karmada: {:?}",
                order(&served_refs),
                order(&wanted_gvs)
            ));
        }
    }
    for (i, (gv, name, why)) in NOT_LIKE_KUBE.iter().enumerate() {
        if !used.contains(&i) {
            problems.push(format!(
                "{gv} {name} is listed as unlike kube ({why}) but is served as kube serves it"
            ));
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "discovery differs from kube-apiserver 1.32 / Karmada v1.18:\n  {}",
        problems.join("\n  ")
    );
    // The aggregated documents say what the legacy ones say.
    let (aggregated, aggregated_gvs) = served_aggregated(s);
    assert_eq!(aggregated_gvs, served_gvs, "aggregated group/versions");
    for (key, line) in &served {
        assert_eq!(aggregated.get(key), Some(line), "aggregated {key:?}");
    }
    assert_eq!(aggregated.len(), served.len());
}
