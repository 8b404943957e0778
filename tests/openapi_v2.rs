//! End-to-end: `/openapi/v2` on every API server the product runs (`karmada-rs serve` and
//! `karmada-rs member serve`), with the real binary and the real kubectl: `kind: List`
//! files that `kubectl get -o yaml` writes go back through `kubectl apply` and
//! `kubectl create` (kubectl validates their items against v2), the document answers in
//! JSON and protobuf with its ETag, and a CRD's descriptions reach v2, v3 and
//! `kubectl explain`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::{
    DEADLINE, MemberServer, Server, kubectl_cmd, run, run_stdin, stdout_of_success, wait_for,
};

/// kubectl with one kubeconfig and cache.
struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn for_server(s: &Server) -> Kubectl {
        Kubectl {
            kubeconfig: s.kubeconfig.clone(),
            cache: s.dir.path().join("kubectl-cache"),
        }
    }

    fn for_member(m: &MemberServer) -> Kubectl {
        Kubectl {
            kubeconfig: m.kubeconfig.clone(),
            cache: m.dir.path().join("kubectl-cache"),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        run(kubectl_cmd(&self.kubeconfig, &self.cache).args(args))
    }

    fn stdin(&self, args: &[&str], input: &str) -> Output {
        run_stdin(kubectl_cmd(&self.kubeconfig, &self.cache).args(args), input)
    }

    fn ok(&self, args: &[&str]) -> String {
        stdout_of_success(args, self.run(args))
    }

    fn ok_stdin(&self, args: &[&str], input: &str) -> String {
        stdout_of_success(args, self.stdin(args, input))
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The List `kubectl get -o yaml` writes for two ConfigMaps goes back through `kubectl apply
/// -f FILE` and `kubectl create -f -`; kubectl really validates its items (against v2): an
/// unknown field in one is refused before anything is created.
fn saved_lists_apply_and_create(k: &Kubectl, dir: &Path) {
    k.ok(&["create", "configmap", "list-a", "--from-literal=x=1"]);
    k.ok(&["create", "configmap", "list-b", "--from-literal=y=2"]);
    let saved = k.ok(&["get", "configmap", "list-a", "list-b", "-o", "yaml"]);
    assert!(saved.contains("kind: List"), "{saved}");
    let file = dir.join("saved.yaml");
    std::fs::write(&file, &saved).expect("write saved.yaml");
    let file = file.to_string_lossy().into_owned();

    k.ok(&["delete", "configmap", "list-a", "list-b"]);
    let out = k.ok(&["apply", "-f", &file]);
    assert!(
        out.contains("configmap/list-a created") && out.contains("configmap/list-b created"),
        "{out}"
    );
    k.ok(&["delete", "configmap", "list-a", "list-b"]);
    let out = k.ok_stdin(&["create", "-f", "-"], &saved);
    assert!(
        out.contains("configmap/list-a created") && out.contains("configmap/list-b created"),
        "{out}"
    );

    k.ok(&["delete", "configmap", "list-a", "list-b"]);
    let bad = saved.replacen("  data:\n", "  bogus: 1\n  data:\n", 1);
    assert_ne!(bad, saved);
    let out = k.stdin(&["create", "-f", "-"], &bad);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "error validating data: ValidationError(ConfigMap): unknown field \"bogus\" in io.k8s.api.core.v1.ConfigMap"
        ),
        "{}",
        stderr(&out)
    );
    let gone = k.run(&["get", "configmap", "list-a"]);
    assert!(
        stderr(&gone).contains("NotFound"),
        "nothing of a refused List is created"
    );
}

/// One GET of `path` with the kubeconfig's credentials: status, headers, body.
fn raw_get(
    kubeconfig: &Path,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, http::HeaderMap, Vec<u8>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(cfg).expect("client");
        let mut req = http::Request::builder().uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = client
            .send(req.body(Vec::new().into()).expect("request"))
            .await
            .expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .expect("body")
            .to_bytes()
            .to_vec();
        (status, headers, body)
    })
}

const PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// `/openapi/v2` in JSON and in protobuf, with one ETag, and 304 for a client that has it.
fn v2_answers_with_etags(kubeconfig: &Path, kinds: &[&str]) {
    let (code, headers, body) = raw_get(kubeconfig, "/openapi/v2", &[]);
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "application/json");
    let etag = headers["etag"].to_str().expect("etag").to_string();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    let doc: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(doc["swagger"], "2.0");
    for kind in kinds {
        assert!(doc["definitions"].get(*kind).is_some(), "{kind}");
    }

    let (code, headers, body) = raw_get(kubeconfig, "/openapi/v2", &[("accept", PROTOBUF_ACCEPT)]);
    assert_eq!(code, 200);
    assert_eq!(
        headers["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert_eq!(headers["etag"], etag.as_str());
    // gnostic's Document: field 1 (`swagger`) is the string "2.0".
    assert_eq!(body.get(..5), Some(&[0x0a, 3, b'2', b'.', b'0'][..]));

    for accept in ["application/json", PROTOBUF_ACCEPT] {
        let (code, headers, body) = raw_get(
            kubeconfig,
            "/openapi/v2",
            &[("accept", accept), ("if-none-match", &etag)],
        );
        assert_eq!(code, 304, "{accept}");
        assert_eq!(headers["etag"], etag.as_str());
        assert!(body.is_empty());
    }
    let (code, _, _) = raw_get(kubeconfig, "/openapi/v2", &[("accept", "text/html")]);
    assert_eq!(code, 406);
}

#[test]
fn control_plane_serves_v2_for_lists() {
    let s = Server::start();
    let k = Kubectl::for_server(&s);
    saved_lists_apply_and_create(&k, s.dir.path());
    v2_answers_with_etags(
        &s.kubeconfig,
        &[
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.api.apps.v1.Deployment",
            "io.karmada.policy.v1alpha1.PropagationPolicy",
            "io.karmada.cluster.v1alpha1.Cluster",
        ],
    );

    // A List of Karmada objects and a Deployment: apply, then apply what `get` saved.
    let list = "apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        containers: [{name: nginx, image: nginx:1.25}]
- apiVersion: policy.karmada.io/v1alpha1
  kind: PropagationPolicy
  metadata: {name: web}
  spec:
    resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
    placement: {clusterAffinity: {clusterNames: [member1]}}
";
    let out = k.ok_stdin(&["apply", "-f", "-"], list);
    assert!(
        out.contains("deployment.apps/web created")
            && out.contains("propagationpolicy.policy.karmada.io/web created"),
        "{out}"
    );
    let saved = k.ok(&["get", "deployment,propagationpolicy", "web", "-o", "yaml"]);
    let out = k.ok_stdin(&["apply", "-f", "-"], &saved);
    assert!(
        out.contains("deployment.apps/web configured")
            || out.contains("deployment.apps/web unchanged"),
        "{out}"
    );
}

#[test]
fn members_serve_v2_for_lists() {
    let m = MemberServer::start("member1");
    let k = Kubectl::for_member(&m);
    saved_lists_apply_and_create(&k, m.dir.path());
    v2_answers_with_etags(
        &m.kubeconfig,
        &["io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Pod"],
    );
    // What a member holds (its simulated nodes, with status) validates as a List too.
    let nodes = k.ok(&["get", "nodes", "-o", "yaml"]);
    let out = k.ok_stdin(&["apply", "--dry-run=server", "-f", "-"], &nodes);
    assert!(out.contains("(server dry run)"), "{out}");
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: A CronTab runs a job on a schedule.
        type: object
        properties:
          spec:
            description: What to run and when.
            type: object
            properties:
              cronSpec:
                description: The schedule in cron format.
                type: string
              jobs:
                description: The jobs to run.
                type: array
                items:
                  type: object
                  properties:
                    image:
                      description: The image each job runs.
                      type: string
";

fn definition(kubeconfig: &Path) -> Option<Value> {
    let (code, _, body) = raw_get(kubeconfig, "/openapi/v2", &[]);
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_slice(&body).expect("JSON");
    doc["definitions"]
        .get("com.example.stable.v1.CronTab")
        .cloned()
}

fn v3_crontab(kubeconfig: &Path) -> Option<Value> {
    let (_, _, body) = raw_get(kubeconfig, "/openapi/v3", &[]);
    let root: Value = serde_json::from_slice(&body).expect("JSON");
    let url = root["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str()?;
    let (_, _, body) = raw_get(kubeconfig, url, &[]);
    let doc: Value = serde_json::from_slice(&body).expect("JSON");
    doc["components"]["schemas"]
        .get("com.example.stable.v1.CronTab")
        .cloned()
}

#[test]
fn crd_descriptions_reach_v2_v3_and_explain() {
    let s = Server::start();
    let k = Kubectl::for_server(&s);
    assert!(definition(&s.kubeconfig).is_none());
    k.ok_stdin(&["apply", "-f", "-"], CRD);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);

    let v2 = definition(&s.kubeconfig).expect("CronTab in /openapi/v2");
    let v3 = v3_crontab(&s.kubeconfig).expect("CronTab in /openapi/v3");
    for doc in [&v2, &v3] {
        assert_eq!(doc["description"], "A CronTab runs a job on a schedule.");
        let spec = &doc["properties"]["spec"];
        assert_eq!(spec["description"], "What to run and when.");
        assert_eq!(
            spec["properties"]["cronSpec"]["description"],
            "The schedule in cron format."
        );
        assert_eq!(
            spec["properties"]["jobs"]["items"]["properties"]["image"]["description"],
            "The image each job runs."
        );
    }

    for output in ["plaintext", "plaintext-openapiv2"] {
        let out = k.ok(&["explain", "crontab.spec.cronSpec", "--output", output]);
        assert!(
            out.contains("The schedule in cron format."),
            "{output}: {out}"
        );
        let out = k.ok(&["explain", "crontab.spec.jobs.image", "--output", output]);
        assert!(out.contains("The image each job runs."), "{output}: {out}");
        let out = k.ok(&["explain", "crontab", "--output", output]);
        assert!(
            out.contains("A CronTab runs a job on a schedule."),
            "{output}: {out}"
        );
    }

    // A List of CronTabs validates against the CRD's v2 schema.
    let list = "apiVersion: v1
kind: List
items:
- apiVersion: stable.example.com/v1
  kind: CronTab
  metadata: {name: nightly}
  spec: {cronSpec: '0 0 * * *', jobs: [{image: busybox}]}
";
    k.ok_stdin(&["create", "-f", "-"], list);
    let out = k.stdin(
        &["create", "-f", "-"],
        &list
            .replace("nightly", "typo")
            .replace("jobs: [", "bogus: 1, jobs: ["),
    );
    assert!(
        stderr(&out).contains("unknown field \"bogus\" in com.example.stable.v1.CronTab.spec"),
        "{}",
        stderr(&out)
    );
    assert!(!k.run(&["get", "crontab", "typo"]).status.success());

    k.ok(&["delete", "crd", "crontabs.stable.example.com"]);
    wait_for("the CRD to leave both documents", DEADLINE, || {
        (definition(&s.kubeconfig).is_none() && v3_crontab(&s.kubeconfig).is_none()).then_some(())
    });
}
