//! Karmada's validating webhooks for `config.karmada.io` (pkg/webhook/resourceinterpretercustomization
//! and pkg/webhook/configuration).

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{AdmissionError, Operation, Webhooks};
use crate::config::v1alpha1::{
    INTERPRETER_CONTEXT_VERSIONS, ResourceInterpreterCustomization, ResourceInterpreterWebhook,
    ResourceInterpreterWebhookConfiguration, RuleWithOperations,
};
use crate::field::{FieldError, FieldPath};
use crate::validation::names::{is_dns1035_label, is_dns1123_label, is_dns1123_subdomain};

const CUSTOMIZATION_WEBHOOK: &str = "resourceinterpretercustomization.karmada.io";
const CONFIGURATION_WEBHOOK: &str = "config.karmada.io";

/// The operations a webhook rule may name (`supportedInterpreterOperation`), sorted as Go's
/// `sets.String.List` prints them.
const SUPPORTED_OPERATIONS: &[&str] = &[
    "*",
    "AggregateStatus",
    "InterpretComponent",
    "InterpretDependency",
    "InterpretHealth",
    "InterpretReplica",
    "InterpretStatus",
    "Retain",
    "ReviseReplica",
];

/// A Lua state for compiling scripts at admission.
fn compiler() -> &'static lua::Runtime {
    static RUNTIME: OnceLock<lua::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        lua::Runtime::new(
            Arc::new(lua::NoPods),
            lua::Limits {
                idle_states: 1,
                ..lua::Limits::default()
            },
        )
    })
}

impl Webhooks for ResourceInterpreterCustomization {
    const VALIDATES: bool = true;

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        // checkCustomizationsRule: every script must compile.
        for op in lua::Operation::ALL {
            if let Some(script) = self.spec.customizations.script(op)
                && let Err(e) = compiler().check_syntax(script)
            {
                return Err(AdmissionError::denied(
                    CUSTOMIZATION_WEBHOOK,
                    format!("InterpreterOperation({}) Lua script error: {e}", op.name()),
                ));
            }
        }
        Ok(())
    }
}

