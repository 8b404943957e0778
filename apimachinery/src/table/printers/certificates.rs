//! certificates.k8s.io/v1 CertificateSigningRequest.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, cells, col, name, str_at};
use crate::table::column::Row;
use crate::table::duration::human_duration;

pub(super) static CSR_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        "Only one signer can sign a certificate signing request.",
    ),
    col(
        "Requestor",
        "string",
        "Name of the user which made this request.",
    ),
    col(
        "RequestedDuration",
        "string",
        "The requested duration of the issued certificate.",
    ),
    col(
        "Condition",
        "string",
        "The conditions of the certificate signing request.",
    ),
];

/// `printCertificateSigningRequest`: conditions joined by commas, `Issued` once the
/// certificate is there, `Pending` with none.
pub(super) fn csr(obj: &Value, now: Timestamp) -> Row {
    let mut states: Vec<String> = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["type"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if obj
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        states.push("Issued".into());
    }
    let condition = if states.is_empty() {
        "Pending".to_owned()
    } else {
        states.join(",")
    };
    let requested = obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map_or_else(
            || "<none>".to_owned(),
            |s| human_duration(SignedDuration::from_secs(s)),
        );
    cells![
        name(obj),
        age(obj, now),
        str_at(obj, "/spec/signerName"),
        str_at(obj, "/spec/username"),
        requested,
        condition
    ]
}
