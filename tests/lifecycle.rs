//! End-to-end: object lifecycle through kube-controller-manager's controllers running inside
//! `karmada-rs serve` — namespace deletion, finalizers, garbage collection through
//! ownerReferences (background, foreground, orphan) and the Events' TTL — driven by kubectl.

mod support;

use serde_json::Value;
use support::{Backend, DEADLINE, Server, wait_for};

/// Creates objects from a manifest (client-side validation off: it needs OpenAPI).
fn create(s: &Server, manifest: &str) {
    s.kubectl_stdin_ok(&["create", "--validate=false", "-f", "-"], manifest);
}

/// True once `kubectl get ARGS` answers NotFound.
fn is_gone(s: &Server, args: &[&str]) -> bool {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    let out = s.kubectl(&a);
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return false;
    }
    assert!(err.contains("NotFound"), "kubectl get {args:?}: {err}");
    true
}

fn wait_gone(s: &Server, args: &[&str]) {
    wait_for(&format!("{args:?} to be deleted"), DEADLINE, || {
        is_gone(s, args).then_some(())
    });
}

fn uid(s: &Server, args: &[&str]) -> String {
    let v = s.get_json(args);
    v["metadata"]["uid"].as_str().expect("uid").to_string()
}

/// A ConfigMap `name` in `ns` owned by the given (kind, name, uid) owners.
fn owned_configmap(
    ns: &str,
    name: &str,
    owners: &[(&str, &str, &str, &str)],
    block: bool,
) -> String {
    let refs: Vec<String> = owners
        .iter()
        .map(|(api_version, kind, owner, uid)| {
            format!(
                "  - {{apiVersion: {api_version}, kind: {kind}, name: {owner}, uid: {uid}, blockOwnerDeletion: {block}}}\n"
            )
        })
        .collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  ownerReferences:\n{}data: {{k: v}}\n",
        refs.concat()
    )
}

fn condition<'a>(ns: &'a Value, type_: &str) -> Option<&'a Value> {
    ns["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn namespace_deletion(s: &Server) {
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "configmap",
        "c1",
        "--from-literal=a=1",
    ]);
    s.kubectl_ok(&["-n", "team", "create", "deployment", "web", "--image=nginx"]);
    create(
        s,
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: pp1, namespace: team}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  placement: {clusterAffinity: {clusterNames: [member1]}}\n",
    );
    create(
        s,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: team, finalizers: [example.com/hold]}\ndata: {k: v}\n",
    );
    // A Role that lets a controller lift finalizers in the namespace.
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "role",
        "finalizer-lifter",
        "--verb=get,update,patch",
        "--resource=configmaps",
    ]);

    s.kubectl_ok(&["delete", "namespace", "team", "--wait=false"]);

    // Nothing new may be created in it.
    let err = s.kubectl_err(&[
        "-n",
        "team",
        "create",
        "configmap",
        "late",
        "--from-literal=a=1",
    ]);
    assert!(
        err.contains("configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"),
        "{err}"
    );

    // Its content goes, except what a finalizer holds.
    wait_gone(s, &["-n", "team", "configmap", "c1"]);
    wait_gone(s, &["-n", "team", "deployment", "web"]);
    // The policy keeps Karmada's finalizer until its controller (or, here, the test) lets go.
    wait_for("the policy to be deleted or terminating", DEADLINE, || {
        let out = s.kubectl(&[
            "-n",
            "team",
            "get",
            "propagationpolicy",
            "pp1",
            "-o",
            "json",
        ]);
        if !out.status.success() {
            return Some(());
        }
        let pp: Value = serde_json::from_slice(&out.stdout).expect("json");
        pp["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(())
    });
    let out = s.kubectl(&[
        "-n",
        "team",
        "patch",
        "propagationpolicy",
        "pp1",
        "--type=merge",
        "-p",
        "{\"metadata\":{\"finalizers\":null}}",
    ]);
    assert!(
        out.status.success() || String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_gone(s, &["-n", "team", "propagationpolicy", "pp1"]);

    // The namespace reports what remains and why, and stays.
    let ns = wait_for(
        "the namespace to report remaining finalizers",
        DEADLINE,
        || {
            let ns = s.get_json(&["namespace", "team"]);
            let c = condition(&ns, "NamespaceFinalizersRemaining")?;
            (c["status"] == "True"
                && c["message"]
                    == "Some finalizers are remaining: example.com/hold in 1 resource instances")
                .then_some(ns)
        },
    );
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], serde_json::json!(["kubernetes"]));
    let remaining = condition(&ns, "NamespaceContentRemaining").expect("content condition");
    assert_eq!(remaining["status"], "True");
    assert_eq!(remaining["reason"], "SomeResourcesRemain");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps. has 1 resource instances, roles.rbac.authorization.k8s.io has 1 resource instances"
    );
    let held = s.get_json(&["-n", "team", "configmap", "held"]);
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    // RBAC goes last: whoever holds the finalizer keeps the access it needs to lift it.
    let role = s.get_json(&["-n", "team", "role", "finalizer-lifter"]);
    assert!(role["metadata"]["deletionTimestamp"].is_null(), "{role}");

    // Releasing the last finalizer lets the namespace go.
    s.kubectl_ok(&[
        "-n",
        "team",
        "patch",
        "configmap",
        "held",
        "--type=json",
        "-p",
        "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]",
    ]);
    s.kubectl_ok(&["wait", "--for=delete", "namespace/team", "--timeout=60s"]);
    assert!(is_gone(s, &["namespace", "team"]));
    assert!(is_gone(s, &["-n", "team", "configmap", "held"]));
    assert!(is_gone(s, &["-n", "team", "role", "finalizer-lifter"]));
}

