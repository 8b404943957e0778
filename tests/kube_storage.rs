//! One etcd, two servers: objects written into etcd the way kube-apiserver writes them
//! (protobuf built here with k8s-pb's messages in kube's envelope, custom resources as Go's
//! JSON, CRDs in v1beta1, Secrets encrypted in kube's aescbc and aesgcm formats, at kube's
//! keys) are served by karmada-rs as they are — same uid, resourceVersion and managedFields —
//! and what karmada-rs writes is read back here with k8s-pb at kube's keys (so a
//! kube-apiserver started on the same etcd reads it); objects under the keys earlier versions
//! of karmada-rs used move to kube's at start, and `storage rewrite` re-encodes them.
//! `migrate check` reports, read-only, what a server would make of such an etcd; and a fresh
//! karmada-rs takes over the etcd of a stopped control plane with two members without writing
//! to them.

mod propagation_env;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use bytes::Bytes;
use k8s_pb::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_pb::api::core::v1::{
    ConfigMap, Container, Namespace, NamespaceSpec, NamespaceStatus, PodSpec, PodTemplateSpec,
    Secret, Service, ServicePort, ServiceSpec,
};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, LabelSelector, ManagedFieldsEntry, ObjectMeta, Time,
};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use propagation_env::{Env, deployment_with_policy};
use prost::Message;
use serde_json::{Value, json};
use storage::Store;
use support::{Backend, DEADLINE, Server, wait_for};

const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// kube's protobuf storage form: `k8s\0` and a runtime.Unknown around the message.
fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// The message inside a stored protobuf value, and the kind it is named as.
fn open_envelope(stored: &[u8]) -> (String, String, Vec<u8>) {
    let body = stored
        .strip_prefix(b"k8s\0")
        .unwrap_or_else(|| panic!("not kube's protobuf: {:?}", String::from_utf8_lossy(stored)));
    let unknown = Unknown::decode(body).expect("a runtime.Unknown");
    let tm = unknown.type_meta.expect("typeMeta");
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    )
}

/// JSON as Go's json.Encoder writes a map (what kube stores for custom resources).
fn go_json(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).expect("json");
    out.push(b'\n');
    out
}

fn aescbc_key() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(KEY)
        .expect("key")
}

/// kube's aescbc value: its prefix, a random IV, the PKCS#7-padded plaintext in CBC mode.
fn aescbc_seal(plain: &[u8], iv: [u8; 16]) -> Vec<u8> {
    let ct = cbc::Encryptor::<aes::Aes256>::new_from_slices(&aescbc_key(), &iv)
        .expect("key and iv")
        .encrypt_padded_vec_mut::<Pkcs7>(plain);
    let mut out = b"k8s:enc:aescbc:v1:key1:".to_vec();
    out.extend(iv);
    out.extend(ct);
    out
}

fn aescbc_open(stored: &[u8]) -> Vec<u8> {
    let rest = stored
        .strip_prefix(b"k8s:enc:aescbc:v1:key1:".as_slice())
        .expect("encrypted with aescbc key1");
    let (iv, ct) = rest.split_at(16);
    cbc::Decryptor::<aes::Aes256>::new_from_slices(&aescbc_key(), iv)
        .expect("key and iv")
        .decrypt_padded_vec_mut::<Pkcs7>(ct)
        .expect("decrypts")
}

/// The aesgcm key of `encryption_config`, which reads but does not write.
const GCM_KEY: [u8; 32] = [5; 32];

/// kube's aesgcm value: its prefix, a random 12-byte nonce, then the sealed plaintext with its
/// tag, authenticated with the value's etcd key (under the etcd prefix).
fn aesgcm_seal(plain: &[u8], etcd_key: &str, nonce: [u8; 12]) -> Vec<u8> {
    use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &GCM_KEY).expect("aesgcm key"));
    let mut sealed = plain.to_vec();
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(etcd_key.as_bytes()),
        &mut sealed,
    )
    .expect("seal");
    let mut out = b"k8s:enc:aesgcm:v1:gcm1:".to_vec();
    out.extend(nonce);
    out.extend(sealed);
    out
}

/// Opens a kube aesgcm value of `GCM_KEY` stored at `etcd_key`.
fn aesgcm_open(stored: &[u8], etcd_key: &str) -> Vec<u8> {
    use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
    let rest = stored
        .strip_prefix(b"k8s:enc:aesgcm:v1:gcm1:".as_slice())
        .expect("encrypted with aesgcm gcm1");
    let (nonce, sealed) = rest.split_at(12);
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &GCM_KEY).expect("aesgcm key"));
    let mut sealed = sealed.to_vec();
    key.open_in_place(
        Nonce::try_assume_unique_for_key(nonce).expect("nonce"),
        Aad::from(etcd_key.as_bytes()),
        &mut sealed,
    )
    .expect("opens with the etcd key as authenticated data")
    .to_vec()
}

fn encryption_config(dir: &std::path::Path) -> String {
    let path = dir.join("encryption.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY}\n  - aesgcm:\n      keys:\n      - name: gcm1\n        secret: {}\n",
            base64::engine::general_purpose::STANDARD.encode(GCM_KEY)
        ),
    )
    .expect("write encryption config");
    path.display().to_string()
}

/// A client of the test's own to the etcd both servers use.
struct Etcd {
    rt: tokio::runtime::Runtime,
    store: Arc<dyn Store>,
}

impl Etcd {
    fn connect(endpoints: Vec<String>) -> Etcd {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let store: Arc<dyn Store> = rt
            .block_on(storage::etcd::EtcdStore::connect(
                storage::etcd::EtcdOptions::new(endpoints),
            ))
            .expect("etcd client");
        Etcd { rt, store }
    }

    /// Writes a value; returns its revision (the object's resourceVersion).
    fn put(&self, key: &str, value: Vec<u8>) -> i64 {
        self.rt
            .block_on(self.store.create(key, Bytes::from(value)))
            .unwrap_or_else(|e| panic!("put {key}: {e}"))
            .mod_revision
    }

    fn get(&self, key: &str) -> Option<storage::KeyValue> {
        self.rt.block_on(self.store.get(key)).expect("get").0
    }

