//! Opening a data directory: load the newest snapshot, replay the log segments after it,
//! and repair a torn tail of the last segment (the only damage a crash can cause).

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::Error;
use crate::store::Revision;

use super::mvcc::{Entry, HistEvent, Mvcc};
use super::record::{FrameRead, FrameReader, find_valid_frame};
use super::snapshot::{parse_snapshot_name, read_snapshot};
use super::wal::{
    LogOp, Segment, WAL_MAGIC, decode_batch, parse_segment_name, plausible_batch, sync_dir,
};

/// The state rebuilt from a data directory and where the log continues.
pub(crate) struct Recovered {
    pub mvcc: Mvcc,
    pub log: LogTail,
}

/// Where the log continues after recovery.
pub(crate) struct LogTail {
    /// The segment to append to.
    pub segment: Segment,
    /// Log bytes written since the snapshot (what a new snapshot would make unnecessary).
    pub wal_bytes: u64,
    /// Size of the snapshot loaded (0 without one).
    pub snapshot_bytes: u64,
}

/// Files found in a data directory.
#[derive(Default)]
struct DirListing {
    snapshots: Vec<(Revision, PathBuf)>,
    segments: Vec<(Revision, PathBuf)>,
}

fn list(dir: &Path) -> Result<DirListing, Error> {
    let mut out = DirListing::default();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(rev) = parse_snapshot_name(name) {
            out.snapshots.push((rev, entry.path()));
        } else if let Some(rev) = parse_segment_name(name) {
            out.segments.push((rev, entry.path()));
        } else if name.starts_with("snap-") && name.ends_with(".tmp") {
            // An unfinished snapshot: the log it was meant to replace is still there.
            fs::remove_file(entry.path())?;
        }
    }
    out.snapshots.sort();
    out.segments.sort();
    Ok(out)
}

/// Rebuilds the store's state from `dir` (which must exist and be locked by the caller).
pub(crate) fn recover(
    dir: &Path,
    history_max_revisions: usize,
    history_max_bytes: usize,
    segment_bytes: u64,
) -> Result<Recovered, Error> {
    let listing = list(dir)?;
    let (mut mvcc, snap_rev, snapshot_bytes) = match listing.snapshots.last() {
        Some((rev, path)) => {
            let snap = read_snapshot(path)?;
            if snap.rev != *rev {
                return Err(Error::Corrupt(format!(
                    "snapshot {} holds revision {}",
                    path.display(),
                    snap.rev
                )));
            }
            let size = fs::metadata(path)?.len();
            (
                Mvcc::from_snapshot(snap.map, snap.rev, snap.compacted, snap.last),
                snap.rev,
                size,
            )
        }
        None => (Mvcc::default(), 0, 0),
    };

    // A segment whose successor starts at or before `snap_rev + 1` holds nothing newer than
    // the snapshot: skip it (and delete it below, as the snapshot writer would have).
    let segs = &listing.segments;
    let mut obsolete: Vec<&Path> = Vec::new();
    let mut live: Vec<(Revision, &Path)> = Vec::new();
    for (i, (first, path)) in segs.iter().enumerate() {
        match segs.get(i + 1) {
            Some((next, _)) if *next <= snap_rev + 1 => obsolete.push(path),
            _ => live.push((*first, path)),
        }
    }
    if let Some((first, path)) = live.first()
        && *first > snap_rev + 1
    {
        return Err(Error::Corrupt(format!(
            "log segment {} starts at revision {first} but the snapshot ends at {snap_rev}: revisions are missing",
            path.display()
        )));
    }

    let mut wal_bytes = 0;
    let mut tail: Option<(Revision, PathBuf, u64)> = None;
    let count = live.len();
    for (i, (first, path)) in live.into_iter().enumerate() {
        let is_last = i + 1 == count;
        let end = replay_segment(
            path,
            is_last,
            snap_rev,
            &mut mvcc,
            history_max_revisions,
            history_max_bytes,
        )?;
        wal_bytes += end;
        if is_last {
            tail = Some((first, path.to_path_buf(), end));
        }
    }

    for path in obsolete {
        fs::remove_file(path)?;
    }
    for (rev, path) in &listing.snapshots {
        if *rev < snap_rev {
            fs::remove_file(path)?;
        }
    }

    let segment = match tail {
        Some((_, path, end)) => Segment::open_at(path, end)?,
        None => Segment::create(dir, mvcc.current() + 1, segment_bytes)?,
    };
    mvcc.enforce_bounds(history_max_revisions, history_max_bytes, usize::MAX);
    Ok(Recovered {
        mvcc,
        log: LogTail {
            segment,
            wal_bytes,
            snapshot_bytes,
        },
    })
}

