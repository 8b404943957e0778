//! The single writer: drains the request queue in batches (group commit), validates each
//! compare-and-swap against the latest state including earlier writes of the same batch,
//! appends the batch to the log and syncs it, and only then publishes it to readers and
//! watchers and acknowledges it. Runs on its own OS thread: it does blocking I/O.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::thread::JoinHandle;

use bytes::Bytes;
use tokio::sync::{oneshot, watch};

use crate::Error;
use crate::store::{KeyValue, Revision};

use super::Shared;
use super::mvcc::{Entry, HistEvent};
use super::recovery::LogTail;
use super::snapshot::{SnapshotHeader, parse_snapshot_name, write_snapshot};
use super::wal::{LogOp, Segment, encode_batch, parse_segment_name, sync_dir};

/// Most requests one batch takes.
const MAX_BATCH_OPS: usize = 4096;
/// A batch stops taking requests once its values reach this size.
const MAX_BATCH_BYTES: usize = 16 << 20;
/// History events released per batch: more than a batch adds, so the history converges
/// to its bound, but few enough that a large compaction never stalls a batch for long.
const MAX_DROPS_PER_BATCH: usize = 2 * MAX_BATCH_OPS;
/// A log write and sync slower than this is reported.
const SLOW_SYNC: std::time::Duration = std::time::Duration::from_secs(1);
/// Keys a snapshot copies per read lock.
const SNAPSHOT_PART_KEYS: usize = 4096;

/// Releases the history pinned for a snapshot, however the snapshot ends.
struct Unpin(Arc<Shared>);

impl Drop for Unpin {
    fn drop(&mut self) {
        self.0.write().unpin();
    }
}

/// A write request.
pub(crate) enum Op {
    /// `packed` is the value's packed form (see `crate::packed`), made by the caller so the
    /// writer thread, which every write goes through, does not spend its time compressing.
    Create {
        key: String,
        value: Bytes,
        packed: Option<Bytes>,
    },
    Update {
        key: String,
        value: Bytes,
        packed: Option<Bytes>,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Revision,
    },
    Compact {
        rev: Revision,
    },
    /// Stop after this batch, release the data directory, then reply.
    Close,
}

impl Op {
    fn size(&self) -> usize {
        match self {
            Op::Create { key, value, .. } | Op::Update { key, value, .. } => {
                key.len() + value.len()
            }
            Op::Delete { key, .. } => key.len(),
            Op::Compact { .. } | Op::Close => 0,
        }
    }
}

/// What a successful write returns.
#[derive(Debug)]
pub(crate) enum Reply {
    Kv(KeyValue),
    Deleted(KeyValue, Revision),
    Done,
}

/// A request and where to send its outcome.
pub(crate) struct Request {
    pub op: Op,
    pub reply: oneshot::Sender<Result<Reply, Error>>,
}

/// The decision for one request of a batch: an event (with the packed form of its new value,
/// which the state keeps instead of the value), ...
enum Outcome {
    Event(HistEvent, Option<Bytes>),
    Compact(Revision),
    Noop,
    Fail(Error),
}

/// Configuration the writer needs.
pub(crate) struct WriterConfig {
    pub dir: PathBuf,
    pub snapshot_wal_bytes: u64,
    pub history_max_revisions: usize,
    pub history_max_bytes: usize,
    /// Whether each log append waits for stable storage (see `EmbeddedOptions`).
    pub durable: bool,
}

/// The writer thread's state.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    rx: Receiver<Request>,
    rev_tx: watch::Sender<Revision>,
    segment: Segment,
    cfg: WriterConfig,
    /// Log bytes appended since the last snapshot.
    wal_bytes: u64,
    last_snapshot_bytes: u64,
    snapshot_job: Option<JoinHandle<Result<u64, Error>>>,
    /// Set after an I/O failure: the log can no longer be trusted, writes are refused.
    failed: Option<String>,
    buf: Vec<u8>,
    /// Holds the data directory's lock for as long as the writer runs.
    _lock: std::fs::File,
}

impl Writer {
    pub fn new(
        shared: Arc<Shared>,
        rx: Receiver<Request>,
        rev_tx: watch::Sender<Revision>,
        log: LogTail,
        cfg: WriterConfig,
        lock: std::fs::File,
    ) -> Self {
        Writer {
            shared,
            rx,
            rev_tx,
            segment: log.segment,
            cfg,
            wal_bytes: log.wal_bytes,
            last_snapshot_bytes: log.snapshot_bytes,
            snapshot_job: None,
            failed: None,
            buf: Vec::with_capacity(1 << 20),
            _lock: lock,
        }
    }

