//! Storage with etcd v3 semantics: the [`Store`] trait and its backends.
//!
//! Must not depend on Kubernetes or Karmada types, nor on any other crate of this workspace but
//! `component-base` (its metrics registry): it stores bytes under keys.
//!
//! - [`embedded::EmbeddedStore`]: the default, in process, durable in one data directory.
//! - [`etcd::EtcdStore`]: an etcd v3 cluster.
//! - [`transform::TransformingStore`]: values transformed on their way in and out of any
//!   backend (encryption at rest).
//! - [`prefixed::PrefixedStore`]: keys under another root (kube-apiserver's `--etcd-prefix`).
//! - [`metrics::MeteredStore`]: kube-apiserver's `etcd_request_*` metrics around any backend.
//! - [`compactor`]: periodic compaction the way kube-apiserver does it, for either backend.

pub mod compactor;
pub mod embedded;
mod error;
pub mod etcd;
pub mod metrics;
pub mod packed;
pub mod prefixed;
mod store;
pub mod testing;
pub mod transform;

pub use error::Error;
pub use store::{
    Event, EventKind, KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision, Store,
    WatchItem, WatchStream,
};
