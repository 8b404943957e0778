//! The one error type of the storage crate.

use crate::store::{KeyValue, Revision};

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `create` found the key already present.
    #[error("key {key:?} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
        /// The existing value.
        current: Box<KeyValue>,
    },
    /// The key does not exist.
    #[error("key {key:?} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// A compare-and-swap lost: the key's mod_revision is no longer the expected one.
    #[error("key {key:?} was modified: expected revision {expected}, current revision {}", current.mod_revision)]
    Conflict {
        /// The key.
        key: String,
        /// The revision the caller expected.
        expected: Revision,
        /// The key's current value.
        current: Box<KeyValue>,
    },
    /// The requested revision was compacted away.
    #[error("revision {requested} has been compacted (oldest available is {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The compacted revision.
        compacted: Revision,
    },
    /// The requested revision is newer than the store's current revision.
    #[error("revision {requested} is in the future (current is {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The current revision.
        current: Revision,
    },
    /// The value is larger than the store accepts.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The value's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The caller passed arguments the contract does not allow.
    #[error("invalid request: {0}")]
    InvalidArgument(String),
    /// The backend is not reachable or not ready (retrying may help).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A data file is damaged beyond what recovery may repair.
    #[error("storage corrupt: {0}")]
    Corrupt(String),
    /// An I/O error of the embedded backend.
    #[error("storage I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A stored value could not be transformed to or from its stored form (e.g. it was
    /// encrypted with a key the server no longer has); nothing was changed.
    #[error("unable to transform key {key:?}: {message}")]
    Transform {
        /// The key.
        key: String,
        /// Why.
        message: String,
    },
    /// Any other backend failure.
    #[error("storage backend error: {0}")]
    Backend(String),
}

impl Error {
    /// True for a lost compare-and-swap.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }
    /// True when the key was missing.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
    /// True when the revision asked for was compacted.
    pub fn is_compacted(&self) -> bool {
        matches!(self, Error::Compacted { .. })
    }
}
