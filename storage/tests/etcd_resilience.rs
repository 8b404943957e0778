//! etcd backend beyond the common contract: a watch that survives an etcd restart,
//! requests while etcd is down, authentication, and TLS with client certificates.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::etcd::{EtcdOptions, EtcdStore, EtcdTls};
use storage::testing::{EtcdProcess, EtcdServerTls};
use storage::{Error, Revision, Store, WatchItem, WatchStream};

const DEADLINE: Duration = Duration::from_secs(20);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Reads events until `until`, returning their revisions.
async fn revisions_until(w: &mut WatchStream, until: Revision) -> Vec<Revision> {
    let mut got = Vec::new();
    while got.last().is_none_or(|r| *r < until) {
        match tokio::time::timeout(DEADLINE, w.next())
            .await
            .expect("watch stalled")
        {
            Some(Ok(WatchItem::Events(evs))) => got.extend(evs.iter().map(|e| e.kv.mod_revision)),
            Some(Ok(WatchItem::Progress(_))) => {}
            other => panic!("watch gave {other:?}"),
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_across_an_etcd_restart_without_gaps_or_duplicates() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let mut etcd = EtcdProcess::start().await.unwrap();
    let store = EtcdStore::connect(EtcdOptions {
        request_timeout: Duration::from_secs(3),
        ..etcd.options()
    })
    .await
    .unwrap();
    let start = store.create("/mark", b("m")).await.unwrap().mod_revision;
    let mut w = store.watch("/rs/", start).await.unwrap();
    let mut want = Vec::new();
    for i in 0..30 {
        want.push(
            store
                .create(&format!("/rs/{i}"), b("before"))
                .await
                .unwrap()
                .mod_revision,
        );
        store.create(&format!("/other/{i}"), b("x")).await.unwrap();
    }
    // Read part of them, then restart etcd under the open watch.
    let mut got = revisions_until(&mut w, want[9]).await;

    etcd.kill();
    // While etcd is down, requests fail with Unavailable (they do not hang).
    match tokio::time::timeout(DEADLINE, store.get("/rs/0"))
        .await
        .unwrap()
    {
        Err(Error::Unavailable(_)) => {}
        other => panic!("get with etcd down gave {other:?}"),
    }
    etcd.start_again().await.unwrap();

    let deadline = tokio::time::Instant::now() + DEADLINE;
    for i in 30..60 {
        // The client reconnects on its own; retry while it does.
        loop {
            match store.create(&format!("/rs/{i}"), b("after")).await {
                Ok(kv) => {
                    want.push(kv.mod_revision);
                    break;
                }
                Err(Error::Unavailable(_)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("create after restart: {e}"),
            }
        }
    }
    got.extend(revisions_until(&mut w, *want.last().unwrap()).await);
    assert_eq!(got, want, "every event exactly once, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_authentication() {
    let etcd = EtcdProcess::start().await.unwrap();
    let admin = storage::etcd::rpc::Client::new(&storage::etcd::rpc::ConnectSettings {
        endpoints: etcd.endpoints(),
        connect_timeout: Duration::from_secs(3),
        max_decoding_message_size: 4 << 20,
        ..Default::default()
    })
    .unwrap();
    admin.user_add("root", "s3cret").await.unwrap();
    admin.user_grant_role("root", "root").await.unwrap();
    admin.auth_enable().await.unwrap();

    let opts = |user: Option<(&str, &str)>| EtcdOptions {
        user: user.map(|(u, p)| (u.to_string(), p.to_string())),
        connect_timeout: Duration::from_secs(3),
        ..etcd.options()
    };
    let store = EtcdStore::connect(opts(Some(("root", "s3cret"))))
        .await
        .unwrap();
    let kv = store.create("/auth/k", b("v")).await.unwrap();
    assert_eq!(store.get("/auth/k").await.unwrap().0, Some(kv));

    assert!(
        EtcdStore::connect(opts(Some(("root", "wrong"))))
            .await
            .is_err()
    );
    match EtcdStore::connect(opts(None)).await {
        Err(e) => assert!(!matches!(e, Error::Unavailable(_)), "{e}"),
        Ok(s) => assert!(s.get("/auth/k").await.is_err(), "anonymous read allowed"),
    }
}

struct Pki {
    ca_pem: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn pki() -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa,
        KeyPair,
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let mut server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    server.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let server_key = KeyPair::generate().unwrap();
    let server_cert = server.signed_by(&server_key, &ca).unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, "karmada-rs");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate().unwrap();
    let client_cert = client.signed_by(&client_key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        server_cert: server_cert.pem(),
        server_key: server_key.serialize_pem(),
        client_cert: client_cert.pem(),
        client_key: client_key.serialize_pem(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    let pki = pki();
    let client_tls = EtcdTls {
        ca_pem: Some(pki.ca_pem.clone().into_bytes()),
        cert_pem: Some(pki.client_cert.clone().into_bytes()),
        key_pem: Some(pki.client_key.clone().into_bytes()),
        server_name: None,
    };
    let etcd = EtcdProcess::builder()
        .tls(EtcdServerTls {
            cert_pem: pki.server_cert.clone().into_bytes(),
            key_pem: pki.server_key.clone().into_bytes(),
            client_ca_pem: pki.ca_pem.clone().into_bytes(),
            client_cert_auth: true,
            client: client_tls.clone(),
        })
        .start()
        .await
        .unwrap();
    assert!(etcd.endpoint().starts_with("https://"));
    let store = etcd.store().await.unwrap();
    let kv = store.create("/tls/k", b("v")).await.unwrap();
    let mut w = store.watch("/tls/", kv.mod_revision - 1).await.unwrap();
    assert_eq!(
        revisions_until(&mut w, kv.mod_revision).await,
        [kv.mod_revision]
    );

    // Without a client certificate, or trusting another CA, the connection is refused.
    let short = |tls: EtcdTls| EtcdOptions {
        tls: Some(tls),
        connect_timeout: Duration::from_secs(2),
        ..etcd.options()
    };
    let no_cert = EtcdTls {
        cert_pem: None,
        key_pem: None,
        ..client_tls.clone()
    };
    assert!(EtcdStore::connect(short(no_cert)).await.is_err());
    let other_ca = EtcdTls {
        ca_pem: Some(self::pki().ca_pem.into_bytes()),
        ..client_tls
    };
    assert!(EtcdStore::connect(short(other_ca)).await.is_err());
}

#[tokio::test]
async fn connecting_to_no_etcd_fails_with_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = tokio::time::Instant::now();
    let err = EtcdStore::connect(EtcdOptions {
        connect_timeout: Duration::from_secs(1),
        ..EtcdOptions::new([format!("http://127.0.0.1:{port}")])
    })
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err}");
    assert!(started.elapsed() < DEADLINE);
    assert!(matches!(
        EtcdStore::connect(EtcdOptions::new(Vec::<String>::new())).await,
        Err(Error::InvalidArgument(_))
    ));
}

/// Writes `n` keys under `prefix`, each acknowledged within [`DEADLINE`]. A write may fail
/// while the members left elect a new leader (etcd answers "request timed out, possibly due to
/// previous leader failure", as it does to any client); it is retried as a client would, and
/// a retry that finds the key already there means the first attempt was applied.
async fn write_some(store: &EtcdStore, prefix: &str, n: usize) {
    for i in 0..n {
        let key = format!("{prefix}{i}");
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            match store.create(&key, b("v")).await {
                Ok(_) | Err(Error::AlreadyExists { .. }) => break,
                Err(Error::Unavailable(m)) if tokio::time::Instant::now() < deadline => {
                    tracing::info!(%key, error = %m, "write retried");
                }
                Err(e) => panic!("write {key}: {e}"),
            }
        }
    }
}

/// The production shape: a store over a 3-member cluster keeps serving with one member down
/// (whichever it was talking to), fails fast and cleanly without a quorum, and serves again
/// once a quorum is back, without reconnecting by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_member_cluster_survives_one_member_and_recovers_from_two() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let mut cluster = storage::testing::EtcdCluster::start(3).await.unwrap();
    // Long enough for the members left to elect a leader when the one that led goes.
    let store = EtcdStore::connect(EtcdOptions {
        request_timeout: Duration::from_secs(15),
        ..cluster.options()
    })
    .await
    .unwrap();
    let timeout = Duration::from_secs(2);
    let quick = EtcdStore::connect(EtcdOptions {
        request_timeout: timeout,
        ..cluster.options()
    })
    .await
    .unwrap();
    write_some(&store, "/all/", 10).await;

    // One member down, in turn for each: writes and reads go on through the others.
    for i in 0..3 {
        cluster.member(i).kill();
        write_some(&store, &format!("/without-{i}/"), 10).await;
        // Once a leader serves, no call fails: none is sent to the member that is down.
        for j in 0..20 {
            let (kv, _) = store.get("/all/3").await.expect("read with a member down");
            assert!(kv.is_some());
            store
                .create(&format!("/steady-{i}/{j}"), b("x"))
                .await
                .expect("write with a member down");
        }
        cluster.member(i).start_again().await.unwrap();
    }

    // Two down: no quorum. A write fails with Unavailable within the request timeout, never
    // hangs and never reports success.
    cluster.member(0).kill();
    cluster.member(1).kill();
    let started = std::time::Instant::now();
    let res = quick.create("/no-quorum", b("x")).await;
    assert!(
        matches!(res, Err(Error::Unavailable(_))),
        "without a quorum: {res:?}"
    );
    assert!(
        started.elapsed() < timeout + Duration::from_secs(2),
        "answered after {:?}",
        started.elapsed()
    );

    // The quorum comes back: the same store serves again.
    cluster.member(0).start_again().await.unwrap();
    cluster.member(1).start_again().await.unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match store.create("/after", b("x")).await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "waiting for the quorum");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no recovery: {e}"),
        }
    }
    let (kv, _) = store.get("/no-quorum").await.unwrap();
    assert!(kv.is_none(), "the failed write did not happen");
    let all = store
        .range(storage::RangeRequest {
            prefix: "/without-".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.kvs.len(), 30, "every acknowledged write is there");
}
