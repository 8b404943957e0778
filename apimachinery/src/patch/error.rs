//! The one error type of the patch module and the apply conflict it can carry.

use std::collections::BTreeMap;
use std::fmt;

use super::managed_fields::ManagedFieldsOperation;

/// Why a patch or an apply could not be performed.
///
/// Every variant names the HTTP status kube-apiserver answers with for the same failure
/// (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`); [`PatchError::http_status`] and
/// [`PatchError::reason`] return them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is malformed: a JSON patch that is not an array of operations, a
    /// merge patch that is `null` or a scalar, a strategic merge patch that is not an object or
    /// has a badly formed directive, an apply body with `managedFields` or the wrong
    /// `apiVersion`/`kind`. **400 BadRequest**, the text is the message.
    #[error("{0}")]
    BadRequest(String),

    /// A JSON patch with more than [`MAX_JSON_PATCH_OPERATIONS`](super::MAX_JSON_PATCH_OPERATIONS)
    /// operations. **413 RequestEntityTooLarge**, message
    /// `Request entity too large: The allowed maximum operations in a JSON patch is 10000, got N`.
    #[error("The allowed maximum operations in a JSON patch is {limit}, got {count}")]
    TooManyOperations {
        /// Operations in the rejected patch.
        count: usize,
        /// The limit that was exceeded.
        limit: usize,
    },

    /// Strategic merge patch asked for a kind without a merge table (custom resources, Karmada's
    /// CRD kinds). **415 UnsupportedMediaType**; kube-apiserver rejects these by Content-Type
    /// before decoding, with `the body of the request was in an unknown format - accepted media
    /// types include: ...`.
    #[error("strategic merge patch format is not supported for {0}")]
    UnsupportedMediaType(String),

    /// A well-formed patch that cannot be applied to this object: a JSON patch operation on a
    /// missing path, a failed `test`, a patched document that is no longer an object, a list of
    /// lists in a strategic merge patch. **422 Invalid**; kube-apiserver answers with the generic
    /// message `the server rejected our request due to an error in our request` and drops this
    /// text (it is the `evanphx/json-patch` error), see [`PatchError::status_message`].
    #[error("{0}")]
    Invalid(String),

    /// Server-side apply found fields owned by other managers whose values would change.
    /// **409 Conflict** with `details.causes[]` of reason `FieldManagerConflict`, one per
    /// conflict ([`Conflict::cause_message`], [`Conflict::field`]).
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),

    /// The patch could not be merged for a reason kube-apiserver does not classify (a list item
    /// without its merge key, an unknown `$patch` value, duplicate keys in an applied associative
    /// list). kube-apiserver passes these through as a plain error: **500**, reason empty
    /// (`Unknown`), the text is the message.
    #[error("{0}")]
    Internal(String),
}

/// Server-side apply reports its failures with the same type.
pub type ApplyError = PatchError;

impl PatchError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::Invalid(_) => 422,
            PatchError::Conflicts(_) => 409,
            PatchError::Internal(_) => 500,
        }
    }

    /// The `metav1.Status` reason kube-apiserver uses for this error (empty for `Unknown`).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::TooManyOperations { .. } => "RequestEntityTooLarge",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::Invalid(_) => "Invalid",
            PatchError::Conflicts(_) => "Conflict",
            PatchError::Internal(_) => "",
        }
    }

    /// The `metav1.Status` message kube-apiserver sends for this error.
    pub fn status_message(&self) -> String {
        match self {
            // errors.NewRequestEntityTooLargeError prefixes its message.
            PatchError::TooManyOperations { .. } => format!("Request entity too large: {self}"),
            // errors.NewGenericServerResponse(422, ...) replaces the message.
            PatchError::Invalid(_) => {
                "the server rejected our request due to an error in our request".to_string()
            }
            _ => self.to_string(),
        }
    }
}

/// One field that server-side apply would take from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The `manager` of the managedFields entry that owns the field.
    pub manager: String,
    /// The `operation` of that entry.
    pub operation: ManagedFieldsOperation,
    /// The `apiVersion` of that entry.
    pub api_version: String,
    /// The `subresource` of that entry, if any.
    pub subresource: Option<String>,
    /// The field, in structured-merge-diff path form: `.data.a`,
    /// `.spec.containers[name="nginx"].image`.
    pub field: String,
}

impl Conflict {
    /// `conflict with "kubectl-client-side-apply" using v1`: the message of this conflict's
    /// `FieldManagerConflict` status cause.
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", self.manager_label())
    }

    /// How kube-apiserver names the manager (`printManager` in
    /// `k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go`).
    fn manager_label(&self) -> String {
        let mut label = format!("{:?}", self.manager);
        if let Some(subresource) = &self.subresource {
            label.push_str(&format!(" with subresource {subresource:?}"));
        }
        if self.operation == ManagedFieldsOperation::Update {
            label.push_str(&format!(" using {}", self.api_version));
        }
        label
    }

    /// Sort key matching the manager identifier kube-apiserver sorts by.
    fn manager_key(&self) -> (String, &'static str, String, String) {
        let api_version = match self.operation {
            ManagedFieldsOperation::Apply => String::new(),
            ManagedFieldsOperation::Update => self.api_version.clone(),
        };
        (
            self.manager.clone(),
            self.operation.as_str(),
            api_version,
            self.subresource.clone().unwrap_or_default(),
        )
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.cause_message(), self.field)
    }
}

/// The message of an apply conflict error (`getConflictMessage` in
/// `k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go`).
fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!("Apply failed with 1 conflict: {only}");
    }
    let mut by_manager: BTreeMap<_, (String, Vec<&str>)> = BTreeMap::new();
    for conflict in conflicts {
        by_manager
            .entry(conflict.manager_key())
            .or_insert_with(|| (conflict.manager_label(), Vec::new()))
            .1
            .push(&conflict.field);
    }
    let mut lines = Vec::new();
    for (label, fields) in by_manager.values() {
        lines.push(format!("conflicts with {label}:"));
        lines.extend(fields.iter().map(|field| format!("- {field}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
