//! kube-apiserver's audit policy (`--audit-policy-file`, `audit.k8s.io/v1` Policy): which
//! requests are audited, at which level (None, Metadata, Request, RequestResponse) and at which
//! stages. The first rule that matches a request decides; a request no rule matches is not
//! audited (kube's default level None). Matching follows kube's policy checker
//! (k8s.io/apiserver/pkg/audit/policy/checker.go).

use std::path::Path;

use serde::Deserialize;

use crate::request_info::RequestInfo;

/// How much of a request an event records, least first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Not audited.
    None,
    /// Who, what, on which object, the outcome: no bodies.
    Metadata,
    /// Metadata and the request's object.
    Request,
    /// Metadata, the request's object and the response's.
    RequestResponse,
}

impl Level {
    /// The name written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When during a request an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Stage {
    /// As soon as the request is authenticated, before it is handled.
    RequestReceived,
    /// When a long-running request (a watch) has sent its headers.
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When handling the request panicked.
    Panic,
}

impl Stage {
    /// The name written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

/// Who sent a request, as the policy matches it.
#[derive(Clone, Copy, Debug)]
pub struct PolicyUser<'a> {
    /// The user name.
    pub name: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
}

/// The policy's answer for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// How much to record.
    pub level: Level,
    /// Stages not written.
    pub omit_stages: Vec<Stage>,
    /// Whether managedFields are left out of request and response objects.
    pub omit_managed_fields: bool,
}

impl Decision {
    /// Whether an event is written at `stage`.
    pub fn writes(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

/// A loaded, validated policy.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    rules: Vec<RawRule>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRule {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

#[derive(Clone, Debug)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: Option<bool>,
}

const LEVELS: &str = r#""None", "Metadata", "Request", "RequestResponse""#;
const STAGES: &str = r#""RequestReceived", "ResponseStarted", "ResponseComplete", "Panic""#;

fn parse_level(path: &str, s: &str) -> Result<Level, String> {
    match s {
        "" => Err(format!("{path}: Required value")),
        "None" => Ok(Level::None),
        "Metadata" => Ok(Level::Metadata),
        "Request" => Ok(Level::Request),
        "RequestResponse" => Ok(Level::RequestResponse),
        other => Err(format!(
            "{path}: Unsupported value: {other:?}: supported values: {LEVELS}"
        )),
    }
}

fn parse_stages(path: &str, v: &[String]) -> Result<Vec<Stage>, String> {
    v.iter()
        .enumerate()
        .map(|(i, s)| match s.as_str() {
            "RequestReceived" => Ok(Stage::RequestReceived),
            "ResponseStarted" => Ok(Stage::ResponseStarted),
            "ResponseComplete" => Ok(Stage::ResponseComplete),
            "Panic" => Ok(Stage::Panic),
            other => Err(format!(
                "{path}[{i}]: Unsupported value: {other:?}: supported values: {STAGES}"
            )),
        })
        .collect()
}

impl Policy {
    /// Reads and validates a policy file (YAML or JSON), as kube-apiserver does at start.
    pub fn load(path: &Path) -> Result<Policy, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the audit policy {}: {e}", path.display()))?;
        Policy::parse(&text)
            .map_err(|e| format!("loading the audit policy {}: {e}", path.display()))
    }

