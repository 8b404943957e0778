//! Snapshots (checkpoints) of the whole key space: `snap-<revision>.snap`, a magic header
//! then frames: a meta frame, one frame per key, the event of the snapshot's revision (so
//! watches can resume right at it after a restart), and an end frame with the key count.
//! Written to a temporary file, synced, then renamed: a snapshot file is complete or absent.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::Error;
use crate::store::Revision;

use super::mvcc::{Entry, HistEvent, Part};
use super::record::{
    Cursor, FrameRead, FrameReader, begin_frame, end_frame, put_bytes, put_i64, put_u8,
};
use super::wal::sync_dir;

/// First bytes of every snapshot file.
pub(crate) const SNAP_MAGIC: &[u8; 8] = b"KRSSNP01";
const META: u8 = 10;
const KEY: u8 = 11;
const LAST_EVENT: u8 = 12;
const END: u8 = 13;
/// Bytes a snapshot writes between syncs.
const SYNC_EVERY: usize = 1 << 20;

/// What a snapshot is taken of: the revision, the compacted revision, and the event of
/// the revision itself; the keys come in parts from a callback.
pub(crate) struct SnapshotHeader {
    pub rev: Revision,
    pub compacted: Revision,
    pub last: Option<HistEvent>,
}

/// A snapshot read back from disk.
pub(crate) struct LoadedSnapshot {
    pub rev: Revision,
    pub compacted: Revision,
    pub map: BTreeMap<Arc<str>, Entry>,
    pub last: Option<HistEvent>,
}

/// The file name of the snapshot at `rev`.
pub(crate) fn snapshot_name(rev: Revision) -> String {
    format!("snap-{rev:016x}.snap")
}

/// The revision of a snapshot file name, if it is one.
pub(crate) fn parse_snapshot_name(name: &str) -> Option<Revision> {
    let hex = name.strip_prefix("snap-")?.strip_suffix(".snap")?;
    (hex.len() == 16)
        .then(|| i64::from_str_radix(hex, 16).ok())
        .flatten()
}

fn put_entry(buf: &mut Vec<u8>, e: &Entry) {
    put_i64(buf, e.create_rev);
    put_i64(buf, e.mod_rev);
    put_i64(buf, e.version);
    // Snapshots hold the values themselves, as the log does: packing is memory's business.
    if e.packed {
        put_bytes(buf, &e.json());
    } else {
        put_bytes(buf, &e.value);
    }
}

fn get_entry(c: &mut Cursor<'_>) -> Option<Entry> {
    let (create_rev, mod_rev, version) = (c.i64()?, c.i64()?, c.i64()?);
    Some(Entry::new(
        Bytes::copy_from_slice(c.bytes()?),
        create_rev,
        mod_rev,
        version,
    ))
}

fn put_opt_entry(buf: &mut Vec<u8>, e: Option<&Entry>) {
    match e {
        Some(e) => {
            put_u8(buf, 1);
            put_entry(buf, e);
        }
        None => put_u8(buf, 0),
    }
}

fn get_opt_entry(c: &mut Cursor<'_>) -> Option<Option<Entry>> {
    match c.u8()? {
        0 => Some(None),
        1 => get_entry(c).map(Some),
        _ => None,
    }
}

/// Writes the snapshot durably into `dir`, pulling the keys in order from `next_part`
/// (called with where the previous part ended); returns its path and size.
pub(crate) fn write_snapshot(
    dir: &Path,
    header: &SnapshotHeader,
    mut next_part: impl FnMut(Option<&str>) -> Result<Part, Error>,
) -> Result<(PathBuf, u64), Error> {
    let path = dir.join(snapshot_name(header.rev));
    let tmp = dir.join(format!("{}.tmp", snapshot_name(header.rev)));
    let file = File::create(&tmp)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(SNAP_MAGIC)?;
    let mut size = SNAP_MAGIC.len() as u64;
    let mut buf = Vec::with_capacity(64 << 10);
    let mut frame = |out: &mut BufWriter<File>, fill: &dyn Fn(&mut Vec<u8>)| -> io::Result<()> {
        buf.clear();
        let start = begin_frame(&mut buf);
        fill(&mut buf);
        end_frame(&mut buf, start);
        size += buf.len() as u64;
        out.write_all(&buf)
    };
    frame(&mut out, &|b| {
        put_u8(b, META);
        put_i64(b, header.rev);
        put_i64(b, header.compacted);
    })?;
    let mut count: i64 = 0;
    let mut after: Option<Arc<str>> = None;
    let mut unsynced = 0usize;
    loop {
        let (entries, next) = next_part(after.as_deref())?;
        for (key, entry) in &entries {
            frame(&mut out, &|b| {
                put_u8(b, KEY);
                put_bytes(b, key.as_bytes());
                put_entry(b, entry);
            })?;
            count += 1;
            unsynced += key.len() + entry.value.len();
        }
        // Flush as we go: one large flush at the end would hold the disk for long and
        // delay the log's syncs, which writers wait for.
        if unsynced >= SYNC_EVERY {
            out.flush()?;
            out.get_ref().sync_data()?;
            unsynced = 0;
        }
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    if let Some(ev) = &header.last {
        frame(&mut out, &|b| {
            put_u8(b, LAST_EVENT);
            put_i64(b, ev.rev);
            put_bytes(b, ev.key.as_bytes());
            put_opt_entry(b, ev.new.as_ref());
            put_opt_entry(b, ev.prev.as_ref());
        })?;
    }
    frame(&mut out, &|b| {
        put_u8(b, END);
        put_i64(b, count);
    })?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, &path)?;
    sync_dir(dir)?;
    Ok((path, size))
}

