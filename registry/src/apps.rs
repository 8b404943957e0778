//! apps/v1 validation (pkg/apis/apps/validation and the selector immutability of
//! pkg/registry/apps/*/strategy.go ValidateUpdate).

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::json;
use super::meta;
use super::names;
use super::pod;
use apimachinery::status::Cause;

fn spec(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

/// ValidateNonnegativeField for an optional integer.
pub(crate) fn nonnegative(v: &Value, key: &str, path: &Path, errs: &mut Vec<Cause>) {
    if let Some(n) = json::int(v, key).filter(|n| *n < 0) {
        errs.push(field::invalid(
            &path.child(key),
            Bad::Int(n),
            "must be greater than or equal to 0",
        ));
    }
}

/// Validates `spec.selector` (required, strict, non-empty) for a workload.
fn validate_selector(spec: &Value, path: &Path, what: &str, errs: &mut Vec<Cause>) {
    let sel = json::field(spec, "selector");
    let p = path.child("selector");
    match sel {
        None => errs.push(field::required(&p, "")),
        Some(s) => {
            errs.extend(meta::validate_label_selector(Some(s), &p));
            let empty =
                json::is_empty(s.get("matchLabels")) && json::is_empty(s.get("matchExpressions"));
            if empty {
                errs.push(field::invalid(
                    &p,
                    Bad::Raw(meta::go_label_selector(Some(s))),
                    &format!("empty selector is invalid for {what}"),
                ));
            }
        }
    }
}

fn template_labels_mismatch(spec: &Value, sel: &meta::Selector, path: &Path) -> Option<Cause> {
    let labels =
        json::at(spec, &["template", "metadata"]).and_then(|m| json::string_map(m, "labels"));
    if !sel.is_empty() && !sel.matches(labels.as_ref()) {
        return Some(field::invalid(
            &path.children(&["template", "metadata", "labels"]),
            Bad::Raw(field::go_string_map(labels.as_ref())),
            "`selector` does not match template `labels`",
        ));
    }
    None
}

/// ValidatePodTemplateSpecForReplicaSet (Deployments and ReplicaSets).
pub(crate) fn validate_template_for_replica_set(
    spec: &Value,
    sel: &meta::Selector,
    path: &Path,
    kind: &str,
    errs: &mut Vec<Cause>,
) {
    let tp = path.child("template");
    let Some(template) = json::field(spec, "template") else {
        errs.push(field::required(&tp, ""));
        return;
    };
    errs.extend(template_labels_mismatch(spec, sel, path));
    errs.extend(pod::validate_pod_template_spec(template, &tp));
    let template_spec = json::field(template, "spec").unwrap_or(&Value::Null);
    let restart = json::string(template_spec, "restartPolicy");
    if restart != "Always" {
        errs.push(field::not_supported(
            &tp.children(&["spec", "restartPolicy"]),
            Bad::str(restart),
            &["Always"],
        ));
    }
    if json::field(template_spec, "activeDeadlineSeconds").is_some() {
        errs.push(field::forbidden(
            &tp.children(&["spec", "activeDeadlineSeconds"]),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

fn selector_or_invalid(
    spec: &Value,
    path: &Path,
    msg: &str,
    errs: &mut Vec<Cause>,
) -> Option<meta::Selector> {
    match meta::selector_as_selector(json::field(spec, "selector")) {
        Ok(s) => Some(s),
        Err(()) => {
            errs.push(field::invalid(
                &path.child("selector"),
                Bad::Raw(meta::go_label_selector(json::field(spec, "selector"))),
                msg,
            ));
            None
        }
    }
}

/// ValidatePositiveIntOrPercent.
fn int_or_percent(v: Option<&Value>, path: &Path, errs: &mut Vec<Cause>) {
    match v {
        Some(Value::String(s)) => {
            for m in names::percent(s) {
                errs.push(field::invalid(path, Bad::Raw(go_int_or_string(v)), &m));
            }
        }
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64().filter(|i| *i < 0) {
                errs.push(field::invalid(
                    path,
                    Bad::Int(i),
                    "must be greater than or equal to 0",
                ));
            }
        }
        _ => {}
    }
}

/// Go's `%#v` of an intstr.IntOrString.
pub(crate) fn go_int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            field::go_quote(s)
        ),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.and_then(Value::as_i64).unwrap_or(0)
        ),
    }
}

