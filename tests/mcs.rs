//! Multi-cluster services end to end, as Karmada's multi-cluster service discovery tutorial
//! runs them: three simulated members behind the real binary, driven by kubectl. The MCS
//! CRDs are propagated to the members, a Service exported from member1 and member2 is
//! imported into member3, whose `derived-` Service then lists the endpoints of both.

mod propagation_env;
mod support;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use propagation_env::Env;
use serde_json::Value;
use support::Backend;

/// The MCS CRDs to every member (the tutorial's ClusterPropagationPolicies).
const CRDS: &str = "apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: mcs-crds}
spec:
  resourceSelectors:
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: serviceexports.multicluster.x-k8s.io}
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: serviceimports.multicluster.x-k8s.io}
  placement: {clusterAffinity: {clusterNames: [member1, member2, member3]}}
";

/// A Deployment and its Service and ServiceExport in member1 and member2, the ServiceImport in
/// member3.
const SERVE: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: serve
        image: jeremyot/serve:0a40de8
        ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: serve, namespace: default}
spec:
  selector: {app: serve}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata: {name: serve, namespace: default}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: serve, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: serve}
  - {apiVersion: v1, kind: Service, name: serve}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: serve-export, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceExport, name: serve}
  placement: {clusterAffinity: {clusterNames: [member1, member2]}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata: {name: serve, namespace: default}
spec:
  type: ClusterSetIP
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: serve-import, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceImport, name: serve}
  placement: {clusterAffinity: {clusterNames: [member3]}}
";

/// member1 runs 4 replicas of `serve`.
const SCALE_MEMBER1: &str = "apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: serve-member1, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: serve}]
  overrideRules:
  - targetCluster: {clusterNames: [member1]}
    overriders:
      plaintext: [{path: /spec/replicas, operator: replace, value: 4}]
";

/// The ready addresses of the EndpointSlices of a Service in a member, and which clusters'
/// slices they came from.
fn endpoints(
    env: &Env,
    member: &str,
    service: &str,
) -> Option<(BTreeSet<String>, BTreeSet<String>)> {
    let list = env.member(member).get_json(&[
        "endpointslices",
        "-n",
        "default",
        "-l",
        &format!("kubernetes.io/service-name={service}"),
    ])?;
    let mut addresses = BTreeSet::new();
    let mut names = BTreeSet::new();
    for s in list["items"].as_array()? {
        names.insert(s["metadata"]["name"].as_str()?.to_owned());
        for e in s["endpoints"].as_array().into_iter().flatten() {
            if e["conditions"]["ready"] == Value::Bool(true) {
                addresses.insert(e["addresses"][0].as_str()?.to_owned());
            }
        }
    }
    Some((addresses, names))
}

