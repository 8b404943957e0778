//! Table-driven tests of the public API: kube's defaults on realistic manifests, valid objects
//! passing, and one failing case per rule with kube's field path and message.

use serde_json::{Value, json};

use super::*;

const NGINX_SAMPLE: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
  labels:
    app: nginx
spec:
  replicas: 4
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
        - name: nginx
          image: nginx:1.25
          ports:
            - containerPort: 80
          envFrom:
            - configMapRef:
                name: nginx-config
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: nginx-config
  namespace: default
data:
  GREETING: hello
---
apiVersion: v1
kind: Service
metadata:
  name: nginx
  namespace: default
spec:
  selector:
    app: nginx
  ports:
    - port: 80
      targetPort: 80
"#;

fn group_kind(obj: &Value) -> (String, String) {
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    (
        group.to_string(),
        obj["kind"].as_str().unwrap_or("").to_string(),
    )
}

fn yaml(s: &str) -> Value {
    serde_yaml::from_str(s).unwrap()
}

fn samples() -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(NGINX_SAMPLE)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

/// What the registry does before validating a create.
fn created(mut obj: Value) -> Value {
    let (g, k) = group_kind(&obj);
    default_object(&g, &k, &mut obj);
    obj["metadata"]["uid"] = json!("6b9a4b1e-0000-4000-8000-000000000001");
    obj["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
    prepare_for_create(&g, &k, &mut obj);
    obj
}

/// What the registry does before validating an update of `old` with `new`.
fn updated(mut new: Value, old: &Value) -> Value {
    let (g, k) = group_kind(&new);
    default_object(&g, &k, &mut new);
    prepare_for_update(&g, &k, &mut new, old);
    new
}

fn causes(obj: &Value, old: Option<&Value>) -> Vec<(String, String, String)> {
    let (g, k) = group_kind(obj);
    validate(&g, &k, obj, old)
        .into_iter()
        .map(|c| (c.field, c.reason, c.message))
        .collect()
}

#[test]
fn nginx_deployment_defaults_like_kubectl_get() {
    let dep = created(samples().remove(0));
    let want = json!({
        "progressDeadlineSeconds": 600,
        "replicas": 4,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "nginx"}},
        "strategy": {
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            "type": "RollingUpdate"
        },
        "template": {
            "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "envFrom": [{"configMapRef": {"name": "nginx-config"}}],
                    "image": "nginx:1.25",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"
                }],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30
            }
        }
    });
    assert_eq!(dep["spec"], want);
    assert_eq!(dep["status"], json!({}));
    assert_eq!(dep["metadata"]["labels"], json!({"app": "nginx"}));
}

#[test]
fn nginx_service_and_config_map_defaults() {
    let mut s = samples();
    let svc = created(s.remove(2));
    assert_eq!(
        svc["spec"],
        json!({
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"app": "nginx"},
            "sessionAffinity": "None",
            "type": "ClusterIP"
        })
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    let cm = s.remove(1);
    assert_eq!(created(cm.clone())["data"], cm["data"]);
}

#[test]
fn samples_are_valid_on_create_and_on_unchanged_update() {
    for obj in samples() {
        let obj = created(obj);
        assert_eq!(causes(&obj, None), vec![], "{obj}");
        let again = updated(obj.clone(), &obj);
        assert_eq!(causes(&again, Some(&obj)), vec![], "{again}");
    }
}

#[test]
fn workload_defaults() {
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: postgres}]}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
            "/spec",
            json!({
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "serviceName": "db"
            }),
        ),
        (
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: a, image: agent:latest}]}\n",
            "/spec",
            json!({
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10
            }),
        ),
        (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n  schedule: '*/5 * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: OnFailure, containers: [{name: t, image: busybox}]}\n",
            "/spec",
            json!({
                "concurrencyPolicy": "Allow",
                "suspend": false,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 1,
                "schedule": "*/5 * * * *"
            }),
        ),
    ];
    for (manifest, pointer, want) in cases {
        let obj = created(yaml(manifest));
        let got = obj.pointer(pointer).unwrap();
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&got[k], v, "{manifest}: {k}");
        }
        assert_eq!(causes(&obj, None), vec![], "{obj}");
    }
    let sts = created(yaml(cases_sts()));
    let claim = &sts["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["apiVersion"], "v1");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    assert_eq!(claim["metadata"]["creationTimestamp"], Value::Null);
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    let ds = created(yaml(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: a, image: agent:latest}]}\n",
    ));
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    let cj = created(yaml(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n  schedule: '@hourly'\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: OnFailure, containers: [{name: t, image: busybox}]}\n",
    ));
    assert!(
        cj["spec"]["jobTemplate"]["spec"]
            .get("backoffLimit")
            .is_none()
    );
    assert_eq!(
        cj["spec"]["jobTemplate"]["metadata"]["creationTimestamp"],
        Value::Null
    );
}

