//! admissionregistration.k8s.io/v1: the webhook configurations, ValidatingAdmissionPolicy and
//! its bindings.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, array_at, cells, col, get, name, str_at};
use crate::table::column::Row;

pub(super) static WEBHOOK_CONFIGURATION_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

/// `printMutatingWebhook` / `printValidatingWebhook`.
pub(super) fn webhook_configuration(obj: &Value, now: Timestamp) -> Row {
    cells![
        name(obj),
        array_at(obj, "/webhooks").len() as i64,
        age(obj, now)
    ]
}

pub(super) static POLICY_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    col(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];

/// `printValidatingAdmissionPolicy`.
pub(super) fn policy(obj: &Value, now: Timestamp) -> Row {
    let param_kind = match get(obj, "/spec/paramKind") {
        Some(pk) => format!("{}/{}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
        None => "<unset>".to_string(),
    };
    cells![
        name(obj),
        array_at(obj, "/spec/validations").len() as i64,
        param_kind,
        age(obj, now)
    ]
}

pub(super) static BINDING_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    col(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];

/// `printValidatingAdmissionPolicyBinding`: a named param as `namespace/name` (`*/name`
/// without a namespace, as the printer cannot tell the param's scope), else its selector.
pub(super) fn binding(obj: &Value, now: Timestamp) -> Row {
    let param = match get(obj, "/spec/paramRef") {
        Some(pr) if !str_at(pr, "/name").is_empty() => {
            let ns = str_at(pr, "/namespace");
            let ns = if ns.is_empty() { "*" } else { ns };
            format!("{ns}/{}", str_at(pr, "/name"))
        }
        Some(pr) => match get(pr, "/selector") {
            Some(sel) => crate::table::format::format_label_selector(Some(sel)),
            None => "<unset>".to_string(),
        },
        None => "<unset>".to_string(),
    };
    cells![
        name(obj),
        str_at(obj, "/spec/policyName"),
        param,
        age(obj, now)
    ]
}
