//! Hand-written schemas for fields whose CRD schema carries more constraints than the
//! k8s-openapi type describes (the kubebuilder markers on metav1.Condition and resource lists).

use schemars::{Schema, SchemaGenerator, json_schema};

/// The pattern Kubernetes CRDs use for quantities in resource lists.
pub(crate) const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A list of metav1.Condition with the constraints its CRD schema declares.
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "description": "One aspect of the object's current state.",
            "type": "object",
            "properties": {
                "lastTransitionTime": {
                    "description": "When the condition last changed status.",
                    "type": "string",
                    "format": "date-time",
                },
                "message": {
                    "description": "Human-readable detail about the transition; may be empty.",
                    "type": "string",
                    "maxLength": 32768,
                },
                "observedGeneration": {
                    "description": "The metadata.generation the condition was computed from.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                },
                "reason": {
                    "description": "Machine-readable CamelCase reason for the last transition.",
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                },
                "status": {
                    "description": "True, False or Unknown.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                },
                "type": {
                    "description": "The condition type, in CamelCase or foo.example.com/CamelCase.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                },
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        },
    })
}

/// A map of resource names to quantities, as CRDs declare corev1.ResourceList.
pub(crate) fn resource_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "x-kubernetes-int-or-string": true,
            "pattern": QUANTITY_PATTERN,
        },
    })
}