#[test]
fn namespace_deletion_embedded() {
    namespace_deletion(&Server::start());
}

#[test]
fn namespace_deletion_etcd() {
    namespace_deletion(&Server::start_with(Backend::Etcd, &[]));
}

#[test]
fn finalizer_keeps_object_until_removed() {
    let s = Server::start();
    create(
        &s,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fin, finalizers: [example.com/hold]}\ndata: {k: v}\n",
    );
    s.kubectl_ok(&["delete", "configmap", "fin", "--wait=false"]);
    let cm = s.get_json(&["configmap", "fin"]);
    assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
    assert_eq!(
        cm["metadata"]["finalizers"],
        serde_json::json!(["example.com/hold"])
    );
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "fin",
        "--type=json",
        "-p",
        "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]",
    ]);
    s.kubectl_ok(&["wait", "--for=delete", "configmap/fin", "--timeout=60s"]);
    assert!(is_gone(&s, &["configmap", "fin"]));
}

#[test]
fn garbage_collection_background() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "owner", "--from-literal=a=1"]);
    let owner = uid(&s, &["configmap", "owner"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "dep",
            &[("v1", "ConfigMap", "owner", &owner)],
            false,
        ),
    );
    // A dependent of another kind, owned by a Deployment, and one with two owners.
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let web = uid(&s, &["deployment", "web"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "web-config",
            &[("apps/v1", "Deployment", "web", &web)],
            true,
        ),
    );
    s.kubectl_ok(&["create", "configmap", "other", "--from-literal=a=1"]);
    let other = uid(&s, &["configmap", "other"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "shared",
            &[
                ("v1", "ConfigMap", "owner", &owner),
                ("v1", "ConfigMap", "other", &other),
            ],
            false,
        ),
    );

    s.kubectl_ok(&["delete", "configmap", "owner", "--cascade=background"]);
    wait_gone(&s, &["configmap", "dep"]);
    // Another owner remains: the dependent stays and loses the reference to the gone owner.
    let shared = wait_for("the gone owner's reference to be removed", DEADLINE, || {
        let cm = s.get_json(&["configmap", "shared"]);
        (cm["metadata"]["ownerReferences"].as_array()?.len() == 1).then_some(cm)
    });
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["uid"],
        other.as_str()
    );

    s.kubectl_ok(&["delete", "deployment", "web"]);
    wait_gone(&s, &["configmap", "web-config"]);
}

