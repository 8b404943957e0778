//! The conformance suite against a real etcd server.

mod conformance;

use storage::testing::EtcdProcess;

async fn harness() -> conformance::Harness {
    // The suite's Bookmarkable case needs etcd's periodic progress notifications (Debian's
    // etcd 3.4 answers no progress requests in order); everything above the storage layer is
    // tested against etcd's defaults.
    let etcd = EtcdProcess::builder()
        .progress_notify_interval(std::time::Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    let store = etcd.store().await.unwrap();
    conformance::Harness {
        store,
        guard: Box::new(etcd),
    }
}

conformance_suite!(harness);

/// etcd's progress request on a watch stream, at the wire level: an idle (synced) watch answers
/// with an event-less response whose header names the current revision. Whether a store hands
/// out a requester depends on the server's version: Debian's etcd 3.4.23 answers such requests
/// ahead of pending events, so the store keeps to quorum reads there.
#[tokio::test]
async fn progress_requests_on_the_wire_and_by_version() {
    use storage::Store;
    use storage::etcd::rpc::{Client, ConnectSettings, WatchCreateRequest};

    let etcd = EtcdProcess::start().await.unwrap();
    let store = etcd.store().await.unwrap();
    let version = Client::new(&ConnectSettings {
        endpoints: etcd.endpoints(),
        connect_timeout: std::time::Duration::from_secs(5),
        max_decoding_message_size: 4 << 20,
        ..ConnectSettings::default()
    })
    .unwrap()
    .status()
    .await
    .unwrap()
    .version;
    let (_, requester) = store.watch_with_progress("/w/", 0).await.unwrap();
    assert_eq!(
        requester.is_some(),
        storage::etcd::answers_progress_requests(&version),
        "etcd {version}"
    );
    assert_eq!(
        store.answers_progress_requests(),
        storage::etcd::answers_progress_requests(&version)
    );

    let client = Client::new(&ConnectSettings {
        endpoints: etcd.endpoints(),
        connect_timeout: std::time::Duration::from_secs(5),
        max_decoding_message_size: 4 << 20,
        ..ConnectSettings::default()
    })
    .unwrap();
    let mut watch = client
        .watch(WatchCreateRequest {
            key: b"/quiet/".to_vec(),
            range_end: b"/quiet0".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap();
    let created = watch.message().await.unwrap().expect("created");
    assert!(created.created);
    let written = store
        .create("/busy/k", bytes::Bytes::from_static(b"v"))
        .await
        .unwrap()
        .mod_revision;
    watch.request_progress();
    let resp = tokio::time::timeout(std::time::Duration::from_secs(10), watch.message())
        .await
        .expect("no answer to the progress request")
        .unwrap()
        .expect("stream open");
    assert!(resp.events.is_empty(), "{resp:?}");
    assert!(
        resp.header.map(|h| h.revision) >= Some(written),
        "progress below the write at {written}"
    );
}