/// getIntOrPercentValue.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        other => other.and_then(Value::as_i64).unwrap_or(0),
    }
}

fn not_more_than_100_percent(v: Option<&Value>, path: &Path, errs: &mut Vec<Cause>) {
    if let Some(Value::String(s)) = v
        && names::percent(s).is_empty()
        && int_or_percent_value(v) > 100
    {
        errs.push(field::invalid(
            path,
            Bad::Raw(go_int_or_string(v)),
            "must not be greater than 100%",
        ));
    }
}

/// ValidateDeploymentSpec.
fn validate_deployment_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    nonnegative(s, "replicas", path, errs);
    validate_selector(s, path, "deployment", errs);
    if let Some(sel) = selector_or_invalid(s, path, "invalid label selector", errs) {
        validate_template_for_replica_set(s, &sel, path, "ReplicaSet", errs);
    }
    let strategy = json::field(s, "strategy").unwrap_or(&Value::Null);
    let sp = path.child("strategy");
    match json::string(strategy, "type") {
        "Recreate" => {
            if json::field(strategy, "rollingUpdate").is_some() {
                errs.push(field::forbidden(
                    &sp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match json::field(strategy, "rollingUpdate") {
            None => errs.push(field::required(
                &sp.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let rp = sp.child("rollingUpdate");
                let mu = json::field(ru, "maxUnavailable");
                let ms = json::field(ru, "maxSurge");
                int_or_percent(mu, &rp.child("maxUnavailable"), errs);
                int_or_percent(ms, &rp.child("maxSurge"), errs);
                if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                    errs.push(field::invalid(
                        &rp.child("maxUnavailable"),
                        Bad::Raw(go_int_or_string(mu)),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                not_more_than_100_percent(mu, &rp.child("maxUnavailable"), errs);
            }
        },
        other => errs.push(field::not_supported(
            &sp,
            Bad::Raw(format!(
                "apps.DeploymentStrategy{{Type:{}}}",
                field::go_quote(other)
            )),
            &["Recreate", "RollingUpdate"],
        )),
    }
    nonnegative(s, "minReadySeconds", path, errs);
    nonnegative(s, "revisionHistoryLimit", path, errs);
    if let Some(pds) = json::int(s, "progressDeadlineSeconds") {
        nonnegative(s, "progressDeadlineSeconds", path, errs);
        if pds <= json::int(s, "minReadySeconds").unwrap_or(0) {
            errs.push(field::invalid(
                &path.child("progressDeadlineSeconds"),
                Bad::Int(pds),
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// ValidateReplicaSetSpec.
fn validate_replica_set_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    nonnegative(s, "replicas", path, errs);
    nonnegative(s, "minReadySeconds", path, errs);
    validate_selector(s, path, "deployment", errs);
    if let Some(sel) = selector_or_invalid(s, path, "invalid label selector", errs) {
        validate_template_for_replica_set(s, &sel, path, "ReplicaSet", errs);
    }
}

/// ValidateStatefulSetSpec. Kube does not validate the pod spec of a StatefulSet template.
fn validate_stateful_set_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    match json::string(s, "podManagementPolicy") {
        "" => errs.push(field::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(field::invalid(
            &path.child("podManagementPolicy"),
            Bad::str(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let us = json::field(s, "updateStrategy").unwrap_or(&Value::Null);
    let up = path.child("updateStrategy");
    match json::string(us, "type") {
        "" => errs.push(field::required(&up, "")),
        "OnDelete" => {
            if let Some(ru) = json::field(us, "rollingUpdate") {
                errs.push(field::invalid(
                    &up.child("rollingUpdate"),
                    Bad::Raw(format!(
                        "apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:(*intstr.IntOrString)(nil)}}",
                        json::int(ru, "partition").unwrap_or(0)
                    )),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = json::field(us, "rollingUpdate") {
                let rp = up.child("rollingUpdate");
                nonnegative(ru, "partition", &rp, errs);
                if let Some(mu) = json::field(ru, "maxUnavailable") {
                    let mp = rp.child("maxUnavailable");
                    int_or_percent(Some(mu), &mp, errs);
                    if int_or_percent_value(Some(mu)) == 0 {
                        errs.push(field::invalid(
                            &mp,
                            Bad::Raw(go_int_or_string(Some(mu))),
                            "cannot be 0",
                        ));
                    }
                    not_more_than_100_percent(Some(mu), &mp, errs);
                }
            }
        }
        other => errs.push(field::invalid(
            &up,
            Bad::Raw(format!(
                "apps.StatefulSetUpdateStrategy{{Type:{}}}",
                field::go_quote(other)
            )),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = json::field(s, "persistentVolumeClaimRetentionPolicy") {
        let pp = path.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = json::string(policy, key);
            if !matches!(v, "Retain" | "Delete") {
                errs.push(field::not_supported(
                    &pp.child(key),
                    Bad::str(v),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(s, "replicas", path, errs);
    nonnegative(s, "minReadySeconds", path, errs);
    if let Some(start) = json::at(s, &["ordinals", "start"]).and_then(Value::as_i64)
        && start < 0
    {
        errs.push(field::invalid(
            &path.child("ordinals.start"),
            Bad::Int(start),
            "must be greater than or equal to 0",
        ));
    }
    validate_selector(s, path, "statefulset", errs);
    if let Some(sel) = selector_or_invalid(s, path, "", errs) {
        let tp = path.child("template");
        match json::field(s, "template") {
            None => errs.push(field::required(&tp, "")),
            Some(t) => {
                errs.extend(template_labels_mismatch(s, &sel, path));
                let empty = Value::Null;
                let m = json::field(t, "metadata").unwrap_or(&empty);
                errs.extend(meta::validate_labels(
                    json::string_map(m, "labels").as_ref(),
                    &tp.child("labels"),
                ));
                errs.extend(meta::validate_annotations(
                    json::string_map(m, "annotations").as_ref(),
                    &tp.child("annotations"),
                ));
            }
        }
    }
    let template_spec = json::at(s, &["template", "spec"]).unwrap_or(&Value::Null);
    let restart = json::string(template_spec, "restartPolicy");
    if restart != "Always" {
        errs.push(field::not_supported(
            &path.children(&["template", "spec", "restartPolicy"]),
            Bad::str(restart),
            &["Always"],
        ));
    }
    if json::field(template_spec, "activeDeadlineSeconds").is_some() {
        errs.push(field::forbidden(
            &path.children(&["template", "spec", "activeDeadlineSeconds"]),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
}

/// ValidateDaemonSetSpec.
fn validate_daemon_set_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    let sel_value = json::field(s, "selector");
    errs.extend(meta::validate_label_selector(
        sel_value,
        &path.child("selector"),
    ));
    if let Ok(sel) = meta::selector_as_selector(sel_value) {
        let labels =
            json::at(s, &["template", "metadata"]).and_then(|m| json::string_map(m, "labels"));
        if !sel.matches(labels.as_ref()) {
            errs.push(field::invalid(
                &path.children(&["template", "metadata", "labels"]),
                Bad::Raw(field::go_string_map(labels.as_ref())),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(sv) = sel_value
        && json::is_empty(sv.get("matchLabels"))
        && json::is_empty(sv.get("matchExpressions"))
    {
        errs.push(field::invalid(
            &path.child("selector"),
            Bad::Raw(meta::go_label_selector(Some(sv))),
            "empty selector is invalid for daemonset",
        ));
    }
    let empty = Value::Null;
    let template = json::field(s, "template").unwrap_or(&empty);
    errs.extend(pod::validate_pod_template_spec(
        template,
        &path.child("template"),
    ));
    let template_spec = json::field(template, "spec").unwrap_or(&empty);
    let restart = json::string(template_spec, "restartPolicy");
    if restart != "Always" {
        errs.push(field::not_supported(
            &path.children(&["template", "spec", "restartPolicy"]),
            Bad::str(restart),
            &["Always"],
        ));
    }
    if json::field(template_spec, "activeDeadlineSeconds").is_some() {
        errs.push(field::forbidden(
            &path.children(&["template", "spec", "activeDeadlineSeconds"]),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    nonnegative(s, "minReadySeconds", path, errs);
    nonnegative(s, "templateGeneration", path, errs);
    let us = json::field(s, "updateStrategy").unwrap_or(&empty);
    let up = path.child("updateStrategy");
    match json::string(us, "type") {
        "OnDelete" => {}
        "RollingUpdate" => match json::field(us, "rollingUpdate") {
            None => errs.push(field::required(&up.child("rollingUpdate"), "")),
            Some(ru) => {
                let rp = up.child("rollingUpdate");
                let mu = json::field(ru, "maxUnavailable");
                let ms = json::field(ru, "maxSurge");
                int_or_percent(mu, &rp.child("maxUnavailable"), errs);
                int_or_percent(ms, &rp.child("maxSurge"), errs);
                not_more_than_100_percent(mu, &rp.child("maxUnavailable"), errs);
                not_more_than_100_percent(ms, &rp.child("maxSurge"), errs);
                let has_unavailable = int_or_percent_value(mu) != 0;
                let has_surge = int_or_percent_value(ms) != 0;
                if has_unavailable && has_surge {
                    errs.push(field::invalid(
                        &rp.child("maxSurge"),
                        Bad::Raw(go_int_or_string(ms)),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if !has_unavailable && !has_surge {
                    errs.push(field::required(
                        &rp.child("maxUnavailable"),
                        "cannot be 0 when maxSurge is 0",
                    ));
                }
            }
        },
        other => errs.push(field::not_supported(
            &up,
            Bad::Raw(format!(
                "apps.DaemonSetUpdateStrategy{{Type:{}}}",
                field::go_quote(other)
            )),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    nonnegative(s, "revisionHistoryLimit", path, errs);
}

/// Validates an apps/v1 workload; `old` selects update validation.
pub(crate) fn validate(kind: &str, obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let s = spec(obj);
    let path = Path::new("spec");
    match kind {
        "Deployment" => validate_deployment_spec(s, &path, errs),
        "ReplicaSet" => validate_replica_set_spec(s, &path, errs),
        "StatefulSet" => validate_stateful_set_spec(s, &path, errs),
        "DaemonSet" => validate_daemon_set_spec(s, &path, errs),
        _ => return,
    }
    let Some(old) = old else {
        return;
    };
    let os = spec(old);
    if kind == "StatefulSet" {
        // ValidateStatefulSetUpdate: only these fields may change.
        let mutable = [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        ];
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v.as_object_mut() {
                for k in mutable {
                    m.remove(k);
                }
            }
            v
        };
        if !json::semantic_eq(Some(&strip(s)), Some(&strip(os))) {
            errs.push(field::forbidden(
                &path,
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
        return;
    }
    // apps/v1 strategies forbid selector changes (ValidateImmutableField).
    let (ns, ols) = (json::field(s, "selector"), json::field(os, "selector"));
    if !json::semantic_eq(ns, ols) {
        errs.push(field::invalid(
            &path.child("selector"),
            Bad::Raw(meta::go_label_selector(ns)),
            "field is immutable",
        ));
    }
}