fn cases_sts() -> &'static str {
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: postgres}]}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
}

#[test]
fn job_defaults_and_generated_selector() {
    let job = created(yaml(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  template:\n    metadata: {labels: {app: pi}}\n    spec: {restartPolicy: Never, containers: [{name: pi, image: perl:5.34}]}\n",
    ));
    let uid = "6b9a4b1e-0000-4000-8000-000000000001";
    let spec = &job["spec"];
    for (k, v) in [
        ("parallelism", json!(1)),
        ("completions", json!(1)),
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
        ("manualSelector", json!(false)),
        (
            "selector",
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        ),
    ] {
        assert_eq!(spec[k], v, "{k}");
    }
    assert_eq!(
        spec["template"]["metadata"]["labels"],
        json!({
            "app": "pi",
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "pi",
            "controller-uid": uid,
            "job-name": "pi"
        })
    );
    assert_eq!(job["metadata"]["labels"], json!({"app": "pi"}));
    let bare = created(yaml(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n    spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}\n",
    ));
    assert_eq!(
        bare["metadata"]["labels"],
        json!({
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "once",
            "controller-uid": uid,
            "job-name": "once"
        })
    );
    assert_eq!(causes(&bare, None), vec![]);
    assert_eq!(causes(&job, None), vec![]);
    // A changed template is rejected on update; a changed parallelism is not.
    let mut scaled = job.clone();
    scaled["spec"]["parallelism"] = json!(3);
    assert_eq!(causes(&updated(scaled, &job), Some(&job)), vec![]);
    let mut changed = job.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5.36");
    let errs = causes(&updated(changed, &job), Some(&job));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "spec.template");
    assert!(errs[0].2.ends_with(": field is immutable"), "{errs:?}");
}

#[test]
fn core_defaults() {
    let secret = created(yaml(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {user: admin}\ndata: {other: eA==}\n",
    ));
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"], json!({"other": "eA==", "user": "YWRtaW4="}));
    assert!(secret.get("stringData").is_none());

    let ns = created(yaml(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n",
    ));
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "team-a"})
    );
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    // Finalizers only change through /finalize.
    let mut ns2 = ns.clone();
    ns2["spec"]["finalizers"] = json!([]);
    assert_eq!(
        updated(ns2, &ns)["spec"]["finalizers"],
        json!(["kubernetes"])
    );

    let pvc = created(yaml(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1024Mi}}}\n",
    ));
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "1Gi");
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));

    let lb = created(yaml(
        "apiVersion: v1\nkind: Service\nmetadata: {name: lb}\nspec: {type: LoadBalancer, ports: [{port: 443, targetPort: https}]}\n",
    ));
    for (k, v) in [
        ("externalTrafficPolicy", json!("Cluster")),
        ("allocateLoadBalancerNodePorts", json!(true)),
        ("internalTrafficPolicy", json!("Cluster")),
    ] {
        assert_eq!(lb["spec"][k], v, "{k}");
    }
    assert_eq!(lb["spec"]["ports"][0]["targetPort"], "https");

    let affinity = created(yaml(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {sessionAffinity: ClientIP, ports: [{port: 80}]}\n",
    ));
    assert_eq!(
        affinity["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );

    let pod = created(yaml(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: nginx, resources: {limits: {cpu: 1, memory: 1Gi}}}]}\n",
    ));
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    assert_eq!(causes(&pod, None), vec![]);
}

