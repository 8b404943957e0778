//! Encryption at rest end to end: `serve --encryption-provider-config` with kube-apiserver's
//! EncryptionConfiguration file keeps Secrets out of the embedded store's files and out of
//! etcd in clear, key rotation by rewriting (`kubectl replace`, `karmada-rs storage rewrite`),
//! a wrong key answering 500 without losing data, and join's member credentials covered.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use support::{Backend, MemberServer, Server, run};

const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KEY2: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";
const KEY3: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=";

/// An EncryptionConfiguration for secrets with these `(provider, key name, secret)` keys, each
/// its own provider entry, in order.
fn config(keys: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n",
    );
    for (p, name, secret) in keys {
        s.push_str(&format!(
            "  - {p}:\n      keys:\n      - name: {name}\n        secret: {secret}\n"
        ));
    }
    s
}

fn write_config(path: &Path, keys: &[(&str, &str, &str)]) {
    std::fs::write(path, config(keys)).expect("write config");
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Every file under `dir`, concatenated.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.extend(b);
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn secret_value(s: &Server, name: &str) -> String {
    s.kubectl_ok(&["get", "secret", name, "-o", "jsonpath={.data.password}"])
}

fn karmada_rs(args: &[&str]) -> std::process::Output {
    run(Command::new(env!("CARGO_BIN_EXE_karmada-rs")).args(args))
}

struct Setup {
    _cfg_dir: tempfile::TempDir,
    cfg: PathBuf,
}

fn setup(keys: &[(&str, &str, &str)]) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("encryption.yaml");
    write_config(&cfg, keys);
    Setup { _cfg_dir: dir, cfg }
}

