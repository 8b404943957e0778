//! The kubectl suite of issue 3: real `kubectl` against `karmada-rs serve`, on the embedded
//! store and on etcd.

mod discovery_kube;
mod kinds_roundtrip;
mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use support::{Backend, DEADLINE, Server, wait_for};

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx:1.25
          env:
            - name: MODE
              value: blue
"#;

fn apply_three_way_merge(s: &Server) {
    s.kubectl_stdin_ok(&["apply", "-f", "-"], DEPLOYMENT);
    // Someone else adds a label and an annotation; the user then changes the image and
    // drops the env var in their file: apply must keep the other writer's fields.
    s.kubectl_ok(&["label", "deployment", "web", "team=core"]);
    s.kubectl_ok(&["annotate", "deployment", "web", "owner=ops"]);
    let changed = DEPLOYMENT.replace("nginx:1.25", "nginx:1.26").replace(
        "          env:\n            - name: MODE\n              value: blue\n",
        "",
    );
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &changed);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let d = s.get_json(&["deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert!(
        d["spec"]["template"]["spec"]["containers"][0]
            .get("env")
            .is_none(),
        "{d}"
    );
    assert_eq!(d["metadata"]["labels"]["team"], "core");
    assert_eq!(d["metadata"]["annotations"]["owner"], "ops");
    // Created at 1; the annotation and the apply (a new image) each bump it: a Deployment's
    // generation counts annotation changes too (its controller copies them to ReplicaSets).
    assert_eq!(d["metadata"]["generation"], 3);
    let again = s.kubectl_stdin_ok(&["apply", "-f", "-"], &changed);
    assert!(again.contains("unchanged"), "{again}");
}

/// One manifest per stored built-in kind beyond the workloads, each applied, changed and
/// applied again: kubectl's client-side apply sends a strategic merge patch for every kind it
/// knows, so each needs the server's merge table (a 415 otherwise).
const EVERY_KIND: &str = r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: VALUE
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
    - host: VALUE.example.com
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec:
  podSelector: {matchLabels: {app: VALUE}}
  policyTypes: [Ingress]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: VALUE}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, annotations: {note: VALUE}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
parameters: {tier: VALUE}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota, annotations: {note: VALUE}}
spec:
  hard: {pods: "10"}
---
apiVersion: v1
kind: LimitRange
metadata: {name: limits, annotations: {note: VALUE}}
spec:
  limits:
    - type: Container
      default: {cpu: 100m}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1, annotations: {note: VALUE}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/pv1}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: web-1, annotations: {note: VALUE}}
data: {note: VALUE}
revision: 1
"#;

fn apply_again_every_kind(s: &Server) {
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &EVERY_KIND.replace("VALUE", "blue"));
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &EVERY_KIND.replace("VALUE", "green"));
    assert_eq!(out.matches(" configured").count(), 10, "{out}");
    let pc = s.get_json(&["priorityclass", "high"]);
    assert_eq!(pc["description"], "green", "{pc}");
    let pdb = s.get_json(&["pdb", "web"]);
    assert_eq!(
        pdb["spec"]["selector"],
        serde_json::json!({"matchLabels": {"app": "green"}})
    );
    let sc = s.get_json(&["storageclass", "fast"]);
    assert_eq!(sc["parameters"]["tier"], "green", "{sc}");
    let again = s.kubectl_stdin_ok(&["apply", "-f", "-"], &EVERY_KIND.replace("VALUE", "green"));
    // kubectl sends a `patchStrategy:"replace"` field whole on every apply (handleMapDiff), so
    // a PodDisruptionBudget is "configured" each time, as against kube-apiserver.
    assert_eq!(again.matches(" unchanged").count(), 9, "{again}");
    assert!(
        again.contains("poddisruptionbudget.policy/web configured"),
        "{again}"
    );
    s.kubectl_stdin_ok(
        &["delete", "-f", "-"],
        &EVERY_KIND.replace("VALUE", "green"),
    );
}