#[test]
fn service_update_keeps_allocated_values() {
    let mut old = created(yaml(
        "apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: NodePort, selector: {a: b}, ports: [{name: http, port: 80}]}\n",
    ));
    old["spec"]["clusterIP"] = json!("10.96.0.10");
    old["spec"]["clusterIPs"] = json!(["10.96.0.10"]);
    old["spec"]["ports"][0]["nodePort"] = json!(30080);
    // kubectl replace with the original manifest: no clusterIP, no nodePort.
    let new = updated(
        yaml(
            "apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: NodePort, selector: {a: b}, ports: [{name: http, port: 80}]}\n",
        ),
        &old,
    );
    assert_eq!(new["spec"]["clusterIP"], "10.96.0.10");
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
    assert_eq!(causes(&new, Some(&old)), vec![]);
    // Switching to ClusterIP drops the node ports and the external traffic policy.
    let to_cluster_ip = updated(
        yaml(
            "apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: ClusterIP, selector: {a: b}, externalTrafficPolicy: Cluster, ports: [{name: http, port: 80, nodePort: 30080}]}\n",
        ),
        &old,
    );
    assert!(to_cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
    assert!(to_cluster_ip["spec"].get("externalTrafficPolicy").is_none());
    assert_eq!(causes(&to_cluster_ip, Some(&old)), vec![]);
    // Changing the cluster IP is not allowed.
    let mut moved = new.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.11");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    let errs = causes(&moved, Some(&old));
    assert!(
        errs.contains(&(
            "spec.clusterIPs[0]".into(),
            "FieldValueInvalid".into(),
            "Invalid value: []string{\"10.96.0.11\"}: may not change once set".into()
        )),
        "{errs:?}"
    );
}

#[test]
fn other_kind_defaults() {
    let rb = created(yaml(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Role, name: r}\nsubjects: [{kind: User, name: alice}, {kind: ServiceAccount, name: default, namespace: ns}, {kind: Group, name: devs}]\n",
    ));
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][1]["apiGroup"], "");
    assert_eq!(rb["subjects"][2]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(causes(&rb, None), vec![]);

    let hpa = created(yaml(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n  behavior: {scaleDown: {stabilizationWindowSeconds: 60}}\n",
    ));
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(
        hpa["spec"]["behavior"]["scaleDown"],
        json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
    assert_eq!(
        hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"],
        0
    );
    assert_eq!(causes(&hpa, None), vec![]);

    let crd = created(crd_manifest());
    assert_eq!(crd["spec"]["names"]["singular"], "cluster");
    assert_eq!(crd["spec"]["names"]["listKind"], "ClusterList");
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1alpha1"]));
    assert_eq!(causes(&crd, None), vec![]);
    // A new storage version is recorded on update; the old one stays stored.
    let mut v2 = crd.clone();
    v2["spec"]["versions"][0]["storage"] = json!(false);
    let mut added = v2["spec"]["versions"][0].clone();
    added["name"] = json!("v1alpha2");
    added["storage"] = json!(true);
    v2["spec"]["versions"].as_array_mut().unwrap().push(added);
    let v2 = updated(v2, &crd);
    assert_eq!(
        v2["status"]["storedVersions"],
        json!(["v1alpha1", "v1alpha2"])
    );
    assert_eq!(causes(&v2, Some(&crd)), vec![]);
}

fn crd_manifest() -> Value {
    yaml(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: clusters.cluster.karmada.io}\nspec:\n  group: cluster.karmada.io\n  scope: Cluster\n  names: {kind: Cluster, plural: clusters}\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n    subresources: {status: {}}\n",
    )
}

