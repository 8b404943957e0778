//! Storage with etcd v3 semantics: the [`Store`] trait and its backends.

mod error;
mod store;

pub use error::Error;
pub use store::{
    Event, EventKind, KeyValue, RangeRequest, RangeResponse, Revision, Store, WatchItem,
    WatchStream,
};
