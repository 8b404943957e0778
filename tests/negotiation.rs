//! Content negotiation against `karmada-rs serve`, as client-go programs, kubectl and curl
//! users meet it: protobuf objects, lists, errors and watch streams decoded by a hand-rolled
//! client (k8s-pb's prost messages, independent of the server's own codec), YAML, Tables,
//! PartialObjectMetadata, discovery documents, and 406 where kube-apiserver answers it.

mod support;

use std::time::Instant;

use http_body_util::BodyExt;
use k8s_pb::api::apidiscovery::v2::APIGroupDiscoveryList;
use k8s_pb::api::apps::v1::Deployment;
use k8s_pb::api::autoscaling::v1::Scale;
use k8s_pb::api::core::v1::{ConfigMap, ConfigMapList, Pod, PodList};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    APIGroupList, APIResourceList, APIVersions, PartialObjectMetadata, PartialObjectMetadataList,
    Status, WatchEvent,
};
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Value, json};
use support::{DEADLINE, Server};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go sends when configured for protobuf (kubectl's typed clients too).
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, application/json";

/// One answer: status, Content-Type, body.
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The `runtime.Unknown` envelope of a protobuf body: (apiVersion, kind, raw message).
    fn envelope(&self) -> (String, String, Vec<u8>) {
        assert_eq!(
            self.content_type,
            PROTOBUF,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        unwrap_envelope(&self.body)
    }

    fn message<M: Message + Default>(&self, api_version: &str, kind: &str) -> M {
        let (av, k, raw) = self.envelope();
        assert_eq!((av.as_str(), k.as_str()), (api_version, kind));
        M::decode(&raw[..]).expect("message")
    }
}

fn unwrap_envelope(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(b"k8s\0").expect("protobuf magic");
    let unknown = Unknown::decode(rest).expect("runtime.Unknown");
    assert_eq!(unknown.content_encoding.as_deref(), Some(""));
    assert_eq!(unknown.content_type.as_deref(), Some(""));
    let tm = unknown.type_meta.unwrap_or_default();
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    )
}

fn request(
    method: &str,
    path: &str,
    accept: Option<&str>,
    body: Option<Value>,
) -> http::Request<kube::client::Body> {
    let mut b = http::Request::builder().method(method).uri(path);
    if let Some(a) = accept {
        b = b.header(http::header::ACCEPT, a);
    }
    let body = match body {
        Some(v) => {
            b = b.header(http::header::CONTENT_TYPE, "application/json");
            kube::client::Body::from(serde_json::to_vec(&v).expect("json"))
        }
        None => kube::client::Body::empty(),
    };
    b.body(body).expect("request")
}

/// A server with two ConfigMaps and a Pod, and a client sending raw requests to it.
struct Env {
    s: Server,
    c: kube::Client,
}

impl Env {
    fn start() -> Env {
        let s = Server::start();
        let c = s.block_on(support::kube_client(&s.kubeconfig));
        let env = Env { s, c };
        env.kubectl(&[
            "create",
            "configmap",
            "c1",
            "--from-literal=a=b",
            "--from-literal=port=8080",
        ]);
        env.kubectl(&["create", "configmap", "c2", "--from-literal=x=y"]);
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                "ports": [{"containerPort": 80, "name": "http"}],
                "resources": {"limits": {"cpu": 0.5, "memory": "128Mi"}}}]}});
        let created = env.call("POST", "/api/v1/namespaces/default/pods", None, Some(pod));
        assert_eq!(
            created.status,
            201,
            "{}",
            String::from_utf8_lossy(&created.body)
        );
        env
    }

    fn kubectl(&self, args: &[&str]) -> String {
        self.s.kubectl_ok(args)
    }

    /// Sends a raw request with an Accept header (none when `None`); reads the whole answer.
    fn call(&self, method: &str, path: &str, accept: Option<&str>, body: Option<Value>) -> Answer {
        self.s.block_on(async {
            let resp = self
                .c
                .send(request(method, path, accept, body))
                .await
                .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
            let status = resp.status().as_u16();
            let content_type = content_type(resp.headers());
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            Answer {
                status,
                content_type,
                body: body.to_vec(),
            }
        })
    }

    fn get(&self, path: &str, accept: &str) -> Answer {
        self.call("GET", path, Some(accept), None)
    }
}