#[test]
fn valid_objects_pass() {
    let manifests = [
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: builder, namespace: ns}\n",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: tls}\ntype: kubernetes.io/tls\ndata: {tls.crt: eA==, tls.key: eA==}\n",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: reg}\ntype: kubernetes.io/dockerconfigjson\ndata: {.dockerconfigjson: e30=}\n",
        "apiVersion: v1\nkind: Service\nmetadata: {name: headless}\nspec: {clusterIP: None, selector: {app: db}, ports: [{name: pg, port: 5432}, {name: metrics, port: 9187}]}\n",
        "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {type: ExternalName, externalName: db.example.com.}\n",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:reader'}\nrules: [{apiGroups: [''], resources: [pods], verbs: [get, list]}, {nonResourceURLs: [/healthz], verbs: [get]}]\n",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:reader'}\nsubjects: [{kind: ServiceAccount, name: sa, namespace: ns}]\n",
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: leader}\nspec: {holderIdentity: a, leaseDurationSeconds: 15, leaseTransitions: 0}\n",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: {rules: [{host: www.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]}\n",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec: {minAvailable: 50%, selector: {matchLabels: {app: web}}}\n",
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1alpha1.cluster.karmada.io}\nspec: {group: cluster.karmada.io, version: v1alpha1, groupPriorityMinimum: 2000, versionPriority: 10, service: {name: karmada-aggregated-apiserver, namespace: karmada-system}, insecureSkipTLSVerify: true}\n",
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx, livenessProbe: {tcpSocket: {port: 80}}}]}}}\n",
    ];
    for m in manifests {
        let obj = created(yaml(m));
        assert_eq!(causes(&obj, None), vec![], "{m}");
        let again = updated(obj.clone(), &obj);
        assert_eq!(causes(&again, Some(&obj)), vec![], "update {m}");
    }
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// One rule: a manifest (created), an optional change applied as an update, and the cause.
struct Rule {
    manifest: &'static str,
    update: Option<fn(&mut Value)>,
    field: &'static str,
    reason: &'static str,
    message: String,
}

fn rule(manifest: &'static str, field: &'static str, reason: &'static str, message: &str) -> Rule {
    Rule {
        manifest,
        update: None,
        field,
        reason,
        message: message.to_string(),
    }
}

fn update_rule(
    manifest: &'static str,
    update: fn(&mut Value),
    field: &'static str,
    reason: &'static str,
    message: &str,
) -> Rule {
    Rule {
        update: Some(update),
        ..rule(manifest, field, reason, message)
    }
}

const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n";
const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, clusterIP: 10.96.0.5, ports: [{port: 80}]}\n";
const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nimmutable: true\ndata: {a: '1'}\n";
const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: eA==}\n";
const PVC: &str = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";
const BINDING: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Role, name: a}\nsubjects: [{kind: User, name: alice}]\n";
const STS: &str = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: postgres}]}\n";

