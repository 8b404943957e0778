//! What kube's registry strategies do to an object before validation
//! (PrepareForCreate/PrepareForUpdate in pkg/registry/*/strategy.go, rest.BeforeUpdate, and the
//! service registry's patchAllocatedValues/NormalizeClusterIPs/dropTypeDependentFields).

use serde_json::{Value, json};

use super::batch;
use super::json;

/// The status a new object starts with (PrepareForCreate resets it), as Go serializes the
/// zero value; `None` for kinds without status.
fn initial_status(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    Some(match (group, kind) {
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") => json!({}),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => json!({"replicas": 0}),
        ("storage.k8s.io", "VolumeAttachment") => json!({"attached": false}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0
        }),
        ("", "Service") | ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("", "PersistentVolumeClaim" | "PersistentVolume") => json!({"phase": "Pending"}),
        ("", "Namespace") => json!({"phase": "Active"}),
        ("", "Pod") => json!({"phase": "Pending", "qosClass": pod_qos(obj)}),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if json::string(obj, "apiVersion") == "autoscaling/v1" {
                json!({"currentReplicas": 0, "desiredReplicas": 0})
            } else {
                json!({"desiredReplicas": 0})
            }
        }
        ("policy", "PodDisruptionBudget") => json!({
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0
        }),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            // The storage version is recorded as stored from the start.
            let stored: Vec<Value> = json::at(obj, &["spec", "versions"])
                .and_then(Value::as_array)
                .and_then(|vs| {
                    vs.iter()
                        .find(|v| json::boolean(v, "storage") == Some(true))
                })
                .map(|v| json!(json::string(v, "name")))
                .into_iter()
                .collect();
            json!({
                "conditions": null,
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": stored
            })
        }
        ("apiregistration.k8s.io", "APIService")
        | ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => json!({}),
        _ => return None,
    })
}

/// qos.GetPodQOS over cpu and memory.
fn pod_qos(pod: &Value) -> &'static str {
    let empty = Value::Null;
    let spec = json::field(pod, "spec").unwrap_or(&empty);
    let containers: Vec<&Value> = json::list(spec, "containers")
        .iter()
        .chain(json::list(spec, "initContainers"))
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let res = json::field(c, "resources").unwrap_or(&empty);
        let limits = json::field(res, "limits").unwrap_or(&empty);
        let requests = json::field(res, "requests").unwrap_or(&empty);
        for r in ["cpu", "memory"] {
            let (l, q) = (json::field(limits, r), json::field(requests, r));
            if l.is_some() || q.is_some() {
                any = true;
            }
            if l.is_none() || (q.is_some() && q != l) {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn has_status_subresource(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "apps",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        ) | ("batch", "Job" | "CronJob")
            | (
                "",
                "Service"
                    | "PersistentVolumeClaim"
                    | "PersistentVolume"
                    | "Namespace"
                    | "Pod"
                    | "ReplicationController"
            )
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("policy", "PodDisruptionBudget")
            | ("networking.k8s.io", "Ingress")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | ("storage.k8s.io", "VolumeAttachment")
            | ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
    )
}

/// PrepareForCreate of kube's strategies.
pub(crate) fn prepare_for_create(group: &str, kind: &str, obj: &mut Value) {
    if let Some(status) = initial_status(group, kind, obj)
        && let Some(m) = obj.as_object_mut()
    {
        m.insert("status".into(), status);
    }
    match (group, kind) {
        ("batch", "Job") => {
            batch::generate_selector(obj);
            // SetDefaults_Job again, as kube applies it when it reads the stored Job back: an
            // unlabelled Job takes its template's (now generated) labels.
            let labels = json::at(obj, &["spec", "template", "metadata", "labels"]).cloned();
            if let Some(labels) = labels.filter(Value::is_object)
                && let Some(meta) = json::obj_mut(obj, "metadata")
                && json::is_empty(meta.get("labels"))
            {
                meta["labels"] = labels;
            }
        }
        ("", "Namespace") => {
            // Required on create only: it may be removed later through /finalize.
            if let Some(spec) = json::obj_mut(obj, "spec")
                && let Some(f) = json::obj_mut_list(spec, "finalizers")
                && !f.iter().any(|x| x.as_str() == Some("kubernetes"))
            {
                f.push(json!("kubernetes"));
            }
        }
        _ => {}
    }
}

