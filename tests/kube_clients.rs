//! kube-rs clients against `karmada-rs serve`: typed and dynamic APIs, and
//! `kube::runtime::watcher`/reflector staying consistent through a server restart and a 410.

mod support;

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use support::{Backend, DEADLINE, Server};

async fn client(s: &Server) -> kube::Client {
    support::kube_client(&s.kubeconfig).await
}

fn cm(name: &str, v: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": v}})).expect("cm")
}

#[test]
fn typed_and_dynamic_apis() {
    let s = Server::start();
    s.block_on(async {
        let c = client(&s).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
        let created = cms.create(&PostParams::default(), &cm("k1", "1")).await.expect("create");
        assert_eq!(created.metadata.name.as_deref(), Some("k1"));
        let got = cms.get("k1").await.expect("get");
        assert_eq!(got.data.unwrap_or_default()["v"], "1");
        let patched = cms
            .patch("k1", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "2"}})))
            .await
            .expect("patch");
        assert_eq!(patched.data.unwrap_or_default()["v"], "2");
        let applied = cms
            .patch(
                "k1",
                &PatchParams::apply("kube-rs-test").force(),
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k1"}, "data": {"v": "3"}})),
            )
            .await
            .expect("apply");
        assert_eq!(applied.data.unwrap_or_default()["v"], "3");
        let list = cms.list(&ListParams::default().labels("missing=label")).await.expect("list");
        assert!(list.items.is_empty());

        // Dynamic API on a Karmada kind.
        let ar = ApiResource {
            group: "policy.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "policy.karmada.io/v1alpha1".into(),
            kind: "PropagationPolicy".into(),
            plural: "propagationpolicies".into(),
        };
        let pps: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
        let pp: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "dyn"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "k1"}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}
        }))
        .expect("pp");
        let created = pps.create(&PostParams::default(), &pp).await.expect("create pp");
        // Karmada's defaulting happened.
        assert_eq!(created.data["spec"]["conflictResolution"], "Abort");
        assert_eq!(created.data["spec"]["resourceSelectors"][0]["namespace"], "default");
        let listed = pps.list(&ListParams::default()).await.expect("list pps");
        assert_eq!(listed.items.len(), 1);
        pps.delete("dyn", &DeleteParams::default()).await.expect("delete pp");
        cms.delete("k1", &DeleteParams::default()).await.expect("delete cm");
        let err = cms.get("k1").await.expect_err("gone");
        assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404), "{err:?}");
    });
}

