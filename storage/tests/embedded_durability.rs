//! Embedded store: reopening, snapshots and log rotation, repair of a torn log tail,
//! refusal of real corruption, slow watchers, and the directory lock.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::{Error, KeyValue, RangeRequest, Revision, Store, WatchItem};

const DEADLINE: Duration = Duration::from_secs(10);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn opts() -> EmbeddedOptions {
    EmbeddedOptions {
        progress_interval: Duration::from_millis(100),
        ..EmbeddedOptions::default()
    }
}

async fn all(s: &dyn Store) -> Vec<KeyValue> {
    s.range(RangeRequest {
        prefix: "/".into(),
        ..Default::default()
    })
    .await
    .unwrap()
    .kvs
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Runs `f` with a tracing subscriber that records log lines; returns them with the result.
fn with_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(sub, f);
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, logs)
}

/// Writes a mix of creates, updates and deletes; returns the expected final contents.
async fn write_mix(s: &dyn Store, n: usize, tag: &str) -> Vec<KeyValue> {
    for i in 0..n {
        let key = format!("/mix/{:03}", i % 37);
        match s.get(&key).await.unwrap().0 {
            Some(cur) if i % 5 == 4 => {
                s.delete(&key, cur.mod_revision).await.unwrap();
            }
            Some(cur) => {
                s.update(&key, b(&format!("{tag}-{i}")), cur.mod_revision)
                    .await
                    .unwrap();
            }
            None => {
                s.create(&key, b(&format!("{tag}-{i}"))).await.unwrap();
            }
        }
    }
    all(s).await
}

