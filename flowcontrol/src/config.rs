//! The configuration API Priority and Fairness runs on, read from `flowcontrol.apiserver.k8s.io/v1`
//! FlowSchema and PriorityLevelConfiguration objects (k8s.io/apiserver
//! pkg/util/flowcontrol/apf_controller.go's digest of them, and its rule matching in
//! pkg/util/flowcontrol/rule.go), and the seats each level gets of the server's concurrency:
//! its nominal limit and the bounds borrowing keeps its current limit within.

use serde_json::Value;

/// How a FlowSchema splits its requests into flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    /// One flow for all (no `distinguisherMethod`).
    None,
    /// One flow per user.
    ByUser,
    /// One flow per namespace.
    ByNamespace,
}

/// Who a rule applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A user by name, `*` for all.
    User(String),
    /// A group by name, `*` for all.
    Group(String),
    /// A service account; name `*` for all of its namespace.
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// A `resourceRules` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// API groups, `*` for all.
    pub api_groups: Vec<String>,
    /// Resources (`resource` or `resource/subresource`), `*` for all.
    pub resources: Vec<String>,
    /// Whether cluster-scoped requests match.
    pub cluster_scope: bool,
    /// Namespaces of namespaced requests, `*` for all.
    pub namespaces: Vec<String>,
}

/// A `nonResourceRules` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// URL paths; `*` for all, a trailing `/*` for a subtree.
    pub urls: Vec<String>,
}

/// One `rules` entry: a request matches when a subject and one of the rules match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRules {
    /// Subjects.
    pub subjects: Vec<Subject>,
    /// Rules for resource requests.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules for non-resource requests.
    pub non_resource_rules: Vec<NonResourceRule>,
}

/// A FlowSchema's spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSchema {
    /// Its name.
    pub name: String,
    /// The priority level its requests go to.
    pub priority_level: String,
    /// Lower matches first.
    pub matching_precedence: i32,
    /// How flows are told apart.
    pub distinguisher: Distinguisher,
    /// Its rules.
    pub rules: Vec<PolicyRules>,
}

/// What a limited level does with a request it has no seat for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitResponse {
    /// Rejects it at once.
    Reject,
    /// Queues it, shuffle-sharded over `queues` queues by hands of `hand_size`.
    Queue {
        /// Number of queues.
        queues: usize,
        /// Queues dealt to each flow.
        hand_size: usize,
        /// Requests a queue may hold.
        queue_length_limit: usize,
    },
}

/// A PriorityLevelConfiguration's spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityLevel {
    /// Its name.
    pub name: String,
    /// Nominal concurrency shares (an exempt level's count in the sum too).
    pub shares: u64,
    /// The percentage of its nominal seats other levels may borrow.
    pub lendable_percent: u64,
    /// How many seats it may borrow, as a percentage of its nominal seats; `None` for no
    /// limit (as always for an exempt level).
    pub borrowing_limit_percent: Option<u64>,
    /// `None` when exempt.
    pub limit_response: Option<LimitResponse>,
}

impl PriorityLevel {
    /// Whether requests at this level are never limited.
    pub fn is_exempt(&self) -> bool {
        self.limit_response.is_none()
    }
}

/// The whole configuration: the FlowSchemas and the priority levels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configuration {
    /// FlowSchemas, in any order.
    pub flow_schemas: Vec<FlowSchema>,
    /// Priority levels, in any order.
    pub priority_levels: Vec<PriorityLevel>,
}

/// What the classifier needs of a request (kube's RequestDigest).
#[derive(Clone, Copy, Debug)]
pub struct RequestDigest<'a> {
    /// The authenticated user's name ("" when unauthenticated).
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
    /// The request's verb (get, list, create...).
    pub verb: &'a str,
    /// API group of a resource request.
    pub api_group: &'a str,
    /// The resource.
    pub resource: &'a str,
    /// The subresource ("" for none).
    pub subresource: &'a str,
    /// The namespace ("" for cluster scope).
    pub namespace: &'a str,
    /// The URL path (for non-resource requests).
    pub path: &'a str,
    /// Whether it is a resource request.
    pub is_resource_request: bool,
}