/// rest.BeforeUpdate's metadata carry-over plus PrepareForUpdate of kube's strategies.
pub(crate) fn prepare_for_update(group: &str, kind: &str, new: &mut Value, old: &Value) {
    let empty = Value::Null;
    let old_meta = json::field(old, "metadata").unwrap_or(&empty).clone();
    if let Some(meta) = json::obj_mut(new, "metadata").and_then(Value::as_object_mut) {
        if meta
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
            && let Some(uid) = json::field(&old_meta, "uid")
        {
            meta.insert("uid".into(), uid.clone());
        }
        if let Some(ts) = json::field(&old_meta, "creationTimestamp") {
            meta.insert("creationTimestamp".into(), ts.clone());
        }
        if let Some(ts) = json::field(&old_meta, "deletionTimestamp") {
            meta.insert("deletionTimestamp".into(), ts.clone());
        }
        if meta
            .get("deletionGracePeriodSeconds")
            .is_none_or(Value::is_null)
            && let Some(g) = json::field(&old_meta, "deletionGracePeriodSeconds")
        {
            meta.insert("deletionGracePeriodSeconds".into(), g.clone());
        }
    }
    if has_status_subresource(group, kind)
        && let Some(m) = new.as_object_mut()
    {
        match json::field(old, "status") {
            Some(s) => m.insert("status".into(), s.clone()),
            None => m.remove("status"),
        };
    }
    match (group, kind) {
        ("", "Namespace") => {
            let old_finalizers = json::at(old, &["spec", "finalizers"]).cloned();
            if let Some(spec) = json::obj_mut(new, "spec").and_then(Value::as_object_mut) {
                match old_finalizers {
                    Some(f) => spec.insert("finalizers".into(), f),
                    None => spec.remove("finalizers"),
                };
            }
        }
        ("", "Service") => prepare_service_update(new, old),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => record_storage_version(new),
        _ => {}
    }
}

/// The CRD strategy appends a new storage version to `status.storedVersions`.
fn record_storage_version(crd: &mut Value) {
    let storage = json::at(crd, &["spec", "versions"])
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| json::boolean(v, "storage") == Some(true))
        })
        .map(|v| json::string(v, "name").to_string());
    let Some(storage) = storage.filter(|s| !s.is_empty()) else {
        return;
    };
    if let Some(status) = json::obj_mut(crd, "status")
        && let Some(stored) = json::obj_mut_list(status, "storedVersions")
        && !stored.iter().any(|v| v.as_str() == Some(storage.as_str()))
    {
        stored.push(json!(storage));
    }
}

fn svc_type(spec: &Value) -> &str {
    json::string(spec, "type")
}

fn needs_cluster_ip(spec: &Value) -> bool {
    matches!(
        svc_type(spec),
        "ClusterIP" | "NodePort" | "LoadBalancer" | ""
    )
}

fn needs_node_port(spec: &Value) -> bool {
    matches!(svc_type(spec), "NodePort" | "LoadBalancer")
}

fn needs_hc_node_port(spec: &Value) -> bool {
    svc_type(spec) == "LoadBalancer" && json::string(spec, "externalTrafficPolicy") == "Local"
}

fn externally_accessible(spec: &Value) -> bool {
    match svc_type(spec) {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => !json::list(spec, "externalIPs").is_empty(),
        _ => false,
    }
}

fn same(a: &Value, b: &Value, key: &str) -> bool {
    json::semantic_eq(json::field(a, key), json::field(b, key))
}

fn node_ports(spec: &Value) -> Vec<i64> {
    json::list(spec, "ports")
        .iter()
        .filter_map(|p| json::int(p, "nodePort"))
        .filter(|n| *n != 0)
        .collect()
}

