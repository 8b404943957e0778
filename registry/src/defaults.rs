//! Defaulting of built-in kinds, following k8s.io/kubernetes pkg/apis/*/v1/defaults.go and the
//! generated zz_generated.defaults.go (which also applies the `+default=` markers), plus the
//! decoding artifacts kube's Go structs leave in their JSON (`resources: {}`,
//! `creationTimestamp: null` in templates, canonical quantities).

use base64::Engine;
use serde_json::{Value, json};

use super::json::{
    self, default_int, default_nil, default_str, each_mut, field, obj_mut, with_mut,
};
use apimachinery::quantity::Quantity;

/// Applies kube's defaults for `group`/`kind` in place.
pub(crate) fn default_object(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default_pod_spec(spec, true);
            }
        }
        ("", "PodTemplate") => with_mut(obj, "template", default_pod_template),
        ("", "ReplicationController") => default_replication_controller(obj),
        ("", "Service") => default_service(obj),
        ("", "Secret") => default_secret(obj),
        ("", "Namespace") => default_namespace(obj),
        ("", "PersistentVolumeClaim") => default_pvc(obj),
        ("", "PersistentVolume") => default_pv(obj),
        ("", "Endpoints") => each_mut(obj, "subsets", |s| {
            each_mut(s, "ports", |p| default_str(p, "protocol", "TCP"))
        }),
        ("apps", "Deployment") => default_deployment(obj),
        ("apps", "ReplicaSet") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default_nil(spec, "replicas", json!(1));
                with_mut(spec, "template", default_pod_template);
            }
        }
        ("apps", "StatefulSet") => default_stateful_set(obj),
        ("apps", "DaemonSet") => default_daemon_set(obj),
        ("batch", "Job") => default_job(obj),
        ("batch", "CronJob") => default_cron_job(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            with_mut(obj, "roleRef", |r| {
                default_str(r, "apiGroup", "rbac.authorization.k8s.io")
            });
            each_mut(obj, "subjects", default_subject);
        }
        ("autoscaling", "HorizontalPodAutoscaler") => default_hpa(obj),
        (super::admissionregistration::GROUP, _) => {
            super::admissionregistration::default_object(kind, obj)
        }
        ("networking.k8s.io", "NetworkPolicy") => default_network_policy(obj),
        ("networking.k8s.io", "IngressClass") => {
            if let Some(p) = obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("parameters"))
                .filter(|p| p.is_object())
            {
                default_nil(p, "scope", json!("Cluster"));
            }
        }
        (super::flowcontrol::GROUP, _) => super::flowcontrol::default_object(kind, obj),
        ("storage.k8s.io", "CSIDriver") => super::csi::default_csi_driver(obj),
        ("discovery.k8s.io", "EndpointSlice") => super::endpointslice::default(obj),
        ("scheduling.k8s.io", "PriorityClass") => {
            default_nil(obj, "preemptionPolicy", json!("PreemptLowerPriority"))
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => default_crd(obj),
        ("apiregistration.k8s.io", "APIService") => {
            if let Some(svc) = obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("service"))
                .filter(|s| s.is_object())
            {
                default_nil(svc, "port", json!(443));
            }
        }
        _ => {}
    }
}

/// SetDefaults_ResourceList: round up to milli-units; every quantity becomes its canonical
/// string (kube never returns a JSON number for a quantity).
fn default_resource_list(v: &mut Value, key: &str, round_milli: bool) {
    let Some(m) = v.get_mut(key).and_then(Value::as_object_mut) else {
        return;
    };
    for q in m.values_mut() {
        canonical_quantity(q, round_milli);
    }
}

fn canonical_quantity(q: &mut Value, round_milli: bool) {
    if let Some(Ok(mut parsed)) = Quantity::from_json(q) {
        if round_milli {
            parsed.round_up(-3);
        }
        *q = Value::String(parsed.canonical());
    }
}

fn default_resources(c: &mut Value) {
    default_nil(c, "resources", json!({}));
    with_mut(c, "resources", |r| {
        default_resource_list(r, "limits", true);
        default_resource_list(r, "requests", true);
    });
}

