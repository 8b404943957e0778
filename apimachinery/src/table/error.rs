//! The error type of the table module.

use super::format::go_quote;

/// Why a Table could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// `?includeObject=` carried something other than `Metadata`, `Object`, `None` or nothing.
    /// kube-apiserver answers 400 BadRequest with this message (handlers/response.go
    /// `optionsForTransform` + `ValidateTableOptions`).
    #[error(
        "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
        go_quote(.0)
    )]
    InvalidIncludeObject(String),

    /// A printer column's JSONPath does not parse (apiextensions tableconvertor `New`).
    #[error("unrecognized column definition {}", go_quote(.json_path))]
    InvalidColumn {
        /// The offending JSONPath, as written in the column definition.
        json_path: String,
        /// What the parser complained about.
        reason: String,
    },

    /// A JSONPath expression failed to parse or to evaluate.
    #[error("{0}")]
    JsonPath(String),
}

impl TableError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn code(&self) -> u16 {
        match self {
            TableError::InvalidIncludeObject(_) => 400,
            TableError::InvalidColumn { .. } | TableError::JsonPath(_) => 500,
        }
    }

    /// The metav1.Status `reason` kube-apiserver uses for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            TableError::InvalidIncludeObject(_) => "BadRequest",
            TableError::InvalidColumn { .. } | TableError::JsonPath(_) => "InternalError",
        }
    }
}
