//! On-disk framing shared by the log and the snapshot: every frame is
//! `[payload length: u32 LE][CRC-32 of payload: u32 LE][payload]`, and a payload is a
//! sequence of little-endian fields read with [`Cursor`].

use std::io::{self, Read};

/// Bytes of a frame header.
pub(crate) const FRAME_HEADER: usize = 8;
/// Largest payload a reader accepts; anything longer is damage, not data.
pub(crate) const MAX_FRAME: usize = 1 << 30;

/// Starts a frame at the end of `buf`; returns its start for [`end_frame`].
pub(crate) fn begin_frame(buf: &mut Vec<u8>) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&[0u8; FRAME_HEADER]);
    start
}

/// Fills in the length and checksum of the frame begun at `start`.
pub(crate) fn end_frame(buf: &mut [u8], start: usize) {
    let payload = &buf[start + FRAME_HEADER..];
    // Callers bound a frame far below 4 GiB (values are limited, batches are cut).
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let crc = crc32fast::hash(payload);
    buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
    buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

pub(crate) fn put_u8(buf: &mut Vec<u8>, v: u8) {
    buf.push(v);
}

pub(crate) fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Writes a length-prefixed byte string.
pub(crate) fn put_bytes(buf: &mut Vec<u8>, v: &[u8]) {
    put_u32(buf, u32::try_from(v.len()).unwrap_or(u32::MAX));
    buf.extend_from_slice(v);
}

/// Reads the fields of a payload; every method returns `None` past the end.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }

    pub fn i64(&mut self) -> Option<i64> {
        self.take(8)?.try_into().ok().map(i64::from_le_bytes)
    }

    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u32()?).ok()?;
        self.take(n)
    }

    pub fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
}

/// What reading the next frame found.
#[derive(Debug)]
pub(crate) enum FrameRead {
    /// A complete frame whose checksum matches; the payload is in the caller's buffer.
    Frame,
    /// The clean end of the data.
    End,
    /// A damaged or incomplete frame at the reader's offset.
    Bad(String),
}

/// Reads frames sequentially from a file of known length.
pub(crate) struct FrameReader<R> {
    inner: R,
    offset: u64,
    len: u64,
}

impl<R: Read> FrameReader<R> {
    /// A reader positioned at `offset` of data `len` bytes long.
    pub fn new(inner: R, offset: u64, len: u64) -> Self {
        FrameReader { inner, offset, len }
    }

    /// The offset of the next frame (after the last good one).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next frame's payload into `payload`.
    pub fn next_frame(&mut self, payload: &mut Vec<u8>) -> io::Result<FrameRead> {
        let remaining = self.len.saturating_sub(self.offset);
        if remaining == 0 {
            return Ok(FrameRead::End);
        }
        if remaining < FRAME_HEADER as u64 {
            return Ok(FrameRead::Bad(format!(
                "incomplete frame header ({remaining} bytes)"
            )));
        }
        let mut header = [0u8; FRAME_HEADER];
        self.inner.read_exact(&mut header)?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len == 0 || len > MAX_FRAME || (len as u64) > remaining - FRAME_HEADER as u64 {
            return Ok(FrameRead::Bad(format!(
                "frame length {len} does not fit the {} remaining bytes",
                remaining - FRAME_HEADER as u64
            )));
        }
        payload.clear();
        payload.resize(len, 0);
        self.inner.read_exact(payload)?;
        if crc32fast::hash(payload) != crc {
            return Ok(FrameRead::Bad("checksum mismatch".into()));
        }
        self.offset += (FRAME_HEADER + len) as u64;
        Ok(FrameRead::Frame)
    }
}

/// Looks for a complete frame anywhere in `data` that `plausible` accepts (checked before
/// the checksum, to keep the search cheap). Used to tell a torn tail (nothing valid after
/// the damage) from damage in the middle of a file (valid frames follow).
pub(crate) fn find_valid_frame(data: &[u8], plausible: impl Fn(&[u8]) -> bool) -> Option<usize> {
    let mut at = 0;
    while at + FRAME_HEADER < data.len() {
        let len = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let end = at + FRAME_HEADER + len;
        if len > 0 && end <= data.len() {
            let payload = &data[at + FRAME_HEADER..end];
            let crc = u32::from_le_bytes([data[at + 4], data[at + 5], data[at + 6], data[at + 7]]);
            if plausible(payload) && crc32fast::hash(payload) == crc {
                return Some(at);
            }
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(payloads: &[&[u8]]) -> Vec<u8> {
        let mut buf = Vec::new();
        for p in payloads {
            let start = begin_frame(&mut buf);
            buf.extend_from_slice(p);
            end_frame(&mut buf, start);
        }
        buf
    }

    fn read_all(data: &[u8]) -> (Vec<Vec<u8>>, Option<String>, u64) {
        let mut r = FrameReader::new(data, 0, data.len() as u64);
        let mut out = Vec::new();
        let mut payload = Vec::new();
        loop {
            match r.next_frame(&mut payload).unwrap() {
                FrameRead::Frame => out.push(payload.clone()),
                FrameRead::End => return (out, None, r.offset()),
                FrameRead::Bad(why) => return (out, Some(why), r.offset()),
            }
        }
    }

    #[test]
    fn frames_round_trip_and_damage_is_detected() {
        let good = frames(&[b"alpha", b"beta", b"gamma"]);
        let (got, bad, off) = read_all(&good);
        assert_eq!(
            got,
            [b"alpha".to_vec(), b"beta".to_vec(), b"gamma".to_vec()]
        );
        assert!(bad.is_none());
        assert_eq!(off, good.len() as u64);

        // (what is done to the data, frames still readable)
        let cases: Vec<(&str, Vec<u8>, usize)> = vec![
            ("truncated payload", good[..good.len() - 2].to_vec(), 2),
            ("truncated header", good[..good.len() - 10].to_vec(), 2),
            (
                "flipped payload bit",
                {
                    let mut d = good.clone();
                    let n = d.len();
                    d[n - 1] ^= 1;
                    d
                },
                2,
            ),
            (
                "zero tail",
                {
                    let mut d = good.clone();
                    d.extend_from_slice(&[0u8; 64]);
                    d
                },
                3,
            ),
            (
                "huge length",
                {
                    let mut d = good.clone();
                    d.extend_from_slice(&[0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 1]);
                    d
                },
                3,
            ),
        ];
        for (name, data, want) in cases {
            let (got, bad, _) = read_all(&data);
            assert_eq!(got.len(), want, "{name}");
            assert!(bad.is_some(), "{name}: damage must be reported");
        }
    }

    #[test]
    fn find_valid_frame_locates_frames_after_garbage() {
        let mut data = vec![0x5au8; 100];
        let at = data.len();
        data.extend_from_slice(&frames(&[b"\x01payload"]));
        assert_eq!(find_valid_frame(&data, |p| p[0] == 1), Some(at));
        assert_eq!(find_valid_frame(&data, |p| p[0] == 2), None);
        assert_eq!(find_valid_frame(&[0u8; 1000], |_| true), None);
    }
}