/// The tag kube's parsers.ParseImageName finds; `None` when the reference does not parse.
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return None;
    }
    let (name_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !d.contains(':')) || name_tag.is_empty() {
        return None;
    }
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_tag[..last_slash + i],
            Some(&name_tag[last_slash + i + 1..]),
        ),
        None => (name_tag, None),
    };
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            && !t.starts_with(['.', '-']);
        if !ok {
            return None;
        }
    }
    // splitDockerDomain: the first component is a registry when it looks like a host.
    let path = match repo.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            rest
        }
        _ => repo,
    };
    let path_ok = !path.is_empty()
        && path.split('/').all(|c| {
            !c.is_empty()
                && c.chars().all(|ch| {
                    ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-')
                })
                && c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
                && c.ends_with(|ch: char| ch.is_ascii_alphanumeric())
        });
    if !path_ok {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_string(),
        (None, None) => "latest".to_string(),
        (None, Some(_)) => String::new(),
    })
}

fn default_http_get(h: &mut Value) {
    default_str(h, "path", "/");
    default_str(h, "scheme", "HTTP");
}

fn default_probe(p: &mut Value) {
    default_int(p, "timeoutSeconds", 1);
    default_int(p, "periodSeconds", 10);
    default_int(p, "successThreshold", 1);
    default_int(p, "failureThreshold", 3);
    with_mut(p, "httpGet", default_http_get);
    with_mut(p, "grpc", |g| default_nil(g, "service", json!("")));
}

/// SetDefaults_Container plus the generated per-field defaults.
fn default_container(c: &mut Value) {
    if json::string(c, "imagePullPolicy").is_empty() {
        let policy = match image_tag(json::string(c, "image")) {
            Some(t) if t == "latest" => "Always",
            _ => "IfNotPresent",
        };
        default_str(c, "imagePullPolicy", policy);
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    each_mut(c, "ports", |p| default_str(p, "protocol", "TCP"));
    each_mut(c, "env", |e| {
        if let Some(fr) = e
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .filter(|f| f.is_object())
        {
            default_str(fr, "apiVersion", "v1");
        }
    });
    default_resources(c);
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        with_mut(c, probe, default_probe);
    }
    with_mut(c, "lifecycle", |l| {
        for h in ["postStart", "preStop"] {
            with_mut(l, h, |h| with_mut(h, "httpGet", default_http_get));
        }
    });
}

fn default_downward_items(v: &mut Value) {
    each_mut(v, "items", |i| {
        with_mut(i, "fieldRef", |f| default_str(f, "apiVersion", "v1"))
    });
}

/// SetDefaults_Volume and the volume source defaults.
fn default_volume(v: &mut Value) {
    let has_source = v
        .as_object()
        .is_some_and(|m| m.iter().any(|(k, x)| k != "name" && !x.is_null()));
    if !has_source && let Some(m) = v.as_object_mut() {
        m.insert("emptyDir".into(), json!({}));
    }
    with_mut(v, "hostPath", |h| default_nil(h, "type", json!("")));
    with_mut(v, "secret", |s| default_nil(s, "defaultMode", json!(420)));
    with_mut(v, "configMap", |s| {
        default_nil(s, "defaultMode", json!(420))
    });
    with_mut(v, "downwardAPI", |d| {
        default_nil(d, "defaultMode", json!(420));
        default_downward_items(d);
    });
    with_mut(v, "projected", |p| {
        default_nil(p, "defaultMode", json!(420));
        each_mut(p, "sources", |s| {
            with_mut(s, "downwardAPI", default_downward_items);
            with_mut(s, "serviceAccountToken", |t| {
                default_nil(t, "expirationSeconds", json!(3600))
            });
        });
    });
    with_mut(v, "iscsi", |i| default_str(i, "iscsiInterface", "default"));
    with_mut(v, "rbd", |r| {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    });
    with_mut(v, "azureDisk", |a| {
        default_nil(a, "cachingMode", json!("ReadWrite"));
        default_nil(a, "fsType", json!("ext4"));
        default_nil(a, "readOnly", json!(false));
        default_nil(a, "kind", json!("Shared"));
    });
    with_mut(v, "scaleIO", |s| {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    });
    with_mut(v, "emptyDir", |e| {
        if let Some(q) = e.get_mut("sizeLimit").filter(|q| !q.is_null()) {
            canonical_quantity(q, false);
        }
    });
    with_mut(v, "ephemeral", |e| {
        with_mut(e, "volumeClaimTemplate", |t| {
            default_nil(t, "metadata", json!({"creationTimestamp": null}));
            with_mut(t, "spec", default_pvc_spec);
        })
    });
}