const ALL: &str = "*";

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == item || x == ALL)
}

impl Subject {
    fn matches(&self, d: &RequestDigest<'_>) -> bool {
        match self {
            Subject::User(name) => name == ALL || name == d.user,
            Subject::Group(name) => name == ALL || d.groups.iter().any(|g| g == name),
            Subject::ServiceAccount { namespace, name } => d
                .user
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(ns, n)| ns == namespace && (name == ALL || n == name)),
        }
    }
}

impl ResourceRule {
    fn matches(&self, d: &RequestDigest<'_>) -> bool {
        let resource = if d.subresource.is_empty() {
            d.resource.to_string()
        } else {
            format!("{}/{}", d.resource, d.subresource)
        };
        has(&self.verbs, d.verb)
            && has(&self.api_groups, d.api_group)
            && has(&self.resources, &resource)
            && if d.namespace.is_empty() {
                self.cluster_scope
            } else {
                has(&self.namespaces, d.namespace)
            }
    }
}

impl NonResourceRule {
    fn matches(&self, d: &RequestDigest<'_>) -> bool {
        has(&self.verbs, d.verb)
            && self.urls.iter().any(|pattern| {
                pattern == ALL
                    || pattern == d.path
                    || pattern.strip_suffix('*').is_some_and(|prefix| {
                        prefix.ends_with('/')
                            && (d.path.starts_with(prefix) || d.path == &prefix[..prefix.len() - 1])
                    })
            })
    }
}

impl PolicyRules {
    fn matches(&self, d: &RequestDigest<'_>) -> bool {
        self.subjects.iter().any(|s| s.matches(d))
            && if d.is_resource_request {
                self.resource_rules.iter().any(|r| r.matches(d))
            } else {
                self.non_resource_rules.iter().any(|r| r.matches(d))
            }
    }
}

impl FlowSchema {
    /// Whether the request matches one of the schema's rules.
    pub fn matches(&self, d: &RequestDigest<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(d))
    }

    /// The request's flow within the schema (kube's flow distinguisher).
    pub fn flow(&self, d: &RequestDigest<'_>) -> String {
        match self.distinguisher {
            Distinguisher::None => String::new(),
            Distinguisher::ByUser => d.user.to_string(),
            Distinguisher::ByNamespace => d.namespace.to_string(),
        }
    }

    /// The spec of a FlowSchema object; `None` for one that does not say enough to use.
    pub fn from_object(obj: &Value) -> Option<FlowSchema> {
        let name = obj.pointer("/metadata/name")?.as_str()?.to_string();
        let spec = obj.get("spec")?;
        let priority_level = spec
            .pointer("/priorityLevelConfiguration/name")?
            .as_str()?
            .to_string();
        let matching_precedence = spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(1000);
        let distinguisher = match spec
            .pointer("/distinguisherMethod/type")
            .and_then(Value::as_str)
        {
            Some("ByUser") => Distinguisher::ByUser,
            Some("ByNamespace") => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        let rules = items(spec, "rules").map(policy_rules).collect();
        Some(FlowSchema {
            name,
            priority_level,
            matching_precedence,
            distinguisher,
            rules,
        })
    }
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    items(v, key)
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

fn policy_rules(v: &Value) -> PolicyRules {
    let subjects = items(v, "subjects")
        .filter_map(|s| {
            let name = |k: &str| s.pointer(k).and_then(Value::as_str).map(String::from);
            match s.get("kind")?.as_str()? {
                "User" => Some(Subject::User(name("/user/name")?)),
                "Group" => Some(Subject::Group(name("/group/name")?)),
                "ServiceAccount" => Some(Subject::ServiceAccount {
                    namespace: name("/serviceAccount/namespace")?,
                    name: name("/serviceAccount/name")?,
                }),
                _ => None,
            }
        })
        .collect();
    let resource_rules = items(v, "resourceRules")
        .map(|r| ResourceRule {
            verbs: strings(r, "verbs"),
            api_groups: strings(r, "apiGroups"),
            resources: strings(r, "resources"),
            cluster_scope: r
                .get("clusterScope")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            namespaces: strings(r, "namespaces"),
        })
        .collect();
    let non_resource_rules = items(v, "nonResourceRules")
        .map(|r| NonResourceRule {
            verbs: strings(r, "verbs"),
            urls: strings(r, "nonResourceURLs"),
        })
        .collect();
    PolicyRules {
        subjects,
        resource_rules,
        non_resource_rules,
    }
}

fn number(v: &Value, pointer: &str, default: u64) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or(default)
}