    fn revision_of(&self, key: &str) -> i64 {
        self.get(key)
            .unwrap_or_else(|| panic!("{key} is not in etcd"))
            .mod_revision
    }

    fn keys(&self, prefix: &str) -> Vec<String> {
        self.rt
            .block_on(self.store.range(storage::RangeRequest {
                prefix: prefix.into(),
                ..Default::default()
            }))
            .expect("range")
            .kvs
            .into_iter()
            .map(|kv| kv.key)
            .collect()
    }
}

fn start_etcd() -> storage::testing::EtcdProcess {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(storage::testing::EtcdProcess::start())
        .expect("start etcd")
}

fn time(seconds: i64) -> Option<Time> {
    Some(Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

fn meta(name: &str, ns: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(ns.into()),
        self_link: Some(String::new()),
        uid: Some(uid.into()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: time(1_735_689_600),
        ..Default::default()
    }
}

fn managed(manager: &str, api_version: &str, fields: &str) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        manager: Some(manager.into()),
        operation: Some("Update".into()),
        api_version: Some(api_version.into()),
        time: time(1_735_689_601),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1 {
            raw: Some(fields.as_bytes().to_vec()),
        }),
        subresource: Some(String::new()),
    }
}

const DEPLOYMENT_FIELDS: &str = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#;

fn deployment() -> Deployment {
    let labels = [("app".to_string(), "web".to_string())].into();
    let mut m = meta("web", "shop", "9d3c5b1e-0a7f-4c55-9a1e-1d2f3a4b5c6d");
    m.generation = Some(3);
    m.labels = labels;
    m.managed_fields = vec![managed(
        "kubectl-client-side-apply",
        "apps/v1",
        DEPLOYMENT_FIELDS,
    )];
    Deployment {
        metadata: Some(m),
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: Some(LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                ..Default::default()
            }),
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: [("app".to_string(), "web".to_string())].into(),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: Some("web".into()),
                        image: Some("nginx:1.27".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: Some(DeploymentStatus {
            observed_generation: Some(3),
            replicas: Some(2),
            ready_replicas: Some(2),
            ..Default::default()
        }),
    }
}

/// Karmada's CRD of PropagationPolicy as kube-apiserver stores it: v1beta1, typed JSON (the
/// struct's member order), the status its controllers gave it.
fn propagation_policy_crd() -> Vec<u8> {
    let text = r#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1","metadata":{"name":"propagationpolicies.policy.karmada.io","uid":"5b9a3e1c-1111-4a2b-8c3d-000000000001","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z","annotations":{"controller-gen.kubebuilder.io/version":"v0.16.5"}},"spec":{"group":"policy.karmada.io","version":"v1alpha1","names":{"plural":"propagationpolicies","singular":"propagationpolicy","shortNames":["pp"],"kind":"PropagationPolicy","listKind":"PropagationPolicyList","categories":["karmada-io"]},"scope":"Namespaced","validation":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}},"subresources":{},"versions":[{"name":"v1alpha1","served":true,"storage":true}],"conversion":{"strategy":"None"},"preserveUnknownFields":false},"status":{"conditions":[{"type":"NamesAccepted","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"NoConflicts","message":"no conflicts found"},{"type":"Established","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"InitialNamesAccepted","message":"the initial names have been accepted"}],"acceptedNames":{"plural":"propagationpolicies","singular":"propagationpolicy","shortNames":["pp"],"kind":"PropagationPolicy","listKind":"PropagationPolicyList","categories":["karmada-io"]},"storedVersions":["v1alpha1"]}}"#;
    let mut out = text.as_bytes().to_vec();
    out.push(b'\n');
    out
}

/// A user's CRD as kube-apiserver stores it, with a printer column at the spec level.
fn widget_crd() -> Vec<u8> {
    let text = r#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1","metadata":{"name":"widgets.example.com","uid":"5b9a3e1c-1111-4a2b-8c3d-000000000002","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z"},"spec":{"group":"example.com","version":"v1","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced","validation":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"color":{"type":"string"},"size":{"type":"integer","default":1}}}}}},"versions":[{"name":"v1","served":true,"storage":true}],"additionalPrinterColumns":[{"name":"Color","type":"string","JSONPath":".spec.color"}],"conversion":{"strategy":"None"},"preserveUnknownFields":false},"status":{"conditions":[{"type":"NamesAccepted","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"NoConflicts","message":"no conflicts found"},{"type":"Established","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"InitialNamesAccepted","message":"the initial names have been accepted"}],"acceptedNames":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"storedVersions":["v1"]}}"#;
    let mut out = text.as_bytes().to_vec();
    out.push(b'\n');
    out
}

/// Karmada's APIService for Clusters, pointing at karmada-aggregated-apiserver.
fn cluster_api_service() -> Vec<u8> {
    let text = r#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1alpha1.cluster.karmada.io","uid":"5b9a3e1c-1111-4a2b-8c3d-000000000003","creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"karmada-aggregated-apiserver","apiserver":"true"}},"spec":{"service":{"namespace":"karmada-system","name":"karmada-aggregated-apiserver","port":443},"group":"cluster.karmada.io","version":"v1alpha1","insecureSkipTLSVerify":true,"groupPriorityMinimum":2000,"versionPriority":10},"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"Passed","message":"all checks passed"}]}}"#;
    let mut out = text.as_bytes().to_vec();
    out.push(b'\n');
    out
}

