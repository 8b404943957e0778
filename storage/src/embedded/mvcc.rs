//! The in-memory MVCC state of the embedded store: the current key space, a bounded
//! window of history (one event per revision), and reads at any retained revision.
//!
//! Revisions are contiguous: every write is one revision with exactly one event, so the
//! event of revision `r` sits at index `r - front.rev` of the history.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::Error;
use crate::store::{Event, EventKind, KeyValue, RangeRequest, RangeResponse, Revision};

/// Approximate memory one history event costs besides the bytes it alone keeps alive.
const EVENT_OVERHEAD: usize = 160;

/// One key's value at some revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The value, or its packed form when `packed` ([`crate::packed`]).
    pub value: Bytes,
    pub packed: bool,
    pub create_rev: Revision,
    pub mod_rev: Revision,
    pub version: i64,
}

impl Entry {
    /// An entry of the value `json`, packed when that saves memory.
    pub fn new(json: Bytes, create_rev: Revision, mod_rev: Revision, version: i64) -> Entry {
        Entry {
            value: json,
            packed: false,
            create_rev,
            mod_rev,
            version,
        }
        .packed()
    }

    /// The entry with its value packed, when that saves memory.
    pub fn packed(self) -> Entry {
        if self.packed {
            return self;
        }
        match crate::packed::pack(&self.value) {
            Some(value) => Entry {
                value,
                packed: true,
                ..self
            },
            None => self,
        }
    }

    /// The value itself (unpacked).
    pub fn json(&self) -> Bytes {
        if self.packed {
            crate::packed::unpack(&self.value)
        } else {
            self.value.clone()
        }
    }

    pub fn to_kv(&self, key: &str) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: self.json(),
            packed: self.packed.then(|| self.value.clone()),
            stale: false,
            create_revision: self.create_rev,
            mod_revision: self.mod_rev,
            version: self.version,
        }
    }
}

/// One change: the key's new entry (None for a delete) and its previous one.
#[derive(Clone, Debug)]
pub(crate) struct HistEvent {
    pub rev: Revision,
    pub key: Arc<str>,
    pub new: Option<Entry>,
    pub prev: Option<Entry>,
}

impl HistEvent {
    /// Memory this event keeps alive on its own: the previous value is referenced by
    /// nothing else once overwritten (the new value is shared with a later event or the map).
    fn cost(&self) -> usize {
        EVENT_OVERHEAD + self.prev.as_ref().map_or(0, |p| p.value.len())
    }

    pub fn to_event(&self) -> Event {
        let key: &str = &self.key;
        match &self.new {
            Some(new) => Event {
                kind: EventKind::Put,
                kv: new.to_kv(key),
                prev: self.prev.as_ref().map(|p| p.to_kv(key)),
            },
            None => Event {
                kind: EventKind::Delete,
                kv: KeyValue {
                    key: key.to_owned(),
                    value: Bytes::new(),
                    stale: false,
                    packed: None,
                    create_revision: 0,
                    mod_revision: self.rev,
                    version: 0,
                },
                prev: self.prev.as_ref().map(|p| p.to_kv(key)),
            },
        }
    }
}

/// One part of the key space for a snapshot, and where the next part starts (None: this
/// was the last).
pub(crate) type Part = (Vec<(Arc<str>, Entry)>, Option<Arc<str>>);

/// Limits on what one watch read copies out of the history.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanLimits {
    /// Events examined per call (bounds how long the read lock is held).
    pub max_scan: usize,
    /// Matching events returned per call.
    pub max_events: usize,
    /// Value bytes returned per call (at least one event is always returned).
    pub max_bytes: usize,
}

/// The result of a watch read.
pub(crate) struct Scan {
    pub events: Vec<Event>,
    /// The last revision examined (every matching event up to it is in `events`).
    pub scanned_to: Revision,
    /// The store's revision at the time of the read.
    pub current: Revision,
}

/// The key space and its recent history.
#[derive(Debug, Default)]
pub(crate) struct Mvcc {
    map: BTreeMap<Arc<str>, Entry>,
    history: VecDeque<HistEvent>,
    history_bytes: usize,
    current: Revision,
    compacted: Revision,
    /// While a snapshot at this revision is being written, its event and every later one
    /// are kept, whatever the compaction (the snapshot reads the key space as of it).
    pin: Option<Revision>,
}