    /// Parses and validates a policy document.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let file: File = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        if file.kind != "Policy" || file.api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "no kind {:?} is registered for version {:?}: an audit policy is kind Policy, apiVersion audit.k8s.io/v1",
                file.kind, file.api_version
            ));
        }
        let _ = file.metadata;
        let mut errors = Vec::new();
        let omit_stages = parse_stages("omitStages", &file.omit_stages).unwrap_or_else(|e| {
            errors.push(e);
            Vec::new()
        });
        let mut rules = Vec::new();
        for (i, r) in file.rules.into_iter().enumerate() {
            let at = format!("rules[{i}]");
            let level = parse_level(&format!("{at}.level"), &r.level);
            let stages = parse_stages(&format!("{at}.omitStages"), &r.omit_stages);
            if !r.non_resource_urls.is_empty()
                && (!r.resources.is_empty() || !r.namespaces.is_empty())
            {
                errors.push(format!(
                    "{at}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    r.non_resource_urls
                ));
            }
            for (j, u) in r.non_resource_urls.iter().enumerate() {
                // kube: only a trailing `*` is a wildcard.
                if u.trim_end_matches('*').contains('*') {
                    errors.push(format!(
                        "{at}.nonResourceURLs[{j}]: Invalid value: {u:?}: non-resource URL wildcards may only be a trailing '*'"
                    ));
                }
            }
            for (j, g) in r.resources.iter().enumerate() {
                for (k, res) in g.resources.iter().enumerate() {
                    if !g.resource_names.is_empty() && res.contains('*') {
                        errors.push(format!(
                            "{at}.resources[{j}].resources[{k}]: Invalid value: {res:?}: using resource kind wildcards with resourceNames is not allowed"
                        ));
                    }
                }
            }
            match (level, stages) {
                (Ok(level), Ok(omit_stages)) => rules.push(Rule {
                    level,
                    users: r.users,
                    user_groups: r.user_groups,
                    verbs: r.verbs,
                    resources: r.resources,
                    namespaces: r.namespaces,
                    non_resource_urls: r.non_resource_urls,
                    omit_stages,
                    omit_managed_fields: r.omit_managed_fields,
                }),
                (l, s) => errors.extend(l.err().into_iter().chain(s.err())),
            }
        }
        if !errors.is_empty() {
            return Err(errors.join(", "));
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: file.omit_managed_fields,
        })
    }

    /// What is audited without a policy file: every request that is not a read, at the
    /// Metadata level, one event each when the response is complete.
    pub fn writes_at_metadata() -> Policy {
        Policy {
            rules: vec![
                Rule {
                    level: Level::None,
                    users: vec![],
                    user_groups: vec![],
                    verbs: ["get", "list", "watch", "head"].map(String::from).to_vec(),
                    resources: vec![],
                    namespaces: vec![],
                    non_resource_urls: vec![],
                    omit_stages: vec![],
                    omit_managed_fields: None,
                },
                Rule {
                    level: Level::Metadata,
                    users: vec![],
                    user_groups: vec![],
                    verbs: vec![],
                    resources: vec![],
                    namespaces: vec![],
                    non_resource_urls: vec![],
                    omit_stages: vec![Stage::RequestReceived],
                    omit_managed_fields: None,
                },
            ],
            omit_stages: vec![],
            omit_managed_fields: false,
        }
    }

    /// Whether some rule records request bodies (so they must be kept for the event).
    pub fn records_bodies(&self) -> bool {
        self.rules.iter().any(|r| r.level >= Level::Request)
    }

    /// The decision for a request by `user` (the authenticated one, before impersonation,
    /// as kube evaluates it); `None` for a request whose user is not known.
    pub fn evaluate(&self, user: Option<PolicyUser<'_>>, info: &RequestInfo) -> Decision {
        let rule = self.rules.iter().find(|r| r.matches(user, info));
        let mut omit_stages = self.omit_stages.clone();
        if let Some(r) = rule {
            for s in &r.omit_stages {
                if !omit_stages.contains(s) {
                    omit_stages.push(*s);
                }
            }
        }
        Decision {
            level: rule.map_or(Level::None, |r| r.level),
            omit_stages,
            omit_managed_fields: rule
                .and_then(|r| r.omit_managed_fields)
                .unwrap_or(self.omit_managed_fields),
        }
    }
}

impl Rule {
    /// kube's ruleMatches.
    fn matches(&self, user: Option<PolicyUser<'_>>, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| self.users.iter().any(|n| n == u.name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user.is_some_and(|u| u.groups.iter().any(|g| self.user_groups.contains(g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&info.path, spec));
        }
        true
    }

    /// kube's ruleMatchesResource.
    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        // Cluster-scoped resources have the empty namespace.
        if !self.namespaces.is_empty() && !self.namespaces.contains(&info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (resource, sub) = (info.resource.as_str(), info.subresource.as_str());
        let combined = if sub.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{sub}")
        };
        self.resources
            .iter()
            .filter(|g| g.group == info.api_group)
            .any(|g| {
                g.resources.is_empty()
                    || g.resources.iter().any(|res| {
                        (g.resource_names.is_empty() || g.resource_names.contains(&info.name))
                            && (*res == combined
                                || res == "*"
                                || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                                || (!sub.is_empty() && res.strip_suffix("/*") == Some(resource)))
                    })
            })
    }
}

