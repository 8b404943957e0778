//! flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration: kube's
//! validation (pkg/apis/flowcontrol/validation) and v1 defaulting
//! (pkg/apis/flowcontrol/v1/defaults.go).

use serde_json::{Value, json};

use super::field::{self, Bad, Path};
use super::json as js;
use super::names;
use apimachinery::status::Cause;

/// The API group.
pub(crate) const GROUP: &str = "flowcontrol.apiserver.k8s.io";

const EXEMPT: &str = "exempt";
const MAX_MATCHING_PRECEDENCE: i64 = 10000;
const MAX_QUEUES: i64 = 10_000_000;
/// shufflesharding.MaxHashBits.
const MAX_HASH_BITS: f64 = 60.0;
const SUPPORTED_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// SetDefaults_FlowSchemaSpec and SetDefaults_{Limited,Exempt}PriorityLevelConfiguration,
/// SetDefaults_QueuingConfiguration of v1.
pub(crate) fn default_object(kind: &str, obj: &mut Value) {
    let Some(spec) = js::obj_mut(obj, "spec") else {
        return;
    };
    match kind {
        "FlowSchema" => js::default_int(spec, "matchingPrecedence", 1000),
        "PriorityLevelConfiguration" => {
            if let Some(limited) = spec.get_mut("limited").filter(|v| v.is_object()) {
                js::default_nil(limited, "nominalConcurrencyShares", json!(30));
                js::default_nil(limited, "lendablePercent", json!(0));
                if let Some(queuing) = limited
                    .get_mut("limitResponse")
                    .and_then(|r| r.get_mut("queuing"))
                    .filter(|q| q.is_object())
                {
                    for (k, v) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                        js::default_int(queuing, k, v);
                    }
                }
            }
            if let Some(exempt) = spec.get_mut("exempt").filter(|v| v.is_object()) {
                js::default_nil(exempt, "nominalConcurrencyShares", json!(0));
                js::default_nil(exempt, "lendablePercent", json!(0));
            }
        }
        _ => {}
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    js::string_list(v, key).unwrap_or_default()
}

fn slice(items: &[String]) -> Bad {
    Bad::Raw(field::go_string_slice(Some(items)))
}

fn has_wildcard(items: &[String]) -> bool {
    items.iter().any(|s| s == "*")
}

