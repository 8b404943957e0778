//! AdmissionReview requests and responses (k8s.io/apiserver
//! pkg/admission/plugin/webhook/request/admissionreview.go): the request a webhook gets, and
//! the checks its answer must pass before it is believed.

use base64::Engine as _;
use serde_json::{Value, json};

/// The resource and kind a webhook is told about (the matched version when
/// `matchPolicy: Equivalent` matched another version than the request's).
#[derive(Clone, Debug)]
pub struct Target<'a> {
    /// API group.
    pub group: &'a str,
    /// Version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Kind.
    pub kind: &'a str,
}

/// Everything a review request carries.
pub struct ReviewRequest<'a> {
    /// `v1` or `v1beta1`.
    pub version: &'a str,
    /// The request's uid (one per webhook call).
    pub uid: &'a str,
    /// What the webhook is told the resource is.
    pub target: Target<'a>,
    /// What the client asked for.
    pub request: Target<'a>,
    /// Subresource or `""`.
    pub subresource: &'a str,
    /// Name.
    pub name: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// `CREATE`...
    pub operation: &'a str,
    /// authentication/v1 UserInfo.
    pub user: Option<&'a Value>,
    /// The new object (`null` on delete).
    pub object: &'a Value,
    /// The old object (`null` on create).
    pub old_object: &'a Value,
    /// dry-run.
    pub dry_run: bool,
    /// The operation's options.
    pub options: &'a Value,
}

fn gvk(t: &Target<'_>) -> Value {
    json!({"group": t.group, "version": t.version, "kind": t.kind})
}

fn gvr(t: &Target<'_>) -> Value {
    json!({"group": t.group, "version": t.version, "resource": t.resource})
}

impl ReviewRequest<'_> {
    /// The `request` member (also what matchConditions see as `request`).
    pub fn request_json(&self) -> Value {
        let mut r = json!({
            "uid": self.uid,
            "kind": gvk(&self.target),
            "resource": gvr(&self.target),
            "requestKind": gvk(&self.request),
            "requestResource": gvr(&self.request),
            "operation": self.operation,
            "userInfo": self.user.cloned().unwrap_or_else(|| json!({})),
            "object": self.object,
            "oldObject": self.old_object,
            "dryRun": self.dry_run,
            "options": self.options,
        });
        let m = r.as_object_mut().expect("a literal object");
        if !self.subresource.is_empty() {
            m.insert("subResource".into(), json!(self.subresource));
            m.insert("requestSubResource".into(), json!(self.subresource));
        }
        if !self.name.is_empty() {
            m.insert("name".into(), json!(self.name));
        }
        if !self.namespace.is_empty() {
            m.insert("namespace".into(), json!(self.namespace));
        }
        r
    }

    /// The whole AdmissionReview.
    pub fn review(&self, request: Value) -> Value {
        json!({
            "apiVersion": format!("admission.k8s.io/{}", self.version),
            "kind": "AdmissionReview",
            "request": request,
        })
    }
}

/// The status a webhook denied with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Denial {
    /// HTTP code (at least 400, as kube forces).
    pub code: u16,
    /// metav1.StatusReason.
    pub reason: String,
    /// Message.
    pub message: String,
}

/// A believed response.
#[derive(Clone, Debug, Default)]
pub struct Response {
    /// `allowed`.
    pub allowed: bool,
    /// The denial, when not allowed.
    pub denial: Denial,
    /// The decoded JSONPatch, when one was sent.
    pub patch: Option<Value>,
    /// Audit annotations.
    pub audit_annotations: Vec<(String, String)>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// Checks and reads a webhook's answer (VerifyAdmissionResponse): the same AdmissionReview
/// version, the request's uid, a JSONPatch patch only from a mutating webhook.
pub fn verify(body: &[u8], version: &str, uid: &str, mutating: bool) -> Result<Response, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let want = format!("admission.k8s.io/{version}");
    if version == "v1" && (api_version != want || kind != "AdmissionReview") {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(r) = v.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!(
            "expected response.uid=\"{uid}\", got \"{got_uid}\""
        ));
    }
    let allowed = r.get("allowed").and_then(Value::as_bool).unwrap_or(false);
    let patch_type = r.get("patchType").and_then(Value::as_str);
    let patch_b64 = r
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    let patch = match (patch_b64, patch_type) {
        (None, None) => None,
        (Some(_), _) if !mutating => {
            return Err("validating webhooks may not return patches".into());
        }
        (Some(_), None) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (None, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (Some(p), Some("JSONPatch")) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("the webhook's patch is not base64: {e}"))?;
            Some(
                serde_json::from_slice(&bytes)
                    .map_err(|e| format!("the webhook's patch is not JSON: {e}"))?,
            )
        }
        (Some(_), Some(other)) => {
            return Err(format!(
                "webhook returned invalid response.patchType of \"{other}\""
            ));
        }
    };
    let status = r.get("status").cloned().unwrap_or(Value::Null);
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(0);
    let text = |k: &str| {
        status
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let audit_annotations = r
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let warnings = crate::rules::strings(r, "warnings");
    Ok(Response {
        allowed,
        denial: Denial {
            code: if code < 400 { 400 } else { code },
            reason: text("reason"),
            message: text("message"),
        },
        patch,
        audit_annotations,
        warnings,
    })
}

impl Denial {
    /// The message the client gets (kube's ToStatusErr).
    pub fn message_for(&self, webhook: &str) -> String {
        let denied = format!("admission webhook \"{webhook}\" denied the request");
        if !self.message.is_empty() {
            format!("{denied}: {}", self.message)
        } else if !self.reason.is_empty() {
            format!("{denied}: {}", self.reason)
        } else {
            format!("{denied} without explanation")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})).unwrap()
    }

    #[test]
    fn responses_are_checked() {
        let ok = verify(
            &answer(json!({"uid": "u", "allowed": true})),
            "v1",
            "u",
            false,
        )
        .unwrap();
        assert!(ok.allowed && ok.patch.is_none());
        let err = verify(
            &answer(json!({"uid": "x", "allowed": true})),
            "v1",
            "u",
            false,
        )
        .unwrap_err();
        assert_eq!(err, "expected response.uid=\"u\", got \"x\"");
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let err = verify(
            &answer(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"})),
            "v1",
            "u",
            false,
        )
        .unwrap_err();
        assert_eq!(err, "validating webhooks may not return patches");
        let m = verify(
            &answer(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"})),
            "v1",
            "u",
            true,
        )
        .unwrap();
        assert_eq!(m.patch.unwrap()[0]["path"], "/a");
        let wrong = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Status"})).unwrap();
        assert!(
            verify(&wrong, "v1", "u", false)
                .unwrap_err()
                .starts_with("expected webhook response of admission.k8s.io/v1")
        );
    }

    #[test]
    fn denials_read_as_kube_words_them() {
        let d = verify(
            &answer(
                json!({"uid": "u", "allowed": false, "status": {"code": 200, "message": "no"}}),
            ),
            "v1",
            "u",
            false,
        )
        .unwrap();
        assert_eq!(d.denial.code, 400);
        assert_eq!(
            d.denial.message_for("a.b.c"),
            "admission webhook \"a.b.c\" denied the request: no"
        );
        let d = verify(
            &answer(json!({"uid": "u", "allowed": false})),
            "v1",
            "u",
            false,
        )
        .unwrap();
        assert_eq!(
            d.denial.message_for("a.b.c"),
            "admission webhook \"a.b.c\" denied the request without explanation"
        );
    }
}