    /// Serves requests until the store is closed or dropped.
    pub fn run(mut self) {
        let mut close_replies = Vec::new();
        while let Ok(first) = self.rx.recv() {
            let mut batch = vec![first];
            let mut bytes = batch[0].op.size();
            while batch.len() < MAX_BATCH_OPS && bytes < MAX_BATCH_BYTES {
                match self.rx.try_recv() {
                    Ok(req) => {
                        bytes += req.op.size();
                        batch.push(req);
                    }
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            if let Some(pos) = batch.iter().position(|r| matches!(r.op, Op::Close)) {
                // Requests behind the close are refused; the close waits for the others.
                for req in batch.drain(pos..) {
                    match req.op {
                        Op::Close => close_replies.push(req.reply),
                        _ => {
                            let _ = req.reply.send(Err(closed()));
                        }
                    }
                }
                self.process(batch);
                break;
            }
            self.process(batch);
        }
        // Refuse whatever is still queued.
        while let Ok(req) = self.rx.try_recv() {
            let _ = req.reply.send(Err(closed()));
        }
        if let Some(job) = self.snapshot_job.take() {
            finish_snapshot(job);
        }
        drop(self);
        for reply in close_replies {
            let _ = reply.send(Ok(Reply::Done));
        }
    }

    fn process(&mut self, batch: Vec<Request>) {
        if batch.is_empty() {
            return;
        }
        if let Some(why) = &self.failed {
            for req in batch {
                let _ = req.reply.send(Err(Error::Unavailable(why.clone())));
            }
            return;
        }
        let (outcomes, replies) = self.decide(batch);

        let logged = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Event(..) | Outcome::Compact(_)))
            .count();
        if logged > 0 {
            self.buf.clear();
            encode_batch(
                &mut self.buf,
                outcomes
                    .iter()
                    .filter_map(log_op)
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            let started = std::time::Instant::now();
            let appended = self.segment.append(&self.buf, self.cfg.durable);
            let took = started.elapsed();
            if took > SLOW_SYNC {
                // As etcd's "slow fdatasync" warning: the disk is too slow for the load.
                tracing::warn!(took = ?took, bytes = self.buf.len(), "slow log write and sync");
            }
            if let Err(e) = appended {
                let why = format!("log write failed, refusing further writes: {e}");
                tracing::error!(path = %self.segment.path().display(), error = %e, "embedded store log write failed");
                self.failed = Some(why.clone());
                self.shared.set_failure(why.clone());
                for reply in replies {
                    let _ = reply.send(Err(Error::Unavailable(why.clone())));
                }
                return;
            }
            self.wal_bytes += self.buf.len() as u64;
        }

        // Durable: publish to readers and watchers, then acknowledge. The state keeps new
        // values packed when they pack.
        if logged > 0 {
            let current = {
                let mut st = self.shared.write();
                for o in &outcomes {
                    match o {
                        Outcome::Event(ev, packed) => st.apply(HistEvent {
                            new: ev.new.clone().map(|new| match packed {
                                Some(p) => Entry {
                                    value: p.clone(),
                                    packed: true,
                                    ..new
                                },
                                None => new,
                            }),
                            ..ev.clone()
                        }),
                        Outcome::Compact(rev) => {
                            st.compact(*rev);
                        }
                        Outcome::Noop | Outcome::Fail(_) => {}
                    }
                }
                st.enforce_bounds(
                    self.cfg.history_max_revisions,
                    self.cfg.history_max_bytes,
                    MAX_DROPS_PER_BATCH,
                );
                st.current()
            };
            self.rev_tx.send_replace(current);
        }
        for (outcome, reply) in outcomes.into_iter().zip(replies) {
            let result = match outcome {
                Outcome::Event(ev, _) => Ok(reply_for(&ev)),
                Outcome::Compact(_) | Outcome::Noop => Ok(Reply::Done),
                Outcome::Fail(e) => Err(e),
            };
            let _ = reply.send(result);
        }

        self.maybe_snapshot();
    }

    /// Validates every request of the batch in order against the latest state.
    fn decide(
        &self,
        batch: Vec<Request>,
    ) -> (Vec<Outcome>, Vec<oneshot::Sender<Result<Reply, Error>>>) {
        let st = self.shared.read();
        let mut rev = st.current();
        // Entries written earlier in this batch (None: deleted), keyed by interned key.
        let mut overlay: HashMap<Arc<str>, Option<Entry>> = HashMap::new();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        for req in batch {
            replies.push(req.reply);
            let lookup = |key: &str, overlay: &HashMap<Arc<str>, Option<Entry>>| match overlay
                .get_key_value(key)
            {
                Some((k, e)) => (k.clone(), e.clone()),
                None => st.lookup(key),
            };
            let outcome = match req.op {
                Op::Create { key, value, packed } => {
                    let (k, cur) = lookup(&key, &overlay);
                    match cur {
                        Some(cur) => Outcome::Fail(Error::AlreadyExists {
                            current: Box::new(cur.to_kv(&key)),
                            key,
                        }),
                        None => {
                            rev += 1;
                            // Plain: the log writes it and the reply returns it; the state
                            // gets it packed (see `process`).
                            let new = Entry {
                                value,
                                packed: false,
                                create_rev: rev,
                                mod_rev: rev,
                                version: 1,
                            };
                            overlay.insert(k.clone(), Some(new.clone()));
                            Outcome::Event(
                                HistEvent {
                                    rev,
                                    key: k,
                                    new: Some(new),
                                    prev: None,
                                },
                                packed,
                            )
                        }
                    }
                }
                Op::Update {
                    key,
                    value,
                    packed,
                    expected,
                } => {
                    let (k, cur) = lookup(&key, &overlay);
                    match cur {
                        None => Outcome::Fail(Error::NotFound { key }),
                        Some(cur) if cur.mod_rev != expected => Outcome::Fail(Error::Conflict {
                            current: Box::new(cur.to_kv(&key)),
                            key,
                            expected,
                        }),
                        Some(cur) => {
                            rev += 1;
                            let new = Entry {
                                value,
                                packed: false,
                                create_rev: cur.create_rev,
                                mod_rev: rev,
                                version: cur.version + 1,
                            };
                            overlay.insert(k.clone(), Some(new.clone()));
                            Outcome::Event(
                                HistEvent {
                                    rev,
                                    key: k,
                                    new: Some(new),
                                    prev: Some(cur),
                                },
                                packed,
                            )
                        }
                    }
                }
                Op::Delete { key, expected } => {
                    let (k, cur) = lookup(&key, &overlay);
                    match cur {
                        None => Outcome::Fail(Error::NotFound { key }),
                        Some(cur) if expected != 0 && cur.mod_rev != expected => {
                            Outcome::Fail(Error::Conflict {
                                current: Box::new(cur.to_kv(&key)),
                                key,
                                expected,
                            })
                        }
                        Some(cur) => {
                            rev += 1;
                            overlay.insert(k.clone(), None);
                            Outcome::Event(
                                HistEvent {
                                    rev,
                                    key: k,
                                    new: None,
                                    prev: Some(cur),
                                },
                                None,
                            )
                        }
                    }
                }
                Op::Compact { rev: to } => {
                    if to > rev {
                        Outcome::Fail(Error::FutureRevision {
                            requested: to,
                            current: rev,
                        })
                    } else if to <= st.compacted() {
                        Outcome::Noop
                    } else {
                        Outcome::Compact(to)
                    }
                }
                Op::Close => Outcome::Noop,
            };
            outcomes.push(outcome);
        }
        (outcomes, replies)
    }

    /// Takes a snapshot and starts a new log segment once the log has grown enough; the
    /// snapshot is written by another thread so writes continue meanwhile.
    fn maybe_snapshot(&mut self) {
        if self
            .snapshot_job
            .as_ref()
            .is_some_and(|job| job.is_finished())
            && let Some(job) = self.snapshot_job.take()
            && let Some(size) = finish_snapshot(job)
        {
            self.last_snapshot_bytes = size;
        }
        let threshold = self.cfg.snapshot_wal_bytes.max(self.last_snapshot_bytes);
        if self.snapshot_job.is_some() || self.wal_bytes < threshold {
            return;
        }
        // Pin the history from the snapshot revision on: the snapshot thread reads the key
        // space as of that revision in parts, while writes go on.
        let header = {
            let mut st = self.shared.write();
            let rev = st.current();
            st.pin(rev);
            SnapshotHeader {
                rev: st.current(),
                compacted: st.compacted(),
                last: st.last_event().cloned(),
            }
        };
        let unpin = Unpin(self.shared.clone());
        let capacity = segment_capacity(self.cfg.snapshot_wal_bytes.max(self.last_snapshot_bytes));
        match Segment::create(&self.cfg.dir, header.rev + 1, capacity) {
            Ok(segment) => self.segment = segment,
            Err(e) => {
                tracing::error!(error = %e, "cannot start a new log segment; will retry");
                return;
            }
        }
        self.wal_bytes = 0;
        let dir = self.cfg.dir.clone();
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("storage-snapshot".into())
            .spawn(move || -> Result<u64, Error> {
                let _unpin = unpin;
                let started = std::time::Instant::now();
                let (path, size) = write_snapshot(&dir, &header, |after| {
                    shared
                        .read()
                        .snapshot_chunk(header.rev, after, SNAPSHOT_PART_KEYS)
                })?;
                remove_obsolete(&dir, header.rev)?;
                tracing::debug!(path = %path.display(), size, elapsed = ?started.elapsed(), "snapshot written");
                Ok(size)
            });
        match spawned {
            Ok(job) => self.snapshot_job = Some(job),
            Err(e) => tracing::error!(error = %e, "cannot start the snapshot thread"),
        }
    }
}

/// The answer to a write that produced `ev`.
fn reply_for(ev: &HistEvent) -> Reply {
    match (&ev.new, &ev.prev) {
        (Some(new), _) => Reply::Kv(new.to_kv(&ev.key)),
        (None, Some(prev)) => Reply::Deleted(prev.to_kv(&ev.key), ev.rev),
        // A delete always has a previous value; answer with the bare key if not.
        (None, None) => Reply::Deleted(
            KeyValue {
                key: ev.key.to_string(),
                value: Bytes::new(),
                packed: None,
                stale: false,
                create_revision: 0,
                mod_revision: 0,
                version: 0,
            },
            ev.rev,
        ),
    }
}

fn closed() -> Error {
    Error::Unavailable("the embedded store is closed".into())
}

fn log_op(o: &Outcome) -> Option<LogOp<'_>> {
    match o {
        Outcome::Event(ev, _) => Some(match &ev.new {
            Some(new) => LogOp::Put {
                rev: ev.rev,
                key: &ev.key,
                value: &new.value,
            },
            None => LogOp::Delete {
                rev: ev.rev,
                key: &ev.key,
            },
        }),
        Outcome::Compact(rev) => Some(LogOp::Compact { rev: *rev }),
        Outcome::Noop | Outcome::Fail(_) => None,
    }
}

