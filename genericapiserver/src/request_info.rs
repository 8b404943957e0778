//! Request attributes derived from the URL, as kube-apiserver's
//! `k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory.NewRequestInfo` derives them.
//! Authorization and dispatch both use them.

use std::collections::HashMap;

/// What a request is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for `/api/...` and `/apis/G/V/...` requests naming a resource.
    pub is_resource_request: bool,
    /// The URL path.
    pub path: String,
    /// Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection), or
    /// the lower-cased HTTP method for non-resource requests.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    /// API group (`""` for core).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Namespace, `""` for cluster scope.
    pub namespace: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, e.g. `status`, `proxy`.
    pub subresource: String,
    /// Object name (also set from a `metadata.name=` field selector on list/watch).
    pub name: String,
    /// Path parts after the subresource (the proxied path of `clusters/NAME/proxy/...`).
    pub rest: Vec<String>,
    /// True when the name came only from a `metadata.name` field selector (list/watch).
    pub name_from_selector: bool,
}

const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Parses a query string into a multi-map (percent-decoded).
pub fn parse_query(query: Option<&str>) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    if let Some(q) = query
        && let Ok(pairs) = serde_urlencoded::from_str::<Vec<(String, String)>>(q)
    {
        for (k, v) in pairs {
            out.entry(k).or_default().push(v);
        }
    }
    out
}

/// Go's strconv.ParseBool, which kube uses for `watch=`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Derives the request info from method, path and query.
pub fn request_info(
    method: &http::Method,
    path: &str,
    query: &HashMap<String, Vec<String>>,
) -> RequestInfo {
    let mut info = RequestInfo {
        path: path.to_string(),
        verb: method.as_str().to_lowercase(),
        ..Default::default()
    };
    let trimmed = path.trim_matches('/');
    let parts: Vec<&str> = if trimmed.is_empty() {
        vec![]
    } else {
        trimmed.split('/').collect()
    };
    let Some(&prefix) = parts.first() else {
        return info;
    };
    if prefix != "api" && prefix != "apis" {
        return info;
    }
    let mut cur: &[&str] = &parts[1..];
    info.api_prefix = prefix.to_string();
    if prefix == "apis" {
        if cur.len() < 2 {
            return info;
        }
        info.api_group = cur[0].to_string();
        cur = &cur[1..];
    } else if cur.is_empty() {
        return info;
    }
    info.api_version = cur[0].to_string();
    cur = &cur[1..];
    if cur.is_empty() {
        // `/api/v1` or `/apis/G/V`: discovery, a non-resource request.
        return info;
    }
    info.is_resource_request = true;

    // The deprecated `/watch/` path segment.
    let mut watch_path = false;
    if cur[0] == "watch" {
        watch_path = true;
        cur = &cur[1..];
        if cur.is_empty() {
            info.is_resource_request = false;
            return info;
        }
    }

    if cur[0] == "namespaces" && cur.len() > 1 {
        info.namespace = cur[1].to_string();
        if cur.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&cur[2]) {
            cur = &cur[2..];
        }
    }

    info.resource = cur[0].to_string();
    if cur.len() >= 2 {
        info.name = cur[1].to_string();
    }
    if cur.len() >= 3 {
        info.subresource = cur[2].to_string();
    }
    if cur.len() > 3 {
        info.rest = cur[3..].iter().map(|s| s.to_string()).collect();
    }

    let watch_param = query
        .get("watch")
        .and_then(|v| v.first())
        .and_then(|v| parse_bool(v))
        .unwrap_or(false);
    info.verb = match *method {
        http::Method::POST => "create".into(),
        http::Method::GET | http::Method::HEAD => {
            if watch_path || (info.name.is_empty() && watch_param) {
                "watch".into()
            } else if info.name.is_empty() {
                "list".into()
            } else {
                "get".into()
            }
        }
        http::Method::PUT => "update".into(),
        http::Method::PATCH => "patch".into(),
        http::Method::DELETE => {
            if info.name.is_empty() {
                "deletecollection".into()
            } else {
                "delete".into()
            }
        }
        _ => method.as_str().to_lowercase(),
    };
    info
}