fn output_formats(s: &Server) {
    let table = s.kubectl_ok(&["get", "deployments"]);
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"] {
        assert!(header.contains(col), "{table}");
    }
    let wide = s.kubectl_ok(&["get", "deployment", "web", "-o", "wide"]);
    assert!(
        wide.contains("CONTAINERS") && wide.contains("nginx:1.26") && wide.contains("app=web"),
        "{wide}"
    );
    let yaml = s.kubectl_ok(&["get", "deployment", "web", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: Deployment") && yaml.contains("resourceVersion:"),
        "{yaml}"
    );
    let jp = s.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(jp.trim(), "2");
    let cc = s.kubectl_ok(&[
        "get",
        "deployments",
        "-o",
        "custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image",
    ]);
    assert!(
        cc.lines()
            .any(|l| l.starts_with("web") && l.contains("nginx:1.26")),
        "{cc}"
    );
    let labels = s.kubectl_ok(&["get", "deployments", "--show-labels"]);
    assert!(labels.contains("team=core"), "{labels}");
    let sel = s.kubectl_ok(&["get", "deployments", "-l", "team=core", "-o", "name"]);
    assert_eq!(sel.trim(), "deployment.apps/web");
    let none = s.kubectl_ok(&["get", "deployments", "-l", "team=other", "-o", "name"]);
    assert!(none.trim().is_empty(), "{none}");
    let fs = s.kubectl_ok(&[
        "get",
        "deployments",
        "--field-selector",
        "metadata.name=web",
        "-o",
        "name",
    ]);
    assert_eq!(fs.trim(), "deployment.apps/web");
    let sorted = s.kubectl_ok(&["get", "deployments", "-A", "--sort-by=.metadata.name"]);
    assert!(sorted.contains("NAMESPACE"), "{sorted}");
    let chunked = s.kubectl_ok(&["get", "namespaces", "--chunk-size=1", "-o", "name"]);
    assert!(chunked.lines().count() >= 4, "{chunked}");
}

fn describe_and_edit(s: &Server) {
    let d = s.kubectl_ok(&["describe", "deployment", "web"]);
    assert!(
        d.contains("Name:") && d.contains("web") && d.contains("Replicas:"),
        "{d}"
    );
    // An editor script that changes the replica count in place.
    let editor = s.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/replicas: 2/replicas: 3/' \"$1\"\n",
    )
    .expect("write editor");
    let mut perms = std::fs::metadata(&editor).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&editor, perms).expect("chmod");
    let out = support::run(s.kubectl_cmd().env("KUBE_EDITOR", &editor).args([
        "edit",
        "deployment",
        "web",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(s.get_json(&["deployment", "web"])["spec"]["replicas"], 3);
}

fn patches_and_scale(s: &Server) {
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=4"]);
    assert_eq!(s.get_json(&["deployment", "web"])["spec"]["replicas"], 4);
    s.kubectl_ok(&[
        "scale",
        "deployment",
        "web",
        "--current-replicas=4",
        "--replicas=1",
    ]);
    assert_eq!(s.get_json(&["deployment", "web"])["spec"]["replicas"], 1);
    let err = s.kubectl_err(&[
        "scale",
        "deployment",
        "web",
        "--current-replicas=7",
        "--replicas=2",
    ]);
    assert!(err.contains("Expected replicas to be 7"), "{err}");
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":2}]"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"merge":"yes"}}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#,
    ]);
    let d = s.get_json(&["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"]["merge"], "yes");
    let names: Vec<&str> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.contains(&"web") && names.contains(&"sidecar"),
        "{names:?}"
    );
    s.kubectl_ok(&["label", "deployment", "web", "merge-"]);
    assert!(
        s.get_json(&["deployment", "web"])["metadata"]["labels"]
            .get("merge")
            .is_none()
    );
    // The status subresource is separate.
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7}}"#,
    ]);
    let d = s.get_json(&["deployment", "web"]);
    assert_eq!(d["status"]["replicas"], 7);
    assert_eq!(d["spec"]["replicas"], 2);
}

fn server_side_apply(s: &Server) {
    let cm =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    let out = s.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], cm);
    assert!(out.contains("serverside-applied"), "{out}");
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "ssa",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"changed"}}"#,
    ]);
    let err = s.kubectl_stdin(&["apply", "--server-side", "-f", "-"], cm);
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        !err.status.success() && stderr.contains("conflict"),
        "{stderr}"
    );
    s.kubectl_stdin_ok(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &cm.replace("  b: \"2\"\n", ""),
    );
    let v = s.get_json(&["configmap", "ssa"]);
    assert_eq!(v["data"]["a"], "1");
    assert!(v["data"].get("b").is_none(), "{v}");
}

