//! admissionregistration.k8s.io/v1: MutatingWebhookConfiguration,
//! ValidatingWebhookConfiguration, ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding — their defaults (pkg/apis/admissionregistration/v1
//! defaults.go) and validation (pkg/apis/admissionregistration/validation), in kube's words.
//!
//! CEL expressions (matchConditions, a policy's validations) are checked for presence and
//! size here; whether they compile is the admission plugins' to say, as they hold the CEL
//! environment.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::field::{self, Bad, Path, duplicate, invalid, not_supported, required};
use super::json as j;
use super::meta::validate_label_selector;
use super::names;
use apimachinery::status::Cause;

/// The API group.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// The kinds of the group this server serves.
pub const KINDS: [&str; 4] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// kube's limit on the matchConditions of one webhook or policy.
const MAX_MATCH_CONDITIONS: usize = 64;

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    v.get_mut(key).filter(|x| x.is_object())
}

fn default_nil(v: &mut Value, key: &str, value: Value) {
    if let Some(m) = v.as_object_mut()
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.to_string(), value);
    }
}

fn each_mut(v: &mut Value, key: &str, f: impl Fn(&mut Value)) {
    if let Some(items) = v.get_mut(key).and_then(Value::as_array_mut) {
        items.iter_mut().for_each(f);
    }
}

/// SetDefaults_Rule: an omitted scope matches both (`*`).
fn default_rule(rule: &mut Value) {
    default_nil(rule, "scope", json!("*"));
}

/// SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook.
fn default_webhook(w: &mut Value, mutating: bool) {
    default_nil(w, "failurePolicy", json!("Fail"));
    default_nil(w, "matchPolicy", json!("Equivalent"));
    default_nil(w, "namespaceSelector", json!({}));
    default_nil(w, "objectSelector", json!({}));
    default_nil(w, "timeoutSeconds", json!(10));
    if mutating {
        default_nil(w, "reinvocationPolicy", json!("Never"));
    }
    each_mut(w, "rules", default_rule);
    if let Some(cc) = obj_mut(w, "clientConfig")
        && let Some(svc) = obj_mut(cc, "service")
    {
        default_nil(svc, "port", json!(443));
    }
}

/// SetDefaults_MatchResources.
fn default_match_resources(m: &mut Value) {
    default_nil(m, "matchPolicy", json!("Equivalent"));
    default_nil(m, "namespaceSelector", json!({}));
    default_nil(m, "objectSelector", json!({}));
    each_mut(m, "resourceRules", default_rule);
    each_mut(m, "excludeResourceRules", default_rule);
}

/// kube's defaults for the group's kinds.
pub(crate) fn default_object(kind: &str, obj: &mut Value) {
    match kind {
        "MutatingWebhookConfiguration" => each_mut(obj, "webhooks", |w| default_webhook(w, true)),
        "ValidatingWebhookConfiguration" => {
            each_mut(obj, "webhooks", |w| default_webhook(w, false))
        }
        "ValidatingAdmissionPolicy" => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default_nil(spec, "failurePolicy", json!("Fail"));
                if let Some(m) = obj_mut(spec, "matchConstraints") {
                    default_match_resources(m);
                }
            }
        }
        "ValidatingAdmissionPolicyBinding" => {
            if let Some(spec) = obj_mut(obj, "spec") {
                if let Some(m) = obj_mut(spec, "matchResources") {
                    default_match_resources(m);
                }
                if let Some(p) = obj_mut(spec, "paramRef") {
                    default_nil(p, "parameterNotFoundAction", json!("Deny"));
                }
            }
        }
        _ => {}
    }
}

/// kube's validation of the group's kinds (create and update share it: the update checks
/// only relax what stored objects may already hold).
pub(crate) fn validate(kind: &str, obj: &Value, errs: &mut Vec<Cause>) {
    match kind {
        "MutatingWebhookConfiguration" => validate_webhooks(obj, true, errs),
        "ValidatingWebhookConfiguration" => validate_webhooks(obj, false, errs),
        "ValidatingAdmissionPolicy" => validate_policy(obj, errs),
        "ValidatingAdmissionPolicyBinding" => validate_binding(obj, errs),
        _ => {}
    }
}