/// The customization webhook's check against the customizations already stored
/// (`validateCustomizationRule`): two customizations of one kind may not both script the same
/// operation (dependency interpretation excepted, whose scripts add up).
pub(super) fn check_conflicts(obj: &Value, peers: &[Value]) -> Result<(), AdmissionError> {
    let Ok(new) = serde_json::from_value::<ResourceInterpreterCustomization>(obj.clone()) else {
        return Ok(());
    };
    let name = new.metadata.name.clone().unwrap_or_default();
    for peer in peers {
        let Ok(old) = serde_json::from_value::<ResourceInterpreterCustomization>(peer.clone())
        else {
            continue;
        };
        let old_name = old.metadata.name.clone().unwrap_or_default();
        if old_name == name || old.spec.target != new.spec.target {
            continue;
        }
        for op in lua::Operation::ALL {
            if op == lua::Operation::InterpretDependency {
                continue;
            }
            if old.spec.customizations.script(op).is_some()
                && new.spec.customizations.script(op).is_some()
            {
                return Err(AdmissionError::denied(
                    CUSTOMIZATION_WEBHOOK,
                    format!(
                        "conflicting with InterpreterOperation({}) of existing ResourceInterpreterCustomization({old_name})",
                        op.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

impl Webhooks for ResourceInterpreterWebhookConfiguration {
    const VALIDATES: bool = true;

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let mut errors = Vec::new();
        let mut names = HashSet::new();
        let root = FieldPath::new("webhooks");
        for (i, hook) in self.webhooks.iter().enumerate() {
            errors.extend(validate_webhook(hook, &root.index(i)));
            if !names.insert(hook.name.as_str()) {
                errors.push(FieldError::duplicate(
                    root.index(i).child("name").to_string(),
                    hook.name.clone(),
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(CONFIGURATION_WEBHOOK, errors))
        }
    }
}

fn validate_webhook(hook: &ResourceInterpreterWebhook, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = fully_qualified_domain_name(&path.child("name"), &hook.name);
    for (i, rule) in hook.rules.iter().enumerate() {
        errors.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    if let Some(t) = hook.timeout_seconds
        && !(1..=30).contains(&t)
    {
        errors.push(FieldError::invalid(
            path.child("timeoutSeconds").to_string(),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    let cc = &hook.client_config;
    let cc_path = path.child("clientConfig");
    match (&cc.url, &cc.service) {
        (Some(_), Some(_)) | (None, None) => errors.push(FieldError::required(
            cc_path.to_string(),
            "exactly one of url or service is required",
        )),
        (Some(url), None) => errors.extend(validate_webhook_url(&cc_path.child("url"), url)),
        (None, Some(svc)) => errors.extend(validate_webhook_service(
            &cc_path.child("service"),
            &svc.namespace,
            &svc.name,
            svc.path.as_deref(),
            svc.port.unwrap_or(443),
        )),
    }
    errors.extend(validate_context_versions(
        &hook.interpreter_context_versions,
        &path.child("interpreterContextVersions"),
    ));
    errors
}

/// `validation.IsFullyQualifiedDomainName`.
fn fully_qualified_domain_name(path: &FieldPath, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path.to_string(), "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path.to_string(), name, errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path.to_string(),
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let errs = is_dns1123_label(label);
        if !errs.is_empty() {
            return vec![FieldError::invalid(path.to_string(), label, errs.join(","))];
        }
    }
    Vec::new()
}

fn validate_rule(rule: &RuleWithOperations, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ops = path.child("operations");
    if rule.operations.is_empty() {
        errors.push(FieldError::required(ops.to_string(), ""));
    }
    if rule.operations.len() > 1 && rule.operations.iter().any(|o| o == "*") {
        errors.push(FieldError::invalid(
            ops.to_string(),
            rule.operations.clone(),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in rule.operations.iter().enumerate() {
        if !SUPPORTED_OPERATIONS.contains(&op.as_str()) {
            errors.push(FieldError::not_supported(
                ops.index(i).to_string(),
                op.clone(),
                SUPPORTED_OPERATIONS,
            ));
        }
    }
    for (field, items, what) in [
        ("apiGroups", &rule.api_groups, "API groups"),
        ("apiVersions", &rule.api_versions, "API versions"),
        ("kinds", &rule.kinds, "kinds"),
    ] {
        let p = path.child(field);
        if items.is_empty() {
            errors.push(FieldError::required(p.to_string(), ""));
        }
        if items.len() > 1 && items.iter().any(|i| i == "*") {
            errors.push(FieldError::invalid(
                p.to_string(),
                items.clone(),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if field != "apiGroups" {
            for (i, item) in items.iter().enumerate() {
                if item.is_empty() {
                    errors.push(FieldError::required(p.index(i).to_string(), ""));
                }
            }
        }
    }
    errors
}

/// `webhook.ValidateWebhookURL` with https required.
fn validate_webhook_url(path: &FieldPath, raw: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let p = path.to_string();
    let url = match crate::validation::url::parse(raw) {
        Ok(u) => u,
        Err(e) => {
            return vec![FieldError::required(
                p,
                format!("url must be a valid URL: {e}{FORM}"),
            )];
        }
    };
    let mut errors = Vec::new();
    if url.scheme != "https" {
        errors.push(FieldError::invalid(
            p.clone(),
            url.scheme.clone(),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if url.host.is_empty() {
        errors.push(FieldError::invalid(
            p.clone(),
            url.host.clone(),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = &url.user {
        errors.push(FieldError::invalid(
            p.clone(),
            user.clone(),
            "user information is not permitted in the URL",
        ));
    }
    if !url.fragment.is_empty() {
        errors.push(FieldError::invalid(
            p.clone(),
            url.fragment.clone(),
            "fragments are not permitted in the URL",
        ));
    }
    if !url.raw_query.is_empty() {
        errors.push(FieldError::invalid(
            p,
            url.raw_query.clone(),
            "query parameters are not permitted in the URL",
        ));
    }
    errors
}

/// `webhook.ValidateWebhookService`.
fn validate_webhook_service(
    path: &FieldPath,
    namespace: &str,
    name: &str,
    url_path: Option<&str>,
    port: i32,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::required(
            path.child("name").to_string(),
            "service name is required",
        ));
    }
    if namespace.is_empty() {
        errors.push(FieldError::required(
            path.child("namespace").to_string(),
            "service namespace is required",
        ));
    }
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            path.child("port").to_string(),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = url_path else {
        return errors;
    };
    if url_path.is_empty() || url_path == "/" {
        return errors;
    }
    let p = path.child("path").to_string();
    if url_path == "//" {
        errors.push(FieldError::invalid(
            p,
            url_path,
            "segment[0] may not be empty",
        ));
        return errors;
    }
    if !url_path.starts_with('/') {
        errors.push(FieldError::invalid(
            p.clone(),
            url_path,
            "must start with a '/'",
        ));
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errors.push(FieldError::invalid(
                p.clone(),
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errors.push(FieldError::invalid(
                p.clone(),
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errors
}

/// `validateInterpreterContextVersions`.
fn validate_context_versions(versions: &[String], path: &FieldPath) -> Vec<FieldError> {
    let accepted = INTERPRETER_CONTEXT_VERSIONS.join(", ");
    if versions.is_empty() {
        return vec![FieldError::required(
            path.to_string(),
            format!("must specify one of {accepted}"),
        )];
    }
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errors.push(FieldError::invalid(
                path.index(i).to_string(),
                v.clone(),
                "duplicate version",
            ));
            continue;
        }
        for e in is_dns1035_label(v) {
            errors.push(FieldError::invalid(path.index(i).to_string(), v.clone(), e));
        }
        has_accepted |= INTERPRETER_CONTEXT_VERSIONS.contains(&v.as_str());
    }
    if !has_accepted {
        errors.push(FieldError::invalid(
            path.to_string(),
            versions.to_vec(),
            format!("must include at least one of {accepted}"),
        ));
    }
    errors
}