#[test]
fn secrets_are_encrypted_in_the_embedded_files_and_keys_rotate() {
    let st = setup(&[("aesgcm", "key1", KEY1)]);
    let mut s = Server::start_with(
        Backend::Embedded,
        &[
            "--encryption-provider-config",
            st.cfg.to_str().expect("path"),
        ],
    );
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=plaintext-marker-one",
    ]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "c1",
        "--from-literal=k=configmap-marker-one",
    ]);
    let raw = all_bytes(&s.data_path("store"));
    assert!(
        contains(&raw, "configmap-marker-one"),
        "the search sees unencrypted values"
    );
    assert!(!contains(&raw, "plaintext-marker-one"));
    assert!(!contains(&raw, &b64("plaintext-marker-one")));
    assert!(contains(&raw, "k8s:enc:aesgcm:v1:key1:"));
    // Reads, lists (from the watch cache) and a watch's initial list see the plain value.
    assert_eq!(secret_value(&s, "s1"), b64("plaintext-marker-one"));
    let list = s.get_json(&["secrets"]);
    assert!(
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["data"]["password"] == b64("plaintext-marker-one").as_str())
    );

    // Rotation: a new first key writes, the old one still reads.
    write_config(
        &st.cfg,
        &[("secretbox", "key2", KEY1), ("aesgcm", "key1", KEY1)],
    );
    s.restart();
    assert_eq!(secret_value(&s, "s1"), b64("plaintext-marker-one"));
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s2",
        "--from-literal=password=plaintext-marker-two",
    ]);
    let raw = all_bytes(&s.data_path("store"));
    assert!(contains(&raw, "k8s:enc:secretbox:v1:key2:"));
    assert!(!contains(&raw, &b64("plaintext-marker-two")));
    // kube's rewrite: replacing every Secret unchanged stores it again with the first key.
    let all = s.kubectl_ok(&["get", "secrets", "-A", "-o", "json"]);
    s.kubectl_stdin_ok(&["replace", "-f", "-"], &all);
    write_config(&st.cfg, &[("secretbox", "key2", KEY1)]);
    s.restart();
    assert_eq!(secret_value(&s, "s1"), b64("plaintext-marker-one"));
    assert_eq!(secret_value(&s, "s2"), b64("plaintext-marker-two"));

    // The helper does the same.
    write_config(
        &st.cfg,
        &[("aescbc", "key3", KEY3), ("secretbox", "key2", KEY1)],
    );
    s.restart();
    let kubeconfig = s.kubeconfig.to_str().expect("path").to_string();
    let out = karmada_rs(&[
        "storage",
        "rewrite",
        "--resource",
        "secrets",
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert!(
        out.status.success(),
        "storage rewrite failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("secrets: "));
    write_config(&st.cfg, &[("aescbc", "key3", KEY3)]);
    s.restart();
    assert_eq!(secret_value(&s, "s1"), b64("plaintext-marker-one"));
    assert_eq!(secret_value(&s, "s2"), b64("plaintext-marker-two"));

    // A wrong key: 500 saying the data could not be decrypted, and nothing is lost.
    write_config(&st.cfg, &[("aescbc", "key3", KEY2)]);
    s.restart();
    let err = s.kubectl_err(&["get", "secret", "s1"]);
    assert!(
        err.contains("Internal error occurred")
            && err.contains("failed to decrypt data with aescbc key \"key3\""),
        "{err}"
    );
    let (code, body) = s.block_on(async {
        let client = s.client().await;
        let req = http::Request::get("/api/v1/namespaces/default/secrets/s1")
            .body(vec![])
            .expect("request");
        match client.request_text(req).await {
            Ok(t) => (200, t),
            Err(kube::Error::Api(e)) => (e.code, e.message),
            Err(e) => panic!("{e}"),
        }
    });
    assert_eq!(code, 500, "{body}");
    let err = s.kubectl_err(&["get", "secrets"]);
    assert!(err.contains("failed to decrypt"), "{err}");
    // The ConfigMaps are untouched by the Secrets' keys.
    s.kubectl_ok(&["get", "configmap", "c1"]);
    write_config(&st.cfg, &[("aescbc", "key3", KEY3)]);
    s.restart();
    assert_eq!(secret_value(&s, "s1"), b64("plaintext-marker-one"));
}

#[test]
fn bad_configurations_are_refused_with_kube_messages() {
    let st = setup(&[("aesgcm", "key1", "c2hvcnQ=")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = karmada_rs(&[
        "serve",
        "--data-dir",
        dir.path().to_str().expect("path"),
        "--bind",
        "127.0.0.1:0",
        "--encryption-provider-config",
        st.cfg.to_str().expect("path"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"),
        "{err}"
    );
    std::fs::write(
        &st.cfg,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: vault\n      endpoint: unix:///tmp/kms.sock\n",
    )
    .expect("write");
    let out = karmada_rs(&[
        "serve",
        "--data-dir",
        dir.path().to_str().expect("path"),
        "--bind",
        "127.0.0.1:0",
        "--encryption-provider-config",
        st.cfg.to_str().expect("path"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("KMS providers are not supported"), "{err}");
}

#[test]
fn etcd_holds_no_plaintext_and_join_credentials_are_covered() {
    // aescbc writes; identity would still read Secrets stored before encryption was on.
    let st = setup(&[("aescbc", "key1", KEY1)]);
    std::fs::write(
        &st.cfg,
        config(&[("aescbc", "key1", KEY1)]) + "  - identity: {}\n",
    )
    .expect("write");
    let s = Server::start_with(
        Backend::Etcd,
        &[
            "--encryption-provider-config",
            st.cfg.to_str().expect("path"),
        ],
    );
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=etcd-plaintext-marker",
    ]);
    let member = MemberServer::start("m1");
    let out = karmada_rs(&[
        "join",
        "m1",
        "--cluster-kubeconfig",
        member.kubeconfig.to_str().expect("path"),
        "--kubeconfig",
        s.kubeconfig.to_str().expect("path"),
    ]);
    assert!(
        out.status.success(),
        "join failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The credentials join stored, as the API serves them.
    let secrets = s.get_json(&["secrets", "-n", "karmada-cluster"]);
    let tokens: Vec<String> = secrets["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["data"]["token"].as_str().map(str::to_string))
        .collect();
    assert!(!tokens.is_empty(), "join stored a token: {secrets}");
    let endpoints = s.etcd_endpoints().expect("etcd");
    let raw = s.block_on(async move {
        let store = storage::etcd::EtcdStore::connect(storage::etcd::EtcdOptions::new(endpoints))
            .await
            .expect("etcd client");
        use storage::Store;
        store
            .range(storage::RangeRequest {
                prefix: "/registry/secrets/".into(),
                ..Default::default()
            })
            .await
            .expect("range")
            .kvs
    });
    let mut s1 = false;
    for kv in &raw {
        assert!(
            kv.value.starts_with(b"k8s:enc:aescbc:v1:key1:"),
            "{} is stored in clear",
            kv.key
        );
        assert!(!contains(&kv.value, &b64("etcd-plaintext-marker")));
        for t in &tokens {
            assert!(!contains(&kv.value, t), "a join token is stored in clear");
        }
        s1 |= kv.key == "/registry/secrets/default/s1";
    }
    assert!(s1, "the secret is in etcd");
}
