//! The write-ahead log: segment files `wal-<first revision>.log`, each a magic header
//! followed by frames. One frame holds one group-commit batch, so a crash can tear at
//! most the last frame, and a batch is either wholly durable or wholly absent.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::store::Revision;

use super::record::{Cursor, begin_frame, end_frame, put_bytes, put_i64, put_u8, put_u32};

/// First bytes of every segment file.
pub(crate) const WAL_MAGIC: &[u8; 8] = b"KRSWAL01";

/// Payload tag of a batch frame.
pub(crate) const BATCH: u8 = 1;
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_COMPACT: u8 = 3;

/// One logged operation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LogOp<'a> {
    /// The key was created or updated at `rev`.
    Put {
        rev: Revision,
        key: &'a str,
        value: &'a [u8],
    },
    /// The key was deleted at `rev`.
    Delete { rev: Revision, key: &'a str },
    /// History before `rev` was compacted (takes no revision of its own).
    Compact { rev: Revision },
}

/// Appends one batch frame holding `ops` to `buf`.
pub(crate) fn encode_batch<'a>(buf: &mut Vec<u8>, ops: impl ExactSizeIterator<Item = LogOp<'a>>) {
    let start = begin_frame(buf);
    put_u8(buf, BATCH);
    put_u32(buf, u32::try_from(ops.len()).unwrap_or(u32::MAX));
    for op in ops {
        match op {
            LogOp::Put { rev, key, value } => {
                put_u8(buf, OP_PUT);
                put_i64(buf, rev);
                put_bytes(buf, key.as_bytes());
                put_bytes(buf, value);
            }
            LogOp::Delete { rev, key } => {
                put_u8(buf, OP_DELETE);
                put_i64(buf, rev);
                put_bytes(buf, key.as_bytes());
            }
            LogOp::Compact { rev } => {
                put_u8(buf, OP_COMPACT);
                put_i64(buf, rev);
            }
        }
    }
    end_frame(buf, start);
}

/// Decodes a batch frame's payload, calling `f` for each operation in order.
pub(crate) fn decode_batch<'a, E>(
    payload: &'a [u8],
    mut f: impl FnMut(LogOp<'a>) -> Result<(), E>,
    malformed: impl Fn(&str) -> E,
) -> Result<(), E> {
    let mut c = Cursor::new(payload);
    if c.u8() != Some(BATCH) {
        return Err(malformed("not a batch frame"));
    }
    let count = c
        .u32()
        .ok_or_else(|| malformed("missing operation count"))?;
    for _ in 0..count {
        let op = match c.u8() {
            Some(OP_PUT) => {
                let rev = c.i64();
                let key = c.str();
                let value = c.bytes();
                match (rev, key, value) {
                    (Some(rev), Some(key), Some(value)) => LogOp::Put { rev, key, value },
                    _ => return Err(malformed("truncated put")),
                }
            }
            Some(OP_DELETE) => match (c.i64(), c.str()) {
                (Some(rev), Some(key)) => LogOp::Delete { rev, key },
                _ => return Err(malformed("truncated delete")),
            },
            Some(OP_COMPACT) => match c.i64() {
                Some(rev) => LogOp::Compact { rev },
                None => return Err(malformed("truncated compact")),
            },
            _ => return Err(malformed("unknown operation")),
        };
        f(op)?;
    }
    if !c.is_empty() {
        return Err(malformed("trailing bytes after the last operation"));
    }
    Ok(())
}

/// A cheap first check that some bytes could be a batch payload, before a checksum.
pub(crate) fn plausible_batch(payload: &[u8]) -> bool {
    payload.len() >= 6
        && payload[0] == BATCH
        && matches!(payload[5], OP_PUT | OP_DELETE | OP_COMPACT)
}

/// The file name of the segment whose first revision is `first`.
pub(crate) fn segment_name(first: Revision) -> String {
    format!("wal-{first:016x}.log")
}

/// The first revision of a segment file name, if it is one.
pub(crate) fn parse_segment_name(name: &str) -> Option<Revision> {
    let hex = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    (hex.len() == 16)
        .then(|| i64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// Makes a directory entry change (create, rename, delete) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The segment being appended to. Segments are created at their expected size (sparse):
/// a sync then only has to persist data, not a new file size, which makes it cheaper.
/// Unwritten space reads as zeros, which recovery takes as the end of the data.
pub(crate) struct Segment {
    file: File,
    path: PathBuf,
    /// Where the next frame goes (the end of the data).
    pos: u64,
}

impl Segment {
    /// Creates an empty segment starting at revision `first`, `capacity` bytes long, durably.
    pub fn create(dir: &Path, first: Revision, capacity: u64) -> io::Result<Segment> {
        let path = dir.join(segment_name(first));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        file.write_all(WAL_MAGIC)?;
        file.set_len(capacity.max(WAL_MAGIC.len() as u64))?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(Segment {
            file,
            path,
            pos: WAL_MAGIC.len() as u64,
        })
    }

    /// Opens an existing, already validated segment whose data ends at `pos`.
    pub fn open_at(path: PathBuf, pos: u64) -> io::Result<Segment> {
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        Ok(Segment { file, path, pos })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `data` at the end of the data and, when `durable`, waits until it is on stable
    /// storage (fdatasync). On failure the file is cut back to the previous end, so no
    /// partial batch stays in the log.
    pub fn append(&mut self, data: &[u8], durable: bool) -> io::Result<()> {
        let result = self.file.write_all_at(data, self.pos).and_then(|()| {
            if durable {
                self.file.sync_data()
            } else {
                Ok(())
            }
        });
        match result {
            Ok(()) => {
                self.pos += data.len() as u64;
                Ok(())
            }
            Err(e) => {
                if let Err(cut) = self.file.set_len(self.pos) {
                    tracing::error!(path = %self.path.display(), error = %cut, "cannot cut back a failed log append");
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trip() {
        let ops = [
            LogOp::Put {
                rev: 7,
                key: "/registry/a",
                value: b"{}",
            },
            LogOp::Delete {
                rev: 8,
                key: "/registry/a",
            },
            LogOp::Compact { rev: 5 },
        ];
        let mut buf = Vec::new();
        encode_batch(
            &mut buf,
            ops.iter().map(|op| match op {
                LogOp::Put { rev, key, value } => LogOp::Put {
                    rev: *rev,
                    key,
                    value,
                },
                LogOp::Delete { rev, key } => LogOp::Delete { rev: *rev, key },
                LogOp::Compact { rev } => LogOp::Compact { rev: *rev },
            }),
        );
        let payload = &buf[8..];
        assert!(plausible_batch(payload));
        let mut got = Vec::new();
        decode_batch(
            payload,
            |op| {
                got.push(format!("{op:?}"));
                Ok::<(), String>(())
            },
            |m| m.to_string(),
        )
        .unwrap();
        let want: Vec<_> = ops.iter().map(|op| format!("{op:?}")).collect();
        assert_eq!(got, want);
        assert!(
            decode_batch(&payload[..payload.len() - 1], |_| Ok(()), |m| m.to_string()).is_err()
        );
    }

    #[test]
    fn segment_names() {
        let cases = [
            ("wal-0000000000000001.log", Some(1)),
            ("wal-00000000000000ff.log", Some(255)),
            ("wal-1.log", None),
            ("snap-0000000000000001.snap", None),
            ("wal-000000000000000g.log", None),
        ];
        for (name, want) in cases {
            assert_eq!(parse_segment_name(name), want, "{name}");
        }
        assert_eq!(parse_segment_name(&segment_name(12345)), Some(12345));
    }
}
