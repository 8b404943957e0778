//! The storage conformance suite: every case takes only a `&dyn Store`, and
//! `conformance_suite!(harness)` instantiates all of them as tests for one backend.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::compactor::{CompactorState, compact_once};
use storage::{
    Error, Event, EventKind, KeyValue, RangeRequest, Revision, Store, WatchItem, WatchStream,
};

/// A store under test plus whatever keeps it alive (temp dir, etcd process).
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub guard: Box<dyn std::any::Any + Send>,
}

/// How long any single wait in the suite may take.
pub const DEADLINE: Duration = Duration::from_secs(10);

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The next watch item, failing the test if none comes before the deadline.
pub async fn next_item(w: &mut WatchStream) -> Option<Result<WatchItem, Error>> {
    tokio::time::timeout(DEADLINE, w.next())
        .await
        .expect("watch produced nothing before the deadline")
}

/// Collects events until one (or a progress notification) at or past `until`.
/// Returns the batches of events and the progress revisions seen, in order.
pub async fn collect_until(
    w: &mut WatchStream,
    until: Revision,
) -> (Vec<Vec<Event>>, Vec<Revision>) {
    let mut batches = Vec::new();
    let mut progress = Vec::new();
    loop {
        match next_item(w).await {
            Some(Ok(WatchItem::Events(evs))) => {
                let last = evs.last().map_or(0, |e| e.kv.mod_revision);
                batches.push(evs);
                if last >= until {
                    return (batches, progress);
                }
            }
            Some(Ok(WatchItem::Progress(rev))) => {
                progress.push(rev);
                if rev >= until {
                    return (batches, progress);
                }
            }
            Some(Err(e)) => panic!("watch failed: {e}"),
            None => panic!("watch ended"),
        }
    }
}

fn flat(batches: &[Vec<Event>]) -> Vec<Event> {
    batches.iter().flatten().cloned().collect()
}

async fn put(s: &dyn Store, key: &str, value: &str) -> KeyValue {
    match s.get(key).await.unwrap().0 {
        Some(cur) => s.update(key, b(value), cur.mod_revision).await.unwrap(),
        None => s.create(key, b(value)).await.unwrap(),
    }
}