#[test]
fn objects_kube_apiserver_stored_are_served_as_they_are() {
    let etcd = start_etcd();
    let db = Etcd::connect(etcd.endpoints());
    let ns = Namespace {
        metadata: Some(meta("shop", "", "1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b")),
        spec: Some(NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: Some(NamespaceStatus {
            phase: Some("Active".into()),
            conditions: vec![],
        }),
    };
    db.put(
        "/registry/namespaces/shop",
        envelope("v1", "Namespace", &ns),
    );
    let mut cm_meta = meta("settings", "shop", "2a2a2a2a-0000-4000-8000-000000000001");
    cm_meta.managed_fields = vec![managed(
        "kubectl-create",
        "v1",
        r#"{"f:data":{".":{},"f:mode":{}}}"#,
    )];
    let cm = ConfigMap {
        metadata: Some(cm_meta),
        data: [("mode".to_string(), "fast & <safe>".to_string())].into(),
        ..Default::default()
    };
    let cm_rev = db.put(
        "/registry/configmaps/shop/settings",
        envelope("v1", "ConfigMap", &cm),
    );
    let secret = Secret {
        metadata: Some(meta(
            "creds",
            "shop",
            "2a2a2a2a-0000-4000-8000-000000000002",
        )),
        data: [("password".to_string(), b"hunter2".to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    db.put(
        "/registry/secrets/shop/creds",
        aescbc_seal(&envelope("v1", "Secret", &secret), [7; 16]),
    );
    let deploy_rev = db.put(
        "/registry/deployments/shop/web",
        envelope("apps/v1", "Deployment", &deployment()),
    );
    let svc = Service {
        metadata: Some(meta("web", "shop", "2a2a2a2a-0000-4000-8000-000000000003")),
        spec: Some(ServiceSpec {
            ports: vec![ServicePort {
                name: Some("http".into()),
                port: Some(80),
                protocol: Some("TCP".into()),
                ..Default::default()
            }],
            selector: [("app".to_string(), "web".to_string())].into(),
            r#type: Some("ClusterIP".into()),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    db.put(
        "/registry/services/specs/shop/web",
        envelope("v1", "Service", &svc),
    );
    let pp = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "shop", "uid": "3b3b3b3b-0000-4000-8000-000000000001",
                     "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z"},
        // Selects nothing here: this test is about reading, not about the controllers.
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}},
    });
    let pp_rev = db.put(
        "/registry/policy.karmada.io/propagationpolicies/shop/web",
        go_json(&pp),
    );
    let crd_key = "/registry/apiextensions.k8s.io/customresourcedefinitions/propagationpolicies.policy.karmada.io";
    let crd_rev = db.put(crd_key, propagation_policy_crd());
    let widget_crd_key =
        "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com";
    let widget_crd_rev = db.put(widget_crd_key, widget_crd());
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "shop", "uid": "4c4c4c4c-0000-4000-8000-000000000001",
                     "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"color": "blue", "size": 3}});
    let widget_rev = db.put("/registry/example.com/widgets/shop/w1", go_json(&widget));
    let apiservice_key = "/registry/apiregistration.k8s.io/apiservices/v1alpha1.cluster.karmada.io";
    let apiservice_rev = db.put(apiservice_key, cluster_api_service());
    // A local APIService without a condition: the aggregator's first pass writes one.
    db.put(
        "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        go_json(&json!({"kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1",
            "metadata": {"name": "v1.apps", "uid": "5c5c5c5c-0000-4000-8000-000000000001", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}})),
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let config = encryption_config(dir.path());
    let s = Server::start_on(etcd, &["--encryption-provider-config", &config]);

    let d = s.get_json(&["deployment", "web", "-n", "shop", "--show-managed-fields"]);
    assert_eq!(d["metadata"]["uid"], "9d3c5b1e-0a7f-4c55-9a1e-1d2f3a4b5c6d");
    assert_eq!(d["metadata"]["resourceVersion"], deploy_rev.to_string());
    assert_eq!(d["metadata"]["generation"], 3);
    assert_eq!(d["metadata"]["creationTimestamp"], "2025-01-01T00:00:00Z");
    assert_eq!(
        d["metadata"]["managedFields"],
        json!([{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2025-01-01T00:00:01Z", "fieldsType": "FieldsV1",
                "fieldsV1": serde_json::from_str::<Value>(DEPLOYMENT_FIELDS).expect("fields")}])
    );
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(d["status"]["readyReplicas"], 2);

    let c = s.get_json(&[
        "configmap",
        "settings",
        "-n",
        "shop",
        "--show-managed-fields",
    ]);
    assert_eq!(c["data"]["mode"], "fast & <safe>");
    assert_eq!(c["metadata"]["resourceVersion"], cm_rev.to_string());
    assert_eq!(
        c["metadata"]["managedFields"][0]["manager"],
        "kubectl-create"
    );
    let password = s.kubectl_ok(&[
        "get",
        "secret",
        "creds",
        "-n",
        "shop",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(
        password,
        base64::engine::general_purpose::STANDARD.encode("hunter2")
    );
    let svc = s.get_json(&["service", "web", "-n", "shop"]);
    assert_eq!(svc["spec"]["ports"][0]["port"], 80);
    assert_eq!(
        svc["metadata"]["uid"],
        "2a2a2a2a-0000-4000-8000-000000000003"
    );
    let ns = s.get_json(&["namespace", "shop"]);
    assert_eq!(ns["status"]["phase"], "Active");
    let p = s.get_json(&["propagationpolicy", "web", "-n", "shop"]);
    assert_eq!(p["metadata"]["uid"], "3b3b3b3b-0000-4000-8000-000000000001");
    assert_eq!(p["metadata"]["resourceVersion"], pp_rev.to_string());
    assert_eq!(
        p["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["member1"])
    );

    // The CRD kube stored in v1beta1 is served in v1, its spec-level fields in its version.
    let crd = s.get_json(&["crd", "widgets.example.com"]);
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(
        crd["metadata"]["resourceVersion"],
        widget_crd_rev.to_string()
    );
    assert_eq!(
        crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"],
        ".spec.color"
    );
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["color"]["type"],
        "string"
    );
    let w = s.get_json(&["widget", "w1", "-n", "shop"]);
    assert_eq!(w["metadata"]["resourceVersion"], widget_rev.to_string());
    assert_eq!(w["spec"], json!({"color": "blue", "size": 3}));
    let table = s.kubectl_ok(&["get", "widgets", "-n", "shop"]);
    assert!(table.contains("COLOR") && table.contains("blue"), "{table}");

    // Clusters are served natively, not through Karmada's APIService; the aggregator's first
    // pass (the local APIService's condition) leaves that APIService and Karmada's CRD as
    // they are, and the CRD controller agrees with the status kube's controllers gave.
    s.kubectl_ok(&["get", "clusters"]);
    wait_for("the aggregator's first pass", DEADLINE, || {
        let a = s.get_json(&["apiservice", "v1.apps"]);
        (a["status"]["conditions"][0]["reason"] == "Local").then_some(())
    });
    s.kubectl_ok(&["get", "clusters"]);
    assert_eq!(
        db.revision_of(apiservice_key),
        apiservice_rev,
        "Karmada's APIService was written"
    );
    assert_eq!(
        db.revision_of(crd_key),
        crd_rev,
        "Karmada's CRD was written"
    );
    assert_eq!(
        db.revision_of(widget_crd_key),
        widget_crd_rev,
        "the user's CRD was written"
    );
    // Nothing that was read was written back.
    assert_eq!(db.revision_of("/registry/deployments/shop/web"), deploy_rev);
    assert_eq!(db.revision_of("/registry/configmaps/shop/settings"), cm_rev);
    let crds = s.kubectl_ok(&["get", "crd", "-o", "name"]);
    assert!(
        crds.contains("propagationpolicies.policy.karmada.io"),
        "{crds}"
    );
}

#[test]
fn aesgcm_values_karmada_rs_writes_open_as_kube_apiserver_opens_them() {
    let etcd = start_etcd();
    let db = Etcd::connect(etcd.endpoints());
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("gcm.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: gcm1\n        secret: {}\n",
            base64::engine::general_purpose::STANDARD.encode(GCM_KEY)
        ),
    )
    .expect("write encryption config");
    let s = Server::start_on(
        etcd,
        &[
            "--encryption-provider-config",
            config.to_str().expect("utf-8 path"),
            "--etcd-prefix",
            "/karmada/registry",
        ],
    );
    s.kubectl_ok(&["create", "namespace", "shop"]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "shop",
        "--from-literal=password=hunter2",
    ]);
    let key = "/karmada/registry/secrets/shop/creds";
    let stored = db.get(key).expect("stored").value;
    let (api_version, kind, raw) = open_envelope(&aesgcm_open(&stored, key));
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Secret"));
    let secret = Secret::decode(&raw[..]).expect("a v1 Secret");
    assert_eq!(
        secret.data.get("password").map(Vec::as_slice),
        Some(&b"hunter2"[..])
    );
}

