//! The control plane over a 3-member etcd cluster on loopback, as it runs in production: the
//! API keeps serving when one member dies (whichever), answers 503 or 504 within the request
//! timeout — never 500, never a hang — when the quorum is lost, and serves again without a
//! restart once the members return; no acknowledged write is lost.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use storage::testing::EtcdCluster;
use support::{Backend, DEADLINE, Server};

/// Creates ConfigMap `name`, retrying while the API answers 503 or 504 (an etcd leader
/// election), up to [`DEADLINE`]. Any other failure fails the test. A retry that finds the
/// object means the earlier attempt was applied.
async fn create(api: &Api<ConfigMap>, name: &str) -> usize {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": name}}))
            .expect("configmap");
    let deadline = Instant::now() + DEADLINE;
    let mut retries = 0;
    loop {
        match api.create(&PostParams::default(), &cm).await {
            Ok(_) => return retries,
            Err(kube::Error::Api(s)) if s.code == 409 && retries > 0 => return retries,
            Err(kube::Error::Api(s))
                if (s.code == 503 || s.code == 504) && Instant::now() < deadline =>
            {
                retries += 1;
            }
            Err(e) => panic!("create {name}: {e}"),
        }
    }
}

#[test]
fn the_api_survives_an_etcd_member_and_recovers_from_a_lost_quorum() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut cluster = rt.block_on(EtcdCluster::start(3)).expect("etcd cluster");
    let endpoints = cluster.endpoints().join(",");
    let server = Server::start_with(
        Backend::Embedded,
        &["--etcd-servers", &endpoints, "--request-timeout", "8s"],
    );
    let client = server.block_on(server.client());
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut acknowledged = Vec::new();

    // Each member in turn dies while writes go on: every write is acknowledged (a few after
    // 503/504 retries while the members left elect a leader), then writes need no retry.
    for i in 0..3 {
        cluster.member(i).kill();
        for j in 0..10 {
            let name = format!("without-{i}-{j}");
            server.block_on(create(&api, &name));
            acknowledged.push(name);
        }
        for j in 0..10 {
            let name = format!("steady-{i}-{j}");
            assert_eq!(
                server.block_on(create(&api, &name)),
                0,
                "{name} needed retries"
            );
            acknowledged.push(name);
        }
        rt.block_on(cluster.member(i).start_again())
            .expect("member back");
    }

    // Two members down: no quorum. A write is answered 503 or 504 within the request timeout.
    cluster.member(0).kill();
    cluster.member(1).kill();
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "no-quorum"}})).expect("configmap");
    let started = Instant::now();
    let res = server.block_on(api.create(&PostParams::default(), &cm));
    let took = started.elapsed();
    match res {
        Err(kube::Error::Api(s)) => assert!(
            s.code == 503 || s.code == 504,
            "without a quorum: {} {}",
            s.code,
            s.message
        ),
        other => panic!("a write without a quorum gave {other:?}"),
    }
    assert!(
        took < Duration::from_secs(8) + Duration::from_secs(4),
        "answered after {took:?}"
    );

    // The members return: the same server serves again, and nothing acknowledged is lost.
    rt.block_on(cluster.member(0).start_again())
        .expect("member 0 back");
    rt.block_on(cluster.member(1).start_again())
        .expect("member 1 back");
    server.block_on(create(&api, "after"));
    acknowledged.push("after".into());
    let names: Vec<String> = server
        .block_on(api.list(&ListParams::default()))
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    for n in &acknowledged {
        assert!(names.contains(n), "{n} was acknowledged and is gone");
    }
}