fn validate_webhooks(obj: &Value, mutating: bool, errs: &mut Vec<Cause>) {
    let mut names = BTreeSet::new();
    for (i, w) in j::list(obj, "webhooks").iter().enumerate() {
        let p = Path::new("webhooks").index(i);
        let name = j::string(w, "name");
        if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(duplicate(&p.child("name"), Bad::str(name)));
        }
        validate_webhook(w, &p, mutating, errs);
    }
}

fn validate_webhook(w: &Value, p: &Path, mutating: bool, errs: &mut Vec<Cause>) {
    let name = j::string(w, "name");
    if name.is_empty() {
        errs.push(required(&p.child("name"), ""));
    } else {
        // Webhook names must be fully qualified (ValidateWebhook's IsFullyQualifiedName).
        for m in names::dns1123_subdomain(name) {
            errs.push(invalid(&p.child("name"), Bad::str(name), &m));
        }
        if name.split('.').count() < 3 {
            errs.push(invalid(
                &p.child("name"),
                Bad::str(name),
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    for (k, rule) in j::list(w, "rules").iter().enumerate() {
        validate_rule_with_operations(rule, &p.child("rules").index(k), errs);
    }
    enum_field(w, "failurePolicy", &["Fail", "Ignore"], p, false, errs);
    enum_field(w, "matchPolicy", &["Exact", "Equivalent"], p, false, errs);
    if w.get("sideEffects").is_none_or(Value::is_null) {
        errs.push(required(
            &p.child("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        ));
    } else {
        enum_field(w, "sideEffects", &["None", "NoneOnDryRun"], p, false, errs);
    }
    if mutating {
        enum_field(
            w,
            "reinvocationPolicy",
            &["Never", "IfNeeded"],
            p,
            false,
            errs,
        );
    }
    if let Some(t) = j::int(w, "timeoutSeconds")
        && !(1..=30).contains(&t)
    {
        errs.push(invalid(
            &p.child("timeoutSeconds"),
            Bad::Int(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    validate_review_versions(w, p, errs);
    errs.extend(validate_label_selector(
        w.get("namespaceSelector"),
        &p.child("namespaceSelector"),
    ));
    errs.extend(validate_label_selector(
        w.get("objectSelector"),
        &p.child("objectSelector"),
    ));
    validate_client_config(w.get("clientConfig"), &p.child("clientConfig"), errs);
    validate_match_conditions(w, p, errs);
}

/// A field holding one of `valid`; `required`: it must be set.
fn enum_field(v: &Value, key: &str, valid: &[&str], p: &Path, needed: bool, errs: &mut Vec<Cause>) {
    match v.get(key).filter(|x| !x.is_null()) {
        None if needed => errs.push(not_supported(&p.child(key), Bad::Raw("nil".into()), valid)),
        None => {}
        Some(x) => {
            let s = x.as_str().unwrap_or_default();
            if !valid.contains(&s) {
                errs.push(not_supported(&p.child(key), Bad::str(s), valid));
            }
        }
    }
}

/// kube accepts the versions it can send; the list must name one of them.
fn validate_review_versions(w: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let path = p.child("admissionReviewVersions");
    let versions = j::string_list(w, "admissionReviewVersions").unwrap_or_default();
    if versions.is_empty() {
        errs.push(required(&path, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errs.push(invalid(&path.index(i), Bad::str(v), "duplicate version"));
        }
        for m in names::dns1035_label(v) {
            errs.push(invalid(&path.index(i), Bad::str(v), &m));
        }
    }
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        errs.push(invalid(
            &path,
            Bad::Raw(field::go_string_slice(Some(&versions))),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// ValidateWebhookClientConfig: exactly one of `url` and `service`.
fn validate_client_config(cc: Option<&Value>, p: &Path, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let cc = cc.unwrap_or(&empty);
    let url = j::opt_str(cc, "url");
    let service = cc.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => {
            errs.push(required(p, "exactly one of url or service is required"))
        }
        (Some(u), None) => validate_url(u, &p.child("url"), errs),
        (None, Some(s)) => validate_service_ref(s, &p.child("service"), errs),
    }
    if let Some(ca) = j::opt_str(cc, "caBundle")
        && base64_invalid(ca)
    {
        errs.push(invalid(
            &p.child("caBundle"),
            Bad::Omit,
            "must be base64-encoded PEM",
        ));
    }
}

fn base64_invalid(s: &str) -> bool {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).is_err()
}

/// ValidateWebhookURL: an absolute https URL without user info, query or fragment.
fn validate_url(u: &str, p: &Path, errs: &mut Vec<Cause>) {
    let bad = |errs: &mut Vec<Cause>, why: &str| {
        errs.push(invalid(p, Bad::str(u), why));
    };
    let Some(rest) = u.strip_prefix("https://") else {
        match u.split_once("://") {
            Some((scheme, _)) => bad(
                errs,
                &format!("'https' is the only allowed URL scheme; '{scheme}' is not allowed"),
            ),
            None => bad(errs, "must be an absolute URL"),
        }
        return;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        bad(errs, "host must be specified");
    }
    if host.contains('@') {
        bad(errs, "user information is not permitted in the URL");
    }
    if rest.contains('#') {
        bad(errs, "fragments are not permitted in the URL");
    }
    if rest.contains('?') {
        bad(errs, "query parameters are not permitted in the URL");
    }
}

/// ValidateWebhookService.
fn validate_service_ref(s: &Value, p: &Path, errs: &mut Vec<Cause>) {
    if j::string(s, "name").is_empty() {
        errs.push(required(&p.child("name"), "service name is required"));
    }
    if j::string(s, "namespace").is_empty() {
        errs.push(required(
            &p.child("namespace"),
            "service namespace is required",
        ));
    }
    if let Some(port) = j::int(s, "port")
        && !(1..=65535).contains(&port)
    {
        errs.push(invalid(
            &p.child("port"),
            Bad::Int(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if let Some(path) = j::opt_str(s, "path") {
        if !path.starts_with('/') {
            errs.push(invalid(
                &p.child("path"),
                Bad::str(path),
                "must start with a '/'",
            ));
        }
        if path.contains("//") {
            errs.push(invalid(
                &p.child("path"),
                Bad::str(path),
                "segment[0] may not be empty",
            ));
        }
    }
}

/// matchConditions: at most 64, unique qualified names, an expression each.
fn validate_match_conditions(v: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let conds = j::list(v, "matchConditions");
    let path = p.child("matchConditions");
    if conds.len() > MAX_MATCH_CONDITIONS {
        errs.push(field::too_many(&path, conds.len(), MAX_MATCH_CONDITIONS));
    }
    let mut names_seen = BTreeSet::new();
    for (i, c) in conds.iter().enumerate() {
        let cp = path.index(i);
        let name = j::string(c, "name");
        if name.is_empty() {
            errs.push(required(&cp.child("name"), ""));
        } else {
            for m in names::qualified_name(name) {
                errs.push(invalid(&cp.child("name"), Bad::str(name), &m));
            }
            if !names_seen.insert(name) {
                errs.push(duplicate(&cp.child("name"), Bad::str(name)));
            }
        }
        if j::string(c, "expression").trim().is_empty() {
            errs.push(required(&cp.child("expression"), ""));
        }
    }
}

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

/// validateRuleWithOperations.
fn validate_rule_with_operations(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let ops = j::string_list(rule, "operations").unwrap_or_default();
    if ops.is_empty() {
        errs.push(required(&p.child("operations"), ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        errs.push(invalid(
            &p.child("operations"),
            Bad::Raw(field::go_string_slice(Some(&ops))),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, o) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&o.as_str()) {
            errs.push(not_supported(
                &p.child("operations").index(i),
                Bad::str(o),
                OPERATIONS,
            ));
        }
    }
    validate_rule(rule, p, errs);
}

/// validateRule: groups, versions and resources with kube's `*` rules.
fn validate_rule(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = j::string_list(rule, key).unwrap_or_default();
        if items.is_empty() {
            errs.push(required(&p.child(key), ""));
        }
        if items.len() > 1 && items.iter().any(|g| g == "*") {
            errs.push(invalid(
                &p.child(key),
                Bad::Raw(field::go_string_slice(Some(&items))),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (i, v) in items.iter().enumerate() {
                if v.is_empty() {
                    errs.push(required(&p.child(key).index(i), ""));
                }
            }
        }
    }
    validate_resources(rule, p, errs);
    if let Some(scope) = j::opt_str(rule, "scope") {
        let valid = ["*", "Cluster", "Namespaced"];
        if !valid.contains(&scope) {
            errs.push(not_supported(&p.child("scope"), Bad::str(scope), &valid));
        }
    }
}

/// validateResources: `*`, `*/*`, `res/*` and `*/sub` cannot overlap what they cover.
fn validate_resources(rule: &Value, p: &Path, errs: &mut Vec<Cause>) {
    let path = p.child("resources");
    let resources = j::string_list(rule, "resources").unwrap_or_default();
    if resources.is_empty() {
        errs.push(required(&path, ""));
        return;
    }
    let mut with_sub: BTreeSet<&str> = BTreeSet::new();
    let mut sub_with_wildcard: BTreeSet<&str> = BTreeSet::new();
    let mut has_double_wildcard = false;
    let mut has_single_wildcard = false;
    let mut has_resource_without_sub = false;
    for (i, r) in resources.iter().enumerate() {
        if r.is_empty() {
            errs.push(required(&path.index(i), ""));
            continue;
        }
        match r.as_str() {
            "*/*" => has_double_wildcard = true,
            "*" => has_single_wildcard = true,
            _ => {}
        }
        let (res, sub) = match r.split_once('/') {
            Some((res, sub)) => (res, Some(sub)),
            None => (r.as_str(), None),
        };
        if sub.is_some_and(|s| s.contains('/')) {
            errs.push(invalid(
                &path.index(i),
                Bad::str(r),
                "must not contain more than one '/'",
            ));
            continue;
        }
        match sub {
            None => has_resource_without_sub = true,
            Some(s) => {
                if res != "*" && s == "*" {
                    with_sub.insert(res);
                }
                if res == "*" && s != "*" {
                    sub_with_wildcard.insert(s);
                }
            }
        }
    }
    if has_double_wildcard && resources.len() > 1 {
        errs.push(invalid(
            &path,
            Bad::Raw(field::go_string_slice(Some(&resources))),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if has_single_wildcard && has_resource_without_sub && resources.len() > 1 {
        let others = resources.iter().any(|r| r != "*" && !r.contains('/'));
        if others {
            errs.push(invalid(
                &path,
                Bad::Raw(field::go_string_slice(Some(&resources))),
                "if '*' is present, must not specify other resources without subresources",
            ));
        }
    }
    for r in &resources {
        if let Some((res, sub)) = r.split_once('/')
            && res != "*"
            && sub != "*"
            && (with_sub.contains(res) || sub_with_wildcard.contains(sub))
        {
            let i = resources.iter().position(|x| x == r).unwrap_or(0);
            errs.push(invalid(
                &path.index(i),
                Bad::str(r),
                "if '*/sub' or 'res/*' is present, must not specify subresources it covers",
            ));
        }
    }
}

/// validateMatchResources (a policy's matchConstraints, a binding's matchResources).
fn validate_match_resources(m: &Value, p: &Path, policy: bool, errs: &mut Vec<Cause>) {
    enum_field(m, "matchPolicy", &["Exact", "Equivalent"], p, false, errs);
    errs.extend(validate_label_selector(
        m.get("namespaceSelector"),
        &p.child("namespaceSelector"),
    ));
    errs.extend(validate_label_selector(
        m.get("objectSelector"),
        &p.child("objectSelector"),
    ));
    let rules = j::list(m, "resourceRules");
    if policy && rules.is_empty() {
        errs.push(required(&p.child("resourceRules"), ""));
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in j::list(m, key).iter().enumerate() {
            let rp = p.child(key).index(i);
            validate_rule_with_operations(r, &rp, errs);
            if let Some(names) = j::string_list(r, "resourceNames") {
                for (k, n) in names.iter().enumerate() {
                    for msg in names::dns1123_subdomain(n) {
                        errs.push(invalid(
                            &rp.child("resourceNames").index(k),
                            Bad::str(n),
                            &msg,
                        ));
                    }
                }
            }
        }
    }
}

fn validate_policy(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let p = Path::new("spec");
    enum_field(spec, "failurePolicy", &["Fail", "Ignore"], &p, false, errs);
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        Some(m) => validate_match_resources(m, &p.child("matchConstraints"), true, errs),
        None => errs.push(required(&p.child("matchConstraints"), "")),
    }
    if let Some(pk) = spec.get("paramKind").filter(|x| !x.is_null()) {
        let pp = p.child("paramKind");
        let api_version = j::string(pk, "apiVersion");
        if api_version.is_empty() {
            errs.push(required(&pp.child("apiVersion"), ""));
        } else if api_version.split('/').count() > 2 {
            errs.push(invalid(
                &pp.child("apiVersion"),
                Bad::str(api_version),
                "apiVersion must be a valid group version",
            ));
        }
        if j::string(pk, "kind").is_empty() {
            errs.push(required(&pp.child("kind"), ""));
        }
    }
    let validations = j::list(spec, "validations");
    let audit = j::list(spec, "auditAnnotations");
    if validations.is_empty() && audit.is_empty() {
        errs.push(required(
            &p.child("validations"),
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, v) in validations.iter().enumerate() {
        let vp = p.child("validations").index(i);
        if j::string(v, "expression").trim().is_empty() {
            errs.push(required(&vp.child("expression"), ""));
        }
        let message = j::string(v, "message");
        if message.contains('\n') {
            errs.push(invalid(
                &vp.child("message"),
                Bad::str(message),
                "message must not contain line breaks",
            ));
        }
        if let Some(reason) = j::opt_str(v, "reason") {
            let valid = [
                "Unauthorized",
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
            ];
            if !valid.contains(&reason) {
                errs.push(not_supported(&vp.child("reason"), Bad::str(reason), &valid));
            }
        }
    }
    let mut keys = BTreeSet::new();
    for (i, a) in audit.iter().enumerate() {
        let ap = p.child("auditAnnotations").index(i);
        let key = j::string(a, "key");
        if key.is_empty() {
            errs.push(required(&ap.child("key"), ""));
        } else {
            let qualified = format!("{}/{key}", obj_name(obj));
            for m in names::qualified_name(&qualified) {
                errs.push(invalid(&ap.child("key"), Bad::str(key), &m));
            }
            if !keys.insert(key) {
                errs.push(duplicate(&ap.child("key"), Bad::str(key)));
            }
        }
        if j::string(a, "valueExpression").trim().is_empty() {
            errs.push(required(&ap.child("valueExpression"), ""));
        }
    }
    let mut var_names = BTreeSet::new();
    for (i, v) in j::list(spec, "variables").iter().enumerate() {
        let vp = p.child("variables").index(i);
        let name = j::string(v, "name");
        if name.is_empty() {
            errs.push(required(&vp.child("name"), ""));
        } else if !var_names.insert(name) {
            errs.push(duplicate(&vp.child("name"), Bad::str(name)));
        }
        if j::string(v, "expression").trim().is_empty() {
            errs.push(required(&vp.child("expression"), ""));
        }
    }
    validate_match_conditions(spec, &p, errs);
}

fn obj_name(obj: &Value) -> &str {
    j::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn validate_binding(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let p = Path::new("spec");
    if j::string(spec, "policyName").is_empty() {
        errs.push(required(&p.child("policyName"), ""));
    }
    if let Some(m) = spec.get("matchResources").filter(|m| !m.is_null()) {
        validate_match_resources(m, &p.child("matchResources"), false, errs);
    }
    if let Some(pr) = spec.get("paramRef").filter(|x| !x.is_null()) {
        let pp = p.child("paramRef");
        let has_name = !j::string(pr, "name").is_empty();
        let has_selector = pr.get("selector").is_some_and(|s| !s.is_null());
        if has_name && has_selector {
            errs.push(field::forbidden(
                &pp.child("name"),
                "name and selector are mutually exclusive",
            ));
        }
        if !has_name && !has_selector {
            errs.push(required(&pp, "one of name or selector must be specified"));
        }
        enum_field(
            pr,
            "parameterNotFoundAction",
            &["Allow", "Deny"],
            &pp,
            true,
            errs,
        );
    }
    let actions = j::string_list(spec, "validationActions").unwrap_or_default();
    let ap = p.child("validationActions");
    if actions.is_empty() {
        errs.push(required(&ap, "at least one validation action is required"));
    }
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let valid = ["Audit", "Deny", "Warn"];
        if !valid.contains(&a.as_str()) {
            errs.push(not_supported(&ap.index(i), Bad::str(a), &valid));
        }
        if !seen.insert(a.as_str()) {
            errs.push(duplicate(&ap.index(i), Bad::str(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(invalid(
            &ap,
            Bad::Raw(field::go_string_slice(Some(&actions))),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: &str, mut obj: Value) -> Vec<String> {
        default_object(kind, &mut obj);
        let mut errs = Vec::new();
        validate(kind, &obj, &mut errs);
        errs.iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn webhook(extra: Value) -> Value {
        let mut w = json!({
            "name": "deny.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            w[k] = v.clone();
        }
        json!({"metadata": {"name": "c"}, "webhooks": [w]})
    }

    #[test]
    fn webhooks_are_defaulted_as_kube_defaults_them() {
        let mut obj =
            webhook(json!({"clientConfig": {"service": {"namespace": "a", "name": "b"}}}));
        default_object("MutatingWebhookConfiguration", &mut obj);
        let w = &obj["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["objectSelector"], json!({}));
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
        let mut v = webhook(json!({}));
        default_object("ValidatingWebhookConfiguration", &mut v);
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    }

    #[test]
    fn a_valid_webhook_passes() {
        assert!(check("ValidatingWebhookConfiguration", webhook(json!({}))).is_empty());
    }

    #[test]
    fn webhook_errors_use_kubes_words() {
        let errs = check(
            "ValidatingWebhookConfiguration",
            webhook(json!({
                "name": "short",
                "sideEffects": "Some",
                "timeoutSeconds": 31,
                "clientConfig": {"url": "http://x/y?z"},
                "admissionReviewVersions": ["v2"],
                "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["*/*", "pods"], "scope": "Everywhere"}],
                "matchConditions": [{"name": "a", "expression": ""}, {"name": "a", "expression": "true"}],
            })),
        );
        let expect = [
            "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http://x/y?z\": 'https' is the only allowed URL scheme; 'http' is not allowed",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            "webhooks[0].rules[0].operations: Invalid value: []string{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
            "webhooks[0].rules[0].apiGroups: Required value",
            "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources",
            "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            "webhooks[0].matchConditions[0].expression: Required value",
            "webhooks[0].matchConditions[1].name: Duplicate value: \"a\"",
        ];
        for e in expect {
            assert!(errs.iter().any(|x| x == e), "missing {e:?} in {errs:#?}");
        }
    }

    #[test]
    fn client_config_needs_exactly_one_target_and_side_effects_are_required() {
        let mut obj = webhook(json!({"clientConfig": {}}));
        obj["webhooks"][0]
            .as_object_mut()
            .unwrap()
            .remove("sideEffects");
        let errs = check("MutatingWebhookConfiguration", obj);
        assert!(errs.contains(&"webhooks[0].clientConfig: Required value: exactly one of url or service is required".to_string()), "{errs:?}");
        assert!(
            errs.contains(
                &"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"
                    .to_string()
            ),
            "{errs:?}"
        );
        let dup = json!({"metadata": {"name": "c"}, "webhooks": [webhook(json!({}))["webhooks"][0], webhook(json!({}))["webhooks"][0]]});
        let errs = check("MutatingWebhookConfiguration", dup);
        assert_eq!(
            errs,
            vec!["webhooks[1].name: Duplicate value: \"deny.example.com\""]
        );
    }

    #[test]
    fn policies_and_bindings() {
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas < 5"}],
        }});
        assert!(check("ValidatingAdmissionPolicy", policy).is_empty());
        let errs = check(
            "ValidatingAdmissionPolicy",
            json!({"metadata": {"name": "p"}, "spec": {}}),
        );
        assert_eq!(
            errs,
            vec![
                "spec.matchConstraints: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item"
            ]
        );
        let errs = check(
            "ValidatingAdmissionPolicyBinding",
            json!({"metadata": {"name": "b"}, "spec": {"validationActions": ["Deny", "Warn"]}}),
        );
        assert_eq!(errs[0], "spec.policyName: Required value");
        assert!(errs[1].starts_with("spec.validationActions: Invalid value: []string{\"Deny\", \"Warn\"}: must not contain both Deny and Warn"));
    }
}