fn content_type(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The Status of a protobuf error answer.
fn protobuf_status(a: &Answer) -> Status {
    a.message("v1", "Status")
}

#[test]
fn protobuf_objects_lists_and_errors() {
    let env = Env::start();
    let path = "/api/v1/namespaces/default/configmaps/c1";
    let json = env.get(path, "application/json").json();
    for accept in [
        PROTOBUF,
        CLIENT_GO,
        "application/*;q=0.5, application/vnd.kubernetes.protobuf",
    ] {
        let a = env.get(path, accept);
        assert_eq!(a.status, 200);
        let cm: ConfigMap = a.message("v1", "ConfigMap");
        let meta = cm.metadata.expect("metadata");
        assert_eq!(meta.name.as_deref(), Some("c1"));
        assert_eq!(meta.namespace.as_deref(), Some("default"));
        assert_eq!(meta.uid.as_deref(), json["metadata"]["uid"].as_str());
        assert_eq!(
            meta.resource_version.as_deref(),
            json["metadata"]["resourceVersion"].as_str()
        );
        let created = json["metadata"]["creationTimestamp"].as_str().unwrap();
        let seconds = created.parse::<jiff::Timestamp>().unwrap().as_second();
        assert_eq!(
            meta.creation_timestamp.and_then(|t| t.seconds),
            Some(seconds)
        );
        assert_eq!(cm.data.get("a").map(String::as_str), Some("b"));
        assert_eq!(cm.data.get("port").map(String::as_str), Some("8080"));
        let managed = &meta.managed_fields[0];
        assert_eq!(managed.manager.as_deref(), Some("kubectl-create"));
        let fields: Value =
            serde_json::from_slice(managed.fields_v1.as_ref().unwrap().raw.as_ref().unwrap())
                .unwrap();
        assert_eq!(fields, json["metadata"]["managedFields"][0]["fieldsV1"]);
    }

    // Lists: every item, with the list's metadata.
    let json = env
        .get("/api/v1/namespaces/default/configmaps", "application/json")
        .json();
    let a = env.get("/api/v1/namespaces/default/configmaps", PROTOBUF);
    let list: ConfigMapList = a.message("v1", "ConfigMapList");
    let names: Vec<_> = list
        .items
        .iter()
        .map(|i| i.metadata.as_ref().unwrap().name.clone().unwrap())
        .collect();
    assert_eq!(names, vec!["c1", "c2"]);
    assert_eq!(
        list.metadata.unwrap().resource_version.as_deref(),
        json["metadata"]["resourceVersion"].as_str()
    );
    // A cut page carries its continue token and remaining count.
    let a = env.get("/api/v1/namespaces/default/configmaps?limit=1", PROTOBUF);
    let page: ConfigMapList = a.message("v1", "ConfigMapList");
    let meta = page.metadata.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(!meta.r#continue.unwrap_or_default().is_empty());
    assert_eq!(meta.remaining_item_count, Some(1));

    // Pods: nested structs, int-or-string, canonical quantities.
    let a = env.get("/api/v1/namespaces/default/pods/p1", PROTOBUF);
    let pod: Pod = a.message("v1", "Pod");
    let spec = pod.spec.unwrap();
    let container = &spec.containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx:1.25"));
    assert_eq!(container.ports[0].container_port, Some(80));
    let limits = &container.resources.as_ref().unwrap().limits;
    assert_eq!(limits["cpu"].string.as_deref(), Some("500m"));
    assert_eq!(limits["memory"].string.as_deref(), Some("128Mi"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    let a = env.get("/api/v1/pods", CLIENT_GO);
    let pods: PodList = a.message("v1", "PodList");
    assert_eq!(pods.items.len(), 1);
    // Status subresource: the object.
    let a = env.get("/api/v1/namespaces/default/pods/p1/status", PROTOBUF);
    let _: Pod = a.message("v1", "Pod");

    // Errors are Status messages in protobuf too.
    let a = env.get("/api/v1/namespaces/default/configmaps/missing", CLIENT_GO);
    assert_eq!(a.status, 404);
    let st = protobuf_status(&a);
    assert_eq!(st.code, Some(404));
    assert_eq!(st.status.as_deref(), Some("Failure"));
    assert_eq!(st.reason.as_deref(), Some("NotFound"));
    assert_eq!(
        st.message.as_deref(),
        Some("configmaps \"missing\" not found")
    );
    let details = st.details.unwrap();
    assert_eq!(details.name.as_deref(), Some("missing"));
    assert_eq!(details.kind.as_deref(), Some("configmaps"));

    // Writes answer in the negotiated form as well, and deletes their Status or object.
    let a = env.call(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(PROTOBUF),
        Some(json!({"metadata": {"name": "c3"}, "data": {"k": "v"}})),
    );
    assert_eq!(a.status, 201);
    let cm: ConfigMap = a.message("v1", "ConfigMap");
    assert_eq!(cm.data["k"], "v");
    let a = env.call(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c3",
        Some(PROTOBUF),
        None,
    );
    assert_eq!(a.status, 200);
    let st = protobuf_status(&a);
    assert_eq!(st.status.as_deref(), Some("Success"));
    assert_eq!(st.details.unwrap().name.as_deref(), Some("c3"));
}

impl Env {
    /// Reads length-prefixed frames of a protobuf watch until `want` frames arrived or the stream
    /// ended, doing `during` once the first `after` frames are in.
    fn watch(
        &self,
        path: &str,
        accept: &str,
        want: usize,
        after: usize,
        during: impl FnOnce(),
    ) -> (String, Vec<WatchEvent>) {
        self.s.block_on(async {
            let resp = self
                .c
                .send(request("GET", path, Some(accept), None))
                .await
                .expect("watch");
            assert_eq!(resp.status().as_u16(), 200);
            let content_type = content_type(resp.headers());
            let mut body = resp.into_body();
            let mut buf: Vec<u8> = Vec::new();
            let mut events = Vec::new();
            let mut during = Some(during);
            let deadline = Instant::now() + DEADLINE;
            while events.len() < want {
                if events.len() >= after
                    && let Some(f) = during.take()
                {
                    // kubectl runs blocking: off the runtime's thread.
                    tokio::task::block_in_place(f);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                let frame = tokio::time::timeout(left, body.frame())
                    .await
                    .expect("watch frames in time");
                match frame {
                    Some(Ok(f)) => {
                        if let Ok(data) = f.into_data() {
                            buf.extend_from_slice(&data);
                        }
                    }
                    Some(Err(e)) => panic!("watch body: {e}"),
                    None => break,
                }
                while buf.len() >= 4 {
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    if buf.len() < 4 + len {
                        break;
                    }
                    events.push(WatchEvent::decode(&buf[4..4 + len]).expect("WatchEvent"));
                    buf.drain(..4 + len);
                }
            }
            (content_type, events)
        })
    }
}

fn event_object(ev: &WatchEvent) -> (String, String, Vec<u8>) {
    unwrap_envelope(ev.object.as_ref().unwrap().raw.as_ref().unwrap())
}

#[test]
fn protobuf_watch_streams() {
    let env = Env::start();
    let (ct, events) = env.watch(
        "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=30",
        CLIENT_GO,
        5,
        2,
        || {
            env.kubectl(&["create", "configmap", "c3", "--from-literal=n=1"]);
            env.kubectl(&["label", "configmap", "c3", "tier=gold"]);
            env.kubectl(&["delete", "configmap", "c3"]);
        },
    );
    assert_eq!(ct, "application/vnd.kubernetes.protobuf;stream=watch");
    let summary: Vec<(String, String)> = events
        .iter()
        .map(|ev| {
            let (av, kind, raw) = event_object(ev);
            assert_eq!((av.as_str(), kind.as_str()), ("v1", "ConfigMap"));
            let cm = ConfigMap::decode(&raw[..]).expect("ConfigMap");
            (
                ev.r#type.clone().unwrap(),
                cm.metadata.unwrap().name.unwrap(),
            )
        })
        .collect();
    let pairs = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        summary,
        pairs(&[
            ("ADDED", "c1"),
            ("ADDED", "c2"),
            ("ADDED", "c3"),
            ("MODIFIED", "c3"),
            ("DELETED", "c3"),
        ])
    );
    let (_, _, raw) = event_object(&events[3]);
    let labels = ConfigMap::decode(&raw[..])
        .unwrap()
        .metadata
        .unwrap()
        .labels;
    assert_eq!(labels.get("tier").map(String::as_str), Some("gold"));

    // A streaming list: initial events, then the initial-events-end bookmark whose list
    // blueprint is an empty ConfigMapList in protobuf.
    let (_, events) = env.watch("/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=30",
        PROTOBUF,
        3,
        3,
        || {},
    );
    assert_eq!(events[2].r#type.as_deref(), Some("BOOKMARK"));
    let (_, kind, raw) = event_object(&events[2]);
    assert_eq!(kind, "ConfigMap");
    let meta = ConfigMap::decode(&raw[..]).unwrap().metadata.unwrap();
    assert_eq!(
        meta.annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    use base64::Engine as _;
    let blueprint = base64::engine::general_purpose::STANDARD
        .decode(&meta.annotations["kubernetes.io/initial-events-list-blueprint"])
        .unwrap();
    let (av, kind, raw) = unwrap_envelope(&blueprint);
    assert_eq!((av.as_str(), kind.as_str()), ("v1", "ConfigMapList"));
    assert!(ConfigMapList::decode(&raw[..]).unwrap().items.is_empty());

    // Pods.
    let (_, events) = env.watch(
        "/api/v1/pods?watch=1&timeoutSeconds=30",
        PROTOBUF,
        1,
        1,
        || {},
    );
    let (_, kind, raw) = event_object(&events[0]);
    assert_eq!(kind, "Pod");
    assert_eq!(
        Pod::decode(&raw[..])
            .unwrap()
            .metadata
            .unwrap()
            .name
            .as_deref(),
        Some("p1")
    );
    // Watches cannot be YAML.
    let a = env.get(
        "/api/v1/namespaces/default/configmaps?watch=1",
        "application/yaml",
    );
    assert_eq!(a.status, 406);
    assert_eq!(
        serde_yaml::from_slice::<Value>(&a.body).unwrap()["message"],
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
}

#[test]
fn custom_resources_and_karmada_kinds() {
    let env = Env::start();
    env.s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
"#,
    );
    support::wait_for("the widgets API", DEADLINE, || {
        (env.get(
            "/apis/example.com/v1/namespaces/default/widgets",
            "application/json",
        )
        .status
            == 200)
            .then_some(())
    });
    env.s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n",
    );
    let not_acceptable = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for path in [
        "/apis/example.com/v1/namespaces/default/widgets",
        "/apis/example.com/v1/namespaces/default/widgets/w1",
        "/apis/example.com/v1/namespaces/default/widgets/w1/status",
        "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
        "/apis/cluster.karmada.io/v1alpha1/clusters",
    ] {
        // Protobuf only: 406, the Status itself in protobuf (errors have no such restriction).
        let a = env.get(path, PROTOBUF);
        assert_eq!(a.status, 406, "{path}");
        let st = protobuf_status(&a);
        assert_eq!(st.reason.as_deref(), Some("NotAcceptable"), "{path}");
        assert_eq!(st.code, Some(406));
        assert_eq!(st.message.as_deref(), Some(not_acceptable));
        // client-go's list: JSON.
        let a = env.get(path, CLIENT_GO);
        assert_eq!(
            (a.status, a.content_type.as_str()),
            (200, "application/json"),
            "{path}"
        );
        a.json();
    }
    let a = env.get(
        "/apis/example.com/v1/namespaces/default/widgets?watch=1",
        PROTOBUF,
    );
    assert_eq!(a.status, 406);
    assert_eq!(protobuf_status(&a).message.as_deref(), Some(not_acceptable));
    // Metadata-only forms are served in protobuf for any kind (the client-go metadata client).
    let a = env.get("/apis/example.com/v1/namespaces/default/widgets",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    );
    let list: PartialObjectMetadataList = a.message("meta.k8s.io/v1", "PartialObjectMetadataList");
    assert_eq!(
        list.items[0].metadata.as_ref().unwrap().name.as_deref(),
        Some("w1")
    );
    let a = env.get(
        "/apis/example.com/v1/namespaces/default/widgets/w1",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    );
    let pom: PartialObjectMetadata = a.message("meta.k8s.io/v1", "PartialObjectMetadata");
    assert_eq!(pom.metadata.unwrap().name.as_deref(), Some("w1"));
    // A list asked as one object (and the reverse) is refused as kube words it.
    let a = env.get(
        "/apis/example.com/v1/namespaces/default/widgets",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    );
    assert_eq!(a.status, 406);
    assert_eq!(
        a.json()["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)"
    );
    let a = env.get(
        "/api/v1/namespaces/default/configmaps/c1",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json",
    );
    assert_eq!(a.status, 406);
    assert_eq!(
        a.json()["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
}

#[test]
fn yaml_tables_and_not_acceptable() {
    let env = Env::start();
    // YAML of an object and a list: the same documents as JSON.
    for path in [
        "/api/v1/namespaces/default/configmaps/c1",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/pods/p1",
    ] {
        let json = env.get(path, "application/json").json();
        let a = env.get(path, "application/yaml");
        assert_eq!(
            (a.status, a.content_type.as_str()),
            (200, "application/yaml")
        );
        let text = String::from_utf8(a.body).unwrap();
        let yaml: Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml, json, "{text}");
    }
    let a = env.get(
        "/api/v1/namespaces/default/configmaps/c1",
        "application/yaml",
    );
    let text = String::from_utf8(a.body).unwrap();
    // kube's YAML: sorted keys, strings that read as numbers quoted.
    assert!(
        text.starts_with(
            "apiVersion: v1\ndata:\n  a: b\n  port: \"8080\"\nkind: ConfigMap\nmetadata:\n"
        ),
        "{text}"
    );

    // Nothing acceptable: 406, the Status as indented JSON.
    for accept in ["text/html", "application/json;v=v1", "text/*, image/png"] {
        let a = env.get("/api/v1/namespaces/default/configmaps/c1", accept);
        assert_eq!(
            (a.status, a.content_type.as_str()),
            (406, "application/json"),
            "{accept}"
        );
        let text = String::from_utf8(a.body.clone()).unwrap();
        assert!(
            text.starts_with("{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\","),
            "{text}"
        );
        assert_eq!(a.json()["reason"], "NotAcceptable");
        assert_eq!(
            a.json()["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    // Tables: JSON or YAML; kube serves no protobuf Table.
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let a = env.get("/api/v1/namespaces/default/configmaps", table);
    assert_eq!(a.json()["kind"], "Table");
    let a = env.get(
        "/api/v1/namespaces/default/configmaps",
        "application/yaml;as=Table;v=v1;g=meta.k8s.io",
    );
    let yaml: Value = serde_yaml::from_slice(&a.body).unwrap();
    assert_eq!(yaml["kind"], "Table");
    assert_eq!(yaml["rows"][0]["cells"][0], "c1");
    let a = env.get(
        "/api/v1/namespaces/default/configmaps",
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
    );
    assert_eq!(a.status, 406);
    let a = env.get("/api/v1/namespaces/default/configmaps",
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf",
    );
    let _: ConfigMapList = a.message("v1", "ConfigMapList");

    // Metadata-only lists in JSON and protobuf.
    let a = env.get(
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    );
    let list = a.json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert!(list["items"][0].get("data").is_none());

    // Indented JSON: ?pretty=true, or a curl User-Agent.
    let a = env.get(
        "/api/v1/namespaces/default/configmaps/c1?pretty=true",
        "application/json",
    );
    assert!(
        a.body.starts_with(b"{\n  \""),
        "{}",
        String::from_utf8_lossy(&a.body)
    );
    assert_eq!(a.json()["metadata"]["name"], "c1");
}

#[test]
fn subresources_and_discovery() {
    let env = Env::start();
    env.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let a = env.get(
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        PROTOBUF,
    );
    let scale: Scale = a.message("autoscaling/v1", "Scale");
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let a = env.get(
        "/apis/apps/v1/namespaces/default/deployments/web/status",
        CLIENT_GO,
    );
    let d: Deployment = a.message("apps/v1", "Deployment");
    assert_eq!(d.spec.unwrap().replicas, Some(2));
    // A protobuf scale update.
    let a = env.call("PUT",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        Some(PROTOBUF),
        Some(
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 3}}),
        ),
    );
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let scale: Scale = a.message("autoscaling/v1", "Scale");
    assert_eq!(scale.spec.unwrap().replicas, Some(3));

    // Legacy discovery documents; /api's keeps no apiVersion (kube's stripVersionEncoder).
    let a = env.get("/api", PROTOBUF);
    let versions: APIVersions = a.message("", "APIVersions");
    assert_eq!(versions.versions, vec!["v1"]);
    let a = env.get("/apis", PROTOBUF);
    let groups: APIGroupList = a.message("v1", "APIGroupList");
    assert!(
        groups
            .groups
            .iter()
            .any(|g| g.name.as_deref() == Some("apps"))
    );
    let a = env.get("/apis/apps/v1", PROTOBUF);
    let resources: APIResourceList = a.message("v1", "APIResourceList");
    let deployments = resources
        .resources
        .iter()
        .find(|r| r.name.as_deref() == Some("deployments"))
        .unwrap();
    assert!(
        deployments
            .verbs
            .as_ref()
            .unwrap()
            .items
            .contains(&"watch".to_string())
    );
    // Aggregated discovery in protobuf names its conversion in the Content-Type.
    let a = env.get("/apis",
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    );
    let ct = a.content_type.clone();
    assert_eq!(
        ct,
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let (av, kind, raw) = unwrap_envelope(&a.body);
    assert_eq!(
        (av.as_str(), kind.as_str()),
        ("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
    );
    let doc = APIGroupDiscoveryList::decode(&raw[..]).unwrap();
    assert!(
        doc.items
            .iter()
            .any(|g| g.metadata.as_ref().and_then(|m| m.name.as_deref()) == Some("apps"))
    );
    // /version is JSON whatever the Accept header.
    let a = env.get("/version", PROTOBUF);
    assert_eq!(a.json()["major"], "1");
    let a = env.get("/apis/apps/v1", "text/html");
    assert_eq!(a.status, 406);
}

#[test]
fn kubectl_speaks_protobuf() {
    let s = Server::start();
    // kubectl's typed clients send and accept protobuf; every one of these reads our answer.
    s.kubectl_ok(&["create", "configmap", "cfg", "--from-literal=k=v"]);
    let log = s.kubectl(&[
        "create",
        "secret",
        "generic",
        "sec",
        "--from-literal=k=v",
        "-v=8",
    ]);
    assert!(
        log.status.success(),
        "{}",
        String::from_utf8_lossy(&log.stderr)
    );
    let stderr = String::from_utf8_lossy(&log.stderr);
    assert!(
        stderr.contains("Response Headers:")
            && stderr.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&log.stdout).trim(),
        "secret/sec created"
    );
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    s.kubectl_ok(&["create", "service", "clusterip", "svc", "--tcp=80:8080"]);
    s.kubectl_ok(&["create", "role", "r", "--verb=get", "--resource=pods"]);
    assert_eq!(
        s.kubectl_ok(&["auth", "can-i", "get", "pods"]).trim(),
        "yes"
    );
    s.kubectl_ok(&["create", "serviceaccount", "builder"]);
    let token = s.kubectl_ok(&["create", "token", "builder"]);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
    assert!(s.kubectl_ok(&["auth", "whoami"]).contains("karmada-admin"));
    // What they created reads back through kubectl's JSON path.
    let cm = s.get_json(&["configmap", "cfg"]);
    assert_eq!(cm["data"]["k"], "v");
    let svc = s.get_json(&["service", "svc"]);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
}
