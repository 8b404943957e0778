//! A webhook's rules (k8s.io/apiserver pkg/admission/plugin/webhook/predicates/rules): which
//! operations on which group, version, resource and subresource, in which scope.

use serde_json::Value;

/// One `RuleWithOperations`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// API groups (`""` core, `*` any).
    pub api_groups: Vec<String>,
    /// Versions (`*` any).
    pub api_versions: Vec<String>,
    /// `res`, `res/sub`, `res/*`, `*/sub`, `*` (main resources) or `*/*`.
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

/// The strings of a list member (absent or mistyped: none).
pub(crate) fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// Reads a rule of a (defaulted) configuration.
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            operations: strings(v, "operations"),
            api_groups: strings(v, "apiGroups"),
            api_versions: strings(v, "apiVersions"),
            resources: strings(v, "resources"),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        }
    }

    /// Whether the rule takes the operation on this resource. `namespace` is the object's
    /// namespace (`""` for cluster-scoped objects and Namespaces themselves).
    pub fn matches(&self, req: &Request<'_>) -> bool {
        self.operation(req.operation)
            && any_or(&self.api_groups, req.group)
            && any_or(&self.api_versions, req.version)
            && self.resource(req.resource, req.subresource)
            && self.scope(req)
    }

    fn operation(&self, op: &str) -> bool {
        self.operations.iter().any(|o| o == "*" || o == op)
    }

    /// `res/sub` takes `sub` of `res`; `*` stands for any resource or any subresource, and
    /// an omitted subresource for the main resource only.
    fn resource(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == resource) && (sub == "*" || sub == subresource)
        })
    }

    fn scope(&self, req: &Request<'_>) -> bool {
        let namespace_object = req.group.is_empty() && req.resource == "namespaces";
        match self.scope.as_str() {
            "Namespaced" => !namespace_object && !req.namespace.is_empty(),
            "Cluster" => namespace_object || req.namespace.is_empty(),
            _ => true,
        }
    }
}

fn any_or(items: &[String], want: &str) -> bool {
    items.iter().any(|i| i == "*" || i == want)
}

/// What rules look at in a request.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `CREATE`...
    pub operation: &'a str,
    /// API group.
    pub group: &'a str,
    /// Version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource or `""`.
    pub subresource: &'a str,
    /// The object's namespace.
    pub namespace: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req<'a>(op: &'a str, resource: &'a str, sub: &'a str, ns: &'a str) -> Request<'a> {
        Request {
            operation: op,
            group: "apps",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    fn rule(resources: &[&str], scope: &str) -> Rule {
        Rule::from_json(&json!({
            "operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["*"],
            "resources": resources, "scope": scope,
        }))
    }

    #[test]
    fn resources_and_subresources() {
        let cases: &[(&[&str], &str, &str, bool)] = &[
            (&["deployments"], "deployments", "", true),
            (&["deployments"], "deployments", "status", false),
            (&["deployments/status"], "deployments", "status", true),
            (&["deployments/status"], "deployments", "", false),
            (&["deployments/*"], "deployments", "scale", true),
            (&["deployments/*"], "deployments", "", true),
            (&["*"], "statefulsets", "", true),
            (&["*"], "statefulsets", "status", false),
            (&["*/status"], "statefulsets", "status", true),
            (&["*/status"], "statefulsets", "scale", false),
            (&["*/*"], "statefulsets", "scale", true),
            (&["*/*"], "statefulsets", "", true),
        ];
        for (resources, res, sub, want) in cases {
            let got = rule(resources, "*").matches(&req("CREATE", res, sub, "default"));
            assert_eq!(got, *want, "{resources:?} on {res}/{sub}");
        }
        assert!(!rule(&["deployments"], "*").matches(&req("DELETE", "deployments", "", "d")));
    }

    #[test]
    fn scopes() {
        let ns = Request {
            operation: "CREATE",
            group: "",
            version: "v1",
            resource: "namespaces",
            subresource: "",
            namespace: "",
        };
        let r = |scope: &str| {
            Rule::from_json(&json!({
                "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                "resources": ["*"], "scope": scope,
            }))
        };
        assert!(r("Cluster").matches(&ns));
        assert!(!r("Namespaced").matches(&ns));
        let namespaced = req("CREATE", "deployments", "", "default");
        assert!(r("Namespaced").matches(&namespaced));
        assert!(!r("Cluster").matches(&namespaced));
        assert!(r("*").matches(&namespaced) && r("*").matches(&ns));
    }
}