/// `kubectl get ... -o json` on the control plane, or None when it fails.
fn cp_json(env: &Env, args: &[&str]) -> Option<Value> {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    let out = env.cp.kubectl(&a);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// Whether an address is in a /20 starting at `base`.
fn within(ip: &str, base: Ipv4Addr) -> bool {
    ip.parse::<Ipv4Addr>()
        .is_ok_and(|ip| u32::from(ip) >> 12 == u32::from(base) >> 12)
}

#[test]
fn an_exported_service_is_imported_with_the_endpoints_of_every_exporting_member() {
    let env = Env::start_with_flags(Backend::Embedded, 3, &[]);
    // The control plane serves the MCS API as Karmada's installer installs it.
    let crds = env.cp.kubectl_ok(&["get", "crd", "-o", "name"]);
    for crd in [
        "serviceexports.multicluster.x-k8s.io",
        "serviceimports.multicluster.x-k8s.io",
    ] {
        assert!(crds.contains(crd), "{crds}");
    }
    // Served, with their short names; nothing there yet.
    let short = env.cp.kubectl_ok(&["get", "svcex,svcim", "-A"]);
    assert_eq!(short, "");

    env.apply(CRDS);
    for m in ["member1", "member2", "member3"] {
        env.wait_member_object(m, &["crd", "serviceexports.multicluster.x-k8s.io"]);
        env.wait_member_object(m, &["crd", "serviceimports.multicluster.x-k8s.io"]);
    }
    env.apply(SERVE);

    // Each exporting member's own slice lists its two pods at addresses of its pod CIDR.
    for (m, base) in [
        ("member1", Ipv4Addr::new(10, 0, 16, 0)),
        ("member2", Ipv4Addr::new(10, 0, 32, 0)),
    ] {
        let (addrs, _) = env.wait(&format!("two ready endpoints of serve in {m}"), || {
            endpoints(&env, m, "serve").filter(|(a, _)| a.len() == 2)
        });
        assert!(addrs.iter().all(|a| within(a, base)), "{m}: {addrs:?}");
        let ep = env.member(m).kubectl_ok(&[
            "get",
            "endpoints",
            "serve",
            "-n",
            "default",
            "-o",
            "jsonpath={.subsets[0].ports[0].port}",
        ]);
        assert_eq!(
            ep, "8080",
            "the named target port resolves to the container port"
        );
    }

    // The collected slices: suspended Works in the execution spaces, EndpointSlices of the
    // derived Service on the control plane.
    let works = env.cp.get_json(&[
        "works",
        "-n",
        "karmada-es-member1",
        "-l",
        "endpointslice.karmada.io/name=serve",
    ]);
    let work = &works["items"][0];
    assert_eq!(work["spec"]["suspendDispatching"], true, "{work}");
    assert_eq!(
        work["metadata"]["labels"]["endpointslice.karmada.io/managed-by"],
        "ServiceExport"
    );
    assert_eq!(
        work["metadata"]["labels"]["endpointslice.karmada.io/namespace"],
        "default"
    );
    assert!(
        work["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&Value::from("karmada.io/endpointslice-controller"))),
        "{work}"
    );
    env.wait("the derived Service on the control plane", || {
        let s = cp_json(&env, &["service", "derived-serve", "-n", "default"])?;
        (s["spec"]["type"] == "ClusterIP" && s["spec"]["ports"][0]["port"] == 80).then_some(())
    });
    let cp_slices = env.wait("imported slices on the control plane", || {
        let l = env.cp.get_json(&[
            "endpointslices",
            "-n",
            "default",
            "-l",
            "kubernetes.io/service-name=derived-serve",
        ]);
        let items = l["items"].as_array()?.clone();
        (items.len() == 2).then_some(items)
    });
    for s in &cp_slices {
        let name = s["metadata"]["name"].as_str().unwrap_or_default();
        assert!(
            name.starts_with("imported-member1-serve-")
                || name.starts_with("imported-member2-serve-"),
            "{name}"
        );
        assert_eq!(
            s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.karmada.io"
        );
    }
    let events = env.cp.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=ServiceImport",
    ]);
    assert!(events.contains("SyncDerivedServiceSucceed"), "{events}");

    // member3 imports: the derived Service and the endpoints of member1 and member2.
    env.wait_member_object("member3", &["service", "derived-serve", "-n", "default"]);
    let (addrs, names) = env.wait("member3 lists the four endpoints", || {
        endpoints(&env, "member3", "derived-serve").filter(|(a, _)| a.len() == 4)
    });
    let from1 = addrs
        .iter()
        .filter(|a| within(a, Ipv4Addr::new(10, 0, 16, 0)))
        .count();
    let from2 = addrs
        .iter()
        .filter(|a| within(a, Ipv4Addr::new(10, 0, 32, 0)))
        .count();
    assert_eq!((from1, from2), (2, 2), "{addrs:?}");
    assert_eq!(names.len(), 2, "{names:?}");
    // member3 exports nothing: its own endpoints controller leaves the imported slices alone
    // and the derived Service (no selector) gets none of its own.
    assert!(
        endpoints(&env, "member3", "serve").is_none_or(|(a, _)| a.is_empty()),
        "member3 has no serve endpoints of its own"
    );

    // Scaling in member1 reaches member3.
    env.apply(SCALE_MEMBER1);
    let (addrs, _) = env.wait("member3 lists member1's four endpoints", || {
        endpoints(&env, "member3", "derived-serve").filter(|(a, _)| a.len() == 6)
    });
    assert_eq!(
        addrs
            .iter()
            .filter(|a| within(a, Ipv4Addr::new(10, 0, 16, 0)))
            .count(),
        4
    );

    // member2 exporting the Service with another port name is a conflict, reported on the
    // ServiceExport.
    env.apply(
        "apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: serve-member2, namespace: default}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Service, name: serve}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      plaintext: [{path: /spec/ports/0/name, operator: replace, value: web}]
",
    );
    let event = env.wait("the port conflict reported", || {
        let out = env.cp.kubectl(&[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.kind=ServiceExport,reason=ExportPortConflict",
            "-o",
            "jsonpath={.items[0].message}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (!text.is_empty()).then_some(text)
    });
    assert_eq!(
        event,
        "Service default/serve is exported with conflicting ports (name/protocol): member1: [http/TCP]; member2: [web/TCP]"
    );

    // A member leaving takes its endpoints with it.
    env.unjoin(env.member("member2"));
    let (addrs, _) = env.wait("member3 lists member1's endpoints only", || {
        endpoints(&env, "member3", "derived-serve").filter(|(a, _)| a.len() == 4)
    });
    assert!(
        addrs.iter().all(|a| within(a, Ipv4Addr::new(10, 0, 16, 0))),
        "{addrs:?}"
    );

    // Unexporting removes the endpoints everywhere.
    env.cp
        .kubectl_ok(&["delete", "serviceexport", "serve", "-n", "default"]);
    env.wait("the collected Works are gone", || {
        let l = env
            .cp
            .get_json(&["works", "-A", "-l", "endpointslice.karmada.io/name=serve"]);
        l["items"].as_array()?.is_empty().then_some(())
    });
    env.wait("member3's imported slices are gone", || {
        endpoints(&env, "member3", "derived-serve")
            .filter(|(_, n)| n.is_empty())
            .map(|_| ())
    });
    let l = env.cp.get_json(&[
        "endpointslices",
        "-n",
        "default",
        "-l",
        "kubernetes.io/service-name=derived-serve",
    ]);
    assert_eq!(l["items"], Value::Array(vec![]), "{l}");

    // The derived Service goes with its ServiceImport.
    env.cp
        .kubectl_ok(&["delete", "serviceimport", "serve", "-n", "default"]);
    env.wait("the derived Service is gone", || {
        let out = env
            .cp
            .kubectl(&["get", "service", "derived-serve", "-n", "default"]);
        (!out.status.success()).then_some(())
    });
}

/// The Service and Deployment in member1 and member2; the Service is the
/// MultiClusterService's to propagate.
const MCS_SERVE: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: networking.karmada.io/v1alpha1
kind: MultiClusterService
metadata: {name: web, namespace: default}
spec:
  types: [CrossCluster]
  providerClusters: [{name: member1}, {name: member2}]
  consumerClusters: [{name: member3}]
";

/// A condition's status of the MultiClusterService.
fn mcs_condition(env: &Env, kind: &str) -> Option<String> {
    let m = cp_json(env, &["multiclusterservice", "web", "-n", "default"])?;
    m["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

#[test]
fn a_cross_cluster_multi_cluster_service_dispatches_the_providers_endpoints_to_its_consumers() {
    let env = Env::start_with_flags(
        Backend::Embedded,
        3,
        &["--feature-gates=MultiClusterService=true"],
    );
    // Karmada's webhook refuses two exposure types.
    let out = env.cp.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: networking.karmada.io/v1alpha1
kind: MultiClusterService
metadata: {name: bad, namespace: default}
spec: {types: [CrossCluster, LoadBalancer]}
",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("admission webhook \"multiclusterservice.karmada.io\" denied the request: spec.types: Invalid value: []v1alpha1.ExposureType{\"CrossCluster\", \"LoadBalancer\"}: MultiClusterService types should not contain more than one type"),
        "{err}"
    );

    env.apply(MCS_SERVE);
    // The Service goes to providers and consumers, claimed by the MultiClusterService.
    for m in ["member1", "member2", "member3"] {
        env.wait_member_object(m, &["service", "web", "-n", "default"]);
    }
    let svc = env.cp.get_json(&["service", "web", "-n", "default"]);
    assert_eq!(
        svc["metadata"]["labels"]["resourcetemplate.karmada.io/claimed-by"],
        "MultiClusterService"
    );
    let rb = env.cp.get_json(&["rb", "web-service", "-n", "default"]);
    assert_eq!(
        rb["metadata"]["labels"]["binding.karmada.io/managed-by"],
        "MultiClusterService"
    );

    // member3 gets both providers' endpoints, dispatched as <provider>-<slice>.
    let (addrs, names) = env.wait("member3 lists the providers' four endpoints", || {
        endpoints(&env, "member3", "web").filter(|(a, _)| a.len() == 4)
    });
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("member1-web-") || n.starts_with("member2-web-")),
        "{names:?}"
    );
    assert_eq!(
        addrs
            .iter()
            .filter(|a| within(a, Ipv4Addr::new(10, 0, 16, 0)))
            .count(),
        2
    );
    env.wait("ServiceApplied and EndpointSliceDispatched", || {
        (mcs_condition(&env, "ServiceApplied").as_deref() == Some("True")
            && mcs_condition(&env, "EndpointSliceDispatched").as_deref() == Some("True"))
        .then_some(())
    });
    // Providers are not consumers here: member1 has only its own endpoints.
    let (own, own_names) = endpoints(&env, "member1", "web").unwrap_or_default();
    assert_eq!(own.len(), 2, "{own_names:?}");

    // A provider out of traffic (a Remedy sets TrafficControl in its remedyActions) is
    // withdrawn, and comes back when the Remedy goes.
    env.apply(
        "apiVersion: remedy.karmada.io/v1alpha1
kind: Remedy
metadata: {name: member1-out}
spec:
  clusterAffinity: {clusterNames: [member1]}
  decisionMatches:
  - clusterConditionMatch: {conditionType: Ready, operator: Equal, conditionStatus: 'True'}
  actions: [TrafficControl]
",
    );
    let (addrs, _) = env.wait("member1's endpoints withdrawn from member3", || {
        endpoints(&env, "member3", "web").filter(|(a, n)| a.len() == 2 && n.len() == 1)
    });
    assert!(
        addrs.iter().all(|a| within(a, Ipv4Addr::new(10, 0, 32, 0))),
        "{addrs:?}"
    );
    env.cp.kubectl_ok(&["delete", "remedy", "member1-out"]);
    env.wait("member1's endpoints back in member3", || {
        endpoints(&env, "member3", "web").filter(|(a, _)| a.len() == 4)
    });

    // Deleting the MultiClusterService withdraws the endpoints and releases the Service.
    env.cp
        .kubectl_ok(&["delete", "multiclusterservice", "web", "-n", "default"]);
    env.wait("the dispatched slices are gone from member3", || {
        endpoints(&env, "member3", "web")
            .filter(|(_, n)| n.is_empty())
            .map(|_| ())
    });
    env.wait("the Service is released", || {
        let svc = cp_json(&env, &["service", "web", "-n", "default"])?;
        svc["metadata"]["labels"]
            .get("resourcetemplate.karmada.io/claimed-by")
            .is_none()
            .then_some(())
    });
}

#[test]
fn controllers_are_switched_off_by_karmadas_names() {
    // A name the controller manager does not know is refused before anything starts.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = support::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["serve", "--controllers", "*,-serviceImprt", "--data-dir"])
            .arg(dir.path()),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown controller \"-serviceImprt\" in --controllers"),
        "{err}"
    );

    // Switched off, the service import controller runs no queue; the others do.
    let cp = support::Server::start_with(Backend::Embedded, &["--controllers=*,-serviceImport"]);
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata: {name: offline, namespace: default}
spec: {type: ClusterSetIP, ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: barrier, namespace: default}
",
    );
    let metrics = support::wait_for(
        "the resource detector's queue in /metrics",
        support::DEADLINE,
        || {
            let m = cp.kubectl_ok(&["get", "--raw", "/metrics"]);
            m.contains("workqueue_adds_total{name=\"resource-detector\"}")
                .then_some(m)
        },
    );
    assert!(
        !metrics.contains("name=\"service-import\""),
        "the service import controller runs"
    );
    let svc = cp.kubectl(&["get", "service", "derived-offline", "-n", "default"]);
    assert!(!svc.status.success(), "a derived Service was made");
}
