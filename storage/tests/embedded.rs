//! The conformance suite against the embedded store.

mod conformance;

use std::sync::Arc;
use std::time::Duration;

use storage::embedded::{EmbeddedOptions, EmbeddedStore};

async fn harness() -> conformance::Harness {
    let dir = tempfile::tempdir().unwrap();
    let opts = EmbeddedOptions {
        progress_interval: Duration::from_millis(100),
        ..EmbeddedOptions::default()
    };
    let store: Arc<EmbeddedStore> = EmbeddedStore::open(dir.path(), opts).unwrap();
    conformance::Harness {
        store,
        guard: Box::new(dir),
    }
}

conformance_suite!(harness);

/// A requested progress report comes at once, not with the next periodic one (an hour away
/// here), and it is exact: it names the store's revision once the watcher is caught up.
#[tokio::test]
async fn requested_progress_is_answered_at_once() {
    use futures::StreamExt;
    use storage::{Store, WatchItem};

    let dir = tempfile::tempdir().unwrap();
    let opts = EmbeddedOptions {
        progress_interval: Duration::from_secs(3600),
        ..EmbeddedOptions::default()
    };
    let store: Arc<EmbeddedStore> = EmbeddedStore::open(dir.path(), opts).unwrap();
    let start = store.current_revision().await.unwrap();
    let (mut w, requester) = store.watch_with_progress("/quiet/", start).await.unwrap();
    let requester = requester.expect("the embedded store answers progress requests");
    let mut last = 0;
    for i in 0..3 {
        last = store
            .create(&format!("/busy/{i}"), bytes::Bytes::from_static(b"v"))
            .await
            .unwrap()
            .mod_revision;
    }
    requester.request();
    let item = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("no progress within 10 s of the request");
    match item {
        Some(Ok(WatchItem::Progress(rev))) => assert_eq!(rev, last),
        other => panic!("expected progress at {last}, got {other:?}"),
    }
}