impl PriorityLevel {
    /// The spec of a PriorityLevelConfiguration object (defaulted as kube's v1 defaults it);
    /// `None` for one that does not say enough to use.
    pub fn from_object(obj: &Value) -> Option<PriorityLevel> {
        let name = obj.pointer("/metadata/name")?.as_str()?.to_string();
        let spec = obj.get("spec")?;
        match spec.get("type")?.as_str()? {
            "Exempt" => Some(PriorityLevel {
                name,
                shares: number(spec, "/exempt/nominalConcurrencyShares", 0),
                lendable_percent: number(spec, "/exempt/lendablePercent", 0),
                borrowing_limit_percent: None,
                limit_response: None,
            }),
            "Limited" => {
                let limited = spec.get("limited")?;
                let response = match limited
                    .pointer("/limitResponse/type")
                    .and_then(Value::as_str)
                {
                    Some("Reject") => LimitResponse::Reject,
                    _ => {
                        let q = |k: &str, d: u64| {
                            usize::try_from(number(
                                limited,
                                &format!("/limitResponse/queuing/{k}"),
                                d,
                            ))
                            .unwrap_or(usize::MAX)
                        };
                        LimitResponse::Queue {
                            queues: q("queues", 64).max(1),
                            hand_size: q("handSize", 8).max(1),
                            queue_length_limit: q("queueLengthLimit", 50),
                        }
                    }
                };
                Some(PriorityLevel {
                    name,
                    shares: number(limited, "/nominalConcurrencyShares", 30),
                    lendable_percent: number(limited, "/lendablePercent", 0),
                    borrowing_limit_percent: limited
                        .get("borrowingLimitPercent")
                        .and_then(Value::as_u64),
                    limit_response: Some(response),
                })
            }
            _ => None,
        }
    }
}

impl Configuration {
    /// The configuration of these objects (those that cannot be read are left out).
    pub fn from_objects<'a>(
        flow_schemas: impl IntoIterator<Item = &'a Value>,
        priority_levels: impl IntoIterator<Item = &'a Value>,
    ) -> Configuration {
        Configuration {
            flow_schemas: flow_schemas
                .into_iter()
                .filter_map(FlowSchema::from_object)
                .collect(),
            priority_levels: priority_levels
                .into_iter()
                .filter_map(PriorityLevel::from_object)
                .collect(),
        }
    }

    /// The FlowSchemas in the order requests are matched against them: by matching
    /// precedence, ties by name.
    pub fn ordered_schemas(&self) -> Vec<&FlowSchema> {
        let mut v: Vec<&FlowSchema> = self.flow_schemas.iter().collect();
        v.sort_by(|a, b| (a.matching_precedence, &a.name).cmp(&(b.matching_precedence, &b.name)));
        v
    }

    /// Each level's nominal concurrency limit: ceil(server limit × its shares / the sum of
    /// every level's shares), as kube computes NominalCL.
    pub fn nominal_limits(&self, server_concurrency_limit: usize) -> Vec<(String, usize)> {
        let total: u64 = self.priority_levels.iter().map(|l| l.shares).sum();
        self.priority_levels
            .iter()
            .map(|l| {
                let limit = if total == 0 {
                    0
                } else {
                    let server = u128::try_from(server_concurrency_limit).unwrap_or(u128::MAX);
                    let n = (server * u128::from(l.shares)).div_ceil(u128::from(total));
                    usize::try_from(n).unwrap_or(usize::MAX)
                };
                (l.name.clone(), limit)
            })
            .collect()
    }
}

/// A level's seats (kube's NominalCL and the bounds of its CurrentCL): borrowing keeps its
/// current limit between `min` (its nominal seats less those it lends) and `max` (its nominal
/// seats plus those it may borrow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeatLimits {
    /// NominalCL.
    pub nominal: usize,
    /// MinCL = NominalCL - LendableCL.
    pub min: usize,
    /// MaxCL = NominalCL + BorrowingCL.
    pub max: usize,
}