fn watch_and_wait(s: &Server) {
    let mut child = s
        .kubectl_cmd()
        .args(["get", "configmaps", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Wait until the initial list is printed, then change things.
    rx.recv_timeout(DEADLINE).expect("first watch line");
    s.kubectl_ok(&["create", "configmap", "watched", "--from-literal=k=v"]);
    s.kubectl_ok(&["delete", "configmap", "watched"]);
    let mut seen = Vec::new();
    wait_for("watch events", DEADLINE, || {
        while let Ok(l) = rx.try_recv() {
            seen.push(l);
        }
        let added = seen
            .iter()
            .any(|l| l.starts_with("ADDED") && l.contains("watched"));
        let deleted = seen
            .iter()
            .any(|l| l.starts_with("DELETED") && l.contains("watched"));
        (added && deleted).then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();

    // wait --for=condition / jsonpath / delete.
    let waiter = s
        .kubectl_cmd()
        .args([
            "wait",
            "--for=condition=Available",
            "deployment/web",
            "--timeout=60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wait");
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"}]}}"#,
    ]);
    let out = waiter.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl_ok(&[
        "wait",
        "--for=jsonpath={.spec.replicas}=2",
        "deployment/web",
        "--timeout=30s",
    ]);
}

fn deletes(s: &Server) {
    for (i, cascade) in ["background", "foreground", "orphan"].iter().enumerate() {
        let name = format!("del{i}");
        s.kubectl_ok(&["create", "configmap", &name]);
        let out = s.kubectl_ok(&[
            "delete",
            "configmap",
            &name,
            &format!("--cascade={cascade}"),
        ]);
        assert!(out.contains("deleted"), "{out}");
        let err = s.kubectl_err(&["get", "configmap", &name]);
        assert!(err.contains("NotFound"), "{err}");
    }
    s.kubectl_ok(&["create", "configmap", "lab1"]);
    s.kubectl_ok(&["label", "configmap", "lab1", "sweep=yes"]);
    s.kubectl_ok(&["delete", "configmaps", "-l", "sweep=yes"]);
    assert!(
        s.kubectl_ok(&["get", "configmaps", "-l", "sweep=yes", "-o", "name"])
            .trim()
            .is_empty()
    );
    s.kubectl_ok(&["delete", "configmap", "missing", "--ignore-not-found"]);
}

fn discovery_commands(s: &Server) {
    let res = s.kubectl_ok(&["api-resources"]);
    for needle in [
        "deployments",
        "propagationpolicies",
        "pp",
        "clusters",
        "resourcebindings",
        "works",
    ] {
        assert!(res.contains(needle), "{needle} missing in api-resources");
    }
    let versions = s.kubectl_ok(&["api-versions"]);
    for gv in [
        "v1",
        "apps/v1",
        "policy.karmada.io/v1alpha1",
        "work.karmada.io/v1alpha2",
        "cluster.karmada.io/v1alpha1",
    ] {
        assert!(
            versions.lines().any(|l| l == gv),
            "{gv} missing in api-versions"
        );
    }
    let v = s.kubectl_ok(&["version"]);
    assert!(v.contains("Server Version: v1.32"), "{v}");
}

fn karmada_shaped_yaml(s: &Server) {
    for sample in [
        "nginx-deployment.yaml",
        "propagationpolicy-duplicated.yaml",
        "propagationpolicy-divided.yaml",
        "overridepolicy.yaml",
        "clusterpropagationpolicy.yaml",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(sample);
        let out = s.kubectl_ok(&["create", "-f", path.to_str().expect("path")]);
        assert!(out.contains("created"), "{sample}: {out}");
    }
    let pp = s.kubectl_ok(&["get", "pp"]);
    for col in ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"] {
        assert!(pp.contains(col), "{pp}");
    }
    assert!(
        pp.contains("nginx-propagation") && pp.contains("Abort"),
        "{pp}"
    );
    let cpp = s.get_json(&["cpp", "prod-baseline"]);
    assert!(
        cpp["metadata"]["labels"]["clusterpropagationpolicy.karmada.io/permanent-id"].is_string(),
        "{cpp}"
    );
}

fn suite(backend: Backend) {
    let s = Server::start_with(backend, &[]);
    apply_three_way_merge(&s);
    apply_again_every_kind(&s);
    output_formats(&s);
    describe_and_edit(&s);
    patches_and_scale(&s);
    server_side_apply(&s);
    watch_and_wait(&s);
    deletes(&s);
    discovery_commands(&s);
    discovery_kube::matches_kube_and_karmada(&s);
    kinds_roundtrip::every_kind_round_trips(&s);
    kinds_roundtrip::component_statuses_and_bindings(&s);
    kinds_roundtrip::autoscaling_v1_and_v2_are_one_object(&s);
    kinds_roundtrip::evictions_respect_disruption_budgets(&s);
    karmada_shaped_yaml(&s);
}

#[test]
fn kubectl_suite_embedded() {
    suite(Backend::Embedded);
}

#[test]
fn kubectl_suite_etcd() {
    suite(Backend::Etcd);
}
