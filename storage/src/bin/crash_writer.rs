//! Child process of the embedded store's crash test (`tests/crash.rs`): opens the store
//! in `DIR` and writes from several tasks until killed, printing one line per write the
//! store acknowledged:
//!
//! - `put <key> <value-tag> <mod_revision>` after a create or update,
//! - `del <key> <revision>` after a delete.
//!
//! Values are `<value-tag>:` followed by filler derived from the tag, so the parent can
//! tell a complete value from a half-written one. Usage: `storage-crash-writer DIR RUN`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use storage::Store;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};

/// The value written for `tag`: the tag, a colon, and filler of a length derived from it.
fn value_for(tag: &str) -> Bytes {
    let seed = tag
        .bytes()
        .fold(7u32, |h, c| h.wrapping_mul(31).wrapping_add(c as u32));
    let len = (seed % 3000) as usize;
    let mut v = format!("{tag}:").into_bytes();
    v.extend((0..len).map(|i| b'a' + ((seed as usize + i) % 26) as u8));
    Bytes::from(v)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(run)) = (args.next(), args.next()) else {
        eprintln!("usage: storage-crash-writer DIR RUN");
        std::process::exit(2);
    };
    let opts = EmbeddedOptions {
        // Small, so snapshots and log rotations happen (and get interrupted) too.
        snapshot_log_bytes: 256 << 10,
        ..EmbeddedOptions::default()
    };
    let store = match EmbeddedStore::open(std::path::Path::new(&dir), opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    println!("ready");
    let mut tasks = Vec::new();
    for t in 0..8 {
        let store: Arc<EmbeddedStore> = store.clone();
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let key = format!("/crash/{t}/{}", i % 16);
                let tag = format!("{run}.{t}.{i}");
                let cur = match store.get(&key).await {
                    Ok((cur, _)) => cur,
                    Err(e) => {
                        eprintln!("get failed: {e}");
                        return;
                    }
                };
                let result = match cur {
                    Some(cur) if i % 11 == 10 => store
                        .delete(&key, cur.mod_revision)
                        .await
                        .map(|(_, rev)| format!("del {key} {rev}")),
                    Some(cur) => store
                        .update(&key, value_for(&tag), cur.mod_revision)
                        .await
                        .map(|kv| format!("put {key} {tag} {}", kv.mod_revision)),
                    None => store
                        .create(&key, value_for(&tag))
                        .await
                        .map(|kv| format!("put {key} {tag} {}", kv.mod_revision)),
                };
                match result {
                    Ok(line) => println!("{line}"),
                    Err(e) => {
                        eprintln!("write failed: {e}");
                        return;
                    }
                }
                if i % 64 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}
