//! Validation of RBAC, Lease, HorizontalPodAutoscaler, PodDisruptionBudget, Ingress,
//! CustomResourceDefinition and APIService objects (pkg/apis/{rbac,coordination,autoscaling,
//! policy,networking}/validation, apiextensions-apiserver and kube-aggregator validation).

use std::collections::BTreeSet;

use serde_json::Value;

use super::apps::go_int_or_string;
use super::field::{self, Bad, Path, go_quote};
use super::json;
use super::meta;
use super::names;
use apimachinery::status::Cause;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// ValidatePolicyRule for every rule of a Role or ClusterRole.
pub(crate) fn validate_role(obj: &Value, namespaced: bool, errs: &mut Vec<Cause>) {
    for (i, rule) in json::list(obj, "rules").iter().enumerate() {
        let p = Path::new("rules").index(i);
        if json::list(rule, "verbs").is_empty() {
            errs.push(field::required(
                &p.child("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = json::string_list(rule, "nonResourceURLs").unwrap_or_default();
        if !urls.is_empty() {
            let render = Bad::Raw(field::go_string_slice(Some(&urls)));
            if namespaced {
                errs.push(field::invalid(
                    &p.child("nonResourceURLs"),
                    render.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !json::list(rule, "apiGroups").is_empty()
                || !json::list(rule, "resources").is_empty()
                || !json::list(rule, "resourceNames").is_empty()
            {
                errs.push(field::invalid(
                    &p.child("nonResourceURLs"),
                    render,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if json::list(rule, "apiGroups").is_empty() {
            errs.push(field::required(
                &p.child("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if json::list(rule, "resources").is_empty() {
            errs.push(field::required(
                &p.child("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    if !namespaced && let Some(agg) = json::field(obj, "aggregationRule") {
        let p = Path::new("aggregationRule").child("clusterRoleSelectors");
        let selectors = json::list(agg, "clusterRoleSelectors");
        if selectors.is_empty() {
            errs.push(field::required(
                &p,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, s) in selectors.iter().enumerate() {
            errs.extend(meta::validate_label_selector(Some(s), &p.index(i)));
        }
    }
}

fn go_role_ref(r: &Value) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        go_quote(json::string(r, "apiGroup")),
        go_quote(json::string(r, "kind")),
        go_quote(json::string(r, "name"))
    )
}

/// ValidateRoleBinding / ValidateClusterRoleBinding (+ the roleRef immutability on update).
pub(crate) fn validate_binding(
    obj: &Value,
    old: Option<&Value>,
    namespaced: bool,
    errs: &mut Vec<Cause>,
) {
    let empty = Value::Null;
    let rr = json::field(obj, "roleRef").unwrap_or(&empty);
    let rp = Path::new("roleRef");
    let group = json::string(rr, "apiGroup");
    if group != RBAC_GROUP {
        errs.push(field::not_supported(
            &rp.child("apiGroup"),
            Bad::str(group),
            &[RBAC_GROUP],
        ));
    }
    let kind = json::string(rr, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(field::not_supported(
            &rp.child("kind"),
            Bad::str(kind),
            kinds,
        ));
    }
    let name = json::string(rr, "name");
    if name.is_empty() {
        errs.push(field::required(&rp.child("name"), ""));
    } else {
        for m in names::path_segment_name(name, false) {
            errs.push(field::invalid(&rp.child("name"), Bad::str(name), &m));
        }
    }
    for (i, s) in json::list(obj, "subjects").iter().enumerate() {
        let p = Path::new("subjects").index(i);
        let sname = json::string(s, "name");
        if sname.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        }
        let api_group = json::string(s, "apiGroup");
        match json::string(s, "kind") {
            "ServiceAccount" => {
                if !sname.is_empty() {
                    for m in names::name_is_dns_subdomain(sname, false) {
                        errs.push(field::invalid(&p.child("name"), Bad::str(sname), &m));
                    }
                }
                if !api_group.is_empty() {
                    errs.push(field::not_supported(
                        &p.child("apiGroup"),
                        Bad::str(api_group),
                        &[""],
                    ));
                }
                if !namespaced && json::string(s, "namespace").is_empty() {
                    errs.push(field::required(&p.child("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if api_group != RBAC_GROUP {
                    errs.push(field::not_supported(
                        &p.child("apiGroup"),
                        Bad::str(api_group),
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => errs.push(field::not_supported(
                &p.child("kind"),
                Bad::str(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if let Some(old) = old {
        let orr = json::field(old, "roleRef").unwrap_or(&empty);
        let same = ["apiGroup", "kind", "name"]
            .iter()
            .all(|k| json::string(rr, k) == json::string(orr, k));
        if !same {
            errs.push(field::invalid(
                &rp,
                Bad::Raw(go_role_ref(rr)),
                "cannot change roleRef",
            ));
        }
    }
}

/// ValidateLeaseSpec.
pub(crate) fn validate_lease(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    if let Some(d) = json::int(s, "leaseDurationSeconds").filter(|d| *d <= 0) {
        errs.push(field::invalid(
            &p.child("leaseDurationSeconds"),
            Bad::Int(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = json::int(s, "leaseTransitions").filter(|t| *t < 0) {
        errs.push(field::invalid(
            &p.child("leaseTransitions"),
            Bad::Int(t),
            "must be greater than or equal to 0",
        ));
    }
    let strategy = json::string(s, "strategy");
    if !strategy.is_empty() {
        if !strategy.contains('/') {
            if strategy != "OldestEmulationVersion" {
                errs.push(field::not_supported(
                    &p.child("strategy").child("strategy"),
                    Bad::str(strategy),
                    &["OldestEmulationVersion"],
                ));
            }
        } else {
            for m in names::qualified_name(strategy) {
                errs.push(field::invalid(
                    &p.child("strategy").child("strategy"),
                    Bad::str(strategy),
                    &m,
                ));
            }
        }
    }
    if !json::string(s, "preferredHolder").is_empty() && strategy.is_empty() {
        errs.push(field::forbidden(
            &p.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
}

/// validateHorizontalPodAutoscalerSpec (scale-to-zero is off by default).
pub(crate) fn validate_hpa(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let min = json::int(s, "minReplicas");
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(field::invalid(
            &p.child("minReplicas"),
            Bad::Int(m),
            "must be greater than or equal to 1",
        ));
    }
    let max = json::int(s, "maxReplicas").unwrap_or(0);
    if max < 1 {
        errs.push(field::invalid(
            &p.child("maxReplicas"),
            Bad::Int(max),
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        errs.push(field::invalid(
            &p.child("maxReplicas"),
            Bad::Int(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let r = json::field(s, "scaleTargetRef").unwrap_or(&empty);
    let rp = p.child("scaleTargetRef");
    for key in ["kind", "name"] {
        let v = json::string(r, key);
        if v.is_empty() {
            errs.push(field::required(&rp.child(key), ""));
        } else {
            for m in names::path_segment_name(v, false) {
                errs.push(field::invalid(&rp.child(key), Bad::str(v), &m));
            }
        }
    }
}

/// ValidatePodDisruptionBudgetSpec.
pub(crate) fn validate_pdb(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let min = json::field(s, "minAvailable");
    let max = json::field(s, "maxUnavailable");
    if min.is_some() && max.is_some() {
        errs.push(field::invalid(
            &p,
            Bad::Raw(format!(
                "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, MaxUnavailable:{}}}",
                go_int_or_string(min),
                go_int_or_string(max)
            )),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (key, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        let kp = p.child(key);
        match v {
            Some(Value::String(st)) => {
                let msgs = names::percent(st);
                for m in &msgs {
                    errs.push(field::invalid(&kp, Bad::Raw(go_int_or_string(v)), m));
                }
                let pct: i64 = st.trim_end_matches('%').parse().unwrap_or(0);
                if msgs.is_empty() && pct > 100 {
                    errs.push(field::invalid(
                        &kp,
                        Bad::Raw(go_int_or_string(v)),
                        "must not be greater than 100%",
                    ));
                }
            }
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64().filter(|i| *i < 0) {
                    errs.push(field::invalid(
                        &kp,
                        Bad::Int(i),
                        "must be greater than or equal to 0",
                    ));
                }
            }
            _ => {}
        }
    }
    errs.extend(meta::validate_label_selector(
        json::field(s, "selector"),
        &p.child("selector"),
    ));
    if let Some(policy) = json::opt_str(s, "unhealthyPodEvictionPolicy")
        && !matches!(policy, "IfHealthyBudget" | "AlwaysAllow")
    {
        errs.push(field::not_supported(
            &p.child("unhealthyPodEvictionPolicy"),
            Bad::str(policy),
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
}

/// The Ingress spec checks users hit (rules or default backend, path types).
pub(crate) fn validate_ingress(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let rules = json::list(s, "rules");
    if json::field(s, "defaultBackend").is_none() && rules.is_empty() {
        errs.push(field::invalid(
            &p,
            Bad::Raw("[]networking.IngressRule(nil)".into()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = p.child("rules").index(i);
        let host = json::string(rule, "host");
        if !host.is_empty() {
            if let Some(rest) = host.strip_prefix("*.") {
                if !names::dns1123_subdomain(rest).is_empty() {
                    errs.push(field::invalid(
                        &rp.child("host"),
                        Bad::str(host),
                        &names::regex_error(
                            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
                            "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                            &["*.example.com"],
                        ),
                    ));
                }
            } else {
                for m in names::dns1123_subdomain(host) {
                    errs.push(field::invalid(&rp.child("host"), Bad::str(host), &m));
                }
            }
        }
        let Some(http) = json::field(rule, "http") else {
            continue;
        };
        let hp = rp.child("http");
        let paths = json::list(http, "paths");
        if paths.is_empty() {
            errs.push(field::required(&hp.child("paths"), ""));
        }
        for (j, path) in paths.iter().enumerate() {
            let pp = hp.child("paths").index(j);
            let value = json::string(path, "path");
            match json::opt_str(path, "pathType") {
                None => errs.push(field::required(
                    &pp.child("pathType"),
                    "pathType must be specified",
                )),
                Some("Exact" | "Prefix") => {
                    if !value.starts_with('/') {
                        errs.push(field::invalid(
                            &pp.child("path"),
                            Bad::str(value),
                            "must be an absolute path",
                        ));
                    }
                    if !value.is_empty() {
                        for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                            if value.contains(seq) {
                                errs.push(field::invalid(
                                    &pp.child("path"),
                                    Bad::str(value),
                                    &format!("must not contain '{seq}'"),
                                ));
                            }
                        }
                        for suffix in ["/..", "/."] {
                            if value.ends_with(suffix) {
                                errs.push(field::invalid(
                                    &pp.child("path"),
                                    Bad::str(value),
                                    &format!("cannot end with '{suffix}'"),
                                ));
                            }
                        }
                    }
                }
                Some("ImplementationSpecific") => {
                    if !value.is_empty() && !value.starts_with('/') {
                        errs.push(field::invalid(
                            &pp.child("path"),
                            Bad::str(value),
                            "must be an absolute path",
                        ));
                    }
                }
                Some(other) => errs.push(field::not_supported(
                    &pp.child("pathType"),
                    Bad::str(other),
                    &["Exact", "ImplementationSpecific", "Prefix"],
                )),
            }
        }
    }
}

fn dns1035_joined(v: &str) -> Option<String> {
    let msgs = names::dns1035_label(v);
    (!msgs.is_empty()).then(|| msgs.join(","))
}

/// ValidateCustomResourceDefinition (structural-schema checks are not done here).
pub(crate) fn validate_crd(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let group = json::string(s, "group");
    if group.is_empty() {
        errs.push(field::required(&p.child("group"), ""));
    } else if !names::dns1123_subdomain(group).is_empty() {
        errs.push(field::invalid(
            &p.child("group"),
            Bad::str(group),
            &names::dns1123_subdomain(group).join(","),
        ));
    } else if group.split('.').count() < 2 {
        errs.push(field::invalid(
            &p.child("group"),
            Bad::str(group),
            "should be a domain with at least one dot",
        ));
    }
    match json::string(s, "scope") {
        "" => errs.push(field::required(&p.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(field::not_supported(
            &p.child("scope"),
            Bad::str(other),
            &["Cluster", "Namespaced"],
        )),
    }
    let versions = json::list(s, "versions");
    let vp = p.child("versions");
    let top_level_schema = json::at(s, &["validation", "openAPIV3Schema"]).is_some();
    if !top_level_schema {
        for (i, v) in versions.iter().enumerate() {
            if json::at(v, &["schema", "openAPIV3Schema"]).is_none() {
                errs.push(field::required(
                    &vp.index(i).children(&["schema", "openAPIV3Schema"]),
                    "schemas are required",
                ));
            }
        }
    }
    let mut storage = 0;
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        if json::boolean(v, "storage") == Some(true) {
            storage += 1;
        }
        let name = json::string(v, "name");
        if !seen.insert(name.to_string()) {
            unique = false;
        }
        if let Some(m) = dns1035_joined(name) {
            errs.push(field::invalid(
                &vp.index(i).child("name"),
                Bad::str(name),
                &m,
            ));
        }
        if json::boolean(v, "deprecated") != Some(true)
            && json::field(v, "deprecationWarning").is_some()
        {
            errs.push(field::invalid(
                &vp.index(i).child("deprecationWarning"),
                Bad::str(json::string(v, "deprecationWarning")),
                "can only be set for deprecated versions",
            ));
        }
    }
    let versions_value = Bad::Raw("[]apiextensions.CustomResourceDefinitionVersion{...}".into());
    if !unique {
        errs.push(field::invalid(
            &vp,
            versions_value.clone(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(field::invalid(
            &vp,
            versions_value,
            "must have exactly one version marked as storage version",
        ));
    }
    let empty_names = Value::Null;
    let n = json::field(s, "names").unwrap_or(&empty_names);
    let np = p.child("names");
    for key in ["plural", "singular", "kind", "listKind"] {
        if json::string(n, key).is_empty() {
            errs.push(field::required(&np.child(key), ""));
        }
    }
    for key in ["plural", "singular"] {
        let v = json::string(n, key);
        if !v.is_empty()
            && let Some(m) = dns1035_joined(v)
        {
            errs.push(field::invalid(&np.child(key), Bad::str(v), &m));
        }
    }
    for key in ["kind", "listKind"] {
        let v = json::string(n, key);
        if !v.is_empty()
            && let Some(m) = dns1035_joined(&v.to_lowercase())
        {
            errs.push(field::invalid(
                &np.child(key),
                Bad::str(v),
                &format!("may have mixed case, but should otherwise match: {m}"),
            ));
        }
    }
    for list in ["shortNames", "categories"] {
        for (i, v) in json::string_list(n, list)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if let Some(m) = dns1035_joined(v) {
                errs.push(field::invalid(&np.child(list).index(i), Bad::str(v), &m));
            }
        }
    }
    let kind = json::string(n, "kind");
    if !kind.is_empty() && kind == json::string(n, "listKind") {
        errs.push(field::invalid(
            &np.child("listKind"),
            Bad::str(kind),
            "kind and listKind may not be the same",
        ));
    }
    if let Some(conv) = json::field(s, "conversion") {
        let cp = p.child("conversion");
        let strategy = json::string(conv, "strategy");
        match strategy {
            "" => errs.push(field::required(&cp.child("strategy"), "")),
            "None" | "Webhook" => {}
            other => errs.push(field::not_supported(
                &cp.child("strategy"),
                Bad::str(other),
                &["None", "Webhook"],
            )),
        }
        if strategy == "Webhook" {
            match json::at(conv, &["webhook", "clientConfig"]) {
                None => errs.push(field::required(
                    &cp.child("webhookClientConfig"),
                    "required when strategy is set to Webhook",
                )),
                Some(cc) => {
                    if json::field(cc, "url").is_some() == json::field(cc, "service").is_some() {
                        errs.push(field::required(
                            &cp.child("webhookClientConfig"),
                            "exactly one of url or service is required",
                        ));
                    }
                }
            }
        } else if json::at(conv, &["webhook", "clientConfig"]).is_some() {
            errs.push(field::forbidden(
                &cp.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    if json::boolean(s, "preserveUnknownFields") == Some(true)
        && old
            .and_then(|o| json::at(o, &["spec", "preserveUnknownFields"]))
            .and_then(Value::as_bool)
            != Some(true)
    {
        errs.push(field::invalid(
            &p.child("preserveUnknownFields"),
            Bad::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    // ValidateCustomResourceDefinitionStoredVersions.
    let stored = json::field(obj, "status")
        .and_then(|st| json::string_list(st, "storedVersions"))
        .unwrap_or_default();
    let sp = Path::new("status").child("storedVersions");
    let render = Bad::Raw(field::go_string_slice(Some(&stored)));
    if stored.is_empty() {
        errs.push(field::invalid(
            &sp,
            render,
            "must have at least one stored version",
        ));
    } else {
        let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
        for v in versions {
            let name = json::string(v, "name");
            let found = remaining.iter().position(|(_, s)| s.as_str() == name);
            if json::boolean(v, "storage") == Some(true) && found.is_none() {
                errs.push(field::invalid(
                    &sp,
                    render.clone(),
                    &format!("must have the storage version {name}"),
                ));
            }
            if let Some(i) = found {
                remaining.remove(i);
            }
        }
        for (i, v) in remaining {
            errs.push(field::invalid(
                &sp.index(i),
                Bad::str(v),
                "must appear in spec.versions",
            ));
        }
    }
    if let Some(old) = old {
        let os = json::field(old, "spec").unwrap_or(&empty);
        let established = json::at(old, &["status", "conditions"])
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter().any(|c| {
                    json::string(c, "type") == "Established" && json::string(c, "status") == "True"
                })
            });
        let mut immutable = vec![
            ("group", vec!["group"]),
            ("names.plural", vec!["names", "plural"]),
        ];
        if established {
            immutable.insert(0, ("names.kind", vec!["names", "kind"]));
            immutable.insert(0, ("scope", vec!["scope"]));
        }
        for (name, keys) in immutable {
            let (nv, ov) = (json::at(s, &keys), json::at(os, &keys));
            if nv != ov {
                errs.push(field::invalid(
                    &p.child(name),
                    Bad::str(nv.and_then(Value::as_str).unwrap_or("")),
                    "field is immutable",
                ));
            }
        }
    }
}

/// ValidateAPIService (the name rule is in [`super::validate_name`]'s caller).
pub(crate) fn validate_api_service(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let group = json::string(s, "group");
    let version = json::string(s, "version");
    if group.is_empty() && version != "v1" {
        errs.push(field::required(
            &p.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in names::dns1123_subdomain(group) {
            errs.push(field::invalid(&p.child("group"), Bad::str(group), &m));
        }
    }
    for m in names::dns1035_label(version) {
        errs.push(field::invalid(&p.child("version"), Bad::str(version), &m));
    }
    let gpm = json::int(s, "groupPriorityMinimum").unwrap_or(0);
    if gpm <= 0 || gpm > 20000 {
        errs.push(field::invalid(
            &p.child("groupPriorityMinimum"),
            Bad::Int(gpm),
            "must be positive and less than 20000",
        ));
    }
    let vp = json::int(s, "versionPriority").unwrap_or(0);
    if vp <= 0 || vp > 1000 {
        errs.push(field::invalid(
            &p.child("versionPriority"),
            Bad::Int(vp),
            "must be positive and less than 1000",
        ));
    }
    let ca = json::string(s, "caBundle");
    let ca_len = base64_len(ca);
    let insecure = json::boolean(s, "insecureSkipTLSVerify") == Some(true);
    let Some(svc) = json::field(s, "service") else {
        if ca_len != 0 {
            errs.push(field::invalid(
                &p.child("caBundle"),
                Bad::Str(format!("{ca_len} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(field::invalid(
                &p.child("insecureSkipTLSVerify"),
                Bad::Bool(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return;
    };
    let svp = p.child("service");
    for key in ["namespace", "name"] {
        if json::string(svc, key).is_empty() {
            errs.push(field::required(&svp.child(key), ""));
        }
    }
    let port = json::int(svc, "port").unwrap_or(0);
    let msgs = names::port_num(port);
    if !msgs.is_empty() {
        errs.push(field::invalid(
            &svp.child("port"),
            Bad::Int(port),
            &format!("port is not valid: {}", msgs.join(", ")),
        ));
    }
    if insecure && ca_len > 0 {
        errs.push(field::invalid(
            &p.child("insecureSkipTLSVerify"),
            Bad::Bool(true),
            "may not be true if caBundle is present",
        ));
    }
}

fn base64_len(s: &str) -> usize {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_or(s.len(), |b| b.len())
}

/// The APIService name rule: a path segment equal to `version.group`.
pub(crate) fn api_service_name(obj: &Value, name: &str) -> Vec<String> {
    let bad = names::path_segment_name(name, false);
    if !bad.is_empty() {
        return bad;
    }
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let required = format!(
        "{}.{}",
        json::string(s, "version"),
        json::string(s, "group")
    );
    if name != required {
        return vec![format!(
            "must be `spec.version+\".\"+spec.group`: {}",
            go_quote(&required)
        )];
    }
    Vec::new()
}

/// The CRD name rule: a DNS subdomain equal to `plural.group`.
pub(crate) fn crd_name(obj: &Value, name: &str, prefix: bool) -> Vec<String> {
    let mut errs = names::name_is_dns_subdomain(name, prefix);
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let required = format!(
        "{}.{}",
        json::at(s, &["names", "plural"])
            .and_then(Value::as_str)
            .unwrap_or(""),
        json::string(s, "group")
    );
    if name != required {
        errs.push("must be spec.names.plural+\".\"+spec.group".to_string());
    }
    errs
}