#[test]
fn what_karmada_rs_stores_kube_apiserver_reads() {
    let etcd = start_etcd();
    let db = Etcd::connect(etcd.endpoints());
    let dir = tempfile::tempdir().expect("tempdir");
    let config = encryption_config(dir.path());
    // A Secret kube-apiserver sealed with aesgcm, whose authenticated data is its whole etcd
    // key, prefix included.
    let gcm_key = "/karmada/registry/secrets/shop/sealed-gcm";
    let gcm_secret = Secret {
        metadata: Some(meta(
            "sealed-gcm",
            "shop",
            "2a2a2a2a-0000-4000-8000-000000000003",
        )),
        data: [("password".to_string(), b"swordfish".to_vec())].into(),
        ..Default::default()
    };
    db.put(
        gcm_key,
        aesgcm_seal(&envelope("v1", "Secret", &gcm_secret), gcm_key, [3; 12]),
    );
    let s = Server::start_on(
        etcd,
        &[
            "--encryption-provider-config",
            &config,
            "--etcd-prefix",
            "/karmada/registry",
        ],
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "secret",
            "sealed-gcm",
            "-n",
            "shop",
            "-o",
            "jsonpath={.metadata.uid} {.data.password}",
        ]),
        format!(
            "2a2a2a2a-0000-4000-8000-000000000003 {}",
            base64::engine::general_purpose::STANDARD.encode("swordfish")
        )
    );
    s.kubectl_ok(&["create", "namespace", "shop"]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "shop",
        "--from-literal=mode=fast & <safe>",
    ]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "shop",
        "--from-literal=password=hunter2",
    ]);
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "shop",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
---
apiVersion: work.karmada.io/v1alpha1
kind: ResourceBinding
metadata: {name: by-hand, namespace: shop}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: elsewhere, namespace: shop}
  clusters: [{name: member1, replicas: 2}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
    additionalPrinterColumns: [{name: Color, type: string, jsonPath: .spec.color}]
"#,
    );
    let uid_of = |args: &[&str]| {
        s.get_json(args)["metadata"]["uid"]
            .as_str()
            .map(str::to_string)
    };

    // Everything is under the etcd prefix, nothing under kube's default one.
    assert!(
        db.keys("/registry/").is_empty(),
        "{:?}",
        db.keys("/registry/")
    );
    let root = "/karmada/registry";

    let (api_version, kind, raw) = open_envelope(
        &db.get(&format!("{root}/configmaps/shop/settings"))
            .expect("stored")
            .value,
    );
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let cm = ConfigMap::decode(&raw[..]).expect("a v1 ConfigMap");
    assert_eq!(
        cm.data.get("mode").map(String::as_str),
        Some("fast & <safe>")
    );
    let m = cm.metadata.expect("metadata");
    assert_eq!(m.uid, uid_of(&["configmap", "settings", "-n", "shop"]));
    assert_eq!(
        m.resource_version.as_deref(),
        Some(""),
        "resourceVersion is not stored"
    );
    assert_eq!(
        m.managed_fields[0].manager.as_deref(),
        Some("kubectl-create")
    );

    let (api_version, kind, raw) = open_envelope(
        &db.get(&format!("{root}/deployments/shop/web"))
            .expect("stored")
            .value,
    );
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("apps/v1", "Deployment")
    );
    let d = Deployment::decode(&raw[..]).expect("an apps/v1 Deployment");
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(
        d.metadata.and_then(|m| m.uid),
        uid_of(&["deployment", "web", "-n", "shop"])
    );

    // Encrypted as kube's aescbc provider does, around the same protobuf.
    let sealed = db
        .get(&format!("{root}/secrets/shop/creds"))
        .expect("stored")
        .value;
    let (api_version, kind, raw) = open_envelope(&aescbc_open(&sealed));
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Secret"));
    let secret = Secret::decode(&raw[..]).expect("a v1 Secret");
    assert_eq!(
        secret.data.get("password").map(Vec::as_slice),
        Some(&b"hunter2"[..])
    );

    let namespace = db
        .get(&format!("{root}/namespaces/shop"))
        .expect("stored")
        .value;
    assert_eq!(open_envelope(&namespace).1, "Namespace");

    // Custom resources and Karmada's kinds: Go's JSON, in their CRDs' storage versions.
    let pp = db
        .get(&format!(
            "{root}/policy.karmada.io/propagationpolicies/shop/web"
        ))
        .expect("stored")
        .value;
    assert!(pp.ends_with(b"}\n"), "{}", String::from_utf8_lossy(&pp));
    let pp: Value = serde_json::from_slice(&pp).expect("JSON");
    assert_eq!(pp["apiVersion"], "policy.karmada.io/v1alpha1");
    assert!(pp["metadata"].get("resourceVersion").is_none());
    let rb: Value = serde_json::from_slice(
        &db.get(&format!(
            "{root}/work.karmada.io/resourcebindings/shop/by-hand"
        ))
        .expect("stored")
        .value,
    )
    .expect("JSON");
    assert_eq!(
        rb["apiVersion"], "work.karmada.io/v1alpha2",
        "stored in the CRD's storage version"
    );
    let crd: Value = serde_json::from_slice(
        &db.get(&format!(
            "{root}/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
        ))
        .expect("stored")
        .value,
    )
    .expect("JSON");
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1beta1");
    assert_eq!(crd["spec"]["version"], "v1");
    assert_eq!(
        crd["spec"]["additionalPrinterColumns"][0]["JSONPath"],
        ".spec.color"
    );
    assert!(
        crd["spec"]["validation"]["openAPIV3Schema"].is_object(),
        "{crd}"
    );
    assert_eq!(
        crd["spec"]["versions"],
        json!([{"name": "v1", "served": true, "storage": true}])
    );
}