fn rules() -> Vec<Rule> {
    vec![
        // ObjectMeta, through several kinds.
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n",
            "metadata.name",
            "FieldValueInvalid",
            &format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"),
        ),
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: default}\n",
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required",
        ),
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, generateName: Web-}\n",
            "metadata.generateName",
            "FieldValueInvalid",
            &format!("Invalid value: \"Web-\": {SUBDOMAIN_MSG}"),
        ),
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {'bad key': v}}\n",
            "metadata.labels",
            "FieldValueInvalid",
            "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {'/x': v}}\n",
            "metadata.annotations",
            "FieldValueInvalid",
            "Invalid value: \"/x\": prefix part must be non-empty",
        ),
        update_rule(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n",
            |o| o["metadata"]["uid"] = json!("other"),
            "metadata.uid",
            "FieldValueInvalid",
            "Invalid value: \"other\": field is immutable",
        ),
        rule(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"a.b\": must not contain dots",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\nspec: {ports: [{port: 80}]}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ),
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a/b}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"a/b\": may not contain '/'",
        ),
        // Deployment.
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
            "spec.selector",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: nginx}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {restartPolicy: Never, containers: [{name: web, image: nginx}]}\n",
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Never\": supported values: \"Always\"",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web}]}\n",
            "spec.template.spec.containers[0].image",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
            "spec.strategy.rollingUpdate.maxUnavailable",
            "FieldValueInvalid",
            "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
        ),
        update_rule(
            DEPLOY,
            |o| {
                o["spec"]["selector"] = json!({"matchLabels": {"app": "web2"}});
                o["spec"]["template"]["metadata"]["labels"] = json!({"app": "web2"});
            },
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        ),
        // StatefulSet and DaemonSet.
        rule(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db.x}\nspec:\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: postgres}]}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"db.x\": must not contain dots",
        ),
        update_rule(
            STS,
            |o| o["spec"]["serviceName"] = json!("other"),
            "spec",
            "FieldValueForbidden",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
        rule(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: a, image: agent}]}\n",
            "spec.updateStrategy.rollingUpdate.maxSurge",
            "FieldValueInvalid",
            "Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero",
        ),
        // Job and CronJob.
        rule(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  template:\n    spec: {containers: [{name: pi, image: perl}]}\n",
            "spec.template.spec.restartPolicy",
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        rule(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  backoffLimit: -2\n  template:\n    spec: {restartPolicy: Never, containers: [{name: pi, image: perl}]}\n",
            "spec.backoffLimit",
            "FieldValueInvalid",
            "Invalid value: -2: must be greater than or equal to 0",
        ),
        rule(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n  schedule: 'every minute'\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}\n",
            "spec.schedule",
            "FieldValueInvalid",
            "Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]",
        ),
        rule(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}\n",
            "spec.schedule",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec: {containers: [{name: t, image: busybox}]}\n",
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        rule(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: a-very-long-cron-job-name-that-exceeds-fifty-two-chars}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"a-very-long-cron-job-name-that-exceeds-fifty-two-chars\": must be no more than 52 characters",
        ),
        // Service.
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}}\n",
            "spec.ports",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}, {port: 81}]}\n",
            "spec.ports[1].name",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{name: a, port: 80}, {name: a, port: 81}]}\n",
            "spec.ports[1].name",
            "FieldValueDuplicate",
            "Duplicate value: \"a\"",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 70000}]}\n",
            "spec.ports[0].port",
            "FieldValueInvalid",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: Internal, ports: [{port: 80}]}\n",
            "spec.type",
            "FieldValueNotSupported",
            "Unsupported value: \"Internal\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
        ),
        rule(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ipFamilyPolicy: RequireDualStack, ports: [{port: 80}]}\n",
            "spec.ipFamilyPolicy",
            "FieldValueInvalid",
            "Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
        ),
        update_rule(
            SVC,
            |o| {
                o["spec"]["clusterIP"] = json!("10.96.0.6");
                o["spec"]["clusterIPs"] = json!(["10.96.0.6"]);
            },
            "spec.clusterIPs[0]",
            "FieldValueInvalid",
            "Invalid value: []string{\"10.96.0.6\"}: may not change once set",
        ),
        // ConfigMap and Secret.
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {'a b': x}\n",
            "data[a b]",
            "FieldValueInvalid",
            "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ),
        rule(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x}\nbinaryData: {a: eA==}\n",
            "data[a]",
            "FieldValueInvalid",
            "Invalid value: \"a\": duplicate of key present in binaryData",
        ),
        update_rule(
            CM,
            |o| o["data"]["a"] = json!("2"),
            "data",
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
        ),
        update_rule(
            CM,
            |o| o["immutable"] = json!(false),
            "immutable",
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
        ),
        update_rule(
            SECRET,
            |o| o["type"] = json!("kubernetes.io/basic-auth"),
            "type",
            "FieldValueInvalid",
            "Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
        ),
        rule(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\ntype: kubernetes.io/tls\ndata: {tls.crt: eA==}\n",
            "data[tls.key]",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\ntype: kubernetes.io/dockerconfigjson\n",
            "data[.dockerconfigjson]",
            "FieldValueRequired",
            "Required value",
        ),
        rule(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\ntype: kubernetes.io/service-account-token\n",
            "metadata.annotations[kubernetes.io/service-account.name]",
            "FieldValueRequired",
            "Required value",
        ),
        // PersistentVolumeClaim.
        rule(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: {requests: {storage: 1Gi}}}\n",
            "spec.accessModes",
            "FieldValueRequired",
            "Required value: at least 1 access mode is required",
        ),
        rule(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteOnce]}\n",
            "spec.resources[storage]",
            "FieldValueRequired",
            "Required value",
        ),
        update_rule(
            PVC,
            |o| o["spec"]["accessModes"] = json!(["ReadWriteMany"]),
            "spec",
            "FieldValueForbidden",
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ),
        // RBAC.
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: [pods]}]\n",
            "rules[0].verbs",
            "FieldValueRequired",
            "Required value: verbs must contain at least one value",
        ),
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules: [{nonResourceURLs: [/healthz], verbs: [get]}]\n",
            "rules[0].nonResourceURLs",
            "FieldValueInvalid",
            "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
        ),
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Policy, name: a}\n",
            "roleRef.kind",
            "FieldValueNotSupported",
            "Unsupported value: \"Policy\": supported values: \"Role\", \"ClusterRole\"",
        ),
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Role, name: a}\nsubjects: [{kind: Robot, name: r2}]\n",
            "subjects[0].kind",
            "FieldValueNotSupported",
            "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ),
        rule(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: a}\nsubjects: [{kind: ServiceAccount, name: sa}]\n",
            "subjects[0].namespace",
            "FieldValueRequired",
            "Required value",
        ),
        update_rule(
            BINDING,
            |o| o["roleRef"]["name"] = json!("b"),
            "roleRef",
            "FieldValueInvalid",
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"b\"}: cannot change roleRef",
        ),
        // Lease, HPA, Ingress, PDB.
        rule(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l}\nspec: {leaseDurationSeconds: 0}\n",
            "spec.leaseDurationSeconds",
            "FieldValueInvalid",
            "Invalid value: 0: must be greater than 0",
        ),
        rule(
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 0}\n",
            "spec.maxReplicas",
            "FieldValueInvalid",
            "Invalid value: 0: must be greater than 0",
        ),
        rule(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec: {rules: [{http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]}\n",
            "spec.rules[0].http.paths[0].pathType",
            "FieldValueRequired",
            "Required value: pathType must be specified",
        ),
        rule(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
            "spec",
            "FieldValueInvalid",
            "Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}, MaxUnavailable:intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}}: minAvailable and maxUnavailable cannot be both set",
        ),
        // CRD and APIService.
        rule(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: foo.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Bar, plural: bars}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"foo.example.com\": must be spec.names.plural+\".\"+spec.group",
        ),
        rule(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bars.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Bar, plural: bars}\n  versions: [{name: v1, served: true, storage: true}]\n",
            "spec.versions[0].schema.openAPIV3Schema",
            "FieldValueRequired",
            "Required value: schemas are required",
        ),
        rule(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bars.example.com}\nspec:\n  group: example.com\n  scope: Global\n  names: {kind: Bar, plural: bars}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n",
            "spec.scope",
            "FieldValueNotSupported",
            "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
        ),
        rule(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bars.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Bar, plural: bars}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}, {name: v2, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n",
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: must have exactly one version marked as storage version",
        ),
        rule(
            "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.foo.io}\nspec: {group: bar.io, version: v1, groupPriorityMinimum: 100, versionPriority: 10}\n",
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"v1.foo.io\": must be `spec.version+\".\"+spec.group`: \"v1.bar.io\"",
        ),
        rule(
            "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.foo.io}\nspec: {group: foo.io, version: v1, groupPriorityMinimum: 0, versionPriority: 10}\n",
            "spec.groupPriorityMinimum",
            "FieldValueInvalid",
            "Invalid value: 0: must be positive and less than 20000",
        ),
    ]
}