/// Replays one segment into `mvcc`; returns where its data ends (after repair).
fn replay_segment(
    path: &Path,
    is_last: bool,
    snap_rev: Revision,
    mvcc: &mut Mvcc,
    history_max_revisions: usize,
    history_max_bytes: usize,
) -> Result<u64, Error> {
    let corrupt = |why: String| Error::Corrupt(format!("log segment {}: {why}", path.display()));
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut magic = [0u8; 8];
    let header_ok = len >= 8 && {
        file.read_exact(&mut magic)?;
        &magic == WAL_MAGIC
    };
    if !header_ok {
        // Created but never synced: the crash hit while the segment was being made.
        if is_last && (len < 8 || zero_from(path, 0)?) {
            tracing::warn!(path = %path.display(), len, "log segment has an incomplete header; rewriting it");
            let f = OpenOptions::new().write(true).open(path)?;
            f.write_all_at(WAL_MAGIC, 0)?;
            f.sync_all()?;
            return Ok(WAL_MAGIC.len() as u64);
        }
        return Err(corrupt("bad header".into()));
    }

    let mut frames = FrameReader::new(BufReader::with_capacity(1 << 20, file), 8, len);
    let mut payload = Vec::new();
    loop {
        match frames.next_frame(&mut payload)? {
            FrameRead::Frame => {
                apply_batch(&payload, snap_rev, mvcc).map_err(|why| {
                    corrupt(format!("frame at offset {}: {why}", frames.offset()))
                })?;
                mvcc.enforce_bounds(history_max_revisions, history_max_bytes, usize::MAX);
            }
            FrameRead::End => return Ok(len),
            FrameRead::Bad(why) => {
                let at = frames.offset();
                // Space allocated ahead and never written reads as zeros: the clean end.
                if zero_from(path, at)? {
                    return Ok(at);
                }
                if !is_last {
                    return Err(corrupt(format!("damaged frame at offset {at}: {why}")));
                }
                return repair_tail(path, at, len, &why);
            }
        }
    }
}

/// Whether every byte of the file from `at` on is zero.
fn zero_from(path: &Path, at: u64) -> Result<bool, Error> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(true);
        }
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
    }
}

/// Cuts a torn tail off the last segment, unless valid frames follow the damage (then the
/// damage is not a torn write but corruption, and dropping the frames after it would lose
/// acknowledged writes). The segment keeps its allocated length.
fn repair_tail(path: &Path, at: u64, len: u64, why: &str) -> Result<u64, Error> {
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    file.seek(SeekFrom::Start(at + 1))?;
    let mut rest = Vec::new();
    file.read_to_end(&mut rest)?;
    if let Some(off) = find_valid_frame(&rest, plausible_batch) {
        return Err(Error::Corrupt(format!(
            "log segment {}: damaged frame at offset {at} ({why}) is followed by a valid frame at offset {}",
            path.display(),
            at + 1 + off as u64
        )));
    }
    let dropped = rest
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |p| p as u64 + 2);
    tracing::warn!(
        path = %path.display(),
        offset = at,
        dropped_bytes = dropped,
        reason = why,
        "log ends with an incomplete or damaged batch (a write interrupted by a crash, never acknowledged); truncating it"
    );
    file.set_len(at)?;
    file.set_len(len.max(at))?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(at)
}

/// Applies one logged batch on top of `mvcc`, skipping what the snapshot already holds.
fn apply_batch(payload: &[u8], snap_rev: Revision, mvcc: &mut Mvcc) -> Result<(), String> {
    decode_batch(
        payload,
        |op| {
            let rev = match op {
                LogOp::Put { rev, .. } | LogOp::Delete { rev, .. } => rev,
                LogOp::Compact { rev } => {
                    if !mvcc.compact(rev) {
                        return Err(format!(
                            "compaction to {rev} beyond revision {}",
                            mvcc.current()
                        ));
                    }
                    return Ok(());
                }
            };
            if rev <= snap_rev {
                return Ok(());
            }
            if rev != mvcc.current() + 1 {
                return Err(format!(
                    "revision {rev} follows revision {}: the log has a gap",
                    mvcc.current()
                ));
            }
            let (key, prev) = match op {
                LogOp::Put { key, .. } | LogOp::Delete { key, .. } => mvcc.lookup(key),
                LogOp::Compact { .. } => return Ok(()),
            };
            let new = match op {
                LogOp::Put { value, .. } => Some(Entry::new(
                    Bytes::copy_from_slice(value),
                    prev.as_ref().map_or(rev, |p| p.create_rev),
                    rev,
                    prev.as_ref().map_or(1, |p| p.version + 1),
                )),
                _ => {
                    if prev.is_none() {
                        return Err(format!("delete of absent key {key:?} at revision {rev}"));
                    }
                    None
                }
            };
            mvcc.apply(HistEvent {
                rev,
                key,
                new,
                prev,
            });
            Ok(())
        },
        |m| m.to_string(),
    )
}
