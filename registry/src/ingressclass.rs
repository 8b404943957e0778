//! networking.k8s.io/v1 IngressClass (ValidateIngressClass in pkg/apis/networking/validation).

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::json;
use super::names;
use apimachinery::status::Cause;

const MAX_CONTROLLER_LEN: usize = 250;

/// validation.IsDomainPrefixedPath.
fn domain_prefixed_path(path: &Path, value: &str, errs: &mut Vec<Cause>) {
    let Some((host, rest)) = value.split_once('/').filter(|(h, _)| !h.is_empty()) else {
        errs.push(field::invalid(
            path,
            Bad::str(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for m in names::dns1123_subdomain(host) {
        errs.push(field::invalid(path, Bad::str(host), &m));
    }
    let valid = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(valid) {
        errs.push(field::invalid(path, Bad::str(rest), "Invalid path"));
    }
}

/// ValidateIngressClass (+ ValidateIngressClassUpdate: the controller is immutable).
pub(crate) fn validate(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = json::field(obj, "spec").unwrap_or(&empty);
    let p = Path::new("spec");
    let controller = json::string(spec, "controller");
    if controller.len() > MAX_CONTROLLER_LEN {
        errs.push(field::too_long(&p.child("controller"), MAX_CONTROLLER_LEN));
    }
    domain_prefixed_path(&p.child("controller"), controller, errs);
    if let Some(params) = json::field(spec, "parameters") {
        validate_parameters(params, &p.child("parameters"), errs);
    }
    if let Some(old) = old {
        let before = json::at(old, &["spec", "controller"])
            .and_then(Value::as_str)
            .unwrap_or("");
        if before != controller {
            errs.push(field::immutable(
                &p.child("controller"),
                json::field(spec, "controller"),
            ));
        }
    }
}

/// validateIngressClassParametersReference.
fn validate_parameters(params: &Value, p: &Path, errs: &mut Vec<Cause>) {
    if let Some(group) = json::opt_str(params, "apiGroup") {
        for m in names::dns1123_subdomain(group) {
            errs.push(field::invalid(&p.child("apiGroup"), Bad::str(group), &m));
        }
    }
    for key in ["kind", "name"] {
        let v = json::string(params, key);
        if v.is_empty() {
            errs.push(field::required(
                &p.child(key),
                &format!("{key} is required"),
            ));
        } else {
            for m in names::path_segment_name(v, false) {
                errs.push(field::invalid(&p.child(key), Bad::str(v), &m));
            }
        }
    }
    let Some(scope) = json::opt_str(params, "scope") else {
        errs.push(field::required(&p.child("scope"), ""));
        return;
    };
    let namespace = json::opt_str(params, "namespace");
    match scope {
        "Namespace" => match namespace {
            None => errs.push(field::required(
                &p.child("namespace"),
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => {
                for m in names::dns1123_label(ns) {
                    errs.push(field::invalid(&p.child("namespace"), Bad::str(ns), &m));
                }
            }
        },
        "Cluster" => {
            if namespace.is_some() {
                errs.push(field::forbidden(
                    &p.child("namespace"),
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        other => errs.push(field::not_supported(
            &p.child("scope"),
            Bad::str(other),
            &["Cluster", "Namespace"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(errs: &[Cause]) -> Vec<(&str, &str)> {
        errs.iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn controller_and_parameters() {
        let mut errs = Vec::new();
        let bad = json!({"spec": {"controller": "nginx", "parameters": {"kind": "Cfg", "scope": "Cluster", "namespace": "x"}}});
        validate(&bad, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [
                (
                    "spec.controller",
                    "Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"
                ),
                ("spec.parameters.name", "Required value: name is required"),
                (
                    "spec.parameters.namespace",
                    "Forbidden: `parameters.scope` is set to 'Cluster'"
                ),
            ]
        );
        errs.clear();
        let ok = json!({"spec": {"controller": "k8s.io/ingress-nginx"}});
        validate(&ok, None, &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        let moved = json!({"spec": {"controller": "example.com/other"}});
        validate(&moved, Some(&ok), &mut errs);
        assert_eq!(
            fields(&errs),
            [(
                "spec.controller",
                "Invalid value: \"example.com/other\": field is immutable"
            )]
        );
    }
}
