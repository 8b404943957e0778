//! The storage contract: etcd v3 semantics, whatever the backend.
//!
//! Every backend (embedded, etcd) implements [`Store`]; the conformance suite in
//! `storage/tests/conformance/` runs unchanged against each of them.

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use tokio::sync::Notify;

use crate::Error;

/// A store revision. Strictly increasing across all keys; 0 means "none".
pub type Revision = i64;

/// One key and its value at some revision, as etcd's `mvccpb.KeyValue`.
#[derive(Clone, Debug)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/configmaps/default/c1`.
    pub key: String,
    /// The raw value (JSON for the API server).
    pub value: Bytes,
    /// The value as the store keeps it in memory, when that is packed
    /// ([`crate::packed`]): a reader that holds on to the value may keep this instead of
    /// `value` and share the store's copy. None when the store keeps `value` itself.
    pub packed: Option<Bytes>,
    /// The value was read through a [`crate::transform::ValueTransformer`] that would not
    /// write it the same way today (kube's `stale` from TransformFromStorage: e.g. encrypted
    /// with a key that is no longer the first): an update must rewrite it even when unchanged.
    pub stale: bool,
    /// Revision of the write that created the key (since its last deletion).
    pub create_revision: Revision,
    /// Revision of the last write to the key.
    pub mod_revision: Revision,
    /// Number of writes since the key was created (1 after create).
    pub version: i64,
}

/// Two key-values are equal when key, value and revisions are: how a store keeps the value
/// in memory is not part of it.
impl PartialEq for KeyValue {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && self.value == other.value
            && self.create_revision == other.create_revision
            && self.mod_revision == other.mod_revision
            && self.version == other.version
    }
}

impl Eq for KeyValue {}

/// What to read: either one key or every key under a prefix.
#[derive(Clone, Debug, Default)]
pub struct RangeRequest {
    /// Keys starting with this prefix. For a single key use [`Store::get`].
    pub prefix: String,
    /// Only keys strictly greater than this one (used to continue a paged list).
    /// Must start with `prefix` when set.
    pub start_after: Option<String>,
    /// At most this many keys; 0 means no limit.
    pub limit: usize,
    /// Read at this past revision; 0 means the current one.
    /// Older than the compacted revision gives [`Error::Compacted`]; newer than the
    /// current revision gives [`Error::FutureRevision`].
    pub revision: Revision,
}

/// The answer to a [`RangeRequest`].
#[derive(Clone, Debug, Default)]
pub struct RangeResponse {
    /// Matching keys in ascending key order.
    pub kvs: Vec<KeyValue>,
    /// True when `limit` cut the result short.
    pub more: bool,
    /// Number of keys under the prefix after `start_after` at that revision, including the
    /// ones returned (etcd's `count`). Used for `remainingItemCount`.
    pub count: usize,
    /// The store's current revision when the read was served (etcd's header revision),
    /// also for a read at a past revision.
    pub revision: Revision,
}

/// The kind of change a watch event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or updated; `kv` is the new value.
    Put,
    /// The key was deleted; `kv.mod_revision` is the delete's revision and `kv.value` is empty.
    Delete,
}

/// One change seen by a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Put or Delete.
    pub kind: EventKind,
    /// The key after the change (for Delete: key, empty value, mod_revision = delete revision).
    pub kv: KeyValue,
    /// The key's value before the change (None for a create).
    pub prev: Option<KeyValue>,
}

/// An item of a watch stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchItem {
    /// Changes, in revision order. All events of one transaction arrive in one batch (Atomic).
    Events(Vec<Event>),
    /// Bookmark: every change under the watched prefix up to and including this revision
    /// has been delivered. Sent when the watcher is caught up and the store has moved past
    /// the last revision it reported: by the embedded store within
    /// `EmbeddedOptions::progress_interval`, over etcd at the server's
    /// `--experimental-watch-progress-notify-interval` (10 minutes by default); and in
    /// answer to a [`ProgressRequester`].
    Progress(Revision),
}

/// A watch: an endless stream of changes. It ends with an `Err(Error::Compacted{..})`
/// when it can no longer deliver every change (e.g. it fell too far behind and the
/// history it needs was compacted), and with other errors only when the backend is gone.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchItem, Error>> + Send>>;