/// Waits for a snapshot thread; returns the snapshot's size when it succeeded.
fn finish_snapshot(job: JoinHandle<Result<u64, Error>>) -> Option<u64> {
    match job.join() {
        Ok(Ok(size)) => Some(size),
        Ok(Err(e)) => {
            // The log it would have replaced is kept, so nothing is lost; retried later.
            tracing::error!(error = %e, "writing a snapshot failed");
            None
        }
        Err(_) => {
            tracing::error!("the snapshot thread panicked");
            None
        }
    }
}

/// Deletes log segments and snapshots made obsolete by the snapshot at `rev`.
fn remove_obsolete(dir: &std::path::Path, rev: Revision) -> std::io::Result<()> {
    let mut removed = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let old = parse_segment_name(name).is_some_and(|first| first <= rev)
            || parse_snapshot_name(name).is_some_and(|r| r < rev);
        if old {
            remove_gently(&entry.path())?;
            removed = true;
        }
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}

/// The size a new log segment is allocated at: enough for the log to grow until the next
/// snapshot replaces it (`log_bytes` with some slack).
pub(crate) fn segment_capacity(log_bytes: u64) -> u64 {
    log_bytes
        .saturating_add(log_bytes / 8)
        .clamp(64 << 10, 1 << 30)
}