#[tokio::test]
async fn reopen_preserves_keys_revisions_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    let want = write_mix(&*s, 300, "a").await;
    let rev = s.current_revision().await.unwrap();
    s.compact(rev - 10).await.unwrap();
    s.close().await.unwrap();
    assert!(
        s.create("/late", b("x"))
            .await
            .unwrap_err()
            .to_string()
            .contains("closed")
    );

    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    assert_eq!(all(&*s).await, want);
    assert_eq!(s.current_revision().await.unwrap(), rev);
    assert!(s.compacted_revision().await.unwrap() >= rev - 10);
    // Revisions continue, versions and create revisions survive.
    let cur = s.get("/mix/000").await.unwrap().0.unwrap();
    let next = s
        .update("/mix/000", b("after"), cur.mod_revision)
        .await
        .unwrap();
    assert_eq!(next.mod_revision, rev + 1);
    assert_eq!(next.version, cur.version + 1);
    assert_eq!(next.create_revision, cur.create_revision);
    // Watches resume within the history replayed from the log.
    let mut w = s.watch("/mix/", rev - 5).await.unwrap();
    let mut got = Vec::new();
    while got.last() != Some(&next.mod_revision) {
        match tokio::time::timeout(DEADLINE, w.next()).await.unwrap() {
            Some(Ok(WatchItem::Events(evs))) => got.extend(evs.iter().map(|e| e.kv.mod_revision)),
            Some(Ok(WatchItem::Progress(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(got, ((rev - 4)..=(rev + 1)).collect::<Vec<_>>());
    s.close().await.unwrap();
}

#[tokio::test]
async fn unsynced_writes_survive_a_reopen() {
    // Without fsync a write is acknowledged once it is in the log file: the next open (a
    // restarted process) reads everything back.
    let dir = tempfile::tempdir().unwrap();
    let unsynced = EmbeddedOptions {
        unsafe_no_fsync: true,
        ..opts()
    };
    let s = EmbeddedStore::open(dir.path(), unsynced.clone()).unwrap();
    let want = write_mix(&*s, 200, "a").await;
    let rev = s.current_revision().await.unwrap();
    s.close().await.unwrap();

    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    assert_eq!(all(&*s).await, want);
    assert_eq!(s.current_revision().await.unwrap(), rev);
    s.close().await.unwrap();
}

#[tokio::test]
async fn snapshots_rotate_the_log_and_reopen_identically() {
    let dir = tempfile::tempdir().unwrap();
    let small = EmbeddedOptions {
        snapshot_log_bytes: 32 << 10,
        ..opts()
    };
    let s = EmbeddedStore::open(dir.path(), small.clone()).unwrap();
    // Values long enough to be kept packed in memory: the log and snapshots hold them whole.
    let filler = "x".repeat(600);
    let mut want = Vec::new();
    for round in 0..4 {
        want = write_mix(&*s, 400, &format!("{round}{filler}")).await;
    }
    assert!(want.iter().all(|kv| kv.packed.is_some()), "kept packed");
    let rev = s.current_revision().await.unwrap();
    s.close().await.unwrap();
    let snaps = files(dir.path(), "snap-");
    let wals = files(dir.path(), "wal-");
    assert_eq!(snaps.len(), 1, "old snapshots are removed: {snaps:?}");
    assert!(wals.len() <= 2, "old log segments are removed: {wals:?}");
    let log_bytes: u64 = wals.iter().map(|p| fs::metadata(p).unwrap().len()).sum();
    assert!(
        log_bytes < 200 << 10,
        "log was not truncated: {log_bytes} bytes"
    );

    let s = EmbeddedStore::open(dir.path(), small).unwrap();
    let reopened = all(&*s).await;
    assert_eq!(reopened, want);
    assert!(
        reopened.iter().all(|kv| kv.packed.is_some()),
        "packed again"
    );
    assert_eq!(s.current_revision().await.unwrap(), rev);
    // History older than the snapshot is gone after a restart; newer is there.
    let compacted = s.compacted_revision().await.unwrap();
    assert!(compacted > 0 && compacted <= rev);
    let r = s
        .range(RangeRequest {
            prefix: "/".into(),
            revision: compacted - 1,
            ..Default::default()
        })
        .await;
    assert!(r.unwrap_err().is_compacted());
    assert!(s.watch("/", compacted - 1).await.is_ok());
    assert!(
        s.watch("/", compacted - 2)
            .await
            .err()
            .unwrap()
            .is_compacted()
    );
    s.close().await.unwrap();
}

/// Writes three batches of keys, closes, and returns the log segment, the store's keys
/// before the last batch and after it.
async fn three_batches(dir: &Path) -> (PathBuf, Vec<KeyValue>, Vec<KeyValue>) {
    let s = EmbeddedStore::open(dir, opts()).unwrap();
    s.create("/t/1", b("one")).await.unwrap();
    s.create("/t/2", b("two")).await.unwrap();
    let before_last = all(&*s).await;
    s.create("/t/3", b(&"three".repeat(100))).await.unwrap();
    let full = all(&*s).await;
    s.close().await.unwrap();
    let wals = files(dir, "wal-");
    assert_eq!(wals.len(), 1);
    (wals[0].clone(), before_last, full)
}

/// Where each frame of a log segment starts, and where the data ends (segments are
/// allocated ahead, so the file goes on with zeros).
fn frame_starts(data: &[u8]) -> (Vec<usize>, usize) {
    let mut starts = Vec::new();
    let mut at = 8;
    while at + 8 <= data.len() {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        starts.push(at);
        at += 8 + len;
    }
    (starts, at)
}

#[tokio::test]
async fn torn_log_tails_are_truncated_with_a_warning() {
    // (damage, given the data and where the last frame starts and the data ends;
    //  whether the last batch survives; whether a warning is due)
    type Damage = fn(&mut Vec<u8>, usize, usize);
    let cases: Vec<(&str, Damage, bool, bool)> = vec![
        (
            "last batch cut short (file shortened)",
            |d, _, end| d.truncate(end - 7),
            false,
            true,
        ),
        (
            "only a partial frame header left",
            |d, last, _| d.truncate(last + 3),
            false,
            true,
        ),
        (
            "last batch cut short (allocated space kept)",
            |d, _, end| d[end - 7..end].fill(0),
            false,
            true,
        ),
        (
            "flipped bit in the last batch",
            |d, _, end| d[end - 3] ^= 0x04,
            false,
            true,
        ),
        (
            "garbage after the data",
            |d, _, end| {
                let garbage: Vec<u8> = (0..999u32).map(|i| (i * 7 + 3) as u8).collect();
                if d.len() < end + garbage.len() {
                    d.resize(end + garbage.len(), 0);
                }
                d[end..end + garbage.len()].copy_from_slice(&garbage);
            },
            true,
            true,
        ),
        // Space allocated ahead reads as zeros: that is the normal end, not damage.
        (
            "zeros after the data",
            |d, _, end| d.resize(end + 4096, 0),
            true,
            false,
        ),
        (
            "nothing after the data",
            |d, _, end| d.truncate(end),
            true,
            false,
        ),
    ];
    for (name, damage, last_survives, warns) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (wal, before_last, full) = three_batches(dir.path()).await;
        let mut data = fs::read(&wal).unwrap();
        let (starts, end) = frame_starts(&data);
        assert_eq!(starts.len(), 3, "{name}");
        damage(&mut data, starts[2], end);
        fs::write(&wal, &data).unwrap();

        let (s, logs) = with_logs(|| EmbeddedStore::open(dir.path(), opts()));
        let s = s.unwrap_or_else(|e| panic!("{name}: reopen failed: {e}"));
        if warns {
            assert!(logs.contains("WARN"), "{name}: no warning logged: {logs}");
            assert!(logs.contains("truncating"), "{name}: {logs}");
        } else {
            assert!(!logs.contains("WARN"), "{name}: unexpected warning: {logs}");
        }
        let want = if last_survives { &full } else { &before_last };
        assert_eq!(&all(&*s).await, want, "{name}");
        // The log was cut back to a frame boundary: writes continue and survive a reopen.
        let kv = s.create("/t/after", b("after")).await.unwrap();
        assert_eq!(kv.mod_revision, want.len() as Revision + 1, "{name}");
        s.close().await.unwrap();
        let (s, logs) = with_logs(|| EmbeddedStore::open(dir.path(), opts()));
        let s = s.unwrap();
        assert!(!logs.contains("WARN"), "{name}: damage left behind: {logs}");
        assert_eq!(s.get("/t/after").await.unwrap().0, Some(kv), "{name}");
        s.close().await.unwrap();
    }
}

#[tokio::test]
async fn damage_before_the_tail_is_corruption_not_data_loss() {
    // A flipped bit in the first batch, with valid batches after it.
    let dir = tempfile::tempdir().unwrap();
    let (wal, _, _) = three_batches(dir.path()).await;
    let mut data = fs::read(&wal).unwrap();
    data[8 + 8 + 10] ^= 0x01;
    fs::write(&wal, &data).unwrap();
    let err = EmbeddedStore::open(dir.path(), opts()).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)), "{err}");
    assert!(
        err.to_string().contains("followed by a valid frame"),
        "{err}"
    );
    // Nothing was truncated.
    assert_eq!(fs::read(&wal).unwrap(), data);

    // A damaged snapshot.
    let dir = tempfile::tempdir().unwrap();
    let small = EmbeddedOptions {
        snapshot_log_bytes: 4 << 10,
        ..opts()
    };
    let s = EmbeddedStore::open(dir.path(), small.clone()).unwrap();
    write_mix(&*s, 200, &"s".repeat(100)).await;
    s.close().await.unwrap();
    let snap = files(dir.path(), "snap-").pop().unwrap();
    let mut data = fs::read(&snap).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x20;
    fs::write(&snap, &data).unwrap();
    let err = EmbeddedStore::open(dir.path(), small.clone()).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)), "{err}");

    // A missing log segment (a gap in the revisions).
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), small.clone()).unwrap();
    write_mix(&*s, 200, &"g".repeat(100)).await;
    let before_gap = s.current_revision().await.unwrap();
    s.close().await.unwrap();
    let s = EmbeddedStore::open(dir.path(), small.clone()).unwrap();
    s.create("/g/x", b("x")).await.unwrap();
    s.close().await.unwrap();
    let snaps = files(dir.path(), "snap-");
    for p in &snaps {
        fs::remove_file(p).unwrap();
    }
    let err = EmbeddedStore::open(dir.path(), small).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)), "{err}");
    assert!(before_gap > 0);
}