/// Asks one watch for a progress report, as etcd's `RequestProgress`: soon after a request,
/// once every change up to the store's revision at the time of the request was delivered, the
/// stream yields `WatchItem::Progress` with a revision at least that high (unless events
/// already took it there). Requests made while one is pending fold into it.
#[derive(Clone, Debug)]
pub struct ProgressRequester(Arc<Notify>);

impl ProgressRequester {
    /// A requester and the signal its watch listens to.
    pub(crate) fn new() -> (ProgressRequester, Arc<Notify>) {
        let signal = Arc::new(Notify::new());
        (ProgressRequester(signal.clone()), signal)
    }

    /// Asks for a progress report.
    pub fn request(&self) {
        self.0.notify_one();
    }
}

/// A key-value store with etcd v3 semantics: MVCC revisions, compare-and-swap writes,
/// ranged reads at past revisions, and resumable watches.
///
/// Every write is acknowledged only once durable.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Reads one key at the current revision. Returns the value (if any) and the revision
    /// the read was served at.
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error>;

    /// Reads keys under a prefix, optionally paged and at a past revision.
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error>;

    /// Creates `key` only if it does not exist. Returns the new key-value.
    /// Fails with [`Error::AlreadyExists`] (carrying the current key-value) otherwise,
    /// [`Error::TooLarge`] for a value over the backend's limit, and
    /// [`Error::InvalidArgument`] for an empty key.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, Error>;

    /// Replaces the value of `key` only if its mod_revision equals `expected` (which must
    /// be > 0, else [`Error::InvalidArgument`]).
    /// Fails with [`Error::NotFound`] if the key does not exist and [`Error::Conflict`]
    /// (carrying the current key-value) if it changed.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue, Error>;

    /// Deletes `key` only if its mod_revision equals `expected` (0: unconditionally).
    /// Returns the deleted key-value (with its last value) and the delete's revision.
    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error>;

    /// Watches every key under `prefix` for changes with revision > `after`
    /// (`after` = 0: from now on; `after` beyond the current revision is allowed and
    /// waits for it). Events carry the previous value.
    /// Fails with [`Error::Compacted`] if `after` + 1 is older than the compacted revision;
    /// when a compaction races with the call, the stream's first item is that error instead.
    ///
    /// Guarantees (as etcd's robustness tests name them): Ordered (revision order),
    /// Unique (each event once), Atomic (a transaction's events together), Reliable (no
    /// gaps), Resumable (watching again from the last delivered revision continues
    /// exactly), Bookmarkable (progress revisions are exact).
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, Error> {
        Ok(self.watch_with_progress(prefix, after).await?.0)
    }

    /// [`Store::watch`], with a handle that asks the stream for a progress report. None when
    /// the backend cannot answer such requests in order with the events (etcd before 3.4.31
    /// and 3.5.13 sends the answer ahead of events still pending): then only events and the
    /// backend's own progress notifications tell how far the stream has come.
    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error>;

    /// The current revision of the whole store.
    async fn current_revision(&self) -> Result<Revision, Error>;

    /// Drops history older than `revision`, as etcd's compaction: reads at `revision`
    /// still work and a watch after `revision - 1` still starts; older ones fail with
    /// [`Error::Compacted`]. A revision at or below the compacted one is a no-op; one
    /// beyond the current revision fails with [`Error::FutureRevision`].
    async fn compact(&self, revision: Revision) -> Result<(), Error>;

    /// The oldest revision still readable (the compacted revision; 0 when never compacted).
    async fn compacted_revision(&self) -> Result<Revision, Error>;

    /// Checks that the backend can serve requests (for `/readyz`).
    async fn health(&self) -> Result<(), Error>;

    /// How many bytes the database takes on disk (kube's `apiserver_storage_size_bytes`):
    /// etcd's `dbSize` as its Maintenance Status reports it, the embedded store's files.
    async fn db_size(&self) -> Result<u64, Error>;

    /// Finishes pending writes and stops accepting new ones (at the server's shutdown);
    /// reads keep working.
    async fn close(&self) -> Result<(), Error>;
}