#[test]
fn earlier_keys_move_to_kube_keys_and_storage_rewrite_encodes_them_as_kube_does() {
    let etcd = start_etcd();
    let db = Etcd::connect(etcd.endpoints());
    // As earlier versions of karmada-rs stored them: defaulted JSON, under their own keys.
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "old", "namespace": "default", "uid": "6d6d6d6d-0000-4000-8000-000000000001",
                     "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z", "labels": {"app": "old"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "old"}},
                 "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "old"}}, "spec": {
                     "containers": [{"name": "c", "image": "busybox", "imagePullPolicy": "Always", "resources": {},
                                     "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                     "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "securityContext": {}, "terminationGracePeriodSeconds": 30}}}});
    db.put(
        "/registry/apps/deployments/default/old",
        serde_json::to_vec(&deploy).expect("json"),
    );
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "old", "namespace": "default", "uid": "6d6d6d6d-0000-4000-8000-000000000002",
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "type": "ClusterIP"}});
    db.put(
        "/registry/services/default/old",
        serde_json::to_vec(&svc).expect("json"),
    );

    let s = Server::start_on(etcd, &[]);
    let d = s.get_json(&["deployment", "old"]);
    assert_eq!(d["metadata"]["uid"], "6d6d6d6d-0000-4000-8000-000000000001");
    assert_eq!(
        s.get_json(&["service", "old"])["metadata"]["uid"],
        "6d6d6d6d-0000-4000-8000-000000000002"
    );
    assert!(db.get("/registry/apps/deployments/default/old").is_none());
    assert!(db.get("/registry/services/default/old").is_none());
    let moved = db
        .get("/registry/deployments/default/old")
        .expect("at kube's key")
        .value;
    assert!(moved.starts_with(b"{"), "moved as it was");
    assert!(db.get("/registry/services/specs/default/old").is_some());

    // `storage rewrite` stores it again as kube does; nothing else changes.
    storage_rewrite(&s, "deployments.apps");
    let rewritten = db
        .get("/registry/deployments/default/old")
        .expect("stored")
        .value;
    let (_, kind, raw) = open_envelope(&rewritten);
    assert_eq!(kind, "Deployment");
    let again = Deployment::decode(&raw[..]).expect("a Deployment");
    assert_eq!(
        again.metadata.and_then(|m| m.uid).as_deref(),
        Some("6d6d6d6d-0000-4000-8000-000000000001")
    );
    let after = s.get_json(&["deployment", "old"]);
    assert_eq!(after["spec"]["replicas"], d["spec"]["replicas"]);
    assert_eq!(
        after["spec"]["template"]["spec"],
        d["spec"]["template"]["spec"]
    );
    assert_eq!(after["metadata"]["generation"], 1);
    // Written as kube does, an unchanged update writes nothing more.
    let rev = db.revision_of("/registry/deployments/default/old");
    storage_rewrite(&s, "deployments.apps");
    assert_eq!(db.revision_of("/registry/deployments/default/old"), rev);
}

/// A resource's counts in `migrate check`'s table: served, rewritten, moved, not served
/// (kept), cannot be served.
fn counts(out: &str, resource: &str) -> Vec<usize> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(resource))
        .unwrap_or_else(|| panic!("no {resource} in\n{out}"))
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse::<usize>().expect("counts"))
        .collect()
}

