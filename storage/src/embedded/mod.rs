//! The embedded backend: etcd semantics in process, durable in one data directory.
//!
//! Reads are served from an in-memory MVCC state (`mvcc`); writes go through a single
//! writer thread (`writer`) that group-commits them to an append-only log (`wal`) and
//! publishes them only once synced. The log is periodically replaced by a snapshot
//! (`snapshot`); opening a directory loads the snapshot and replays the log
//! (`recovery`). Watches read the shared history (`watch`).

mod mvcc;
mod record;
mod recovery;
mod snapshot;
mod wal;
mod watch;
mod writer;

use std::fs::{self, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, mpsc};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::oneshot;

use crate::Error;
use crate::store::{
    KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision, Store, WatchStream,
};

use self::mvcc::Mvcc;
use self::writer::{Op, Reply, Request, Writer, WriterConfig};

/// Largest key the embedded store accepts.
pub const MAX_KEY_BYTES: usize = 64 << 10;

/// Tuning of the embedded store. The defaults suit a control plane of up to a few
/// hundred thousand objects.
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// Largest value accepted; bigger ones fail with [`Error::TooLarge`] (default 4 MiB).
    pub max_value_bytes: usize,
    /// History kept for watches and past-revision reads: at most this many revisions
    /// (default 100,000); older ones are compacted automatically.
    pub history_max_revisions: usize,
    /// History kept: at most about this many bytes of superseded values (as kept in memory,
    /// packed) and bookkeeping (default 16 MiB); older revisions are compacted automatically. Its readers are the
    /// API server's watch caches, which follow it closely, and reads at a revision their
    /// windows no longer cover.
    pub history_max_bytes: usize,
    /// A snapshot is written and the log restarted once the log has grown by this many
    /// bytes, or by the size of the last snapshot if that is larger (default 64 MiB).
    pub snapshot_log_bytes: u64,
    /// How soon a watcher whose prefix is quiet is told that the store moved on
    /// ([`WatchItem::Progress`](crate::WatchItem::Progress)); default 500 ms.
    pub progress_interval: Duration,
    /// Acknowledge writes once they are in the log file, without waiting for stable storage
    /// (default false), as etcd's `--unsafe-no-fsync`: a crashed process loses nothing (the
    /// kernel still has the data), a crashed machine may lose the latest writes. For
    /// disposable stores such as simulated members'; never for a control plane whose data
    /// matters.
    pub unsafe_no_fsync: bool,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions {
            max_value_bytes: 4 << 20,
            history_max_revisions: 100_000,
            history_max_bytes: 16 << 20,
            snapshot_log_bytes: 64 << 20,
            progress_interval: Duration::from_millis(500),
            unsafe_no_fsync: false,
        }
    }
}

/// Counters describing the embedded store's state (for metrics and benchmarks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedStats {
    /// Keys currently stored.
    pub keys: usize,
    /// The current revision.
    pub revision: Revision,
    /// The compacted revision.
    pub compacted: Revision,
    /// Revisions of history retained.
    pub history_revisions: usize,
    /// Approximate bytes the history holds on its own.
    pub history_bytes: usize,
}