#[test]
fn garbage_collection_orphan() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "owner", "--from-literal=a=1"]);
    let owner = uid(&s, &["configmap", "owner"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "dep",
            &[("v1", "ConfigMap", "owner", &owner)],
            true,
        ),
    );

    // kubectl waits for the owner to be gone, which needs the orphan finalizer removed.
    s.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    assert!(is_gone(&s, &["configmap", "owner"]));
    let dep = s.get_json(&["configmap", "dep"]);
    assert!(dep["metadata"].get("ownerReferences").is_none(), "{dep}");
    assert!(dep["metadata"].get("deletionTimestamp").is_none(), "{dep}");
}

#[test]
fn garbage_collection_foreground() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "owner", "--from-literal=a=1"]);
    let owner = uid(&s, &["configmap", "owner"]);
    // The dependent blocks its owner's deletion and holds its own finalizer, so the owner's
    // foreground deletion can be watched in progress.
    let mut manifest = owned_configmap(
        "default",
        "dep",
        &[("v1", "ConfigMap", "owner", &owner)],
        true,
    );
    manifest = manifest.replace(
        "  name: dep\n",
        "  name: dep\n  finalizers: [example.com/hold]\n",
    );
    create(&s, &manifest);

    s.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_for("the dependent to be deleted first", DEADLINE, || {
        let dep = s.get_json(&["configmap", "dep"]);
        dep["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(())
    });
    let o = s.get_json(&["configmap", "owner"]);
    assert!(o["metadata"]["deletionTimestamp"].is_string(), "{o}");
    assert_eq!(
        o["metadata"]["finalizers"],
        serde_json::json!(["foregroundDeletion"])
    );

    s.kubectl_ok(&[
        "patch",
        "configmap",
        "dep",
        "--type=json",
        "-p",
        "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]",
    ]);
    s.kubectl_ok(&["wait", "--for=delete", "configmap/owner", "--timeout=60s"]);
    assert!(is_gone(&s, &["configmap", "dep"]));
}

#[test]
fn garbage_collection_after_restart() {
    let mut s = Server::start();
    s.kubectl_ok(&["create", "configmap", "owner", "--from-literal=a=1"]);
    let owner = uid(&s, &["configmap", "owner"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "dep",
            &[("v1", "ConfigMap", "owner", &owner)],
            false,
        ),
    );
    // A dependent of a cluster-scoped owner (a Namespace) in another resource.
    s.kubectl_ok(&["create", "namespace", "owner-ns"]);
    let ns_uid = uid(&s, &["namespace", "owner-ns"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "ns-dep",
            &[("v1", "Namespace", "owner-ns", &ns_uid)],
            false,
        ),
    );

    s.restart();

    // Once a fresh pair is collected the collector is synced; the old dependents, whose owners
    // exist, are still there.
    s.kubectl_ok(&["create", "configmap", "probe-owner", "--from-literal=a=1"]);
    let probe = uid(&s, &["configmap", "probe-owner"]);
    create(
        &s,
        &owned_configmap(
            "default",
            "probe",
            &[("v1", "ConfigMap", "probe-owner", &probe)],
            false,
        ),
    );
    s.kubectl_ok(&["delete", "configmap", "probe-owner"]);
    wait_gone(&s, &["configmap", "probe"]);
    s.get_json(&["configmap", "dep"]);
    s.get_json(&["configmap", "ns-dep"]);

    s.kubectl_ok(&["delete", "configmap", "owner"]);
    wait_gone(&s, &["configmap", "dep"]);
    s.kubectl_ok(&["delete", "namespace", "owner-ns"]);
    wait_gone(&s, &["configmap", "ns-dep"]);
}