/// Writes a key outside every watched prefix and returns its revision: a revision > 0 to
/// watch after (0 would mean "from now").
async fn mark(s: &dyn Store) -> Revision {
    put(s, "/mark", "m").await.mod_revision
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

/// Asserts that watching may not start at `after`, either at once or as the first item.
async fn assert_watch_compacted(s: &dyn Store, prefix: &str, after: Revision) {
    match s.watch(prefix, after).await {
        Err(e) => assert!(e.is_compacted(), "watch after {after}: {e}"),
        Ok(mut w) => match next_item(&mut w).await {
            Some(Err(e)) => assert!(e.is_compacted(), "watch after {after}: {e}"),
            other => panic!("watch after compacted revision {after} gave {other:?}"),
        },
    }
}

pub async fn create_if_absent(store: Arc<dyn Store>) {
    let s = &*store;
    let kv = s.create("/c/k", b("v1")).await.unwrap();
    assert_eq!(kv.key, "/c/k");
    assert_eq!(kv.value, "v1");
    assert_eq!(kv.version, 1);
    assert_eq!(kv.create_revision, kv.mod_revision);
    assert!(kv.mod_revision > 0);
    let (got, rev) = s.get("/c/k").await.unwrap();
    assert_eq!(got.as_ref(), Some(&kv));
    assert!(rev >= kv.mod_revision);
    assert_eq!(s.current_revision().await.unwrap(), kv.mod_revision);

    match s.create("/c/k", b("v2")).await {
        Err(Error::AlreadyExists { key, current }) => {
            assert_eq!(key, "/c/k");
            assert_eq!(*current, kv);
        }
        other => panic!("second create gave {other:?}"),
    }
    assert_eq!(s.get("/c/k").await.unwrap().0.unwrap().value, "v1");
    assert_eq!(s.get("/c/missing").await.unwrap().0, None);
    assert!(matches!(
        s.create("", b("x")).await,
        Err(Error::InvalidArgument(_))
    ));
    // A failed create does not take a revision.
    assert_eq!(s.current_revision().await.unwrap(), kv.mod_revision);
    assert_eq!(s.compacted_revision().await.unwrap(), 0, "never compacted");
}

pub async fn cas_update(store: Arc<dyn Store>) {
    let s = &*store;
    let v1 = s.create("/u/k", b("1")).await.unwrap();
    let v2 = s.update("/u/k", b("2"), v1.mod_revision).await.unwrap();
    assert_eq!(v2.value, "2");
    assert_eq!(v2.version, 2);
    assert_eq!(v2.create_revision, v1.create_revision);
    assert!(v2.mod_revision > v1.mod_revision);
    assert_eq!(s.get("/u/k").await.unwrap().0, Some(v2.clone()));

    match s.update("/u/k", b("stale"), v1.mod_revision).await {
        Err(Error::Conflict {
            key,
            expected,
            current,
        }) => {
            assert_eq!(key, "/u/k");
            assert_eq!(expected, v1.mod_revision);
            assert_eq!(*current, v2);
        }
        other => panic!("stale update gave {other:?}"),
    }
    assert!(
        s.update("/u/missing", b("x"), v2.mod_revision)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(matches!(
        s.update("/u/k", b("x"), 0).await,
        Err(Error::InvalidArgument(_))
    ));
    // Recreated after delete: versions restart and create_revision moves.
    s.delete("/u/k", v2.mod_revision).await.unwrap();
    let again = s.create("/u/k", b("new")).await.unwrap();
    assert_eq!(again.version, 1);
    assert!(again.create_revision > v2.mod_revision);
    assert!(
        s.update("/u/k", b("x"), v2.mod_revision)
            .await
            .unwrap_err()
            .is_conflict()
    );
}

pub async fn cas_delete(store: Arc<dyn Store>) {
    let s = &*store;
    let v1 = s.create("/d/k", b("1")).await.unwrap();
    let v2 = s.update("/d/k", b("2"), v1.mod_revision).await.unwrap();
    match s.delete("/d/k", v1.mod_revision).await {
        Err(Error::Conflict { current, .. }) => assert_eq!(*current, v2),
        other => panic!("stale delete gave {other:?}"),
    }
    let (last, rev) = s.delete("/d/k", v2.mod_revision).await.unwrap();
    assert_eq!(last, v2);
    assert!(rev > v2.mod_revision);
    assert_eq!(s.current_revision().await.unwrap(), rev);
    assert_eq!(s.get("/d/k").await.unwrap().0, None);
    assert!(s.delete("/d/k", 0).await.unwrap_err().is_not_found());
    assert!(
        s.delete("/d/k", v2.mod_revision)
            .await
            .unwrap_err()
            .is_not_found()
    );
    // Unconditional delete.
    let v = s.create("/d/u", b("x")).await.unwrap();
    let (last, _) = s.delete("/d/u", 0).await.unwrap();
    assert_eq!(last, v);
}

pub async fn range_prefix_limit_continue(store: Arc<dyn Store>) {
    let s = &*store;
    for i in 0..10 {
        s.create(&format!("/r/items/{i:02}"), b(&i.to_string()))
            .await
            .unwrap();
    }
    s.create("/r/itemsX", b("outside")).await.unwrap();
    s.create("/r/item", b("outside")).await.unwrap();
    let all = s
        .range(RangeRequest {
            prefix: "/r/items/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.kvs.len(), 10);
    assert_eq!(all.count, 10);
    assert!(!all.more);
    assert_eq!(all.revision, s.current_revision().await.unwrap());
    let want: Vec<String> = (0..10).map(|i| format!("/r/items/{i:02}")).collect();
    assert_eq!(keys(&all.kvs), want);

    // Page through with limit 3, continuing after the last key.
    let mut got = Vec::new();
    let mut start_after = None;
    let mut pages = Vec::new();
    loop {
        let page = s
            .range(RangeRequest {
                prefix: "/r/items/".into(),
                start_after: start_after.clone(),
                limit: 3,
                revision: all.revision,
            })
            .await
            .unwrap();
        pages.push((page.kvs.len(), page.count, page.more));
        got.extend(page.kvs.iter().map(|kv| kv.key.clone()));
        if !page.more {
            break;
        }
        start_after = page.kvs.last().map(|kv| kv.key.clone());
    }
    assert_eq!(got, want);
    assert_eq!(
        pages,
        [(3, 10, true), (3, 7, true), (3, 4, true), (1, 1, false)]
    );

    let empty = s
        .range(RangeRequest {
            prefix: "/r/none/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(empty.kvs.is_empty());
    assert_eq!(empty.count, 0);
    assert!(!empty.more);

    assert!(matches!(
        s.range(RangeRequest {
            prefix: "/r/items/".into(),
            start_after: Some("/q".into()),
            ..Default::default()
        })
        .await,
        Err(Error::InvalidArgument(_))
    ));
}

pub async fn prefix_isolation(store: Arc<dyn Store>) {
    let s = &*store;
    let start = mark(s).await;
    s.create("/a/b", b("exact")).await.unwrap();
    s.create("/a/b/x", b("in")).await.unwrap();
    s.create("/a/bc", b("sibling")).await.unwrap();
    s.create("/a/bc/y", b("sibling child")).await.unwrap();
    let end = s.create("/a/b/z", b("in")).await.unwrap().mod_revision;

    let r = s
        .range(RangeRequest {
            prefix: "/a/b/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&r.kvs), ["/a/b/x", "/a/b/z"]);
    let r = s
        .range(RangeRequest {
            prefix: "/a/bc/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&r.kvs), ["/a/bc/y"]);
    // A prefix without the trailing slash is a plain string prefix.
    let r = s
        .range(RangeRequest {
            prefix: "/a/b".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        keys(&r.kvs),
        ["/a/b", "/a/b/x", "/a/b/z", "/a/bc", "/a/bc/y"]
    );

    let mut w = s.watch("/a/b/", start).await.unwrap();
    let (batches, _) = collect_until(&mut w, end).await;
    let evs = flat(&batches);
    assert_eq!(
        evs.iter().map(|e| e.kv.key.as_str()).collect::<Vec<_>>(),
        ["/a/b/x", "/a/b/z"]
    );
}

pub async fn past_revision_reads(store: Arc<dyn Store>) {
    let s = &*store;
    let a1 = s.create("/h/a", b("a1")).await.unwrap();
    let b1 = s.create("/h/b", b("b1")).await.unwrap();
    let r1 = b1.mod_revision;
    let a2 = s.update("/h/a", b("a2"), a1.mod_revision).await.unwrap();
    let (_, r3) = s.delete("/h/b", b1.mod_revision).await.unwrap();
    let c1 = s.create("/h/c", b("c1")).await.unwrap();
    let at = |rev| RangeRequest {
        prefix: "/h/".into(),
        revision: rev,
        ..Default::default()
    };
    let values = |kvs: &[KeyValue]| -> Vec<(String, String)> {
        kvs.iter()
            .map(|kv| {
                (
                    kv.key.clone(),
                    String::from_utf8(kv.value.to_vec()).unwrap(),
                )
            })
            .collect()
    };
    let cases: Vec<(Revision, Vec<(&str, &str)>)> = vec![
        (a1.mod_revision, vec![("/h/a", "a1")]),
        (r1, vec![("/h/a", "a1"), ("/h/b", "b1")]),
        (a2.mod_revision, vec![("/h/a", "a2"), ("/h/b", "b1")]),
        (r3, vec![("/h/a", "a2")]),
        (c1.mod_revision, vec![("/h/a", "a2"), ("/h/c", "c1")]),
    ];
    for (rev, want) in cases {
        let got = s.range(at(rev)).await.unwrap();
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(values(&got.kvs), want, "at revision {rev}");
        assert_eq!(got.count, want.len());
    }
    // The past value carries its own revisions.
    let old = s.range(at(r1)).await.unwrap();
    assert_eq!(old.kvs[0], a1);
    assert_eq!(old.kvs[1], b1);

    // Paging at a fixed revision is consistent while writes go on.
    let snap = s.current_revision().await.unwrap();
    let first = s
        .range(RangeRequest {
            limit: 1,
            ..at(snap)
        })
        .await
        .unwrap();
    assert_eq!(keys(&first.kvs), ["/h/a"]);
    s.create("/h/b2", b("late")).await.unwrap();
    s.delete("/h/c", c1.mod_revision).await.unwrap();
    let rest = s
        .range(RangeRequest {
            start_after: Some("/h/a".into()),
            ..at(snap)
        })
        .await
        .unwrap();
    assert_eq!(keys(&rest.kvs), ["/h/c"]);
}

pub async fn future_revisions(store: Arc<dyn Store>) {
    let s = &*store;
    let kv = s.create("/f/k", b("v")).await.unwrap();
    let cur = s.current_revision().await.unwrap();
    match s
        .range(RangeRequest {
            prefix: "/f/".into(),
            revision: cur + 10,
            ..Default::default()
        })
        .await
    {
        Err(Error::FutureRevision { requested, current }) => {
            assert_eq!(requested, cur + 10);
            assert!(current >= cur);
        }
        other => panic!("future read gave {other:?}"),
    }
    // A watch from a future revision starts there.
    let mut w = s.watch("/f/", cur + 2).await.unwrap();
    let k2 = s.update("/f/k", b("2"), kv.mod_revision).await.unwrap();
    let k3 = s.update("/f/k", b("3"), k2.mod_revision).await.unwrap();
    let k4 = s.update("/f/k", b("4"), k3.mod_revision).await.unwrap();
    assert_eq!(k3.mod_revision, cur + 2);
    let (batches, _) = collect_until(&mut w, k4.mod_revision).await;
    let revs: Vec<_> = flat(&batches).iter().map(|e| e.kv.mod_revision).collect();
    assert_eq!(revs, [k4.mod_revision]);
    assert!(matches!(
        s.compact(cur + 100).await,
        Err(Error::FutureRevision { .. })
    ));
}

pub async fn large_values(store: Arc<dyn Store>) {
    let s = &*store;
    let big: Vec<u8> = (0..(1536 * 1024)).map(|i| (i % 251) as u8).collect();
    let big = Bytes::from(big);
    let start = mark(s).await;
    let kv = s.create("/big/k", big.clone()).await.unwrap();
    assert_eq!(s.get("/big/k").await.unwrap().0.unwrap().value, big);
    let r = s
        .range(RangeRequest {
            prefix: "/big/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.kvs[0].value, big);
    let upd = s
        .update("/big/k", big.slice(1..), kv.mod_revision)
        .await
        .unwrap();
    let mut w = s.watch("/big/", start).await.unwrap();
    let (batches, _) = collect_until(&mut w, upd.mod_revision).await;
    let evs = flat(&batches);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].kv.value, big);
    assert_eq!(evs[1].kv.value, big.slice(1..));
    assert_eq!(evs[1].prev.as_ref().unwrap().value, big);

    let too_big = Bytes::from(vec![b'x'; 4 * 1024 * 1024 + 1]);
    match s.create("/big/huge", too_big.clone()).await {
        Err(Error::TooLarge { size, limit }) => {
            assert_eq!(size, too_big.len());
            assert!(limit >= 1536 * 1024);
        }
        other => panic!("oversized create gave {other:?}"),
    }
    assert!(matches!(
        s.update("/big/k", too_big, upd.mod_revision).await,
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(s.get("/big/huge").await.unwrap().0, None);
}

/// Ordered, Unique, Atomic and Reliable, with previous values: a watch from a past
/// revision delivers exactly the changes under its prefix, in order, each once.
pub async fn watch_ordered_unique_reliable(store: Arc<dyn Store>) {
    let s = &*store;
    let start = mark(s).await;
    // Interleave writes in and out of the prefix, from several tasks.
    let mut expected: BTreeMap<Revision, (String, EventKind, Option<String>, Option<String>)> =
        BTreeMap::new();
    let mut tasks = Vec::new();
    for t in 0..4 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut log = Vec::new();
            for i in 0..25 {
                let prefix = if (i + t) % 3 == 0 { "/wo/" } else { "/w/" };
                let key = format!("{prefix}{t}-{}", i % 5);
                let (cur, _) = s.get(&key).await.unwrap();
                let value = format!("{t}-{i}");
                if i % 7 == 6
                    && let Some(cur) = cur
                {
                    let (last, rev) = s.delete(&key, cur.mod_revision).await.unwrap();
                    log.push((rev, key, EventKind::Delete, None, Some(last.value)));
                    continue;
                }
                let kv = match &cur {
                    Some(c) => s.update(&key, b(&value), c.mod_revision).await.unwrap(),
                    None => s.create(&key, b(&value)).await.unwrap(),
                };
                log.push((
                    kv.mod_revision,
                    key,
                    EventKind::Put,
                    Some(kv.value),
                    cur.map(|c| c.value),
                ));
            }
            log
        }));
    }
    for t in tasks {
        for (rev, key, kind, value, prev) in t.await.unwrap() {
            let as_s = |v: Option<Bytes>| v.map(|v| String::from_utf8(v.to_vec()).unwrap());
            expected.insert(rev, (key, kind, as_s(value), as_s(prev)));
        }
    }
    let end = s.current_revision().await.unwrap();
    let want: Vec<_> = expected
        .iter()
        .filter(|(_, (k, ..))| k.starts_with("/w/"))
        .collect();

    let mut w = s.watch("/w/", start).await.unwrap();
    let (batches, _) = collect_until(&mut w, want.last().unwrap().0.to_owned()).await;
    let evs = flat(&batches);
    // Atomic: no revision is split across batches.
    let mut seen_in = HashMap::new();
    for (i, batch) in batches.iter().enumerate() {
        for e in batch {
            if let Some(j) = seen_in.insert(e.kv.mod_revision, i) {
                assert_eq!(i, j, "revision {} split across batches", e.kv.mod_revision);
            }
        }
    }
    let revs: Vec<_> = evs.iter().map(|e| e.kv.mod_revision).collect();
    assert!(
        revs.windows(2).all(|w| w[0] < w[1]),
        "ordered and unique: {revs:?}"
    );
    assert_eq!(evs.len(), want.len(), "reliable: every change delivered");
    for (e, (rev, (key, kind, value, prev))) in evs.iter().zip(&want) {
        assert_eq!(e.kv.mod_revision, **rev);
        assert_eq!(&e.kv.key, key);
        assert_eq!(e.kind, *kind);
        let as_s = |v: &Bytes| String::from_utf8(v.to_vec()).unwrap();
        match kind {
            EventKind::Put => {
                assert_eq!(Some(as_s(&e.kv.value)), *value);
                assert!(e.kv.version >= 1);
            }
            EventKind::Delete => {
                assert!(e.kv.value.is_empty());
                assert_eq!(e.kv.version, 0);
            }
        }
        assert_eq!(
            e.prev.as_ref().map(|p| as_s(&p.value)),
            *prev,
            "prev of {rev}"
        );
    }
    assert!(end >= *want.last().unwrap().0);
}

/// Resumable: a watch restarted from the last delivered revision continues exactly.
pub async fn watch_resumable(store: Arc<dyn Store>) {
    let s = &*store;
    let start = mark(s).await;
    let mut revs = Vec::new();
    for i in 0..20 {
        revs.push(
            put(s, &format!("/res/{}", i % 4), &i.to_string())
                .await
                .mod_revision,
        );
        put(s, "/other/x", &i.to_string()).await;
    }
    let mut w = s.watch("/res/", start).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 7 {
        match next_item(&mut w).await {
            Some(Ok(WatchItem::Events(evs))) => {
                got.extend(evs.iter().map(|e| e.kv.mod_revision));
            }
            Some(Ok(WatchItem::Progress(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    drop(w);
    let last = *got.last().unwrap();
    let mut w = s.watch("/res/", last).await.unwrap();
    let (batches, _) = collect_until(&mut w, *revs.last().unwrap()).await;
    got.extend(flat(&batches).iter().map(|e| e.kv.mod_revision));
    assert_eq!(got, revs);
}

/// Bookmarkable: a watcher on a quiet prefix learns the store moved on, and progress
/// revisions are exact — no event at or below a progress revision arrives after it.
pub async fn watch_bookmarks(store: Arc<dyn Store>) {
    let s = &*store;
    let start = mark(s).await;
    let mut w = s.watch("/quiet/", start).await.unwrap();
    let mut last_other = 0;
    for i in 0..5 {
        last_other = put(s, "/busy/x", &i.to_string()).await.mod_revision;
    }
    // Progress must reach the busy prefix's last write without any event of ours.
    loop {
        match next_item(&mut w).await {
            Some(Ok(WatchItem::Progress(rev))) => {
                assert!(rev <= s.current_revision().await.unwrap());
                if rev >= last_other {
                    break;
                }
            }
            other => panic!("quiet watch gave {other:?}"),
        }
    }

    // Now mix writes in and out of the prefix and check exactness while they happen, asking
    // for progress after every batch where the backend takes such requests.
    let base = mark(s).await;
    let (mut w, requester) = s.watch_with_progress("/mix/", base).await.unwrap();
    let writer = {
        let s = store.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..60 {
                if i % 4 == 0 {
                    mine.push(put(&*s, &format!("/mix/{}", i % 3), "v").await.mod_revision);
                } else {
                    put(&*s, "/busy/y", &i.to_string()).await;
                }
                if i % 10 == 0 {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
            }
            mine
        })
    };
    let mine = writer.await.unwrap();
    let end = s.current_revision().await.unwrap();
    put(s, "/busy/z", "after").await;
    let mut delivered: Vec<Revision> = Vec::new();
    let mut progress_seen: Vec<Revision> = Vec::new();
    let mut high = base;
    loop {
        match next_item(&mut w).await {
            Some(Ok(WatchItem::Events(evs))) => {
                for e in evs {
                    assert!(
                        e.kv.mod_revision > high,
                        "event {} after progress/event {high}",
                        e.kv.mod_revision
                    );
                    high = e.kv.mod_revision;
                    delivered.push(high);
                }
                if let Some(r) = &requester {
                    r.request();
                }
            }
            Some(Ok(WatchItem::Progress(rev))) => {
                assert!(rev >= high, "progress {rev} went backwards from {high}");
                // Exact: every change of ours up to `rev` has been delivered already.
                let owed: Vec<_> = mine.iter().filter(|r| **r <= rev).copied().collect();
                assert_eq!(
                    delivered, owed,
                    "progress {rev} ahead of undelivered events"
                );
                high = rev;
                progress_seen.push(rev);
                if rev > end {
                    break;
                }
            }
            other => panic!("mixed watch gave {other:?}"),
        }
    }
    assert_eq!(delivered, mine);
    assert!(!progress_seen.is_empty());
}

pub async fn watch_from_now(store: Arc<dyn Store>) {
    let s = &*store;
    put(s, "/now/a", "before").await;
    let mut w = s.watch("/now/", 0).await.unwrap();
    let kv = put(s, "/now/a", "after").await;
    let (batches, _) = collect_until(&mut w, kv.mod_revision).await;
    let evs = flat(&batches);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].kv, kv);
    assert_eq!(evs[0].prev.as_ref().unwrap().value, "before");
}

pub async fn compaction(store: Arc<dyn Store>) {
    let s = &*store;
    let mut revs = Vec::new();
    for i in 0..10 {
        revs.push(
            put(s, &format!("/cmp/{}", i % 3), &i.to_string())
                .await
                .mod_revision,
        );
    }
    let c = revs[5];
    s.compact(c).await.unwrap();
    assert_eq!(s.compacted_revision().await.unwrap(), c);
    let at = |rev| RangeRequest {
        prefix: "/cmp/".into(),
        revision: rev,
        ..Default::default()
    };
    match s.range(at(c - 1)).await {
        Err(Error::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, c - 1);
            assert_eq!(compacted, c);
        }
        other => panic!("read below compaction gave {other:?}"),
    }
    let r = s.range(at(c)).await.unwrap();
    assert_eq!(r.kvs.len(), 3);
    // Watches: from c - 1 (first event c) is fine, from c - 2 is not.
    assert_watch_compacted(s, "/cmp/", c - 2).await;
    let mut w = s.watch("/cmp/", c - 1).await.unwrap();
    let (batches, _) = collect_until(&mut w, *revs.last().unwrap()).await;
    let got: Vec<_> = flat(&batches).iter().map(|e| e.kv.mod_revision).collect();
    assert_eq!(got, revs[5..]);
    // Compacting to an older revision again is a no-op.
    s.compact(c - 2).await.unwrap();
    assert_eq!(s.compacted_revision().await.unwrap(), c);
    // A watcher whose history is compacted away while it is open ends with Compacted
    // (or is told when it tries to resume).
    let mut lagging = s.watch("/cmp/", c).await.unwrap();
    let last = s.current_revision().await.unwrap();
    s.compact(last).await.unwrap();
    match next_item(&mut lagging).await {
        Some(Err(e)) => assert!(e.is_compacted(), "{e}"),
        // etcd may have sent the events before compacting; then resuming fails.
        Some(Ok(WatchItem::Events(_))) | Some(Ok(WatchItem::Progress(_))) => {
            assert_watch_compacted(s, "/cmp/", c).await
        }
        None => panic!("watch ended silently"),
    }
}

/// Many tasks doing compare-and-swap increments on shared keys: no lost update.
pub async fn concurrent_cas_increments(store: Arc<dyn Store>) {
    let s = &*store;
    const KEYS: usize = 4;
    const TASKS: usize = 16;
    const INCREMENTS: usize = 20;
    for k in 0..KEYS {
        s.create(&format!("/ctr/{k}"), b("0")).await.unwrap();
    }
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = vec![0usize; KEYS];
            let mut conflicts = 0usize;
            for i in 0..INCREMENTS {
                let k = (t + i) % KEYS;
                let key = format!("/ctr/{k}");
                loop {
                    let cur = s.get(&key).await.unwrap().0.unwrap();
                    let n: usize = std::str::from_utf8(&cur.value).unwrap().parse().unwrap();
                    match s
                        .update(&key, b(&(n + 1).to_string()), cur.mod_revision)
                        .await
                    {
                        Ok(_) => {
                            done[k] += 1;
                            break;
                        }
                        Err(Error::Conflict { current, .. }) => {
                            assert!(current.mod_revision > cur.mod_revision);
                            conflicts += 1;
                        }
                        Err(e) => panic!("increment failed: {e}"),
                    }
                }
            }
            (done, conflicts)
        }));
    }
    let mut totals = [0usize; KEYS];
    for t in tasks {
        let (done, _) = t.await.unwrap();
        for k in 0..KEYS {
            totals[k] += done[k];
        }
    }
    for (k, total) in totals.iter().enumerate() {
        let kv = s.get(&format!("/ctr/{k}")).await.unwrap().0.unwrap();
        let n: usize = std::str::from_utf8(&kv.value).unwrap().parse().unwrap();
        assert_eq!(n, *total, "key {k}");
        assert_eq!(
            kv.version as usize,
            total + 1,
            "key {k}: one version per success"
        );
    }
    assert_eq!(totals.iter().sum::<usize>(), TASKS * INCREMENTS);
    // Revisions handed out are unique across all keys.
    let r = s
        .range(RangeRequest {
            prefix: "/ctr/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mods: HashSet<_> = r.kvs.iter().map(|kv| kv.mod_revision).collect();
    assert_eq!(mods.len(), KEYS);
}

/// The kube-apiserver style compactor: two servers share one store; one compacts per
/// round, to the revision recorded one round earlier.
pub async fn compactor_rounds(store: Arc<dyn Store>) {
    let s = &*store;
    let mut a = CompactorState::default();
    let mut b_state = CompactorState::default();
    put(s, "/comp/x", "0").await;
    let (next, compacted) = compact_once(s, a).await.unwrap();
    assert_eq!(compacted, None, "first round only records");
    a = next;
    // The other server loses this interval and follows the clock.
    let (next, compacted) = compact_once(s, b_state).await.unwrap();
    assert_eq!(compacted, None);
    assert_eq!(next.clock, a.clock);
    b_state = next;
    for i in 0..5 {
        put(s, "/comp/x", &i.to_string()).await;
    }
    let (next, compacted) = compact_once(s, a).await.unwrap();
    assert_eq!(compacted, Some(a.recorded));
    assert_eq!(s.compacted_revision().await.unwrap(), a.recorded);
    a = next;
    // b's clock is stale now: it loses again, and compacts nothing.
    let (next, compacted) = compact_once(s, b_state).await.unwrap();
    assert_eq!(compacted, None);
    assert_eq!(next.clock, a.clock);
    put(s, "/comp/x", "later").await;
    let (_, compacted) = compact_once(s, next).await.unwrap();
    assert_eq!(compacted, Some(next.recorded));
    assert_eq!(s.compacted_revision().await.unwrap(), next.recorded);
}

/// Instantiates every conformance case as a test, given an async `fn() -> Harness`.
#[macro_export]
macro_rules! conformance_suite {
    ($harness:path) => {
        $crate::conformance_suite!(@cases $harness;
            create_if_absent, cas_update, cas_delete, range_prefix_limit_continue,
            prefix_isolation, past_revision_reads, future_revisions, large_values,
            watch_ordered_unique_reliable, watch_resumable, watch_bookmarks, watch_from_now,
            compaction, concurrent_cas_increments, compactor_rounds);
    };
    (@cases $harness:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let h: conformance::Harness = $harness().await;
                conformance::$case(h.store.clone()).await;
                drop(h);
            }
        )*
    };
}