/// `n × percent / 100` rounded half away from zero, as Go's math.Round.
fn percent_of(n: usize, percent: u64) -> usize {
    let n = u128::try_from(n).unwrap_or(u128::MAX);
    let scaled = n.saturating_mul(u128::from(percent));
    usize::try_from((scaled.saturating_mul(2) + 100) / 200).unwrap_or(usize::MAX)
}

impl Configuration {
    /// Each level's seats: its nominal limit; LendableCL = round(NominalCL × lendablePercent /
    /// 100); BorrowingCL = round(NominalCL × borrowingLimitPercent / 100), or the server's
    /// whole limit without a `borrowingLimitPercent`.
    pub fn seat_limits(&self, server_concurrency_limit: usize) -> Vec<(String, SeatLimits)> {
        self.nominal_limits(server_concurrency_limit)
            .into_iter()
            .zip(&self.priority_levels)
            .map(|((name, nominal), l)| {
                let lendable = percent_of(nominal, l.lendable_percent.min(100));
                let borrowing = l
                    .borrowing_limit_percent
                    .map_or(server_concurrency_limit, |p| percent_of(nominal, p));
                let limits = SeatLimits {
                    nominal,
                    min: nominal - lendable.min(nominal),
                    max: nominal.saturating_add(borrowing),
                };
                (name, limits)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest<'a>(user: &'a str, groups: &'a [String]) -> RequestDigest<'a> {
        RequestDigest {
            user,
            groups,
            verb: "get",
            api_group: "",
            resource: "configmaps",
            subresource: "",
            namespace: "default",
            path: "/api/v1/namespaces/default/configmaps/x",
            is_resource_request: true,
        }
    }

    fn schema(rules: Value) -> FlowSchema {
        FlowSchema::from_object(&json!({
            "metadata": {"name": "s"},
            "spec": {"priorityLevelConfiguration": {"name": "l"}, "rules": [rules]},
        }))
        .expect("schema")
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let groups = vec!["dev".to_string()];
        let rule = |subject: Value| {
            schema(json!({
                "subjects": [subject],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "namespaces": ["*"], "clusterScope": true}],
            }))
        };
        let d = digest("alice", &groups);
        assert!(rule(json!({"kind": "User", "user": {"name": "alice"}})).matches(&d));
        assert!(rule(json!({"kind": "User", "user": {"name": "*"}})).matches(&d));
        assert!(!rule(json!({"kind": "User", "user": {"name": "bob"}})).matches(&d));
        assert!(rule(json!({"kind": "Group", "group": {"name": "dev"}})).matches(&d));
        assert!(!rule(json!({"kind": "Group", "group": {"name": "ops"}})).matches(&d));
        let sa = digest("system:serviceaccount:kube-system:job", &[]);
        let by_sa = |ns: &str, name: &str| {
            rule(
                json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": name}}),
            )
        };
        assert!(by_sa("kube-system", "*").matches(&sa));
        assert!(by_sa("kube-system", "job").matches(&sa));
        assert!(!by_sa("default", "*").matches(&sa));
        assert!(!by_sa("kube-system", "other").matches(&sa));
    }

    #[test]
    fn resource_rules_match_verbs_groups_resources_and_scope() {
        let groups = vec!["system:authenticated".to_string()];
        let s = schema(json!({
            "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["get", "update"], "apiGroups": [""],
                               "resources": ["configmaps", "pods/status"], "namespaces": ["default"]}],
        }));
        let d = digest("u", &groups);
        assert!(s.matches(&d));
        assert!(!s.matches(&RequestDigest {
            verb: "delete",
            ..d
        }));
        assert!(!s.matches(&RequestDigest {
            api_group: "apps",
            ..d
        }));
        assert!(!s.matches(&RequestDigest {
            namespace: "other",
            ..d
        }));
        // Cluster-scoped requests need clusterScope.
        assert!(!s.matches(&RequestDigest { namespace: "", ..d }));
        assert!(!s.matches(&RequestDigest {
            resource: "pods",
            ..d
        }));
        assert!(s.matches(&RequestDigest {
            resource: "pods",
            subresource: "status",
            ..d
        }));
        // Resource rules never match non-resource requests.
        assert!(!s.matches(&RequestDigest {
            is_resource_request: false,
            ..d
        }));
    }

    #[test]
    fn non_resource_rules_match_paths_and_subtrees() {
        let s = schema(json!({
            "subjects": [{"kind": "Group", "group": {"name": "*"}}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/debug/*"]}],
        }));
        let nr = |path| RequestDigest {
            path,
            is_resource_request: false,
            ..digest("", &[])
        };
        assert!(s.matches(&nr("/healthz")));
        assert!(!s.matches(&nr("/healthz/etcd")));
        assert!(s.matches(&nr("/debug/pprof")));
        assert!(s.matches(&nr("/debug")));
        assert!(!s.matches(&nr("/debugger")));
        assert!(!s.matches(&RequestDigest {
            verb: "post",
            ..nr("/healthz")
        }));
    }

    #[test]
    fn schemas_are_ordered_by_precedence_then_name() {
        let fs = |name: &str, p: i32| {
            json!({"metadata": {"name": name},
                   "spec": {"priorityLevelConfiguration": {"name": "l"}, "matchingPrecedence": p}})
        };
        let objs = [fs("b", 10), fs("a", 10), fs("c", 5)];
        let cfg = Configuration::from_objects(objs.iter(), []);
        let names: Vec<&str> = cfg
            .ordered_schemas()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["c", "a", "b"]);
    }

    #[test]
    fn seats_are_shares_of_the_server_limit_rounded_up() {
        let pl = |name: &str, shares: u64| {
            json!({"metadata": {"name": name}, "spec": {"type": "Limited",
                   "limited": {"nominalConcurrencyShares": shares, "limitResponse": {"type": "Reject"}}}})
        };
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        let objs = [pl("a", 30), pl("b", 5), pl("c", 65), exempt];
        let cfg = Configuration::from_objects([], objs.iter());
        assert_eq!(
            cfg.nominal_limits(600),
            [
                ("a".to_string(), 180),
                ("b".to_string(), 30),
                ("c".to_string(), 390),
                ("exempt".to_string(), 0)
            ]
        );
        // ceil(10 × 5 / 100) = 1: a small share still gets a seat.
        assert_eq!(cfg.nominal_limits(10)[1].1, 1);
    }

    #[test]
    fn lending_and_borrowing_bound_the_seats() {
        let pl = |name: &str, shares: u64, extra: Value| {
            let mut limited = json!({"nominalConcurrencyShares": shares,
                                     "limitResponse": {"type": "Reject"}});
            for (k, v) in extra.as_object().expect("object") {
                limited[k] = v.clone();
            }
            json!({"metadata": {"name": name}, "spec": {"type": "Limited", "limited": limited}})
        };
        let objs = [
            pl("lends", 49, json!({"lendablePercent": 50})),
            pl(
                "borrows",
                25,
                json!({"lendablePercent": 33, "borrowingLimitPercent": 200}),
            ),
            pl("neither", 26, json!({"borrowingLimitPercent": 0})),
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt",
                   "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 25}}}),
        ];
        let cfg = Configuration::from_objects([], objs.iter());
        let limits: Vec<(String, SeatLimits)> = cfg.seat_limits(100);
        let seats = |nominal, min, max| SeatLimits { nominal, min, max };
        assert_eq!(
            limits,
            [
                // ceil(100 × 49 / 110) = 45; round(22.5) = 23 lendable, half away from zero
                // as Go's; no borrowing limit: up to the server's 100 more.
                ("lends".to_string(), seats(45, 22, 145)),
                // ceil(22.7) = 23; round(7.59) = 8 lendable; round(46) borrowable.
                ("borrows".to_string(), seats(23, 15, 69)),
                ("neither".to_string(), seats(24, 24, 24)),
                // An exempt level lends too and borrows without limit.
                ("exempt".to_string(), seats(10, 7, 110)),
            ]
        );
        assert_eq!(
            (percent_of(49, 50), percent_of(3, 50), percent_of(1, 49)),
            (25, 2, 0)
        );
    }
}
