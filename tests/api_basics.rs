//! End-to-end: kubectl against `karmada-rs serve` — create, get, list, watch, delete.

mod support;

use support::{Backend, DEADLINE, Server, wait_for};

fn crud_roundtrip(s: &Server) {
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    let cm = s.get_json(&["configmap", "c1"]);
    assert_eq!(cm["data"]["a"], "1");
    assert!(
        cm["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    let rv: i64 = cm["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("numeric resourceVersion");
    assert!(rv > 0);

    let table = s.kubectl_ok(&["get", "configmaps"]);
    assert!(table.contains("DATA"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("c1 ")), "{table}");

    let err = s.kubectl_err(&["create", "configmap", "c1", "--from-literal=a=2"]);
    assert!(err.contains("configmaps \"c1\" already exists"), "{err}");

    s.kubectl_ok(&["delete", "configmap", "c1"]);
    let err = s.kubectl_err(&["get", "configmap", "c1"]);
    assert!(
        err.contains("NotFound") && err.contains("\"c1\" not found"),
        "{err}"
    );
}

#[test]
fn crud_embedded() {
    let s = Server::start();
    crud_roundtrip(&s);
}

#[test]
fn crud_etcd() {
    let s = Server::start_with(Backend::Etcd, &[]);
    crud_roundtrip(&s);
}

#[test]
fn data_survives_restart() {
    let mut s = Server::start();
    s.kubectl_ok(&["create", "namespace", "keep"]);
    s.kubectl_ok(&[
        "-n",
        "keep",
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=k=v",
    ]);
    s.restart();
    let sec = s.get_json(&["-n", "keep", "secret", "s1"]);
    assert_eq!(sec["data"]["k"], "dg==");
    wait_for("namespace listed after restart", DEADLINE, || {
        s.kubectl_ok(&["get", "ns"]).contains("keep").then_some(())
    });
}