/// Deletes a file in steps: freeing a large file at once can hold the disk for tens of
/// milliseconds (on file systems that discard freed blocks), delaying the log's syncs.
fn remove_gently(path: &std::path::Path) -> std::io::Result<()> {
    const STEP: u64 = 4 << 20;
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut len = file.metadata()?.len();
    while len > STEP {
        len -= STEP;
        file.set_len(len)?;
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(file);
    std::fs::remove_file(path)
}

/// Starts the writer thread.
pub(crate) fn spawn(writer: Writer) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("storage-writer".into())
        .spawn(move || {
            batch_scheduling();
            writer.run()
        })
}

/// Puts the calling thread in the SCHED_BATCH class: woken by a submitted write, it no longer
/// preempts the thread that submitted it (which is about to wait for the reply anyway), but
/// runs when that thread yields or on an idle core. When the cores are saturated this saves
/// a context switch per write (about 6% of a control plane's CPU in a bulk propagation),
/// and batches grow on their own; on an idle core nothing changes.
fn batch_scheduling() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
            thread_native_id,
        };
        use thread_priority::{ThreadPriority, ThreadPriorityOsValue};
        // The call also sets the nice value (to 0 here): a process started with another one
        // (`nice -n 10 karmada-rs ...`) keeps its writer as it is.
        if thread_nice() != Some(0) {
            tracing::debug!(
                "the storage writer keeps the default scheduling class (nice value set)"
            );
            return;
        }
        if let Err(e) = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Os(ThreadPriorityOsValue::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        ) {
            tracing::debug!(error = ?e, "the storage writer stays in the default scheduling class");
        }
    }
}

/// The calling thread's nice value (field 19 of /proc/thread-self/stat).
#[cfg(target_os = "linux")]
fn thread_nice() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19 - 3)?.parse().ok()
}
