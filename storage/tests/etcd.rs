//! The conformance suite against a real etcd server.

mod conformance;

use storage::testing::EtcdProcess;

async fn harness() -> conformance::Harness {
    let etcd = EtcdProcess::start().await.unwrap();
    let store = etcd.store().await.unwrap();
    conformance::Harness {
        store,
        guard: Box::new(etcd),
    }
}

conformance_suite!(harness);