/// Runs `karmada-rs migrate check` with `args`; returns its exit code and output.
fn migrate(args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["migrate", "check"])
        .args(args)
        .env_remove("KARMADA_RS_ETCD_SERVERS")
        .output()
        .expect("run migrate check");
    (
        out.status.code().expect("exit code"),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Runs `karmada-rs migrate check` against an etcd; returns whether it passed, and its output.
fn migrate_check(endpoints: &[String], extra: &[&str]) -> (bool, String) {
    let endpoints = endpoints.join(",");
    let mut args = vec!["--etcd-servers", endpoints.as_str()];
    args.extend_from_slice(extra);
    let (code, out) = migrate(&args);
    assert!(code <= 1, "the check failed ({code}):\n{out}");
    (code == 0, out)
}

#[test]
fn migrate_check_that_cannot_check_exits_2_and_says_why() {
    let (code, out) = migrate(&[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--etcd-servers is required"), "{out}");
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.yaml");
    let (code, out) = migrate(&[
        "--etcd-servers",
        "http://127.0.0.1:1",
        "--encryption-provider-config",
        missing.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("absent.yaml"), "{out}");
}

#[test]
fn migrate_check_reports_what_would_be_served_and_writes_nothing() {
    use k8s_pb::api::admissionregistration::v1 as admission;
    let etcd = start_etcd();
    let db = Etcd::connect(etcd.endpoints());
    let at = |p: &str| format!("/karmada{p}");
    db.put(
        &at("/registry/deployments/shop/web"),
        envelope("apps/v1", "Deployment", &deployment()),
    );
    let secret = Secret {
        metadata: Some(meta(
            "creds",
            "shop",
            "2a2a2a2a-0000-4000-8000-000000000002",
        )),
        data: [("password".to_string(), b"hunter2".to_vec())].into(),
        ..Default::default()
    };
    db.put(
        &at("/registry/secrets/shop/creds"),
        aescbc_seal(&envelope("v1", "Secret", &secret), [9; 16]),
    );
    db.put(
        &at("/registry/apiextensions.k8s.io/customresourcedefinitions/propagationpolicies.policy.karmada.io"),
        propagation_policy_crd(),
    );
    db.put(
        &at("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"),
        widget_crd(),
    );
    db.put(
        &at("/registry/example.com/widgets/shop/w1"),
        go_json(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "shop"}})),
    );
    db.put(
        &at("/registry/apiregistration.k8s.io/apiservices/v1alpha1.cluster.karmada.io"),
        cluster_api_service(),
    );
    // kube-apiserver's own bookkeeping: left as it is.
    db.put(
        &at("/registry/masterleases/10.0.0.1"),
        envelope(
            "v1",
            "Endpoints",
            &k8s_pb::api::core::v1::Endpoints::default(),
        ),
    );
    db.put(&at("/registry/ranges/serviceips"), b"k8s\0".to_vec());
    let webhook = |name: &str, url: &str| admission::ValidatingWebhook {
        name: Some(name.into()),
        client_config: Some(admission::WebhookClientConfig {
            url: Some(url.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let karmadas = admission::ValidatingWebhookConfiguration {
        metadata: Some(meta(
            "validating-config",
            "",
            "7e7e7e7e-0000-4000-8000-000000000001",
        )),
        webhooks: vec![webhook(
            "propagationpolicy.karmada.io",
            "https://karmada-webhook.karmada-system.svc:443/validate-propagationpolicy",
        )],
    };
    db.put(
        &at("/registry/validatingwebhookconfigurations/validating-config"),
        envelope(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            &karmadas,
        ),
    );
    // A user's webhook is served (and called); Karmada's own cannot be, as karmada-webhook
    // stops with Karmada. What else cannot be served: a custom resource without its CRD, a
    // value that is neither JSON nor protobuf.
    let users = admission::ValidatingWebhookConfiguration {
        metadata: Some(meta(
            "policy-check",
            "",
            "7e7e7e7e-0000-4000-8000-000000000002",
        )),
        webhooks: vec![webhook(
            "check.example.com",
            "https://check.example.com/validate",
        )],
    };
    db.put(
        &at("/registry/validatingwebhookconfigurations/policy-check"),
        envelope(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            &users,
        ),
    );
    db.put(
        &at("/registry/gadgets.example.com/gadgets/shop/g1"),
        go_json(&json!({"apiVersion": "gadgets.example.com/v1", "kind": "Gadget"})),
    );
    db.put(
        &at("/registry/configmaps/shop/broken"),
        b"\x01garbage".to_vec(),
    );
    // Under the keys an earlier karmada-rs used, as JSON: moved and rewritten.
    db.put(
        &at("/registry/apps/deployments/shop/old"),
        serde_json::to_vec(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "old", "namespace": "shop"}})).expect("json"),
    );

    // Under an earlier key and under the current one: the same object (moved, once), another
    // object (the current one is served, the earlier one cannot be).
    let twin = serde_json::to_vec(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "twin", "namespace": "shop"}})).expect("json");
    db.put(&at("/registry/apps/deployments/shop/twin"), twin.clone());
    db.put(&at("/registry/deployments/shop/twin"), twin);
    db.put(
        &at("/registry/apps/deployments/shop/web"),
        serde_json::to_vec(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}})).expect("json"),
    );

    let revision = db
        .rt
        .block_on(db.store.current_revision())
        .expect("revision");
    // Under another prefix there is nothing to take over: a wrong --etcd-prefix fails.
    let (ok, out) = migrate_check(&etcd.endpoints(), &[]);
    assert!(!ok, "{out}");
    assert!(out.starts_with("No keys under /registry/: "), "{out}");
    let (ok, out) = migrate_check(&etcd.endpoints(), &["--etcd-prefix", "/karmada/registry"]);
    assert!(!ok, "{out}");
    // SERVED, REWRITE, MOVE, NOT-SERVED, CANNOT-BE-SERVED.
    assert_eq!(
        counts(&out, "deployments.apps"),
        vec![3, 2, 2, 0, 1],
        "{out}"
    );
    assert!(
        out.contains("/karmada/registry/apps/deployments/shop/web: also stored under its current key with another value"),
        "{out}"
    );
    assert_eq!(
        counts(&out, "customresourcedefinitions.apiextensions.k8s.io"),
        vec![2, 0, 0, 0, 0],
        "{out}"
    );
    assert_eq!(
        counts(&out, "widgets.example.com"),
        vec![1, 0, 0, 0, 0],
        "{out}"
    );
    assert_eq!(
        counts(&out, "apiservices.apiregistration.k8s.io"),
        vec![1, 0, 0, 0, 0],
        "{out}"
    );
    assert_eq!(counts(&out, "masterleases"), vec![0, 0, 0, 1, 0], "{out}");
    assert_eq!(counts(&out, "ranges"), vec![0, 0, 0, 1, 0], "{out}");
    assert_eq!(
        counts(
            &out,
            "validatingwebhookconfigurations.admissionregistration.k8s.io"
        ),
        vec![1, 0, 0, 0, 1],
        "{out}"
    );
    assert_eq!(counts(&out, "configmaps"), vec![0, 0, 0, 0, 1], "{out}");
    assert_eq!(
        counts(&out, "gadgets.gadgets.example.com"),
        vec![0, 0, 0, 0, 1],
        "{out}"
    );
    // The encrypted Secret cannot be read without the configuration; with it, it is served.
    assert_eq!(counts(&out, "secrets"), vec![0, 0, 0, 0, 1], "{out}");
    assert!(
        out.contains("stored object is encrypted (k8s:enc:aescbc:v1:key1:)"),
        "{out}"
    );
    assert!(
        out.contains("validating-config: Karmada's webhooks, answered by karmada-webhook, which stops with Karmada; karmada-rs defaults and validates Karmada's kinds itself: delete it before the takeover (kubectl delete validatingwebhookconfiguration validating-config)"),
        "{out}"
    );
    assert!(
        out.contains("no CustomResourceDefinition defines this resource"),
        "{out}"
    );
    assert!(
        out.contains("/configmaps/shop/broken: stored object is neither JSON nor protobuf"),
        "{out}"
    );
    assert!(
        out.contains("deployments.apps: 2 (stored as JSON, written as protobuf)"),
        "{out}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let config = encryption_config(dir.path());
    let (_, out) = migrate_check(
        &etcd.endpoints(),
        &[
            "--etcd-prefix",
            "/karmada/registry",
            "--encryption-provider-config",
            &config,
        ],
    );
    assert_eq!(counts(&out, "secrets"), vec![1, 0, 0, 0, 0], "{out}");
    // After a key rotation the Secret still reads, and is rewritten with the new key.
    let rotated = dir.path().join("rotated.yaml");
    std::fs::write(
        &rotated,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key2\n        secret: {}\n      - name: key1\n        secret: {KEY}\n",
            base64::engine::general_purpose::STANDARD.encode([7u8; 32])
        ),
    )
    .expect("write rotated config");
    let (_, out) = migrate_check(
        &etcd.endpoints(),
        &[
            "--etcd-prefix",
            "/karmada/registry",
            "--encryption-provider-config",
            rotated.to_str().expect("utf-8 path"),
        ],
    );
    assert_eq!(counts(&out, "secrets"), vec![1, 1, 0, 0, 0], "{out}");
    assert!(
        out.contains("secrets: 1 (encrypted with a key that no longer writes)"),
        "{out}"
    );

    // Once what cannot be served is gone, the check passes; it never wrote anything.
    for key in [
        "/registry/validatingwebhookconfigurations/validating-config",
        "/registry/gadgets.example.com/gadgets/shop/g1",
        "/registry/configmaps/shop/broken",
        "/registry/apps/deployments/shop/web",
    ] {
        let (removed, rev) = db
            .rt
            .block_on(db.store.delete(&at(key), 0))
            .expect("delete");
        assert!(removed.mod_revision > 0 && rev > revision);
    }
    let revision = db
        .rt
        .block_on(db.store.current_revision())
        .expect("revision");
    let (ok, out) = migrate_check(
        &etcd.endpoints(),
        &[
            "--etcd-prefix",
            "/karmada/registry",
            "--encryption-provider-config",
            &config,
        ],
    );
    assert!(ok, "{out}");
    assert_eq!(
        db.rt
            .block_on(db.store.current_revision())
            .expect("revision"),
        revision
    );
}