#[test]
fn each_rule_fails_with_kube_field_and_message() {
    for r in rules() {
        let obj = created(yaml(r.manifest));
        let (target, old) = match r.update {
            None => (obj, None),
            Some(change) => {
                // The base object must be valid; only the change is at fault.
                assert_eq!(causes(&obj, None), vec![], "base of {}", r.manifest);
                let mut new = obj.clone();
                change(&mut new);
                (updated(new, &obj), Some(obj))
            }
        };
        let got = causes(&target, old.as_ref());
        let want = (r.field.to_string(), r.reason.to_string(), r.message.clone());
        assert!(
            got.contains(&want),
            "{}\nwant {want:?}\ngot  {got:?}",
            r.manifest
        );
    }
}

#[test]
fn names_per_kind() {
    let cases = [
        ("", "ConfigMap", "my.config", None),
        ("", "Namespace", "my.ns", Some("must not contain dots")),
        (
            "",
            "Service",
            "9lives",
            Some(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "system:controller:x",
            None,
        ),
        (
            "rbac.authorization.k8s.io",
            "Role",
            "..",
            Some("may not be '..'"),
        ),
        ("apps", "Deployment", "Web", Some(SUBDOMAIN_MSG)),
        ("cluster.karmada.io", "Cluster", "member1", None),
    ];
    for (g, k, name, want) in cases {
        assert_eq!(validate_name(g, k, name).as_deref(), want, "{k} {name}");
    }
    assert!(is_dns1123_label("abc-1"));
    assert!(!is_dns1123_label("a.b"));
    assert!(is_dns1123_subdomain("a.b"));
    assert!(!is_dns1123_subdomain(&"a".repeat(254)));
}
