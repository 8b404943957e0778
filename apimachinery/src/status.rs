//! Parts of `metav1.Status` that validation produces without knowing how the server writes
//! errors (k8s.io/apimachinery/pkg/apis/meta/v1's StatusCause).

/// One field problem of an Invalid (422) error, as metav1.StatusCause.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// e.g. `FieldValueRequired`.
    pub reason: String,
    /// e.g. `Required value`.
    pub message: String,
    /// e.g. `metadata.name`.
    pub field: String,
}