/// SetDefaults_PodSpec and the generated defaults of everything inside a pod spec; `is_pod`
/// adds SetDefaults_Pod, which kube applies to Pods only (not to templates).
pub(crate) fn default_pod_spec(spec: &mut Value, is_pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_nil(spec, "securityContext", json!({}));
    default_nil(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    each_mut(spec, "volumes", default_volume);
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        each_mut(spec, list, default_container);
    }
    default_resource_list(spec, "overhead", true);
    with_mut(spec, "resources", |r| {
        default_resource_list(r, "limits", true);
        default_resource_list(r, "requests", true);
    });
    if !is_pod {
        return;
    }
    for list in ["containers", "initContainers"] {
        each_mut(spec, list, requests_from_limits);
    }
    default_nil(spec, "enableServiceLinks", json!(true));
    if json::boolean(spec, "hostNetwork") == Some(true) {
        for list in ["containers", "initContainers"] {
            each_mut(spec, list, |c| {
                each_mut(c, "ports", |p| {
                    let container_port = json::int(p, "containerPort").unwrap_or(0);
                    default_int(p, "hostPort", container_port);
                })
            });
        }
    }
}

/// SetDefaults_Pod: a container's requests default to its limits.
fn requests_from_limits(c: &mut Value) {
    let Some(res) = c.get_mut("resources").filter(|r| r.is_object()) else {
        return;
    };
    let Some(limits) = json::object(res, "limits").cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    let Some(requests) = obj_mut(res, "requests").and_then(Value::as_object_mut) else {
        return;
    };
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

/// A PodTemplateSpec: Go serializes its zero ObjectMeta with `creationTimestamp: null`.
pub(crate) fn default_pod_template(t: &mut Value) {
    default_template_metadata(t);
    if let Some(spec) = obj_mut(t, "spec") {
        default_pod_spec(spec, false);
    }
}

fn default_template_metadata(t: &mut Value) {
    if let Some(meta) = obj_mut(t, "metadata").and_then(Value::as_object_mut) {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
}

fn default_replication_controller(obj: &mut Value) {
    let labels = json::at(obj, &["spec", "template", "metadata", "labels"]).cloned();
    if let Some(labels) = labels.filter(Value::is_object) {
        if let Some(spec) = obj_mut(obj, "spec")
            && json::is_empty(spec.get("selector"))
        {
            spec["selector"] = labels.clone();
        }
        if let Some(meta) = obj_mut(obj, "metadata")
            && json::is_empty(meta.get("labels"))
        {
            meta["labels"] = labels;
        }
    }
    if let Some(spec) = obj_mut(obj, "spec") {
        default_nil(spec, "replicas", json!(1));
        with_mut(spec, "template", default_pod_template);
    }
}

fn default_deployment(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_nil(spec, "replicas", json!(1));
    if let Some(strategy) = obj_mut(spec, "strategy") {
        default_str(strategy, "type", "RollingUpdate");
        if json::string(strategy, "type") == "RollingUpdate"
            && let Some(ru) = obj_mut(strategy, "rollingUpdate")
        {
            default_nil(ru, "maxUnavailable", json!("25%"));
            default_nil(ru, "maxSurge", json!("25%"));
        }
    }
    default_nil(spec, "revisionHistoryLimit", json!(10));
    default_nil(spec, "progressDeadlineSeconds", json!(600));
    with_mut(spec, "template", default_pod_template);
}

fn default_daemon_set(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    if let Some(us) = obj_mut(spec, "updateStrategy") {
        default_str(us, "type", "RollingUpdate");
        if json::string(us, "type") == "RollingUpdate"
            && let Some(ru) = obj_mut(us, "rollingUpdate")
        {
            default_nil(ru, "maxUnavailable", json!(1));
            default_nil(ru, "maxSurge", json!(0));
        }
    }
    default_nil(spec, "revisionHistoryLimit", json!(10));
    with_mut(spec, "template", default_pod_template);
}

fn default_stateful_set(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = obj_mut(spec, "updateStrategy") {
        if json::string(us, "type").is_empty() {
            us["type"] = json!("RollingUpdate");
            default_nil(us, "rollingUpdate", json!({}));
        }
        if json::string(us, "type") == "RollingUpdate"
            && let Some(ru) = us.get_mut("rollingUpdate").filter(|r| r.is_object())
        {
            default_nil(ru, "partition", json!(0));
        }
    }
    if let Some(p) = obj_mut(spec, "persistentVolumeClaimRetentionPolicy") {
        default_str(p, "whenDeleted", "Retain");
        default_str(p, "whenScaled", "Retain");
    }
    default_nil(spec, "replicas", json!(1));
    default_nil(spec, "revisionHistoryLimit", json!(10));
    with_mut(spec, "template", default_pod_template);
    each_mut(spec, "volumeClaimTemplates", |t| {
        // apps/v1 conversion stamps the embedded claims with their type.
        if let Some(m) = t.as_object_mut() {
            m.insert("apiVersion".into(), json!("v1"));
            m.insert("kind".into(), json!("PersistentVolumeClaim"));
        }
        default_template_metadata(t);
        default_pvc(t);
    });
}

fn default_job(obj: &mut Value) {
    let template_labels = json::at(obj, &["spec", "template", "metadata", "labels"])
        .filter(|l| l.is_object())
        .cloned();
    if let Some(labels) = template_labels
        && let Some(meta) = obj_mut(obj, "metadata")
        && json::is_empty(meta.get("labels"))
    {
        meta["labels"] = labels;
    }
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_job_spec(spec);
}

/// SetDefaults_Job (the spec part).
fn default_job_spec(spec: &mut Value) {
    if field(spec, "completions").is_none() && field(spec, "parallelism").is_none() {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    default_nil(spec, "parallelism", json!(1));
    let backoff = if field(spec, "backoffLimitPerIndex").is_some() {
        i64::from(i32::MAX)
    } else {
        6
    };
    default_nil(spec, "backoffLimit", json!(backoff));
    default_nil(spec, "completionMode", json!("NonIndexed"));
    default_nil(spec, "suspend", json!(false));
    let has_failure_policy = field(spec, "podFailurePolicy").is_some();
    if let Some(pfp) = spec.get_mut("podFailurePolicy").filter(|p| p.is_object()) {
        each_mut(pfp, "rules", |r| {
            each_mut(r, "onPodConditions", |c| default_str(c, "status", "True"))
        });
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_nil(spec, "podReplacementPolicy", json!(replacement));
    default_nil(spec, "manualSelector", json!(false));
    with_mut(spec, "template", default_pod_template);
}

fn default_cron_job(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_str(spec, "concurrencyPolicy", "Allow");
    default_nil(spec, "suspend", json!(false));
    default_nil(spec, "successfulJobsHistoryLimit", json!(3));
    default_nil(spec, "failedJobsHistoryLimit", json!(1));
    // The job template gets pod-spec defaults only, not SetDefaults_Job.
    if let Some(jt) = obj_mut(spec, "jobTemplate") {
        default_template_metadata(jt);
        if let Some(js) = obj_mut(jt, "spec") {
            with_mut(js, "template", default_pod_template);
        }
    }
}

fn externally_accessible(spec: &Value) -> bool {
    match json::string(spec, "type") {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => !json::list(spec, "externalIPs").is_empty(),
        _ => false,
    }
}

/// The IP family of an address, for ipFamilies inferred from clusterIPs.
fn ip_family(ip: &str) -> Option<&'static str> {
    super::names::parse_ip(ip).map(|a| if a.is_ipv4() { "IPv4" } else { "IPv6" })
}

fn default_service(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    match json::string(spec, "sessionAffinity") {
        "None" => {
            if let Some(m) = spec.as_object_mut() {
                m.remove("sessionAffinityConfig");
            }
        }
        "ClientIP"
            if json::at(
                spec,
                &["sessionAffinityConfig", "clientIP", "timeoutSeconds"],
            )
            .is_none() =>
        {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    each_mut(spec, "ports", |p| {
        default_str(p, "protocol", "TCP");
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(v) => v.as_i64() == Some(0),
        };
        if unset && let Some(port) = p.get("port").cloned() {
            p["targetPort"] = port;
        }
    });
    let svc_type = json::string(spec, "type").to_string();
    if externally_accessible(spec) {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(svc_type.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        default_nil(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if svc_type == "LoadBalancer" {
        default_nil(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if svc_type != "ExternalName" {
        default_service_ip_families(spec);
    }
    if svc_type == "LoadBalancer"
        && let Some(status) = obj.get_mut("status")
        && let Some(lb) = status.get_mut("loadBalancer")
    {
        each_mut(lb, "ingress", |i| {
            if !json::string(i, "ip").is_empty() {
                default_nil(i, "ipMode", json!("VIP"));
            }
        });
    }
}

/// The service registry's clusterIP/ipFamily initialization (NormalizeClusterIPs and
/// initIPFamilyFields) for a single-stack IPv4 cluster.
fn default_service_ip_families(spec: &mut Value) {
    let cluster_ip = json::string(spec, "clusterIP").to_string();
    if !cluster_ip.is_empty() && json::list(spec, "clusterIPs").is_empty() {
        spec["clusterIPs"] = json!([cluster_ip]);
    }
    let headless = json::list(spec, "clusterIPs")
        .first()
        .and_then(Value::as_str)
        == Some("None");
    let selectorless = json::is_empty(spec.get("selector"));
    if headless && selectorless {
        default_nil(spec, "ipFamilyPolicy", json!("RequireDualStack"));
        if json::list(spec, "ipFamilies").is_empty() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        let families = json::string_list(spec, "ipFamilies").unwrap_or_default();
        if families.len() < 2 && json::string(spec, "ipFamilyPolicy") != "SingleStack" {
            let alt = if families.first().map(String::as_str) == Some("IPv6") {
                "IPv4"
            } else {
                "IPv6"
            };
            if let Some(a) = spec.get_mut("ipFamilies").and_then(Value::as_array_mut) {
                a.push(json!(alt));
            }
        }
        return;
    }
    default_nil(spec, "ipFamilyPolicy", json!("SingleStack"));
    if json::list(spec, "ipFamilies").is_empty() {
        let mut families: Vec<&str> = json::list(spec, "clusterIPs")
            .iter()
            .filter_map(Value::as_str)
            .filter_map(ip_family)
            .collect();
        families.dedup();
        if families.is_empty() {
            families.push("IPv4");
        }
        spec["ipFamilies"] = json!(families);
    }
}

/// SetDefaults_Secret, and the v1 conversion that folds write-only `stringData` into `data`.
fn default_secret(obj: &mut Value) {
    default_str(obj, "type", "Opaque");
    let string_data = obj
        .as_object_mut()
        .and_then(|m| m.remove("stringData"))
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        });
    if let Some(sd) = string_data.filter(|m| !m.is_empty())
        && let Some(data) = obj_mut(obj, "data").and_then(Value::as_object_mut)
    {
        for (k, v) in sd {
            let s = v.as_str().unwrap_or_default().to_string();
            let encoded = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
            data.insert(k, Value::String(encoded));
        }
    }
}

fn default_namespace(obj: &mut Value) {
    let name = json::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        return;
    }
    if let Some(meta) = obj_mut(obj, "metadata")
        && let Some(labels) = obj_mut(meta, "labels").and_then(Value::as_object_mut)
    {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
}

fn default_pvc_spec(spec: &mut Value) {
    default_nil(spec, "volumeMode", json!("Filesystem"));
    with_mut(spec, "resources", |r| {
        default_resource_list(r, "limits", true);
        default_resource_list(r, "requests", true);
    });
}

fn default_pvc(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, "spec") {
        default_pvc_spec(spec);
    }
    if let Some(status) = obj_mut(obj, "status") {
        default_str(status, "phase", "Pending");
        default_resource_list(status, "capacity", true);
        default_resource_list(status, "allocatedResources", true);
    }
}

fn default_pv(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj, "spec") {
        default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        default_nil(spec, "volumeMode", json!("Filesystem"));
        default_resource_list(spec, "capacity", true);
    }
    if let Some(status) = obj_mut(obj, "status") {
        default_str(status, "phase", "Pending");
    }
}

fn default_subject(s: &mut Value) {
    let group = match json::string(s, "kind") {
        "ServiceAccount" => "",
        "User" | "Group" => "rbac.authorization.k8s.io",
        _ => return,
    };
    if json::string(s, "apiGroup").is_empty()
        && let Some(m) = s.as_object_mut()
    {
        m.insert("apiGroup".into(), json!(group));
    }
}

fn default_hpa(obj: &mut Value) {
    let v1 = json::string(obj, "apiVersion") == "autoscaling/v1";
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_nil(spec, "minReplicas", json!(1));
    if v1 {
        return;
    }
    if json::list(spec, "metrics").is_empty() {
        spec["metrics"] = json!([{
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
        }]);
    }
    each_mut(spec, "metrics", |m| {
        for source in [
            "object",
            "pods",
            "resource",
            "containerResource",
            "external",
        ] {
            with_mut(m, source, |s| {
                with_mut(s, "target", |t| {
                    for q in ["value", "averageValue"] {
                        if let Some(v) = t.get_mut(q).filter(|v| !v.is_null()) {
                            canonical_quantity(v, false);
                        }
                    }
                })
            });
        }
    });
    with_mut(spec, "behavior", |b| {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}
            ]
        });
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let rules = obj_mut(b, key);
            if let (Some(rules), Value::Object(d)) = (rules, defaults) {
                for (k, v) in d {
                    default_nil(rules, &k, v);
                }
            }
        }
    });
}

