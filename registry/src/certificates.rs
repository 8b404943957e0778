//! certificates.k8s.io/v1 CertificateSigningRequests (pkg/registry/certificates): the
//! requester's identity is recorded on create (the strategy's PrepareForCreate), the request
//! must be a PEM `CERTIFICATE REQUEST` with a signer and usages (ValidateCertificateRequest),
//! and the `approval` subresource changes only the Approved/Denied conditions, which once set
//! cannot be removed or contradicted. The approving and signing controllers are the in-process
//! controllers' (`controllers::registration`).

use serde_json::{Value, json};

use super::field::{Bad, Path, forbidden, invalid, required};
use std::collections::BTreeMap;

use apimachinery::status::Cause;

/// The API group.
pub const GROUP: &str = "certificates.k8s.io";
/// The kind.
pub const KIND: &str = "CertificateSigningRequest";

/// Whether a resource of `group` and `kind` is CertificateSigningRequests.
pub fn is_csr(group: &str, kind: &str) -> bool {
    group == GROUP && kind == KIND
}

/// The authenticated identity that creates a request (kube's `user.Info`).
pub struct Requester<'a> {
    /// User name.
    pub name: &'a str,
    /// User uid, empty when it has none.
    pub uid: &'a str,
    /// Groups.
    pub groups: &'a [String],
    /// Extra attributes.
    pub extra: &'a BTreeMap<String, Vec<String>>,
}

/// PrepareForCreate: who asked, from the authenticated user (never from the body).
pub fn set_requester(obj: &mut Value, user: &Requester<'_>) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    spec["username"] = json!(user.name);
    if user.uid.is_empty() {
        if let Some(m) = spec.as_object_mut() {
            m.remove("uid");
        }
    } else {
        spec["uid"] = json!(user.uid);
    }
    spec["groups"] = json!(user.groups);
    if user.extra.is_empty() {
        if let Some(m) = spec.as_object_mut() {
            m.remove("extra");
        }
    } else {
        spec["extra"] = json!(user.extra);
    }
}

/// ValidateCertificateSigningRequestCreate/Update, the parts a client can get wrong.
pub fn validate(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let request = spec.get("request").and_then(Value::as_str).unwrap_or("");
    let decoded = base64_decode(request);
    match decoded.as_deref().map(std::str::from_utf8) {
        Some(Ok(pem)) if certs::request_subject(pem).is_ok() => {}
        _ => errs.push(invalid(
            &Path::new("spec").child("request"),
            Bad::Raw("<nil>".into()),
            "invalid certificate request: no PEM-encoded CERTIFICATE REQUEST with a valid signature",
        )),
    }
    let signer = spec.get("signerName").and_then(Value::as_str).unwrap_or("");
    if signer.is_empty() {
        errs.push(required(&Path::new("spec").child("signerName"), ""));
    } else if signer.split('/').count() != 2 || signer.starts_with('/') || signer.ends_with('/') {
        errs.push(invalid(
            &Path::new("spec").child("signerName"),
            Bad::str(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
    }
    if spec
        .get("usages")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        errs.push(required(&Path::new("spec").child("usages"), ""));
    }
    if let Some(e) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && e < 600
    {
        errs.push(invalid(
            &Path::new("spec").child("expirationSeconds"),
            Bad::Int(e),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    if let Some(old) = old
        && old.get("spec") != obj.get("spec")
    {
        errs.push(invalid(&Path::new("spec"), Bad::Omit, "field is immutable"));
    }
    validate_conditions(obj, old, errs);
}

fn condition_status(obj: &Value, ty: &str) -> Option<String> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

fn validate_conditions(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let approved = condition_status(obj, "Approved").is_some();
    let denied = condition_status(obj, "Denied").is_some();
    if approved && denied {
        errs.push(invalid(
            &Path::new("status").child("conditions"),
            Bad::Omit,
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    if let Some(old) = old {
        for ty in ["Approved", "Denied", "Failed"] {
            if condition_status(old, ty).is_some() && condition_status(obj, ty).is_none() {
                errs.push(forbidden(
                    &Path::new("status").child("conditions"),
                    &format!("updates may not remove a condition of type {ty:?}"),
                ));
            }
        }
    }
}

/// The object an `approval` update stores: the current object with the request's
/// conditions (csrApprovalStrategy: the spec and the certificate stay as they are).
pub fn approval_update(current: &Value, request: &Value) -> Value {
    let mut next = current.clone();
    let conditions = request
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(json!([]));
    if !next.get("status").is_some_and(Value::is_object) {
        next["status"] = json!({});
    }
    next["status"]["conditions"] = conditions;
    next
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .ok()
}