/// Reads and fully verifies a snapshot. Any damage is [`Error::Corrupt`]: a snapshot is
/// written whole before it is renamed into place, so damage is never a torn write.
pub(crate) fn read_snapshot(path: &Path) -> Result<LoadedSnapshot, Error> {
    let corrupt = |why: &str| Error::Corrupt(format!("snapshot {}: {why}", path.display()));
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut magic = [0u8; 8];
    if len < 8 {
        return Err(corrupt("shorter than its header"));
    }
    r.read_exact(&mut magic)?;
    if &magic != SNAP_MAGIC {
        return Err(corrupt("bad magic"));
    }
    let mut frames = FrameReader::new(r, 8, len);
    let mut payload = Vec::new();
    let mut next = |payload: &mut Vec<u8>| -> Result<(), Error> {
        match frames.next_frame(payload)? {
            FrameRead::Frame => Ok(()),
            FrameRead::End => Err(corrupt("ends before its end frame")),
            FrameRead::Bad(why) => Err(corrupt(&why)),
        }
    };

    next(&mut payload)?;
    let mut c = Cursor::new(&payload);
    let (rev, compacted) = match (c.u8(), c.i64(), c.i64()) {
        (Some(META), Some(rev), Some(compacted)) if c.is_empty() => (rev, compacted),
        _ => return Err(corrupt("bad meta frame")),
    };
    let mut entries: Vec<(Arc<str>, Entry)> = Vec::new();
    let mut last = None;
    loop {
        next(&mut payload)?;
        let mut c = Cursor::new(&payload);
        match c.u8() {
            Some(KEY) => {
                let (Some(key), Some(entry)) = (c.str(), get_entry(&mut c)) else {
                    return Err(corrupt("bad key frame"));
                };
                if entries.last().is_some_and(|(k, _)| &**k >= key) {
                    return Err(corrupt("keys out of order"));
                }
                entries.push((Arc::from(key), entry));
            }
            Some(LAST_EVENT) => {
                let (Some(ev_rev), Some(key)) = (c.i64(), c.str()) else {
                    return Err(corrupt("bad last-event frame"));
                };
                let key: Arc<str> = Arc::from(key);
                let (Some(new), Some(prev)) = (get_opt_entry(&mut c), get_opt_entry(&mut c)) else {
                    return Err(corrupt("bad last-event frame"));
                };
                last = Some(HistEvent {
                    rev: ev_rev,
                    key,
                    new,
                    prev,
                });
            }
            Some(END) => {
                if c.i64() != Some(entries.len() as i64) {
                    return Err(corrupt("key count does not match"));
                }
                break;
            }
            _ => return Err(corrupt("unknown frame")),
        }
    }
    // Share the key allocation between the map and the last event.
    let map: BTreeMap<Arc<str>, Entry> = entries.into_iter().collect();
    if let Some(ev) = &mut last
        && let Some((k, _)) = map.get_key_value(&*ev.key)
    {
        ev.key = k.clone();
    }
    Ok(LoadedSnapshot {
        rev,
        compacted,
        map,
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: &str, rev: Revision) -> Entry {
        Entry::new(Bytes::copy_from_slice(v.as_bytes()), rev, rev, 1)
    }

    #[test]
    fn snapshot_round_trip_and_damage_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let header = SnapshotHeader {
            rev: 3,
            compacted: 1,
            last: Some(HistEvent {
                rev: 3,
                key: Arc::from("/b"),
                new: Some(entry("2", 3)),
                prev: Some(entry("old", 2)),
            }),
        };
        // Two parts, as the store hands them out.
        let (path, size) = write_snapshot(dir.path(), &header, |after| {
            Ok(match after {
                None => (
                    vec![(Arc::from("/a"), entry("1", 1))],
                    Some(Arc::from("/a")),
                ),
                Some(_) => (vec![(Arc::from("/b"), entry("2", 3))], None),
            })
        })
        .unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), size);
        assert_eq!(
            parse_snapshot_name(path.file_name().unwrap().to_str().unwrap()),
            Some(3)
        );
        let loaded = read_snapshot(&path).unwrap();
        assert_eq!(loaded.rev, 3);
        assert_eq!(loaded.compacted, 1);
        assert_eq!(loaded.map.len(), 2);
        assert_eq!(loaded.map["/b"], entry("2", 3));
        let last = loaded.last.unwrap();
        assert_eq!(last.prev, Some(entry("old", 2)));

        let bytes = fs::read(&path).unwrap();
        for cut in [bytes.len() - 1, bytes.len() / 2, 4] {
            fs::write(&path, &bytes[..cut]).unwrap();
            assert!(
                matches!(read_snapshot(&path), Err(Error::Corrupt(_))),
                "cut at {cut}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[30] ^= 0x10;
        fs::write(&path, &flipped).unwrap();
        assert!(matches!(read_snapshot(&path), Err(Error::Corrupt(_))));
    }
}