fn default_network_policy(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    for dir in ["ingress", "egress"] {
        each_mut(spec, dir, |rule| {
            each_mut(rule, "ports", |p| default_nil(p, "protocol", json!("TCP")))
        });
    }
    if json::list(spec, "policyTypes").is_empty() {
        let mut types = vec!["Ingress"];
        if !json::list(spec, "egress").is_empty() {
            types.push("Egress");
        }
        spec["policyTypes"] = json!(types);
    }
}

fn default_crd(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    if let Some(names) = obj_mut(spec, "names") {
        let kind = json::string(names, "kind").to_string();
        default_str(names, "singular", &kind.to_lowercase());
        if !kind.is_empty() {
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    default_nil(spec, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .filter(|s| s.is_object())
    {
        default_nil(svc, "port", json!(443));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry.local:5000/team/app", "Always"),
            ("registry.local:5000/team/app:v1", "IfNotPresent"),
            (
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
            ),
            ("NGINX", "IfNotPresent"),
            ("", "IfNotPresent"),
        ];
        for (image, want) in cases {
            let mut c = json!({"name": "c", "image": image});
            default_container(&mut c);
            assert_eq!(c["imagePullPolicy"], want, "{image}");
        }
    }

    #[test]
    fn container_and_volume_defaults() {
        let mut spec = json!({
            "containers": [{
                "name": "c", "image": "busybox:1",
                "ports": [{"containerPort": 80}],
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "livenessProbe": {"httpGet": {"port": 80}},
                "readinessProbe": {"grpc": {"port": 9090}},
                "resources": {"limits": {"cpu": 0.5, "memory": "1024Mi"}}
            }],
            "volumes": [
                {"name": "a"},
                {"name": "b", "configMap": {"name": "cm"}},
                {"name": "c", "hostPath": {"path": "/x"}},
                {"name": "d", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}
            ]
        });
        default_pod_spec(&mut spec, true);
        let c = &spec["containers"][0];
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
        assert_eq!(
            c["resources"]["limits"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(
            c["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(spec["volumes"][1]["configMap"]["defaultMode"], 420);
        assert_eq!(spec["volumes"][2]["hostPath"]["type"], "");
        assert_eq!(
            spec["volumes"][3]["projected"],
            json!({"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]})
        );
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    }

    #[test]
    fn templates_do_not_get_pod_only_defaults() {
        let mut t = json!({"spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}});
        default_pod_template(&mut t);
        assert_eq!(t["metadata"], json!({"creationTimestamp": null}));
        assert!(t["spec"].get("enableServiceLinks").is_none());
        assert!(
            t["spec"]["containers"][0]["resources"]
                .get("requests")
                .is_none()
        );
    }

    #[test]
    fn service_registry_families() {
        let cases = [
            (
                json!({"spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}),
                json!(["IPv4"]),
                "SingleStack",
            ),
            (
                json!({"spec": {"clusterIP": "None"}}),
                json!(["IPv4", "IPv6"]),
                "RequireDualStack",
            ),
            (
                json!({"spec": {"clusterIP": "None", "selector": {"a": "b"}}}),
                json!(["IPv4"]),
                "SingleStack",
            ),
            (
                json!({"spec": {"clusterIP": "fd00::1"}}),
                json!(["IPv6"]),
                "SingleStack",
            ),
        ];
        for (mut svc, families, policy) in cases {
            default_object("", "Service", &mut svc);
            assert_eq!(svc["spec"]["ipFamilies"], families, "{svc}");
            assert_eq!(svc["spec"]["ipFamilyPolicy"], policy, "{svc}");
        }
        let mut ext = json!({"spec": {"type": "ExternalName", "externalName": "x.com"}});
        default_object("", "Service", &mut ext);
        assert!(ext["spec"].get("ipFamilies").is_none());
        assert!(ext["spec"].get("internalTrafficPolicy").is_none());
    }
}