/// Names the object a list or watch pins with a `metadata.name=` field selector, so that RBAC
/// rules with resourceNames can allow it (kube 1.30+ `NewRequestInfo`). Kept apart from
/// [`request_info`], which routing and metrics need before authentication: the selector, a
/// caller's free text, is parsed only once the caller is authenticated.
pub fn add_selector_name(info: &mut RequestInfo, query: &HashMap<String, Vec<String>>) {
    if (info.verb == "list" || info.verb == "watch")
        && info.name.is_empty()
        && let Some(fs) = query.get("fieldSelector").and_then(|v| v.first())
        && let Ok(sel) = apimachinery::selectors::FieldSelector::parse(fs)
        && let Some(name) = sel.exact_name()
    {
        info.name = name.to_string();
        info.name_from_selector = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn ri(method: Method, path: &str, q: &str) -> RequestInfo {
        let query = parse_query(Some(q));
        let mut info = request_info(&method, path, &query);
        add_selector_name(&mut info, &query);
        info
    }

    /// Routing reads no selector: only [`add_selector_name`], after authentication, does.
    #[test]
    fn selectors_are_read_only_when_asked() {
        let query = parse_query(Some("fieldSelector=metadata.name%3Dc1"));
        let mut info = request_info(&Method::GET, "/api/v1/configmaps", &query);
        assert_eq!((info.name.as_str(), info.name_from_selector), ("", false));
        add_selector_name(&mut info, &query);
        assert_eq!((info.name.as_str(), info.name_from_selector), ("c1", true));
        // Not for a get, and not from a negated term.
        let mut get = request_info(&Method::GET, "/api/v1/namespaces/d/configmaps/x", &query);
        add_selector_name(&mut get, &query);
        assert_eq!(get.name, "x");
        let negated = parse_query(Some("fieldSelector=metadata.name!%3Dc1"));
        let mut list = request_info(&Method::GET, "/api/v1/configmaps", &negated);
        add_selector_name(&mut list, &negated);
        assert!(list.name.is_empty());
        // Text that is no selector at all names nothing (and does not panic).
        for q in [
            "fieldSelector=%C3%A9",
            "fieldSelector=%5C%C3%A9%3D",
            "fieldSelector=a%3D%5C",
        ] {
            let query = parse_query(Some(q));
            let mut info = request_info(&Method::GET, "/api/v1/configmaps", &query);
            add_selector_name(&mut info, &query);
            assert!(info.name.is_empty(), "{q}");
        }
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn table() {
        let cases: &[(Method, &str, &str, &str, &str, &str, &str, &str, &str)] = &[
            // method, path, query, verb, group, ns, resource, name, sub
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps",
                "",
                "list",
                "",
                "default",
                "configmaps",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps",
                "watch=1",
                "watch",
                "",
                "default",
                "configmaps",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps/c1",
                "",
                "get",
                "",
                "default",
                "configmaps",
                "c1",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns1",
                "",
                "get",
                "",
                "ns1",
                "namespaces",
                "ns1",
                "",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/ns1/finalize",
                "",
                "update",
                "",
                "ns1",
                "namespaces",
                "ns1",
                "finalize",
            ),
            (
                Method::GET,
                "/api/v1/namespaces",
                "",
                "list",
                "",
                "",
                "namespaces",
                "",
                "",
            ),
            (
                Method::DELETE,
                "/apis/apps/v1/namespaces/d/deployments",
                "",
                "deletecollection",
                "apps",
                "d",
                "deployments",
                "",
                "",
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/d/deployments/x/scale",
                "",
                "patch",
                "apps",
                "d",
                "deployments",
                "x",
                "scale",
            ),
            (
                Method::GET,
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
                "",
                "get",
                "cluster.karmada.io",
                "",
                "clusters",
                "m1",
                "proxy",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/default/pods",
                "",
                "watch",
                "",
                "default",
                "pods",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/configmaps",
                "fieldSelector=metadata.name%3Dc1",
                "list",
                "",
                "",
                "configmaps",
                "c1",
                "",
            ),
        ];
        for (m, path, q, verb, group, ns, res, name, sub) in cases {
            let i = ri(m.clone(), path, q);
            assert!(i.is_resource_request, "{path}");
            assert_eq!(
                (
                    i.verb.as_str(),
                    i.api_group.as_str(),
                    i.namespace.as_str(),
                    i.resource.as_str(),
                    i.name.as_str(),
                    i.subresource.as_str()
                ),
                (*verb, *group, *ns, *res, *name, *sub),
                "{m} {path}?{q}"
            );
        }
        let proxy = ri(
            Method::GET,
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
            "",
        );
        assert_eq!(proxy.rest, vec!["api", "v1", "pods"]);
        for p in [
            "/healthz",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/api",
            "/api/v1",
            "/version",
            "/openapi/v3",
        ] {
            assert!(!ri(Method::GET, p, "").is_resource_request, "{p}");
        }
        assert_eq!(ri(Method::GET, "/healthz", "").verb, "get");
    }
}