#[tokio::test]
async fn slow_watcher_never_blocks_writers_and_ends_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(
        dir.path(),
        EmbeddedOptions {
            history_max_revisions: 200,
            ..opts()
        },
    )
    .unwrap();
    let start = s.create("/slow/k", b("0")).await.unwrap().mod_revision;
    let mut within = s.watch("/slow/", start).await.unwrap();
    let mut behind = s.watch("/slow/", start).await.unwrap();
    // The watchers are not read while 150 writes go by: still within history.
    let mut cur = s.get("/slow/k").await.unwrap().0.unwrap();
    for i in 1..=150 {
        cur = s
            .update("/slow/k", b(&i.to_string()), cur.mod_revision)
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 150 {
        match tokio::time::timeout(DEADLINE, within.next()).await.unwrap() {
            Some(Ok(WatchItem::Events(evs))) => {
                got.extend(evs.into_iter().map(|e| e.kv.mod_revision))
            }
            Some(Ok(WatchItem::Progress(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(got, ((start + 1)..=cur.mod_revision).collect::<Vec<_>>());
    // 500 more writes: history is bounded at 200 revisions, the unread watcher falls out.
    for i in 0..500 {
        cur = s
            .update("/slow/k", b(&i.to_string()), cur.mod_revision)
            .await
            .unwrap();
    }
    assert!(s.stats().history_revisions <= 200);
    match tokio::time::timeout(DEADLINE, behind.next()).await.unwrap() {
        Some(Err(Error::Compacted {
            requested,
            compacted,
        })) => {
            assert_eq!(requested, start + 1);
            assert!(compacted > requested);
        }
        other => panic!("lagging watcher gave {other:?}"),
    }
    assert!(
        behind.next().await.is_none(),
        "the stream ends after Compacted"
    );
    s.close().await.unwrap();
}

#[tokio::test]
async fn watches_end_when_the_store_closes() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    let kv = s.create("/w/k", b("v")).await.unwrap();
    let mut w = s.watch("/w/", 0).await.unwrap();
    s.close().await.unwrap();
    match tokio::time::timeout(DEADLINE, w.next()).await.unwrap() {
        Some(Err(Error::Unavailable(_))) => {}
        other => panic!("watch of a closed store gave {other:?}"),
    }
    assert!(w.next().await.is_none());
    // Reads still work; writes are refused.
    assert_eq!(s.get("/w/k").await.unwrap().0, Some(kv));
    assert!(matches!(
        s.delete("/w/k", 0).await,
        Err(Error::Unavailable(_))
    ));
}

#[tokio::test]
async fn history_is_bounded_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(
        dir.path(),
        EmbeddedOptions {
            history_max_bytes: 256 << 10,
            ..opts()
        },
    )
    .unwrap();
    // Values that do not pack (the bound is on the memory history takes, packed or not).
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut noise = move || {
        seed = seed.wrapping_add(2);
        storage::testing::incompressible(4096, seed)
    };
    let mut cur = s.create("/bytes/k", noise()).await.unwrap();
    for _ in 0..200 {
        cur = s
            .update("/bytes/k", noise(), cur.mod_revision)
            .await
            .unwrap();
    }
    let stats = s.stats();
    assert!(stats.history_bytes <= 256 << 10, "{stats:?}");
    assert!(stats.compacted > 100, "{stats:?}");
    assert!(
        s.range(RangeRequest {
            prefix: "/bytes/".into(),
            revision: 2,
            ..Default::default()
        })
        .await
        .unwrap_err()
        .is_compacted()
    );
    s.close().await.unwrap();
}

#[tokio::test]
async fn a_data_directory_is_opened_by_one_store_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    let err = EmbeddedStore::open(dir.path(), opts()).unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err}");
    s.health().await.unwrap();
    s.close().await.unwrap();
    assert!(s.health().await.is_err());
    let s2 = EmbeddedStore::open(dir.path(), opts()).unwrap();
    s2.close().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(
        dir.path(),
        EmbeddedOptions {
            max_value_bytes: 1000,
            ..opts()
        },
    )
    .unwrap();
    let cases: Vec<(&str, Result<(), Error>)> = vec![
        ("empty key", s.create("", b("x")).await.map(|_| ())),
        (
            "huge key",
            s.create(&"k".repeat(100_000), b("x")).await.map(|_| ()),
        ),
        (
            "value over the limit",
            s.create("/k", Bytes::from(vec![0u8; 1001]))
                .await
                .map(|_| ()),
        ),
        (
            "negative delete revision",
            s.delete("/k", -1).await.map(|_| ()),
        ),
        (
            "negative read revision",
            s.range(RangeRequest {
                prefix: "/".into(),
                revision: -1,
                ..Default::default()
            })
            .await
            .map(|_| ()),
        ),
        (
            "negative watch revision",
            s.watch("/", -5).await.map(|_| ()),
        ),
    ];
    for (name, result) in cases {
        match result {
            Err(Error::InvalidArgument(_)) | Err(Error::TooLarge { .. }) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(s.current_revision().await.unwrap(), 0);
    assert!(
        EmbeddedStore::open(
            &dir.path().join("other"),
            EmbeddedOptions {
                max_value_bytes: 0,
                ..opts()
            }
        )
        .is_err()
    );
    s.close().await.unwrap();
}

#[tokio::test]
async fn the_compactor_task_compacts_periodically() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    let store: Arc<dyn Store> = s.clone();
    let compactor = storage::compactor::Compactor::spawn(store, Duration::from_millis(50));
    let mut cur = s.create("/cp/k", b("0")).await.unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    // Keep writing until a compaction lands on a revision recorded an interval earlier.
    loop {
        cur = s.update("/cp/k", b("x"), cur.mod_revision).await.unwrap();
        let compacted = s.compacted_revision().await.unwrap();
        if compacted > 0 {
            assert!(compacted < cur.mod_revision);
            let clock = s
                .get(storage::compactor::COMPACT_REV_KEY)
                .await
                .unwrap()
                .0
                .unwrap();
            assert!(clock.version >= 2, "{clock:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no compaction happened"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(compactor);
    s.close().await.unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_writer_thread_runs_in_the_batch_scheduling_class() {
    // SCHED_BATCH (3): a woken writer does not preempt the request that woke it.
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path(), opts()).unwrap();
    s.create("/k", b("v")).await.unwrap();
    let policies: Vec<String> = fs::read_dir("/proc/self/task")
        .unwrap()
        .map(|t| t.unwrap().path())
        .filter(|t| fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim() == "storage-writer"))
        .map(|t| {
            let sched = fs::read_to_string(t.join("sched")).unwrap();
            let line = sched.lines().find(|l| l.starts_with("policy")).unwrap();
            line.rsplit(':').next().unwrap().trim().to_owned()
        })
        .collect();
    assert!(!policies.is_empty(), "no storage-writer thread found");
    // A process started with a nice value keeps its writer as it is (SCHED_OTHER, 0).
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let nice: i64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(16)
        .unwrap()
        .parse()
        .unwrap();
    let want = if nice == 0 { "3" } else { "0" };
    assert!(
        policies.iter().all(|p| p == want),
        "{policies:?} at nice {nice}"
    );
    s.close().await.unwrap();
}