/// patchAllocatedValues, NormalizeClusterIPs (update) and dropTypeDependentFields.
fn prepare_service_update(new: &mut Value, old: &Value) {
    let empty = Value::Null;
    let os = json::field(old, "spec").unwrap_or(&empty).clone();
    let Some(ns) = json::obj_mut(new, "spec") else {
        return;
    };
    // patchAllocatedValues: fill in what the client left out and the registry allocated.
    if needs_cluster_ip(&os) && needs_cluster_ip(ns) {
        if json::string(ns, "clusterIP").is_empty()
            && let Some(ip) = json::field(&os, "clusterIP")
        {
            ns["clusterIP"] = ip.clone();
        }
        if json::list(ns, "clusterIPs").is_empty() && !json::list(&os, "clusterIPs").is_empty() {
            ns["clusterIPs"] = os["clusterIPs"].clone();
        }
    }
    if needs_node_port(&os) && needs_node_port(ns) {
        let used_new = node_ports(ns);
        let used: Vec<i64> = node_ports(&os)
            .into_iter()
            .filter(|p| used_new.contains(p))
            .collect();
        let by_name: Vec<(String, i64)> = json::list(&os, "ports")
            .iter()
            .map(|p| {
                (
                    json::string(p, "name").to_string(),
                    json::int(p, "nodePort").unwrap_or(0),
                )
            })
            .collect();
        json::each_mut(ns, "ports", |p| {
            if json::int(p, "nodePort").unwrap_or(0) == 0 {
                let name = json::string(p, "name").to_string();
                if let Some((_, v)) = by_name.iter().rev().find(|(n, _)| *n == name)
                    && *v != 0
                    && !used.contains(v)
                {
                    p["nodePort"] = json!(v);
                }
            }
        });
    }
    if needs_hc_node_port(&os)
        && needs_hc_node_port(ns)
        && json::int(ns, "healthCheckNodePort").unwrap_or(0) == 0
        && let Some(v) = json::field(&os, "healthCheckNodePort")
    {
        ns["healthCheckNodePort"] = v.clone();
    }
    // NormalizeClusterIPs on update.
    let (new_ip, old_ip) = (
        json::string(ns, "clusterIP").to_string(),
        json::string(&os, "clusterIP").to_string(),
    );
    if !json::list(&os, "clusterIPs").is_empty()
        && json::list(ns, "clusterIPs").is_empty()
        && new_ip == old_ip
    {
        ns["clusterIPs"] = os["clusterIPs"].clone();
    }
    if new_ip != old_ip
        && same(ns, &os, "clusterIPs")
        && let Some(m) = ns.as_object_mut()
    {
        if !old_ip.is_empty() && new_ip.is_empty() {
            m.remove("clusterIPs");
        } else {
            m.insert("clusterIPs".into(), json!([new_ip]));
        }
    }
    // dropTypeDependentFields: wipe what the new type no longer uses, unless the user changed it.
    let Some(m) = ns.as_object_mut() else {
        return;
    };
    let snapshot = Value::Object(m.clone());
    if needs_cluster_ip(&os) && !needs_cluster_ip(&snapshot) {
        if same(&snapshot, &os, "clusterIPs") {
            m.remove("clusterIP");
            m.remove("clusterIPs");
        }
        for key in ["ipFamilies", "ipFamilyPolicy"] {
            if same(&snapshot, &os, key) {
                m.remove(key);
            }
        }
    }
    if needs_node_port(&os)
        && !needs_node_port(&snapshot)
        && node_ports(&snapshot) == node_ports(&os)
        && let Some(ports) = m.get_mut("ports").and_then(Value::as_array_mut)
    {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.remove("nodePort");
        }
    }
    if needs_hc_node_port(&os)
        && !needs_hc_node_port(&snapshot)
        && same(&snapshot, &os, "healthCheckNodePort")
    {
        m.remove("healthCheckNodePort");
    }
    if svc_type(&os) == "LoadBalancer" && svc_type(&snapshot) != "LoadBalancer" {
        if json::field(&snapshot, "allocateLoadBalancerNodePorts").is_some()
            && same(&snapshot, &os, "allocateLoadBalancerNodePorts")
        {
            m.remove("allocateLoadBalancerNodePorts");
        }
        if same(&snapshot, &os, "loadBalancerClass") {
            m.remove("loadBalancerClass");
        }
    }
    if externally_accessible(&os)
        && !externally_accessible(&snapshot)
        && same(&snapshot, &os, "externalTrafficPolicy")
    {
        m.remove("externalTrafficPolicy");
    }
    if svc_type(&snapshot) != "LoadBalancer"
        && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("loadBalancer".into(), json!({}));
    }
}