/// State shared by the store handle, the writer thread and the watchers.
pub(crate) struct Shared {
    state: RwLock<Mvcc>,
    /// The latest published (durable) revision; watchers wait on it.
    rev_rx: tokio::sync::watch::Receiver<Revision>,
    /// Why writes are refused after an I/O failure (None while healthy).
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, Mvcc> {
        // The state is only changed by whole `apply` calls; a panic elsewhere cannot leave
        // it half-updated, so a poisoned lock is still consistent.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Mvcc> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_failure(&self, why: String) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The embedded store. Open it with [`EmbeddedStore::open`].
pub struct EmbeddedStore {
    shared: Arc<Shared>,
    tx: Mutex<Option<mpsc::Sender<Request>>>,
    dir: PathBuf,
    opts: EmbeddedOptions,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir`, recovering it after a crash. The
    /// directory is locked until the store is closed or dropped. Blocks while it loads
    /// the data (well under a second for 100,000 keys).
    pub fn open(dir: &Path, opts: EmbeddedOptions) -> Result<Arc<EmbeddedStore>, Error> {
        if opts.max_value_bytes == 0 || opts.max_value_bytes > 256 << 20 {
            return Err(Error::InvalidArgument(format!(
                "max_value_bytes must be between 1 and 256 MiB, not {}",
                opts.max_value_bytes
            )));
        }
        fs::create_dir_all(dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("LOCK"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Unavailable(format!(
                    "data directory {} is in use by another store",
                    dir.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(e.into()),
        }
        let rec = recovery::recover(
            dir,
            opts.history_max_revisions,
            opts.history_max_bytes,
            writer::segment_capacity(opts.snapshot_log_bytes),
        )?;
        tracing::info!(
            dir = %dir.display(),
            keys = rec.mvcc.len(),
            revision = rec.mvcc.current(),
            "embedded store opened"
        );
        let (rev_tx, rev_rx) = tokio::sync::watch::channel(rec.mvcc.current());
        let shared = Arc::new(Shared {
            state: RwLock::new(rec.mvcc),
            rev_rx,
            failure: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel();
        let writer = Writer::new(
            shared.clone(),
            rx,
            rev_tx,
            rec.log,
            WriterConfig {
                dir: dir.to_path_buf(),
                snapshot_wal_bytes: opts.snapshot_log_bytes,
                history_max_revisions: opts.history_max_revisions,
                history_max_bytes: opts.history_max_bytes,
                durable: !opts.unsafe_no_fsync,
            },
            lock,
        );
        writer::spawn(writer)?;
        Ok(Arc::new(EmbeddedStore {
            shared,
            tx: Mutex::new(Some(tx)),
            dir: dir.to_path_buf(),
            opts,
        }))
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &EmbeddedOptions {
        &self.opts
    }

    /// Current counters.
    pub fn stats(&self) -> EmbeddedStats {
        let st = self.shared.read();
        EmbeddedStats {
            keys: st.len(),
            revision: st.current(),
            compacted: st.compacted(),
            history_revisions: st.history_len(),
            history_bytes: st.history_bytes(),
        }
    }

    /// Finishes pending writes, releases the data directory and stops the writer. Later
    /// writes fail with [`Error::Unavailable`]; watches end. Reads keep working.
    pub async fn close(&self) -> Result<(), Error> {
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(tx) = tx else { return Ok(()) };
        let (reply, rx) = oneshot::channel();
        if tx
            .send(Request {
                op: Op::Close,
                reply,
            })
            .is_err()
        {
            return Ok(());
        }
        drop(tx);
        let _ = rx.await;
        Ok(())
    }

    async fn submit(&self, op: Op) -> Result<Reply, Error> {
        let (reply, rx) = oneshot::channel();
        {
            let guard = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(tx) = guard.as_ref() else {
                return Err(closed());
            };
            tx.send(Request { op, reply }).map_err(|_| closed())?;
        }
        rx.await.map_err(|_| closed())?
    }

    fn check_write(&self, key: &str, value: Option<&Bytes>) -> Result<(), Error> {
        check_key(key)?;
        if let Some(v) = value
            && v.len() > self.opts.max_value_bytes
        {
            return Err(Error::TooLarge {
                size: v.len(),
                limit: self.opts.max_value_bytes,
            });
        }
        Ok(())
    }
}

fn closed() -> Error {
    Error::Unavailable("the embedded store is closed".into())
}

fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() {
        return Err(Error::InvalidArgument("empty key".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_BYTES} bytes",
            key.len()
        )));
    }
    Ok(())
}

/// A private copy of a value: the store keeps values for a long time and must not pin a
/// larger buffer the caller's bytes may be a slice of.
fn own(value: Bytes) -> Bytes {
    Bytes::copy_from_slice(&value)
}

fn unexpected(reply: Reply) -> Error {
    Error::Backend(format!("unexpected writer reply {reply:?}"))
}

/// The bytes of every file under `dir`.
fn files_size(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            files_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[async_trait]
impl Store for EmbeddedStore {
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error> {
        let st = self.shared.read();
        Ok((st.get(key), st.current()))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error> {
        self.shared.read().range(&req)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, Error> {
        self.check_write(key, Some(&value))?;
        let op = Op::Create {
            key: key.to_owned(),
            packed: crate::packed::pack(&value),
            value: own(value),
        };
        match self.submit(op).await? {
            Reply::Kv(kv) => Ok(kv),
            other => Err(unexpected(other)),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue, Error> {
        self.check_write(key, Some(&value))?;
        if expected <= 0 {
            return Err(Error::InvalidArgument(format!(
                "update of {key:?} needs the expected mod_revision, not {expected}"
            )));
        }
        let op = Op::Update {
            key: key.to_owned(),
            packed: crate::packed::pack(&value),
            value: own(value),
            expected,
        };
        match self.submit(op).await? {
            Reply::Kv(kv) => Ok(kv),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error> {
        self.check_write(key, None)?;
        if expected < 0 {
            return Err(Error::InvalidArgument(format!(
                "negative expected revision {expected}"
            )));
        }
        let op = Op::Delete {
            key: key.to_owned(),
            expected,
        };
        match self.submit(op).await? {
            Reply::Deleted(kv, rev) => Ok((kv, rev)),
            other => Err(unexpected(other)),
        }
    }

    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
        let next = self.shared.read().watch_start(after)?;
        let (requester, requested) = ProgressRequester::new();
        let stream = watch::watch_stream(
            self.shared.clone(),
            prefix.to_owned(),
            next,
            self.opts.progress_interval,
            requested,
        );
        Ok((stream, Some(requester)))
    }

    async fn current_revision(&self) -> Result<Revision, Error> {
        Ok(self.shared.read().current())
    }

    async fn compact(&self, revision: Revision) -> Result<(), Error> {
        match self.submit(Op::Compact { rev: revision }).await? {
            Reply::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, Error> {
        Ok(self.shared.read().compacted())
    }

    async fn db_size(&self) -> Result<u64, Error> {
        // The log segments and snapshots; read off the runtime's threads.
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || files_size(&dir))
            .await
            .map_err(|e| Error::Unavailable(format!("measuring the store's files: {e}")))?
            .map_err(Error::from)
    }

    async fn health(&self) -> Result<(), Error> {
        let closed = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none();
        if closed {
            return Err(self::closed());
        }
        match self.shared.failure() {
            Some(why) => Err(Error::Unavailable(why)),
            None => Ok(()),
        }
    }

    async fn close(&self) -> Result<(), Error> {
        // The inherent method: pending writes finish, the writer stops.
        EmbeddedStore::close(self).await
    }
}