impl Mvcc {
    /// A state loaded from a snapshot at `rev` whose last event (the one of `rev`) is `last`.
    pub fn from_snapshot(
        map: BTreeMap<Arc<str>, Entry>,
        rev: Revision,
        compacted: Revision,
        last: Option<HistEvent>,
    ) -> Self {
        let mut m = Mvcc {
            map,
            history: VecDeque::new(),
            history_bytes: 0,
            current: rev,
            // Only the history written since the snapshot (and the snapshot's own last
            // event) survives a restart, so older revisions are compacted by definition.
            compacted: compacted.max(rev),
            pin: None,
        };
        // Without the event of `rev`, a watch from `rev - 1` is refused by `check_retained`.
        if let Some(ev) = last.filter(|ev| ev.rev == rev && rev > 0) {
            m.history_bytes += ev.cost();
            m.history.push_back(ev);
        }
        m
    }

    pub fn current(&self) -> Revision {
        self.current
    }

    pub fn compacted(&self) -> Revision {
        self.compacted
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    pub fn history_bytes(&self) -> usize {
        self.history_bytes
    }

    /// The interned key (shared with the map when present) and the key's current entry,
    /// found with one lookup.
    pub fn lookup(&self, key: &str) -> (Arc<str>, Option<Entry>) {
        match self.map.get_key_value(key) {
            Some((k, e)) => (k.clone(), Some(e.clone())),
            None => (Arc::from(key), None),
        }
    }

    pub fn last_event(&self) -> Option<&HistEvent> {
        self.history.back()
    }

    /// Keeps the history from `rev` on until [`Mvcc::unpin`].
    pub fn pin(&mut self, rev: Revision) {
        self.pin = Some(rev);
    }

    pub fn unpin(&mut self) {
        self.pin = None;
    }

    /// Whether the oldest history event may be dropped.
    fn can_pop(&self) -> bool {
        match (self.pin, self.history.front()) {
            (Some(pin), Some(front)) => front.rev < pin,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }

    /// The next part of the key space as of revision `rev` (pinned), for a snapshot: up to
    /// about `max` keys after `after`. Returns the entries and where the next part starts
    /// (None when this was the last part).
    pub fn snapshot_chunk(
        &self,
        rev: Revision,
        after: Option<&str>,
        max: usize,
    ) -> Result<Part, Error> {
        let lower = after.map_or(Bound::Unbounded, Bound::Excluded);
        let cur: Vec<(&Arc<str>, &Entry)> = self
            .map
            .range::<str, _>((lower, Bound::Unbounded))
            .take(max.max(1))
            .collect();
        // The part ends at the last current key it holds (or at the end of the key space).
        let next = (cur.len() >= max.max(1))
            .then(|| cur.last().map(|(k, _)| Arc::clone(k)))
            .flatten();
        let hi = next.as_deref();
        let in_part = |k: &str| after.is_none_or(|a| k > a) && hi.is_none_or(|h| k <= h);
        let mut overrides: BTreeMap<&str, (&Arc<str>, Option<&Entry>)> = BTreeMap::new();
        if rev < self.current {
            let start = self.history_index(rev + 1).ok_or(Error::Compacted {
                requested: rev,
                compacted: self.compacted,
            })?;
            for ev in self.history.range(start..) {
                if in_part(&ev.key) {
                    overrides
                        .entry(&ev.key)
                        .or_insert((&ev.key, ev.prev.as_ref()));
                }
            }
        }
        let mut out = Vec::with_capacity(cur.len());
        let mut ovr = overrides.into_values().peekable();
        for (k, e) in cur {
            while let Some((ok, oe)) = ovr.peek().copied() {
                if **ok >= **k {
                    break;
                }
                if let Some(oe) = oe {
                    out.push((Arc::clone(ok), oe.clone()));
                }
                ovr.next();
            }
            match ovr.peek().copied() {
                Some((ok, oe)) if **ok == **k => {
                    if let Some(oe) = oe {
                        out.push((Arc::clone(k), oe.clone()));
                    }
                    ovr.next();
                }
                _ => out.push((Arc::clone(k), e.clone())),
            }
        }
        for (ok, oe) in ovr {
            if let Some(oe) = oe {
                out.push((Arc::clone(ok), oe.clone()));
            }
        }
        Ok((out, next))
    }

    /// Applies the change of revision `current + 1`.
    pub fn apply(&mut self, ev: HistEvent) {
        debug_assert_eq!(ev.rev, self.current + 1);
        match &ev.new {
            Some(new) => {
                self.map.insert(ev.key.clone(), new.clone());
            }
            None => {
                self.map.remove(&*ev.key);
            }
        }
        self.current = ev.rev;
        self.history_bytes += ev.cost();
        self.history.push_back(ev);
    }

    /// Compacts history before `rev` (the event of `rev` stays, so a watch may resume from
    /// `rev - 1`, as etcd's). Reads and watches below it are refused at once; the memory is
    /// released by [`Mvcc::enforce_bounds`]. Returns false when `rev` is in the future.
    pub fn compact(&mut self, rev: Revision) -> bool {
        if rev > self.current {
            return false;
        }
        self.compacted = self.compacted.max(rev);
        true
    }

    /// Drops compacted history and enforces the automatic bound (at most `max_revisions`
    /// events and `max_bytes` bytes, always keeping the current revision's event), dropping
    /// at most `max_drops` events per call so a large compaction never stalls writers.
    pub fn enforce_bounds(&mut self, max_revisions: usize, max_bytes: usize, max_drops: usize) {
        let mut dropped = 0;
        while dropped < max_drops
            && self.history.len() > 1
            && self.can_pop()
            && (self
                .history
                .front()
                .is_some_and(|ev| ev.rev < self.compacted)
                || self.history.len() > max_revisions.max(1)
                || self.history_bytes > max_bytes)
        {
            self.pop_front();
            dropped += 1;
        }
        if dropped > 0
            && let Some(front) = self.history.front()
        {
            self.compacted = self.compacted.max(front.rev);
        }
    }

    fn pop_front(&mut self) {
        if let Some(ev) = self.history.pop_front() {
            self.history_bytes = self.history_bytes.saturating_sub(ev.cost());
        }
    }

    fn history_index(&self, rev: Revision) -> Option<usize> {
        let front = self.history.front()?.rev;
        if rev < front {
            return None;
        }
        usize::try_from(rev - front).ok()
    }

    /// Resolves a requested read revision (0 = current) against the retained window.
    fn read_revision(&self, requested: Revision) -> Result<Revision, Error> {
        if requested < 0 {
            return Err(Error::InvalidArgument(format!(
                "negative revision {requested}"
            )));
        }
        if requested == 0 {
            return Ok(self.current);
        }
        if requested > self.current {
            return Err(Error::FutureRevision {
                requested,
                current: self.current,
            });
        }
        if requested < self.compacted {
            return Err(Error::Compacted {
                requested,
                compacted: self.compacted,
            });
        }
        Ok(requested)
    }

    /// Reads one key at the current revision.
    pub fn get(&self, key: &str) -> Option<KeyValue> {
        self.map.get(key).map(|e| e.to_kv(key))
    }

    /// Reads keys under a prefix at the current or a retained past revision.
    pub fn range(&self, req: &RangeRequest) -> Result<RangeResponse, Error> {
        let rev = self.read_revision(req.revision)?;
        let prefix = req.prefix.as_str();
        let lower = match &req.start_after {
            Some(after) => {
                if !after.starts_with(prefix) {
                    return Err(Error::InvalidArgument(format!(
                        "start_after {after:?} is not under prefix {prefix:?}"
                    )));
                }
                Bound::Excluded(after.as_str())
            }
            None => Bound::Included(prefix),
        };
        let in_range = |k: &str| {
            k.starts_with(prefix)
                && match lower {
                    Bound::Excluded(a) => k > a,
                    _ => true,
                }
        };

        // A past revision is the current map with the later changes undone: the value of a
        // key at `rev` is the `prev` of its first event after `rev`.
        let mut overrides: BTreeMap<&str, Option<&Entry>> = BTreeMap::new();
        if rev < self.current {
            let start = self.history_index(rev + 1).ok_or(Error::Compacted {
                requested: rev,
                compacted: self.compacted,
            })?;
            for ev in self.history.range(start..) {
                if in_range(&ev.key) {
                    overrides.entry(&ev.key).or_insert(ev.prev.as_ref());
                }
            }
        }

        let mut resp = RangeResponse {
            revision: self.current,
            ..RangeResponse::default()
        };
        let mut take = |key: &str, entry: &Entry| {
            resp.count += 1;
            if req.limit == 0 || resp.kvs.len() < req.limit {
                resp.kvs.push(entry.to_kv(key));
            } else {
                resp.more = true;
            }
        };
        let mut cur = self
            .map
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .peekable();
        let mut ovr = overrides.into_iter().peekable();
        loop {
            match (cur.peek(), ovr.peek()) {
                (None, None) => break,
                (Some((ck, ce)), None) => {
                    take(ck, ce);
                    cur.next();
                }
                (None, Some((ok, oe))) => {
                    if let Some(e) = oe {
                        take(ok, e);
                    }
                    ovr.next();
                }
                (Some((ck, ce)), Some((ok, oe))) => {
                    let ck: &str = ck;
                    if ck < *ok {
                        take(ck, ce);
                        cur.next();
                    } else {
                        if let Some(e) = oe {
                            take(ok, e);
                        }
                        if ck == *ok {
                            cur.next();
                        }
                        ovr.next();
                    }
                }
            }
        }
        Ok(resp)
    }

    /// Checks that a watch may start after `after`; returns the first revision it will read.
    pub fn watch_start(&self, after: Revision) -> Result<Revision, Error> {
        if after < 0 {
            return Err(Error::InvalidArgument(format!("negative revision {after}")));
        }
        if after == 0 {
            return Ok(self.current + 1);
        }
        self.check_retained(after + 1)?;
        Ok(after + 1)
    }

    fn check_retained(&self, next: Revision) -> Result<(), Error> {
        if next > self.current {
            return Ok(());
        }
        let front = self.history.front().map_or(self.current + 1, |ev| ev.rev);
        if next < self.compacted || next < front {
            return Err(Error::Compacted {
                requested: next,
                compacted: self.compacted,
            });
        }
        Ok(())
    }

    /// Copies out the events under `prefix` from revision `next` on, within `limits`.
    pub fn scan(&self, prefix: &str, next: Revision, limits: ScanLimits) -> Result<Scan, Error> {
        let mut scan = Scan {
            events: Vec::new(),
            scanned_to: next - 1,
            current: self.current,
        };
        if next > self.current {
            return Ok(scan);
        }
        self.check_retained(next)?;
        let start = self.history_index(next).ok_or(Error::Compacted {
            requested: next,
            compacted: self.compacted,
        })?;
        let mut bytes = 0usize;
        for ev in self.history.range(start..).take(limits.max_scan) {
            if ev.key.starts_with(prefix) {
                let size = ev.new.as_ref().map_or(0, |e| e.value.len())
                    + ev.prev.as_ref().map_or(0, |e| e.value.len());
                if !scan.events.is_empty()
                    && (scan.events.len() >= limits.max_events || bytes + size > limits.max_bytes)
                {
                    break;
                }
                bytes += size;
                scan.events.push(ev.to_event());
            }
            scan.scanned_to = ev.rev;
        }
        Ok(scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(m: &mut Mvcc, key: &str, value: &str) {
        let rev = m.current() + 1;
        let (key, prev) = m.lookup(key);
        let new = Entry::new(
            Bytes::copy_from_slice(value.as_bytes()),
            prev.as_ref().map_or(rev, |p| p.create_rev),
            rev,
            prev.as_ref().map_or(1, |p| p.version + 1),
        );
        m.apply(HistEvent {
            rev,
            key,
            new: Some(new),
            prev,
        });
    }

    fn del(m: &mut Mvcc, key: &str) {
        let rev = m.current() + 1;
        let (key, prev) = m.lookup(key);
        m.apply(HistEvent {
            rev,
            key,
            new: None,
            prev,
        });
    }

    fn keys_at(m: &Mvcc, prefix: &str, rev: Revision) -> Vec<(String, String)> {
        m.range(&RangeRequest {
            prefix: prefix.into(),
            revision: rev,
            ..Default::default()
        })
        .unwrap()
        .kvs
        .into_iter()
        .map(|kv| (kv.key, String::from_utf8(kv.value.to_vec()).unwrap()))
        .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn range_at_past_revisions_undoes_later_changes() {
        let mut m = Mvcc::default();
        put(&mut m, "/a/1", "x1"); // 1
        put(&mut m, "/a/2", "y1"); // 2
        put(&mut m, "/a/1", "x2"); // 3
        del(&mut m, "/a/2"); // 4
        put(&mut m, "/a/3", "z1"); // 5
        put(&mut m, "/b/1", "other"); // 6
        let cases: &[(Revision, &[(&str, &str)])] = &[
            (1, &[("/a/1", "x1")]),
            (2, &[("/a/1", "x1"), ("/a/2", "y1")]),
            (3, &[("/a/1", "x2"), ("/a/2", "y1")]),
            (4, &[("/a/1", "x2")]),
            (5, &[("/a/1", "x2"), ("/a/3", "z1")]),
            (0, &[("/a/1", "x2"), ("/a/3", "z1")]),
        ];
        for (rev, want) in cases {
            assert_eq!(keys_at(&m, "/a/", *rev), pairs(want), "at revision {rev}");
        }
    }

    #[test]
    fn range_limit_count_and_start_after_at_past_revision() {
        let mut m = Mvcc::default();
        for i in 0..10 {
            put(&mut m, &format!("/p/{i}"), "v"); // revisions 1..=10
        }
        del(&mut m, "/p/3"); // 11
        del(&mut m, "/p/4"); // 12
        let resp = m
            .range(&RangeRequest {
                prefix: "/p/".into(),
                start_after: Some("/p/2".into()),
                limit: 3,
                revision: 10,
            })
            .unwrap();
        let keys: Vec<_> = resp.kvs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["/p/3", "/p/4", "/p/5"]);
        assert_eq!(resp.count, 7);
        assert!(resp.more);
        let now = m
            .range(&RangeRequest {
                prefix: "/p/".into(),
                start_after: Some("/p/2".into()),
                limit: 3,
                revision: 0,
            })
            .unwrap();
        let keys: Vec<_> = now.kvs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["/p/5", "/p/6", "/p/7"]);
        assert_eq!(now.count, 5);
    }

    #[test]
    fn compaction_bounds_and_errors() {
        let mut m = Mvcc::default();
        for i in 0..10 {
            put(&mut m, &format!("/k/{}", i % 3), &i.to_string());
        }
        assert!(m.compact(5));
        assert_eq!(m.compacted(), 5);
        assert!(matches!(
            m.range(&RangeRequest {
                prefix: "/k/".into(),
                revision: 4,
                ..Default::default()
            }),
            Err(Error::Compacted {
                requested: 4,
                compacted: 5
            })
        ));
        assert!(keys_at(&m, "/k/", 5).len() == 3);
        assert_eq!(m.watch_start(4).unwrap(), 5);
        assert!(m.watch_start(3).is_err());
        assert!(!m.compact(11));
        m.enforce_bounds(2, usize::MAX, usize::MAX);
        assert_eq!(m.history_len(), 2);
        assert_eq!(m.compacted(), 9);
        m.enforce_bounds(100, 0, usize::MAX);
        assert_eq!(m.history_len(), 1, "the current revision's event is kept");
        assert_eq!(m.compacted(), 10);
    }

    #[test]
    fn snapshot_chunks_read_the_pinned_revision() {
        let mut m = Mvcc::default();
        for i in 0..20 {
            put(&mut m, &format!("/s/{i:02}"), "old");
        }
        let at = m.current();
        m.pin(at);
        let want = keys_at(&m, "/", at);
        // Changes after the snapshot revision, inside and across part boundaries.
        put(&mut m, "/s/05", "new");
        del(&mut m, "/s/06");
        put(&mut m, "/s/06x", "created later");
        del(&mut m, "/s/19");
        put(&mut m, "/s/99", "created later");
        m.enforce_bounds(1, 0, usize::MAX);
        assert!(m.history_len() >= 6, "pinned history is kept");
        for max in [1, 3, 7, 100] {
            let mut got = Vec::new();
            let mut after: Option<Arc<str>> = None;
            loop {
                let (part, next) = m.snapshot_chunk(at, after.as_deref(), max).unwrap();
                got.extend(
                    part.into_iter().map(|(k, e)| {
                        (k.to_string(), String::from_utf8(e.value.to_vec()).unwrap())
                    }),
                );
                match next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            assert_eq!(got, want, "parts of {max}");
        }
        m.unpin();
        m.enforce_bounds(1, 0, usize::MAX);
        assert_eq!(m.history_len(), 1);
    }

    #[test]
    fn scan_filters_by_prefix_and_respects_limits() {
        let mut m = Mvcc::default();
        put(&mut m, "/a/b", "1");
        put(&mut m, "/a/bc", "2");
        put(&mut m, "/a/b/x", "3");
        del(&mut m, "/a/b/x");
        let limits = ScanLimits {
            max_scan: 100,
            max_events: 100,
            max_bytes: 1 << 20,
        };
        let s = m.scan("/a/b/", 1, limits).unwrap();
        assert_eq!(s.scanned_to, 4);
        let revs: Vec<_> = s.events.iter().map(|e| e.kv.mod_revision).collect();
        assert_eq!(revs, [3, 4]);
        assert_eq!(s.events[1].kind, EventKind::Delete);
        assert_eq!(s.events[1].prev.as_ref().unwrap().value, "3");
        let s = m
            .scan(
                "/a/",
                1,
                ScanLimits {
                    max_events: 2,
                    ..limits
                },
            )
            .unwrap();
        assert_eq!(s.events.len(), 2);
        assert_eq!(s.scanned_to, 2);
    }
}