/// A member's Deployment once its replicas are available and its status is current.
fn settled_deployment(env: &Env, member: &str, name: &str, replicas: i64) -> Value {
    let m = env.member(member);
    env.wait(&format!("deployment {name} settled in {member}"), || {
        let d = m.get_json(&["deploy", name, "-n", "default"])?;
        let settled = d["spec"]["replicas"] == replicas
            && d["status"]["availableReplicas"] == replicas
            && d["status"]["observedGeneration"] == d["metadata"]["generation"];
        settled.then_some(d)
    })
}

/// The Works of the control plane in a member's execution namespace: name → uid, leaving out
/// the barriers' ConfigMaps.
fn works(env: &Env, member: &str) -> BTreeMap<String, String> {
    let list = env
        .cp
        .get_json(&["works", "-n", &format!("karmada-es-{member}")]);
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|w| {
            (
                w["metadata"]["name"].as_str().expect("name").to_string(),
                w["metadata"]["uid"].as_str().expect("uid").to_string(),
            )
        })
        .filter(|(name, _)| !name.contains("barrier-"))
        .collect()
}

/// The members of the takeover test.
const MEMBERS: [&str; 2] = ["member1", "member2"];

#[test]
fn a_fresh_karmada_rs_takes_over_a_stopped_control_planes_etcd() {
    let mut env = Env::start_with(Backend::Etcd, 2);
    env.apply(&deployment_with_policy("kept", 2, &MEMBERS));
    env.apply(&deployment_with_policy("changed", 1, &MEMBERS));
    let members = MEMBERS;
    let mut before = BTreeMap::new();
    for m in members {
        for (name, replicas) in [("kept", 2), ("changed", 1)] {
            let d = settled_deployment(&env, m, name, replicas);
            before.insert((m, name), d);
        }
    }
    let bindings = |env: &Env| -> BTreeMap<String, String> {
        let list = env.cp.get_json(&["resourcebindings", "-n", "default"]);
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|b| {
                (
                    b["metadata"]["name"].as_str().expect("name").to_string(),
                    b["metadata"]["uid"].as_str().expect("uid").to_string(),
                )
            })
            .filter(|(name, _)| !name.contains("barrier-"))
            .collect()
    };
    let clusters = |env: &Env| env.cp.get_json(&["clusters"])["items"].clone();
    let (bindings_before, clusters_before) = (bindings(&env), clusters(&env));
    let works_before: Vec<_> = members.iter().map(|m| works(&env, m)).collect();
    assert_eq!(bindings_before.len(), 2, "{bindings_before:?}");

    // Blue/green: the control plane stops; a fresh karmada-rs (its own data directory and
    // PKI) takes over its etcd, with the same cluster flags.
    let etcd = env.cp.take_etcd().expect("an etcd");
    env.cp = Server::start_on(
        etcd,
        &[
            "--cluster-status-update-frequency=1s",
            "--cluster-success-threshold=1s",
            "--cluster-failure-threshold=2s",
        ],
    );
    // Served as they were: the same Clusters, bindings and Works, none duplicated.
    let uids = |items: &Value| -> Vec<Value> {
        items
            .as_array()
            .expect("items")
            .iter()
            .map(|c| c["metadata"]["uid"].clone())
            .collect()
    };
    assert_eq!(uids(&clusters(&env)), uids(&clusters_before));
    assert_eq!(bindings(&env), bindings_before);
    for m in members {
        env.wait_ready(m, "True");
    }

    // A template change propagates; once it has, and a barrier has gone through each member,
    // the controllers have handled everything they adopted.
    env.apply(&deployment_with_policy("changed", 3, &MEMBERS));
    for m in members {
        settled_deployment(&env, m, "changed", 3);
        env.barrier(m);
    }
    for (i, m) in members.iter().enumerate() {
        assert_eq!(works(&env, m), works_before[i], "Works for {m}");
        // Nothing was written to the members for the unchanged template.
        let kept = env
            .member(m)
            .get_json(&["deploy", "kept", "-n", "default"])
            .expect("kept deployment");
        let was = &before[&(*m, "kept")];
        assert_eq!(kept["metadata"]["uid"], was["metadata"]["uid"], "{m}");
        assert_eq!(
            kept["metadata"]["resourceVersion"], was["metadata"]["resourceVersion"],
            "kept was written to {m}:\nbefore {was:#}\nafter {kept:#}"
        );
        let changed = &before[&(*m, "changed")];
        let now = env
            .member(m)
            .get_json(&["deploy", "changed", "-n", "default"])
            .expect("changed deployment");
        assert_eq!(now["metadata"]["uid"], changed["metadata"]["uid"], "{m}");
    }
    assert_eq!(bindings(&env), bindings_before);
}