/// The verbs of a rule: at least one, `*` alone, or kube's verbs.
fn validate_verbs(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let verbs = strings(rule, "verbs");
    let p = p.child("verbs");
    if verbs.is_empty() {
        errs.push(field::required(&p, "verbs must contain at least one value"));
    } else if has_wildcard(&verbs) {
        if verbs.len() > 1 {
            errs.push(field::invalid(
                &p,
                slice(&verbs),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if !verbs.iter().all(|v| SUPPORTED_VERBS.contains(&v.as_str())) {
        errs.push(field::not_supported(&p, slice(&verbs), SUPPORTED_VERBS));
    }
}

/// A list that must have a member, and `*` only alone.
fn validate_list(rule: &Value, key: &str, p: &Path, required: &str, what: &str) -> Option<Cause> {
    let items = strings(rule, key);
    if items.is_empty() {
        Some(field::required(&p.child(key), required))
    } else if items.len() > 1 && has_wildcard(&items) {
        Some(field::invalid(
            &p.child(key),
            slice(&items),
            &format!("if '*' is present, must not specify other {what}"),
        ))
    } else {
        None
    }
}

fn validate_resource_rule(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    validate_verbs(rule, p, errs);
    errs.extend(validate_list(
        rule,
        "apiGroups",
        p,
        "resource rules must supply at least one api group",
        "api groups",
    ));
    errs.extend(validate_list(
        rule,
        "resources",
        p,
        "resource rules must supply at least one resource",
        "resources",
    ));
    let namespaces = strings(rule, "namespaces");
    let cluster_scope = js::boolean(rule, "clusterScope").unwrap_or(false);
    let np = p.child("namespaces");
    if namespaces.is_empty() && !cluster_scope {
        errs.push(field::required(
            &np,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(&namespaces) {
        if namespaces.len() > 1 {
            errs.push(field::invalid(
                &np,
                slice(&namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for m in names::name_is_dns_label(ns, false) {
                errs.push(field::invalid(
                    &np.index(i),
                    Bad::str(ns),
                    &format!("{NS_ERR_INTRO}{m}"),
                ));
            }
        }
    }
}

/// ValidateNonResourceURLPath.
fn non_resource_url(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = path.matches('*').count();
    if stars > 1 || (stars == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix glob matching");
    }
    None
}

fn validate_non_resource_rule(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    validate_verbs(rule, p, errs);
    let urls = strings(rule, "nonResourceURLs");
    let up = p.child("nonResourceURLs");
    if urls.is_empty() {
        errs.push(field::required(
            &up,
            "nonResourceURLs must contain at least one value",
        ));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            errs.push(field::invalid(
                &up,
                slice(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, u) in urls.iter().enumerate() {
            if let Some(m) = non_resource_url(u) {
                errs.push(field::invalid(&up.index(i), Bad::str(u), m));
            }
        }
    }
}

fn validate_subject(s: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let kinds = [
        ("User", "user"),
        ("Group", "group"),
        ("ServiceAccount", "serviceAccount"),
    ];
    let kind = js::string(s, "kind");
    let Some((_, member)) = kinds.iter().find(|(k, _)| *k == kind) else {
        errs.push(field::not_supported(
            &p.child("kind"),
            Bad::str(kind),
            &["Group", "ServiceAccount", "User"],
        ));
        return;
    };
    let mp = p.child(member);
    match js::field(s, member).filter(|v| !v.is_null()) {
        None => errs.push(field::required(
            &mp,
            &format!("{member} is required when subject kind is '{kind}'"),
        )),
        Some(v) => {
            let name = js::string(v, "name");
            if name.is_empty() {
                errs.push(field::required(&mp.child("name"), ""));
            } else if *member == "serviceAccount" && name != "*" {
                for m in names::name_is_dns_subdomain(name, false) {
                    errs.push(field::invalid(&mp.child("name"), Bad::str(name), &m));
                }
            }
            if *member == "serviceAccount" {
                let ns = js::string(v, "namespace");
                if ns.is_empty() {
                    errs.push(field::required(
                        &mp.child("namespace"),
                        "must specify namespace for service account",
                    ));
                } else {
                    for m in names::name_is_dns_label(ns, false) {
                        errs.push(field::invalid(&mp.child("namespace"), Bad::str(ns), &m));
                    }
                }
            }
        }
    }
    for (other_kind, other) in kinds {
        if other != *member && js::field(s, other).is_some_and(|v| !v.is_null()) {
            errs.push(field::forbidden(
                &p.child(other),
                &format!("{other} is forbidden when subject kind is not '{other_kind}'"),
            ));
        }
    }
}

fn validate_rules(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let subjects = js::list(rule, "subjects");
    if subjects.is_empty() {
        errs.push(field::required(
            &p.child("subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, s) in subjects.iter().enumerate() {
        validate_subject(s, &p.child("subjects").index(i), errs);
    }
    let resource_rules = js::list(rule, "resourceRules");
    let non_resource_rules = js::list(rule, "nonResourceRules");
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errs.push(field::required(
            p,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        validate_resource_rule(r, &p.child("resourceRules").index(i), errs);
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        validate_non_resource_rule(r, &p.child("nonResourceRules").index(i), errs);
    }
}

fn validate_conditions(obj: &Value, errs: &mut Vec<Cause>) {
    let Some(status) = js::field(obj, "status") else {
        return;
    };
    let p = Path::new("status").child("conditions");
    let mut seen = std::collections::BTreeSet::new();
    for (i, c) in js::list(status, "conditions").iter().enumerate() {
        let t = js::string(c, "type");
        if t.is_empty() {
            errs.push(field::required(
                &p.index(i).child("type"),
                "must not be empty",
            ));
        } else if !seen.insert(t.to_string()) {
            errs.push(field::duplicate(&p.index(i).child("type"), Bad::str(t)));
        }
    }
}

/// ValidateFlowSchema (its update is validated the same way).
pub(crate) fn validate_flow_schema(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = js::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let name = js::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let precedence = js::int(spec, "matchingPrecedence").unwrap_or(0);
    let pp = p.child("matchingPrecedence");
    if precedence <= 0 {
        errs.push(field::invalid(
            &pp,
            Bad::Int(precedence),
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errs.push(field::invalid(
            &pp,
            Bad::Int(precedence),
            &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != EXEMPT {
        errs.push(field::invalid(
            &pp,
            Bad::Int(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(dm) = js::field(spec, "distinguisherMethod").filter(|v| !v.is_null()) {
        let t = js::string(dm, "type");
        if !matches!(t, "ByUser" | "ByNamespace") {
            errs.push(field::not_supported(
                &p.children(&["distinguisherMethod", "type"]),
                Bad::str(t),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let level = js::at(spec, &["priorityLevelConfiguration", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let lp = p.children(&["priorityLevelConfiguration", "name"]);
    if level.is_empty() {
        errs.push(field::required(&lp, "must reference a priority level"));
    } else {
        for m in names::name_is_dns_subdomain(level, false) {
            errs.push(field::invalid(&lp, Bad::str(level), &m));
        }
    }
    for (i, rule) in js::list(spec, "rules").iter().enumerate() {
        validate_rules(rule, &p.child("rules").index(i), errs);
    }
    validate_conditions(obj, errs);
}

fn validate_percent(v: &Value, key: &str, p: &Path, errs: &mut Vec<Cause>) {
    if let Some(n) = js::int(v, key).filter(|n| !(0..=100).contains(n)) {
        errs.push(field::invalid(
            &p.child(key),
            Bad::Int(n),
            "must be between 0 and 100, inclusive",
        ));
    }
}

fn validate_non_negative_shares(v: &Value, p: &Path, errs: &mut Vec<Cause>) {
    if let Some(n) = js::int(v, "nominalConcurrencyShares").filter(|n| *n < 0) {
        errs.push(field::invalid(
            &p.child("nominalConcurrencyShares"),
            Bad::Int(n),
            "must be a non-negative integer",
        ));
    }
}

/// shufflesharding.RequiredEntropyBits.
fn entropy_bits(deck: i64, hand: i64) -> f64 {
    ((deck as f64).log2() * hand as f64).ceil()
}

fn validate_queuing(q: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let get = |k| js::int(q, k).unwrap_or(0);
    let (limit, queues, hand) = (get("queueLengthLimit"), get("queues"), get("handSize"));
    if limit <= 0 {
        errs.push(field::invalid(
            &p.child("queueLengthLimit"),
            Bad::Int(limit),
            "must be positive",
        ));
    }
    if queues <= 0 {
        errs.push(field::invalid(
            &p.child("queues"),
            Bad::Int(queues),
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errs.push(field::invalid(
            &p.child("queues"),
            Bad::Int(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hp = p.child("handSize");
    if hand <= 0 {
        errs.push(field::invalid(&hp, Bad::Int(hand), "must be positive"));
    } else if hand > queues {
        errs.push(field::invalid(
            &hp,
            Bad::Int(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if entropy_bits(queues, hand) > MAX_HASH_BITS {
        errs.push(field::invalid(
            &hp,
            Bad::Int(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
}

fn validate_limit_response(r: Option<&Value>, p: &Path, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let r = r.unwrap_or(&empty);
    let queuing = js::field(r, "queuing").filter(|v| !v.is_null());
    match js::string(r, "type") {
        "Reject" => {
            if queuing.is_some() {
                errs.push(field::forbidden(
                    &p.child("queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match queuing {
            None => errs.push(field::required(
                &p.child("queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => validate_queuing(q, &p.child("queuing"), errs),
        },
        t => errs.push(field::not_supported(
            &p.child("type"),
            Bad::str(t),
            &["Queue", "Reject"],
        )),
    }
}

/// ValidatePriorityLevelConfiguration (its update is validated the same way).
pub(crate) fn validate_priority_level(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = js::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let name = js::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let t = js::string(spec, "type");
    if (name == EXEMPT) != (t == "Exempt") {
        errs.push(field::invalid(
            &p.child("type"),
            Bad::str(t),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    let present = |k| js::field(spec, k).filter(|v| !v.is_null());
    match t {
        "Exempt" => {
            if present("limited").is_some() {
                errs.push(field::forbidden(
                    &p.child("limited"),
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(e) = present("exempt") {
                let ep = p.child("exempt");
                validate_non_negative_shares(e, &ep, errs);
                validate_percent(e, "lendablePercent", &ep, errs);
            }
        }
        "Limited" => {
            if present("exempt").is_some() {
                errs.push(field::forbidden(
                    &p.child("exempt"),
                    "must be nil if the type is Limited",
                ));
            }
            match present("limited") {
                None => errs.push(field::required(
                    &p.child("limited"),
                    "must not be empty when type is Limited",
                )),
                Some(l) => {
                    let lp = p.child("limited");
                    validate_non_negative_shares(l, &lp, errs);
                    validate_limit_response(
                        js::field(l, "limitResponse"),
                        &lp.child("limitResponse"),
                        errs,
                    );
                    validate_percent(l, "lendablePercent", &lp, errs);
                    if let Some(n) = js::int(l, "borrowingLimitPercent").filter(|n| *n < 0) {
                        errs.push(field::invalid(
                            &lp.child("borrowingLimitPercent"),
                            Bad::Int(n),
                            "if specified, must be a non-negative integer",
                        ));
                    }
                }
            }
        }
        _ => errs.push(field::not_supported(
            &p.child("type"),
            Bad::str(t),
            &["Exempt", "Limited"],
        )),
    }
    validate_conditions(obj, errs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(f: fn(&Value, &mut Vec<Cause>), obj: Value) -> Vec<String> {
        let mut errs = Vec::new();
        f(&obj, &mut errs);
        errs.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn flow_schemas_are_validated_as_kube_does() {
        let got = messages(
            validate_flow_schema,
            json!({"metadata": {"name": "fs"}, "spec": {
                "matchingPrecedence": 1,
                "distinguisherMethod": {"type": "ByGroup"},
                "priorityLevelConfiguration": {"name": ""},
                "rules": [{
                    "subjects": [{"kind": "User"}, {"kind": "Robot"},
                                 {"kind": "ServiceAccount", "serviceAccount": {"name": "*"}, "user": {"name": "x"}}],
                    "resourceRules": [{"verbs": ["*", "get"], "apiGroups": [], "resources": ["pods"]}],
                    "nonResourceRules": [{"verbs": ["fly"], "nonResourceURLs": ["/a/*/b", "c"]}],
                }],
            }}),
        );
        assert_eq!(
            got,
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
                "spec.distinguisherMethod.type: Unsupported value: \"ByGroup\": supported values: \"ByNamespace\", \"ByUser\"",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
                "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
                "spec.rules[0].subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
                "spec.rules[0].subjects[2].serviceAccount.namespace: Required value: must specify namespace for service account",
                "spec.rules[0].subjects[2].user: Forbidden: user is forbidden when subject kind is not 'User'",
                "spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs",
                "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
                "spec.rules[0].nonResourceRules[0].verbs: Unsupported value: []string{\"fly\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/a/*/b\": wildcard can only do suffix glob matching",
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"c\": must start with slash",
            ]
        );
        let too_far = messages(
            validate_flow_schema,
            json!({"metadata": {"name": "fs"}, "spec": {"matchingPrecedence": 10001,
                   "priorityLevelConfiguration": {"name": "l"}}}),
        );
        assert_eq!(
            too_far,
            ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]
        );
    }

    #[test]
    fn priority_levels_are_validated_as_kube_does() {
        let limited = |queuing: Value| {
            json!({"metadata": {"name": "pl"}, "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": -1, "lendablePercent": 101,
                "limitResponse": {"type": "Queue", "queuing": queuing}}}})
        };
        assert_eq!(
            messages(
                validate_priority_level,
                limited(json!({"queues": 4, "handSize": 5, "queueLengthLimit": 0}))
            ),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            ]
        );
        assert_eq!(
            messages(
                validate_priority_level,
                limited(json!({"queues": 1024, "handSize": 7, "queueLengthLimit": 1}))
            )[1],
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 7: required entropy bits of deckSize 1024 and handSize 7 should not be greater than 60"
        );
        assert_eq!(
            messages(
                validate_priority_level,
                json!({"metadata": {"name": "exempt"}, "spec": {"type": "Limited"}})
            ),
            [
                "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec.limited: Required value: must not be empty when type is Limited",
            ]
        );
        assert_eq!(
            messages(
                validate_priority_level,
                json!({"metadata": {"name": "x"}, "spec": {"type": "Exempt", "limited": {}}})
            ),
            [
                "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec.limited: Forbidden: must be nil if the type is not Limited",
            ]
        );
    }

    #[test]
    fn v1_defaults() {
        let mut pl = json!({"spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {}}}}});
        default_object("PriorityLevelConfiguration", &mut pl);
        assert_eq!(
            pl["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
                "type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        // An exempt level gets no limited part (nor a limited level an exempt one).
        let mut exempt = json!({"spec": {"type": "Exempt"}});
        default_object("PriorityLevelConfiguration", &mut exempt);
        assert_eq!(exempt, json!({"spec": {"type": "Exempt"}}));
        let mut fs = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
        default_object("FlowSchema", &mut fs);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    }
}