#[test]
fn events_expire_after_ttl() {
    let s = Server::start_with(Backend::Embedded, &["--event-ttl", "2s"]);
    create(
        &s,
        "apiVersion: v1\nkind: Event\nmetadata: {name: ev1, namespace: default}\ninvolvedObject: {kind: ConfigMap, name: x, namespace: default}\nreason: Test\nmessage: hello\ntype: Normal\n",
    );
    wait_gone(&s, &["event", "ev1"]);
}

/// Custom resources: served kinds come and go with CRDs, so the controllers follow the catalog.
/// (In process: CRDs are registered here directly in the catalog.)
#[test]
fn custom_resources_follow_the_catalog() {
    use apiserver::registry::{Registry, WriteContext};
    use apiserver::resources::{CustomSource, ResourceDef, Source, Storage};
    use serde_json::json;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let running = rt
        .block_on(apiserver::launch::start(apiserver::launch::ServeOptions {
            data_dir: dir.path().to_path_buf(),
            bind: "127.0.0.1:0".parse().expect("addr"),
            store: apiserver::launch::StoreChoice::Embedded,
            tls_sans: vec![],
            flavor: apiserver::state::Flavor::Member,
            kubeconfig_name: "kubeconfig".into(),
            context_name: "member".into(),
            kcm: Default::default(),
            unsafe_no_fsync: false,
            limits: Default::default(),
            ..Default::default()
        }))
        .expect("start");
    let state = running.state.clone();
    let ctx = WriteContext {
        manager: "test".into(),
        ..Default::default()
    };
    let builtin = |plural: &str| {
        state
            .catalog
            .snapshot()
            .resources
            .iter()
            .find(|d| d.group.is_empty() && d.plural == plural)
            .expect("built-in resource")
            .clone()
    };
    let (configmaps, namespaces) = (builtin("configmaps"), builtin("namespaces"));
    let exists = |def: &std::sync::Arc<ResourceDef>, ns: &str, name: &str| match rt
        .block_on(Registry::new(&state, def.clone()).get(ns, name))
    {
        Ok(_) => true,
        Err(e) if e.code == 404 => false,
        Err(e) => panic!("get {name}: {e}"),
    };
    let create = |def: &std::sync::Arc<ResourceDef>, ns: &str, obj: Value| -> Value {
        rt.block_on(Registry::new(&state, def.clone()).create(ns, obj, &ctx))
            .expect("create")
    };
    let owned_cm = |ns: &str, name: &str, owner: (&str, &str, &str, &str)| {
        json!({"metadata": {"name": name, "namespace": ns, "ownerReferences": [
            {"apiVersion": owner.0, "kind": owner.1, "name": owner.2, "uid": owner.3}
        ]}})
    };

    // An owner of a kind nobody serves yet is not judged absent.
    create(
        &configmaps,
        "default",
        owned_cm(
            "default",
            "of-widget",
            ("example.com/v1", "Widget", "w0", "uid-w0"),
        ),
    );
    let probe_owner = create(
        &configmaps,
        "default",
        json!({"metadata": {"name": "probe-owner"}}),
    );
    let probe_uid = probe_owner["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    create(
        &configmaps,
        "default",
        owned_cm(
            "default",
            "probe",
            ("v1", "ConfigMap", "probe-owner", &probe_uid),
        ),
    );
    rt.block_on(Registry::new(&state, configmaps.clone()).delete(
        "default",
        "probe-owner",
        &Default::default(),
    ))
    .expect("delete probe owner");
    wait_for("the probe dependent to be collected", DEADLINE, || {
        (!exists(&configmaps, "default", "probe")).then_some(())
    });
    assert!(exists(&configmaps, "default", "of-widget"));

    // The kind is served now: its owner is looked up, found absent, and the dependent goes.
    let widgets = ResourceDef {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        singular: "widget".into(),
        kind: "Widget".into(),
        list_kind: "WidgetList".into(),
        short_names: vec![],
        categories: vec![],
        namespaced: true,
        status: false,
        scale: None,
        extra_subresources: vec![],
        generation: true,
        strategic_merge: false,
        storage: Storage::Stored {
            prefix: "/registry/example.com/widgets/".into(),
        },
        source: Source::Custom(Box::new(CustomSource {
            crd_name: "widgets.example.com".into(),
            schema: None,
            printer_columns: vec![],
            selectable_fields: vec![],
            scale: None,
        })),
    };
    state.catalog.set_custom(vec![widgets]);
    let widgets = state
        .catalog
        .snapshot()
        .get("example.com", "v1", "widgets")
        .expect("served")
        .clone();
    wait_for(
        "the dependent of a missing widget to be collected",
        DEADLINE,
        || (!exists(&configmaps, "default", "of-widget")).then_some(()),
    );

    // Custom resources are owners and namespace content like any other.
    create(&namespaces, "", json!({"metadata": {"name": "crs"}}));
    let w1 = create(
        &widgets,
        "crs",
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}}),
    );
    let w1_uid = w1["metadata"]["uid"].as_str().expect("uid").to_string();
    create(
        &configmaps,
        "crs",
        owned_cm("crs", "of-w1", ("example.com/v1", "Widget", "w1", &w1_uid)),
    );
    create(
        &widgets,
        "crs",
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2", "finalizers": ["example.com/hold"]}}),
    );
    rt.block_on(Registry::new(&state, namespaces.clone()).delete("", "crs", &Default::default()))
        .expect("delete namespace");
    wait_for("the namespace's widgets to be deleted", DEADLINE, || {
        (!exists(&widgets, "crs", "w1") && !exists(&configmaps, "crs", "of-w1")).then_some(())
    });
    // The namespace controller deletes the widgets one after the other: w1 can be gone before
    // w2's delete is issued, so wait for w2 to be marked rather than expect it at once.
    wait_for("w2 to be marked for deletion", DEADLINE, || {
        let w2 = rt
            .block_on(Registry::new(&state, widgets.clone()).get("crs", "w2"))
            .expect("w2 held by its finalizer");
        w2["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(())
    });
    assert!(exists(&namespaces, "", "crs"));
    rt.block_on(Registry::new(&state, widgets.clone()).guaranteed_update(
        "crs",
        "w2",
        apiserver::registry::Subresource::Main,
        &ctx,
        |cur| {
            let mut next = cur.clone();
            next["metadata"]
                .as_object_mut()
                .expect("metadata")
                .remove("finalizers");
            Ok(next)
        },
    ))
    .expect("release w2");
    wait_for("the namespace to be deleted", DEADLINE, || {
        (!exists(&namespaces, "", "crs")).then_some(())
    });

    rt.block_on(running.shutdown());
}

#[test]
fn garbage_collection_many_dependents() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "owner", "--from-literal=a=1"]);
    let owner = uid(&s, &["configmap", "owner"]);
    let items: Vec<String> = (0..200)
        .map(|i| {
            let cm = owned_configmap(
                "default",
                &format!("dep-{i}"),
                &[("v1", "ConfigMap", "owner", &owner)],
                true,
            );
            cm.replace("  name:", "  labels: {role: dep}\n  name:")
        })
        .collect();
    create(&s, &items.join("---\n"));
    let count = |s: &Server| {
        s.kubectl_ok(&["get", "configmaps", "-l", "role=dep", "-o", "name"])
            .lines()
            .count()
    };
    assert_eq!(count(&s), 200);

    // Foreground: the owner is gone only after every blocking dependent.
    s.kubectl_ok(&["delete", "configmap", "owner", "--cascade=foreground"]);
    assert_eq!(count(&s), 0);
}