/// `migrate check` reaches an etcd that requires client certificates with the flags `serve`
/// takes (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`); without a certificate etcd
/// refuses it, and the check says it could not check (exit 2) rather than finding nothing.
#[test]
fn migrate_check_reads_an_etcd_that_requires_client_certificates() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let tls = support::TlsEtcd::start(&rt);
    let store = rt
        .block_on(tls.etcd.store())
        .expect("a client of the test's own");
    rt.block_on(store.create(
        "/registry/deployments/shop/web",
        Bytes::from(envelope("apps/v1", "Deployment", &deployment())),
    ))
    .expect("write the Deployment");
    let endpoint = tls.endpoint();
    let (code, out) = migrate(&[
        "--etcd-servers",
        &endpoint,
        "--etcd-cafile",
        &tls.ca_file,
        "--etcd-certfile",
        &tls.cert_file,
        "--etcd-keyfile",
        &tls.key_file,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        counts(&out, "deployments.apps"),
        vec![1, 0, 0, 0, 0],
        "{out}"
    );
    let (code, out) = migrate(&["--etcd-servers", &endpoint, "--etcd-cafile", &tls.ca_file]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!("connecting to etcd at {endpoint}")),
        "{out}"
    );
}

/// Runs `karmada-rs storage rewrite --resource RESOURCE` against a server.
fn storage_rewrite(s: &Server, resource: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["storage", "rewrite", "--resource", resource, "--kubeconfig"])
        .arg(&s.kubeconfig)
        .output()
        .expect("run storage rewrite");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// kube-apiserver's `--storage-media-type`: with `application/json` built-in kinds are
/// written as JSON of their storage version (a value kube-apiserver reads), protobuf values
/// already stored are served and rewritten as JSON by their next update; back on the default,
/// the JSON values are served and rewritten as protobuf. Custom resources are JSON either
/// way. A media type kube does not know stops the start with kube's message.
#[test]
fn storage_media_type_json_writes_built_in_kinds_as_json_and_back() {
    let mut s = Server::start_with(Backend::Etcd, &[]);
    s.kubectl_ok(&["create", "configmap", "before", "--from-literal=k=v"]);
    let etcd = s.take_etcd().expect("an etcd");
    let db = Etcd::connect(etcd.endpoints());
    let value = |key: &str| db.get(key).unwrap_or_else(|| panic!("no {key}")).value;
    assert!(apimachinery::protobuf::is_protobuf(&value(
        "/registry/configmaps/default/before"
    )));

    let mut s = Server::start_on(etcd, &["--storage-media-type", "application/json"]);
    s.kubectl_ok(&["create", "configmap", "after", "--from-literal=k=v"]);
    let after = value("/registry/configmaps/default/after");
    let stored: Value = serde_json::from_slice(&after).expect("JSON");
    assert_eq!(stored["kind"], "ConfigMap");
    assert_eq!(stored["apiVersion"], "v1");
    assert_eq!(stored["data"]["k"], "v");
    // The protobuf value is served, and its next update writes JSON.
    assert_eq!(s.get_json(&["configmap", "before"])["data"]["k"], "v");
    storage_rewrite(&s, "configmaps");
    let before = value("/registry/configmaps/default/before");
    assert!(
        !apimachinery::protobuf::is_protobuf(&before),
        "rewritten as JSON"
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&before).expect("JSON")["metadata"]["name"],
        "before"
    );

    // Back on protobuf: JSON values are served and rewritten as protobuf.
    let etcd = s.take_etcd().expect("an etcd");
    let s = Server::start_on(etcd, &[]);
    assert_eq!(s.get_json(&["configmap", "after"])["data"]["k"], "v");
    storage_rewrite(&s, "configmaps");
    let (_, kind, _) = open_envelope(&value("/registry/configmaps/default/after"));
    assert_eq!(kind, "ConfigMap");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["serve", "--storage-media-type", "text/plain"])
        .output()
        .expect("run serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--storage-media-type \"text/plain\" invalid, allowed values: application/json, application/vnd.kubernetes.protobuf, application/yaml"
        ),
        "{err}"
    );
}