/// kube's pathMatches: `*`, an exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::{parse_query, request_info};

    struct UserInfo {
        name: String,
        groups: Vec<String>,
    }

    impl UserInfo {
        fn new(name: &str, groups: Vec<String>) -> UserInfo {
            UserInfo {
                name: name.into(),
                groups,
            }
        }

        fn policy(&self) -> PolicyUser<'_> {
            PolicyUser {
                name: &self.name,
                groups: &self.groups,
            }
        }
    }

    fn info(method: &str, path: &str) -> RequestInfo {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        request_info(&method.parse().unwrap(), path, &parse_query(Some(query)))
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: Request
  verbs: ["create", "update", "patch"]
  userGroups: ["devs"]
  namespaces: ["team-a"]
  omitManagedFields: true
- level: RequestResponse
  resources:
  - group: "apps"
    resources: ["deployments/*"]
  - group: ""
    resources: ["*/status"]
- level: Metadata
  omitStages: [ResponseStarted]
"#;

    #[test]
    fn the_first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let alice = UserInfo::new("alice", vec!["devs".into()]);
        let proxy = UserInfo::new("system:kube-proxy", vec![]);
        let level =
            |u: &UserInfo, m: &str, path: &str| p.evaluate(Some(u.policy()), &info(m, path)).level;
        assert_eq!(
            level(&proxy, "GET", "/api/v1/namespaces/a/pods"),
            Level::None
        );
        assert_eq!(level(&alice, "GET", "/healthz/ready"), Level::None);
        assert_eq!(level(&alice, "GET", "/version"), Level::None);
        assert_eq!(level(&alice, "GET", "/livez"), Level::Metadata);
        assert_eq!(
            level(&alice, "POST", "/api/v1/namespaces/team-a/secrets"),
            Level::Metadata
        );
        assert_eq!(
            level(&alice, "POST", "/api/v1/namespaces/team-a/services"),
            Level::Request
        );
        // Another namespace, or a read, is not the Request rule's.
        assert_eq!(
            level(&alice, "POST", "/api/v1/namespaces/team-b/services"),
            Level::Metadata
        );
        assert_eq!(
            level(&alice, "GET", "/api/v1/namespaces/team-a/services"),
            Level::Metadata
        );
        // resource/* and */subresource.
        assert_eq!(
            level(
                &alice,
                "GET",
                "/apis/apps/v1/namespaces/b/deployments/d/scale"
            ),
            Level::RequestResponse
        );
        assert_eq!(
            level(&alice, "GET", "/apis/apps/v1/namespaces/b/deployments/d"),
            Level::Metadata
        );
        assert_eq!(
            level(&alice, "PUT", "/api/v1/namespaces/b/pods/p/status"),
            Level::RequestResponse
        );
        // Unauthenticated requests match only rules without users or groups.
        assert_eq!(
            p.evaluate(None, &info("POST", "/api/v1/namespaces/team-a/services"))
                .level,
            Level::Metadata
        );
        let d = p.evaluate(
            Some(alice.policy()),
            &info("POST", "/api/v1/namespaces/team-a/services"),
        );
        assert!(d.omit_managed_fields);
        assert!(!d.writes(Stage::RequestReceived));
        assert!(d.writes(Stage::ResponseComplete));
        let d = p.evaluate(
            Some(alice.policy()),
            &info("GET", "/api/v1/namespaces/x/pods?watch=1"),
        );
        assert_eq!(
            d.omit_stages,
            [Stage::RequestReceived, Stage::ResponseStarted]
        );
        // No rule matches: not audited.
        let only = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [delete]\n").unwrap();
        let d = only.evaluate(Some(alice.policy()), &info("GET", "/api/v1/pods"));
        assert_eq!(d.level, Level::None);
        assert!(!d.writes(Stage::ResponseComplete));
    }

    #[test]
    fn resource_names_narrow_a_rule() {
        let p = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources:\n  - group: ''\n    resources: [configmaps]\n    resourceNames: [watched]\n",
        )
        .unwrap();
        let u = UserInfo::new("u", vec![]);
        let at = |path: &str| p.evaluate(Some(u.policy()), &info("GET", path)).level;
        assert_eq!(
            at("/api/v1/namespaces/a/configmaps/watched"),
            Level::RequestResponse
        );
        assert_eq!(at("/api/v1/namespaces/a/configmaps/other"), Level::None);
    }

    #[test]
    fn invalid_policies_are_refused_with_kubes_messages() {
        let cases = [
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Verbose\n",
                r#"rules[0].level: Unsupported value: "Verbose": supported values: "None", "Metadata", "Request", "RequestResponse""#,
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n",
                "rules[0].level: Required value",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Sometimes]\n",
                r#"rules[0].omitStages[0]: Unsupported value: "Sometimes""#,
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]\n",
                "rules cannot apply to both regular resources and non-resource URLs",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: ['/a*b']\n",
                "non-resource URL wildcards may only be a trailing '*'",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resource: [pods]\n",
                "unknown field `resource`",
            ),
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\n",
                "apiVersion audit.k8s.io/v1",
            ),
        ];
        for (doc, want) in cases {
            let e = Policy::parse(doc).expect_err(doc);
            assert!(e.contains(want), "{doc}\n→ {e}");
        }
    }

    #[test]
    fn without_a_policy_file_writes_are_audited_at_metadata() {
        let p = Policy::writes_at_metadata();
        let u = UserInfo::new("u", vec![]);
        for (m, path, level) in [
            ("GET", "/api/v1/namespaces/a/configmaps", Level::None),
            (
                "GET",
                "/api/v1/namespaces/a/configmaps?watch=1",
                Level::None,
            ),
            ("GET", "/healthz", Level::None),
            ("POST", "/api/v1/namespaces/a/configmaps", Level::Metadata),
            (
                "DELETE",
                "/api/v1/namespaces/a/configmaps/x",
                Level::Metadata,
            ),
        ] {
            let d = p.evaluate(Some(u.policy()), &info(m, path));
            assert_eq!(d.level, level, "{m} {path}");
            if level == Level::Metadata {
                assert!(!d.writes(Stage::RequestReceived));
                assert!(d.writes(Stage::ResponseComplete));
            }
        }
        assert!(!p.records_bodies());
    }
}
