//! The CertificateApproval admission plugin (plugin/pkg/admission/certificates/approval):
//! changing a CertificateSigningRequest's `approval` subresource (approving or denying it)
//! needs the `approve` verb on `signers` of `certificates.k8s.io` named by the request's
//! signerName, or by its `<domain>/*` wildcard (`IsAuthorizedForSignerName`).

use serde_json::Value;

use super::UserInfo;
use super::attributes::{Attributes, forbidden_error};
use super::rbac::Authorizer;
use crate::error::ApiError;

/// The certificates API group.
const CERTIFICATES_GROUP: &str = "certificates.k8s.io";

/// True when `user` may `verb` requests for `signer` (by name, then by `<domain>/*`).
pub fn authorized_for_signer(
    authz: &Authorizer,
    user: &UserInfo,
    verb: &str,
    signer: &str,
) -> bool {
    let allowed = |name: &str| {
        authz
            .authorize(&Attributes::resource(
                user,
                verb,
                CERTIFICATES_GROUP,
                "signers",
                "",
                "",
                name,
            ))
            .allowed
    };
    if allowed(signer) {
        return true;
    }
    match signer.split_once('/') {
        Some((domain, _)) => allowed(&format!("{domain}/*")),
        None => false,
    }
}

/// Admits an `approval` update of the CertificateSigningRequest `csr` (the new object) by
/// `user`.
pub fn admit(authz: &Authorizer, user: &UserInfo, csr: &Value) -> Result<(), ApiError> {
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if authorized_for_signer(authz, user, "approve", signer) {
        return Ok(());
    }
    let name = csr
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(forbidden_error(
        CERTIFICATES_GROUP,
        "certificatesigningrequests",
        name,
        &format!("user not permitted to approve requests with signerName {signer:?}"),
    ))
}
