//! The in-process client (the transport of the controllers inside the binary) is authorized
//! like any other client: the controllers' identity gets what its bootstrap ClusterRole
//! grants, and an in-process identity without bindings gets nothing.

use apiserver::auth::{UserInfo, controller_manager_user};
use apiserver::launch::{ServeOptions, StoreChoice, start};
use apiserver::state::Flavor;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::{ListParams, PostParams};

fn forbidden(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 403 => s.message,
        other => panic!("expected 403, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_identities_are_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(ServeOptions {
        data_dir: dir.path().to_path_buf(),
        bind: "127.0.0.1:0".parse().unwrap(),
        store: StoreChoice::Embedded,
        tls_sans: vec![],
        flavor: Flavor::ControlPlane,
        kubeconfig_name: "karmada.kubeconfig".into(),
        context_name: "karmada".into(),
        kcm: Default::default(),
        unsafe_no_fsync: false,
        limits: Default::default(),
        disable_admission_plugins: Vec::new(),
    })
    .await
    .unwrap();

    let controllers = running.client(controller_manager_user());
    let deployments: Api<Deployment> = Api::all(controllers.clone());
    deployments.list(&ListParams::default()).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(controllers.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "karmada-es-member1"}}))
            .unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(controllers.clone(), "karmada-es-member1");
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "c"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    // It cannot hand out what it does not hold.
    let crbs: Api<ClusterRoleBinding> = Api::all(controllers);
    let crb: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "evil"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "evil"}],
    }))
    .unwrap();
    let msg = forbidden(crbs.create(&PostParams::default(), &crb).await.unwrap_err());
    assert!(
        msg.contains(r#"user "system:karmada:controller-manager""#)
            && msg.contains("not currently held"),
        "{msg}"
    );

    // An in-process caller is not trusted for being in-process.
    let nobody = running.client(UserInfo::new("nobody", vec![]));
    let msg = forbidden(
        Api::<Deployment>::all(nobody)
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        msg,
        r#"deployments.apps is forbidden: User "nobody" cannot list resource "deployments" in API group "apps" at the cluster scope"#
    );
    running.shutdown().await;
}