fn reflector_consistent_through_restart(backend: Backend) {
    let mut s = Server::start_with(backend, &[]);
    let kubeconfig = s.kubeconfig.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let c = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        kube::Client::try_from(cfg).expect("client")
    });
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let relists = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let relists2 = relists.clone();
    let stream = watcher(cms.clone(), watcher::Config::default().timeout(290))
        .default_backoff()
        .inspect(move |e| {
            if matches!(e, Ok(watcher::Event::Init)) {
                relists2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
        .reflect(writer)
        .for_each(|_| async {});
    let task = rt.spawn(stream);

    let names = |r: &reflector::Store<ConfigMap>| -> BTreeSet<String> {
        r.state()
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect()
    };
    rt.block_on(async {
        for i in 0..5 {
            cms.create(&PostParams::default(), &cm(&format!("r{i}"), "a"))
                .await
                .expect("create");
        }
    });
    let want: BTreeSet<String> = (0..5).map(|i| format!("r{i}")).collect();
    support::wait_for("reflector to see the first objects", DEADLINE, || {
        (names(&reader) == want).then_some(())
    });
    assert_eq!(relists.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Move the store's revision past the watcher's last event, so that its resume is too
    // old for the restarted server's watch cache: a 410, then a relist.
    rt.block_on(async {
        let secrets: Api<Secret> = Api::namespaced(c.clone(), "default");
        let sec: Secret =
            serde_json::from_value(json!({"metadata": {"name": "bump"}})).expect("secret");
        secrets
            .create(&PostParams::default(), &sec)
            .await
            .expect("bump");
    });
    s.restart();
    rt.block_on(async {
        cms.delete("r0", &DeleteParams::default())
            .await
            .expect("delete");
        cms.patch(
            "r1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "b"}})),
        )
        .await
        .expect("patch");
        cms.create(&PostParams::default(), &cm("r5", "a"))
            .await
            .expect("create");
    });
    let want: BTreeSet<String> = (1..6).map(|i| format!("r{i}")).collect();
    support::wait_for("reflector to converge after the restart", DEADLINE, || {
        let ok = names(&reader) == want
            && reader.state().iter().any(|o| {
                o.metadata.name.as_deref() == Some("r1")
                    && o.data.as_ref().is_some_and(|d| d["v"] == "b")
            });
        ok.then_some(())
    });
    assert!(
        relists.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the watcher should have relisted after a 410"
    );
    // And it keeps following live changes.
    rt.block_on(async {
        cms.delete("r5", &DeleteParams::default())
            .await
            .expect("delete");
    });
    support::wait_for("reflector to follow a live delete", DEADLINE, || {
        (!names(&reader).contains("r5")).then_some(())
    });
    task.abort();
}

#[test]
fn reflector_survives_restart_and_410_embedded() {
    reflector_consistent_through_restart(Backend::Embedded);
}

#[test]
fn reflector_survives_restart_and_410_etcd() {
    reflector_consistent_through_restart(Backend::Etcd);
}

/// A list in pages is one snapshot: every page carries the first page's resourceVersion, later
/// pages show objects as they were then, and a watch from that resourceVersion reports every
/// change made while paging (informers and reflectors depend on this).
fn paged_list_is_one_snapshot(backend: Backend) {
    let s = Server::start_with(backend, &[]);
    s.block_on(async {
        let c = client(&s).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
        for i in 0..30 {
            cms.create(&PostParams::default(), &cm(&format!("p{i:02}"), "old"))
                .await
                .expect("create");
        }
        let first = cms
            .list(&ListParams::default().limit(10))
            .await
            .expect("page 1");
        let rv = first
            .metadata
            .resource_version
            .clone()
            .expect("resourceVersion");
        let mut token = first.metadata.continue_.clone().expect("more pages");
        // Changes while paging: on the first page, on a later page, a delete and a create.
        for (name, v) in [("p00", "new"), ("p25", "new")] {
            cms.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"v": v}})),
            )
            .await
            .expect("patch");
        }
        cms.delete("p15", &DeleteParams::default())
            .await
            .expect("delete");
        cms.create(&PostParams::default(), &cm("p99", "old"))
            .await
            .expect("create");

        let mut items: Vec<ConfigMap> = first.items;
        loop {
            let page = cms
                .list(&ListParams::default().limit(10).continue_token(&token))
                .await
                .expect("next page");
            assert_eq!(
                page.metadata.resource_version.as_deref(),
                Some(rv.as_str()),
                "every page is at the first page's resourceVersion"
            );
            items.extend(page.items);
            match page.metadata.continue_ {
                Some(t) if !t.is_empty() => token = t,
                _ => break,
            }
        }
        let seen: Vec<(String, String)> = items
            .iter()
            .map(|c| {
                let name = c.metadata.name.clone().unwrap_or_default();
                let v = c
                    .data
                    .clone()
                    .unwrap_or_default()
                    .remove("v")
                    .unwrap_or_default();
                (name, v)
            })
            .collect();
        let expected: Vec<(String, String)> = (0..30)
            .map(|i| (format!("p{i:02}"), "old".to_string()))
            .collect();
        assert_eq!(seen, expected, "the snapshot of the first page");

        // A watch from the list's resourceVersion delivers the four changes.
        let mut events = cms
            .watch(&kube::api::WatchParams::default(), &rv)
            .await
            .expect("watch")
            .boxed();
        let mut changes = BTreeSet::new();
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while changes.len() < 4 {
            let e = tokio::time::timeout_at(deadline, events.next())
                .await
                .expect("the changes made while paging are watched")
                .expect("stream open")
                .expect("event");
            let (kind, o) = match e {
                kube::api::WatchEvent::Added(o) => ("ADDED", o),
                kube::api::WatchEvent::Modified(o) => ("MODIFIED", o),
                kube::api::WatchEvent::Deleted(o) => ("DELETED", o),
                _ => continue,
            };
            changes.insert(format!("{kind} {}", o.metadata.name.unwrap_or_default()));
        }
        let want: BTreeSet<String> = ["MODIFIED p00", "MODIFIED p25", "DELETED p15", "ADDED p99"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(changes, want);
    });
}

#[test]
fn paged_list_is_one_snapshot_embedded() {
    paged_list_is_one_snapshot(Backend::Embedded);
}

#[test]
fn paged_list_is_one_snapshot_etcd() {
    paged_list_is_one_snapshot(Backend::Etcd);
}
