//! The quick start end to end: `karmada-rs up` brings up a control plane and simulated
//! members in one process, joined and Ready, with kubeconfigs for all of them; a second
//! `up` on the same directory resumes where the first stopped.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;
use support::{DEADLINE, kubectl_cmd, run, run_stdin, wait_for};

/// A running `karmada-rs up`.
struct Up {
    child: Child,
    url: String,
    output: Vec<String>,
}

impl Up {
    fn start(dir: &Path, members: u32) -> Up {
        Up::start_with(dir, members, &[])
    }

    fn start_with(dir: &Path, members: u32, extra: &[&str]) -> Up {
        let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args([
                "up",
                "--members",
                &members.to_string(),
                "--ready-delay",
                "0",
                "--data-dir",
            ])
            .arg(dir)
            .args(extra)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn karmada-rs up");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut output = Vec::new();
        let mut url = String::new();
        // The usage text ends with the Ctrl-C hint.
        while !output.last().is_some_and(|l: &String| l.contains("Ctrl-C")) {
            let line = rx
                .recv_timeout(DEADLINE)
                .expect("karmada-rs up printed its usage");
            if let Some(u) = line.strip_prefix("karmada-rs control plane serving at ") {
                url = u.trim().to_owned();
            }
            output.push(line);
        }
        Up { child, url, output }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get_json(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Value {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    let out = run(kubectl_cmd(kubeconfig, cache).args(&a));
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        a.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn ready_clusters(kubeconfig: &Path, cache: &Path) -> Vec<String> {
    let list = get_json(kubeconfig, cache, &["clusters"]);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn up_runs_a_control_plane_with_joined_members() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let karmada = dir.path().join("karmada.kubeconfig");
    let member_kubeconfig = |i: u32| -> PathBuf {
        dir.path()
            .join("members")
            .join(format!("member{i}.kubeconfig"))
    };

    let up = Up::start(dir.path(), 3);
    let text = up.output.join("\n");
    assert!(text.contains("karmada-rs is up"), "{text}");
    assert!(
        text.contains(&format!("export KUBECONFIG={}", karmada.display())),
        "{text}"
    );
    assert!(text.contains("kubectl get clusters"), "{text}");
    assert!(karmada.exists());
    for i in 1..=3 {
        assert!(member_kubeconfig(i).exists(), "member{i}.kubeconfig");
        assert!(
            text.contains(&member_kubeconfig(i).display().to_string()),
            "{text}"
        );
    }

    // Every member is Ready by the time the usage is printed.
    assert_eq!(
        ready_clusters(&karmada, &cache),
        ["member1", "member2", "member3"]
    );
    let clusters = run(kubectl_cmd(&karmada, &cache).args(["get", "clusters"]));
    let table = String::from_utf8_lossy(&clusters.stdout);
    assert_eq!(table.matches(" Push ").count(), 3, "{table}");

    // The member kubeconfigs work, and the members are simulated clusters.
    for i in 1..=3 {
        let nodes = get_json(&member_kubeconfig(i), &cache, &["nodes"]);
        assert_eq!(nodes["items"].as_array().unwrap().len(), 3);
    }

    // The admin kubeconfig pointed at a member's proxy works out of the box, as after
    // `karmadactl init`: the control plane binds the admin `cluster-proxy-admin`, and
    // unifiedAuth lets the member's impersonator act as the admin.
    let proxied = dir.path().join("member1-proxy.kubeconfig");
    let admin = std::fs::read_to_string(&karmada).unwrap();
    let server = format!("server: {}", up.url);
    assert!(admin.contains(&server), "{admin}");
    std::fs::write(
        &proxied,
        admin.replace(
            &server,
            &format!("{server}/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy"),
        ),
    )
    .unwrap();
    let through_proxy = wait_for("the admin's proxy to member1", DEADLINE, || {
        let out = run(kubectl_cmd(&proxied, &cache).args(["get", "nodes", "-o", "json"]));
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap())
    });
    let node_names = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        node_names(&through_proxy),
        node_names(&get_json(&member_kubeconfig(1), &cache, &["nodes"])),
        "the proxy reaches member1"
    );

    // The samples apply as in Karmada's quick start.
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let out = run(kubectl_cmd(&karmada, &cache)
        .arg("apply")
        .arg("-f")
        .arg(&samples));
    assert!(
        out.status.success(),
        "kubectl apply -f samples/: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Stopped and started again on the same directory: the same URL, the members rejoined.
    let url = up.url.clone();
    drop(up);
    let again = Up::start(dir.path(), 3);
    assert_eq!(again.url, url, "a restarted quick start keeps its address");
    wait_for("the rejoined members to be Ready", DEADLINE, || {
        (ready_clusters(&karmada, &cache) == ["member1", "member2", "member3"]).then_some(())
    });
    let deployment = get_json(&karmada, &cache, &["deployment", "nginx", "-n", "default"]);
    assert_eq!(
        deployment["metadata"]["name"], "nginx",
        "state survives a restart"
    );
}

#[test]
fn up_with_pull_members_registers_them_by_token_behind_agents() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let karmada = dir.path().join("karmada.kubeconfig");
    let pull1 = dir.path().join("members").join("pull1.kubeconfig");
    let up = Up::start_with(dir.path(), 1, &["--pull-members", "1"]);
    assert_eq!(ready_clusters(&karmada, &cache), ["member1", "pull1"]);
    let c = get_json(&karmada, &cache, &["cluster", "pull1"]);
    assert_eq!(c["spec"]["syncMode"], "Pull", "{c}");
    assert!(
        c["spec"].get("apiEndpoint").is_none(),
        "the control plane is not told: {c}"
    );
    let csrs = run(kubectl_cmd(&karmada, &cache).args(["get", "csr"]));
    let csrs = String::from_utf8_lossy(&csrs.stdout);
    assert!(
        csrs.contains("system:bootstrap:") && csrs.contains("Approved,Issued"),
        "{csrs}"
    );

    let policy = "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nginx-to-pull1, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement: {clusterAffinity: {clusterNames: [pull1]}}
";
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let out = run(kubectl_cmd(&karmada, &cache)
        .arg("apply")
        .arg("-f")
        .arg(samples.join("nginx-deployment.yaml")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = support::run_stdin(
        kubectl_cmd(&karmada, &cache).args(["apply", "-f", "-"]),
        policy,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("nginx in pull1 through its agent", DEADLINE, || {
        run(kubectl_cmd(&pull1, &cache).args(["get", "deploy", "nginx", "-n", "default"]))
            .status
            .success()
            .then_some(())
    });

    // Restarted: the pull member is registered again (a new token) and Ready.
    drop(up);
    let _again = Up::start_with(dir.path(), 1, &["--pull-members", "1"]);
    assert_eq!(ready_clusters(&karmada, &cache), ["member1", "pull1"]);
}

/// A Service exported from a Pull member: its agent reports the EndpointSlices, and a Push
/// member importing it lists the Pull member's endpoints.
#[test]
fn up_exports_a_service_from_a_pull_member_through_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let karmada = dir.path().join("karmada.kubeconfig");
    let member1 = dir.path().join("members").join("member1.kubeconfig");
    let _up = Up::start_with(dir.path(), 1, &["--pull-members", "1"]);
    assert_eq!(ready_clusters(&karmada, &cache), ["member1", "pull1"]);
    let yaml = "apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: mcs-crds}
spec:
  resourceSelectors:
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: serviceexports.multicluster.x-k8s.io}
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: serviceimports.multicluster.x-k8s.io}
  placement: {clusterAffinity: {clusterNames: [member1, pull1]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec: {containers: [{name: echo, image: nginx:1.25}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec: {selector: {app: echo}, ports: [{port: 80}]}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata: {name: echo, namespace: default}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: echo, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: echo}
  - {apiVersion: v1, kind: Service, name: echo}
  - {apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceExport, name: echo}
  placement: {clusterAffinity: {clusterNames: [pull1]}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata: {name: echo, namespace: default}
spec: {type: ClusterSetIP, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: echo-import, namespace: default}
spec:
  resourceSelectors: [{apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceImport, name: echo}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
";
    // The ServiceExport may be applied before its CRD is established: apply until accepted.
    wait_for("the manifests applied", DEADLINE, || {
        run_stdin(
            kubectl_cmd(&karmada, &cache).args(["apply", "-f", "-"]),
            yaml,
        )
        .status
        .success()
        .then_some(())
    });
    // pull1's pod CIDR is 10.128.16.0/20.
    let addresses = wait_for("member1 lists pull1's three endpoints", DEADLINE, || {
        let out = run(kubectl_cmd(&member1, &cache).args([
            "get",
            "endpointslices",
            "-n",
            "default",
            "-l",
            "kubernetes.io/service-name=derived-echo",
            "-o",
            "jsonpath={.items[*].endpoints[*].addresses[0]}",
        ]));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let addrs: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        (addrs.len() == 3).then_some(addrs)
    });
    assert!(
        addresses.iter().all(|a| a.starts_with("10.128.")),
        "{addresses:?}"
    );
    let works = get_json(
        &karmada,
        &cache,
        &[
            "works",
            "-n",
            "karmada-es-pull1",
            "-l",
            "endpointslice.karmada.io/name=echo",
        ],
    );
    assert_eq!(works["items"].as_array().map(Vec::len), Some(1), "{works}");
}
