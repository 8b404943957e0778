//! Crash test of the embedded store: a child process (`storage-crash-writer`) writes in a
//! loop and reports every acknowledged write; it is killed with SIGKILL at a random
//! moment, many times over the same data directory. After each kill the store must open,
//! hold every acknowledged write, and hold no half-written value.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::{RangeRequest, Revision, Store};

const KILLS: usize = 24;

/// The value the writer stores for `tag` (must match `src/bin/crash_writer.rs`).
fn value_for(tag: &str) -> Bytes {
    let seed = tag
        .bytes()
        .fold(7u32, |h, c| h.wrapping_mul(31).wrapping_add(c as u32));
    let len = (seed % 3000) as usize;
    let mut v = format!("{tag}:").into_bytes();
    v.extend((0..len).map(|i| b'a' + ((seed as usize + i) % 26) as u8));
    Bytes::from(v)
}

/// The last acknowledged write of a key: its revision and the value tag (None: deleted).
#[derive(Clone, Debug)]
struct Acked {
    rev: Revision,
    tag: Option<String>,
}

fn parse(line: &str) -> Option<(String, Acked)> {
    let parts: Vec<&str> = line.split(' ').collect();
    match parts.as_slice() {
        ["put", key, tag, rev] => Some((
            key.to_string(),
            Acked {
                rev: rev.parse().ok()?,
                tag: Some(tag.to_string()),
            },
        )),
        ["del", key, rev] => Some((
            key.to_string(),
            Acked {
                rev: rev.parse().ok()?,
                tag: None,
            },
        )),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_storage-crash-writer");
    let mut acked: HashMap<String, Acked> = HashMap::new();
    let mut total_acks = 0usize;
    let mut rng = rand::rng();
    for run in 0..KILLS {
        let mut child = Command::new(exe)
            .arg(dir.path())
            .arg(run.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait for the first acknowledged write, then kill at a random moment.
        let mut lines = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !lines
            .iter()
            .any(|l: &String| l.starts_with("put") || l.starts_with("del"))
        {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => panic!("run {run}: the writer acknowledged nothing: {lines:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(1..120))).await;
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        lines.extend(rx.try_iter());
        assert_eq!(lines[0], "ready", "run {run}");
        for line in &lines[1..] {
            let (key, a) = parse(line).unwrap_or_else(|| panic!("bad line {line:?}"));
            total_acks += 1;
            let newer = acked.get(&key).is_none_or(|old| a.rev > old.rev);
            if newer {
                acked.insert(key, a);
            }
        }

        // Reopen and check.
        let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default())
            .unwrap_or_else(|e| panic!("run {run}: reopen after SIGKILL failed: {e}"));
        let current = store.current_revision().await.unwrap();
        let max_acked = acked.values().map(|a| a.rev).max().unwrap_or(0);
        assert!(
            current >= max_acked,
            "run {run}: revision {current} < acked {max_acked}"
        );
        for (key, a) in &acked {
            let cur = store.get(key).await.unwrap().0;
            match (&a.tag, cur) {
                (Some(tag), Some(kv)) => {
                    assert!(
                        kv.mod_revision >= a.rev,
                        "run {run}: {key} lost write {a:?}"
                    );
                    if kv.mod_revision == a.rev {
                        assert_eq!(kv.value, value_for(tag), "run {run}: {key}");
                    }
                }
                // Deleted by a write that was in flight when the writer was killed.
                (Some(_), None) => assert!(current > a.rev, "run {run}: {key} lost {a:?}"),
                (None, Some(kv)) => assert!(
                    kv.create_revision > a.rev,
                    "run {run}: {key} deleted at {} is back: {kv:?}",
                    a.rev
                ),
                (None, None) => {}
            }
        }
        // Nothing half-written: every stored value is exactly a value some write sent.
        let all = store
            .range(RangeRequest {
                prefix: "/crash/".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        for kv in &all.kvs {
            let text = std::str::from_utf8(&kv.value).unwrap();
            let tag = text.split(':').next().unwrap();
            assert_eq!(kv.value, value_for(tag), "run {run}: {} is damaged", kv.key);
        }
        store.close().await.unwrap();
    }
    assert!(
        total_acks > KILLS * 10,
        "too few writes to mean anything: {total_acks}"
    );
}
