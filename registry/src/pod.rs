//! PodSpec and PodTemplateSpec validation, following pkg/apis/core/validation
//! (ValidatePodTemplateSpec, ValidatePodSpec, validateContainers, ValidateVolumes) for the
//! checks users meet in practice. Fields kube validates that are not listed here are accepted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::json;
use super::meta;
use super::names;
use apimachinery::quantity::Quantity;
use apimachinery::status::Cause;

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// Volume source fields of core/v1 VolumeSource.
const VOLUME_SOURCES: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "quobyte",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// ValidatePodTemplateSpec.
pub(crate) fn validate_pod_template_spec(t: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let empty = Value::Null;
    let meta = t.get("metadata").unwrap_or(&empty);
    errs.extend(meta::validate_labels(
        json::string_map(meta, "labels").as_ref(),
        &path.child("labels"),
    ));
    errs.extend(meta::validate_annotations(
        json::string_map(meta, "annotations").as_ref(),
        &path.child("annotations"),
    ));
    let spec = t.get("spec").unwrap_or(&empty);
    errs.extend(validate_pod_spec(spec, &path.child("spec"), false));
    if !json::list(spec, "ephemeralContainers").is_empty() {
        errs.push(field::forbidden(
            &path.children(&["spec", "ephemeralContainers"]),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// ValidatePodSpec. `is_pod` selects the Pod-only rules (hostPort under hostNetwork).
pub(crate) fn validate_pod_spec(spec: &Value, path: &Path, is_pod: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    if json::field(spec, "terminationGracePeriodSeconds").is_none() {
        errs.push(field::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let grace = json::int(spec, "terminationGracePeriodSeconds");
    let volumes = validate_volumes(spec, &path.child("volumes"), &mut errs);
    errs.extend(validate_containers(
        spec,
        &volumes,
        grace,
        &path.child("containers"),
    ));
    errs.extend(validate_init_containers(
        spec,
        &volumes,
        grace,
        &path.child("initContainers"),
    ));
    errs.extend(validate_host_network(spec, path, is_pod));
    errs.extend(enum_required(
        spec,
        "restartPolicy",
        &["Always", "OnFailure", "Never"],
        path,
    ));
    errs.extend(enum_required(
        spec,
        "dnsPolicy",
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        path,
    ));
    errs.extend(meta::validate_labels(
        json::string_map(spec, "nodeSelector").as_ref(),
        &path.child("nodeSelector"),
    ));
    for (i, s) in json::list(spec, "imagePullSecrets").iter().enumerate() {
        let only_name = s.as_object().is_some_and(|m| m.keys().all(|k| k == "name"));
        if !only_name {
            errs.push(field::invalid(
                &path.child("imagePullSecrets").index(i),
                Bad::Raw(format!(
                    "core.LocalObjectReference{{Name:{}}}",
                    field::go_quote(json::string(s, "name"))
                )),
                "only name may be set",
            ));
        }
    }
    if json::string(spec, "dnsPolicy") == "None" {
        match json::field(spec, "dnsConfig") {
            None => errs.push(field::required(
                &path.child("dnsConfig"),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )),
            Some(c) if json::list(c, "nameservers").is_empty() => errs.push(field::required(
                &path.children(&["dnsConfig", "nameservers"]),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )),
            _ => {}
        }
    }
    for (key, name_fn) in [
        (
            "serviceAccountName",
            names::name_is_dns_subdomain as fn(&str, bool) -> Vec<String>,
        ),
        ("nodeName", names::name_is_dns_subdomain),
        ("priorityClassName", names::name_is_dns_subdomain),
    ] {
        let v = json::string(spec, key);
        if !v.is_empty() {
            for m in name_fn(v, false) {
                errs.push(field::invalid(&path.child(key), Bad::str(v), &m));
            }
        }
    }
    if let Some(ads) = json::int(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(field::invalid(
            &path.child("activeDeadlineSeconds"),
            Bad::Int(ads),
            &names::inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = json::string(spec, key);
        if !v.is_empty() {
            for m in names::dns1123_label(v) {
                errs.push(field::invalid(&path.child(key), Bad::str(v), &m));
            }
        }
    }
    errs.extend(validate_tolerations(spec, &path.child("tolerations")));
    errs
}

fn enum_required(obj: &Value, key: &str, valid: &[&str], path: &Path) -> Vec<Cause> {
    let v = json::string(obj, key);
    if v.is_empty() {
        vec![field::required(&path.child(key), "")]
    } else if !valid.contains(&v) {
        vec![field::not_supported(&path.child(key), Bad::str(v), valid)]
    } else {
        Vec::new()
    }
}

pub(crate) fn validate_tolerations(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, t) in json::list(spec, "tolerations").iter().enumerate() {
        let p = path.index(i);
        let key = json::string(t, "key");
        let op = json::string(t, "operator");
        let value = json::string(t, "value");
        let effect = json::string(t, "effect");
        if !key.is_empty() {
            for m in names::qualified_name(key) {
                errs.push(field::invalid(&p.child("key"), Bad::str(key), &m));
            }
        }
        if key.is_empty() && op != "Exists" {
            errs.push(field::invalid(
                &p.child("operator"),
                Bad::str(op),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if json::field(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            errs.push(field::invalid(
                &p.child("effect"),
                Bad::str(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let msgs = names::label_value(value);
                if !msgs.is_empty() {
                    errs.push(field::invalid(
                        &p.child("operator"),
                        Bad::str(value),
                        &msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(field::invalid(
                        &p.child("operator"),
                        Bad::str(value),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            _ => errs.push(field::not_supported(
                &p.child("operator"),
                Bad::str(op),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errs.push(field::not_supported(
                &p.child("effect"),
                Bad::str(effect),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

fn validate_host_network(spec: &Value, path: &Path, is_pod: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    if json::boolean(spec, "hostNetwork") != Some(true) {
        return errs;
    }
    for (i, c) in json::list(spec, "containers").iter().enumerate() {
        for (j, p) in json::list(c, "ports").iter().enumerate() {
            let hp = json::int(p, "hostPort").unwrap_or(0);
            let cp = json::int(p, "containerPort").unwrap_or(0);
            if (is_pod || hp != 0) && hp != cp {
                errs.push(field::invalid(
                    &path
                        .child("containers")
                        .index(i)
                        .child("ports")
                        .index(j)
                        .child("hostPort"),
                    Bad::Int(hp),
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

/// ValidateVolumes: returns the names of the valid volumes.
fn validate_volumes(spec: &Value, path: &Path, errs: &mut Vec<Cause>) -> BTreeSet<String> {
    let mut names_seen = BTreeSet::new();
    for (i, v) in json::list(spec, "volumes").iter().enumerate() {
        let p = path.index(i);
        let mut el = validate_volume_source(v, &p);
        let name = json::string(v, "name");
        if name.is_empty() {
            el.push(field::required(&p.child("name"), ""));
        } else {
            for m in names::dns1123_label(name) {
                el.push(field::invalid(&p.child("name"), Bad::str(name), &m));
            }
        }
        if names_seen.contains(name) {
            el.push(field::duplicate(&p.child("name"), Bad::str(name)));
        }
        if el.is_empty() {
            names_seen.insert(name.to_string());
        } else {
            errs.extend(el);
        }
    }
    names_seen
}

fn validate_file_mode(v: &Value, key: &str, path: &Path, errs: &mut Vec<Cause>) {
    if let Some(mode) = json::int(v, key)
        && !(0..=0o777).contains(&mode)
    {
        errs.push(field::invalid(
            &path.child(key),
            Bad::Int(mode),
            FILE_MODE_MSG,
        ));
    }
}

fn validate_key_to_paths(v: &Value, path: &Path, errs: &mut Vec<Cause>) {
    for (i, kp) in json::list(v, "items").iter().enumerate() {
        let p = path.child("items").index(i);
        if json::string(kp, "key").is_empty() {
            errs.push(field::required(&p.child("key"), ""));
        }
        let target = json::string(kp, "path");
        if target.is_empty() {
            errs.push(field::required(&p.child("path"), ""));
        }
        errs.extend(validate_local_non_reserved_path(target, &p.child("path")));
        validate_file_mode(kp, "mode", &p, errs);
    }
}

/// validateLocalDescendingPath and the `..` prefix rule of ValidateLocalNonReservedPath.
fn validate_local_non_reserved_path(target: &str, path: &Path) -> Vec<Cause> {
    let mut errs = validate_local_descending_path(target, path);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(field::invalid(
            path,
            Bad::str(target),
            "must not start with '..'",
        ));
    }
    errs
}

fn validate_local_descending_path(target: &str, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(field::invalid(
            path,
            Bad::str(target),
            "must be a relative path",
        ));
    }
    if target.split('/').any(|part| part == "..") {
        errs.push(field::invalid(
            path,
            Bad::str(target),
            "must not contain '..'",
        ));
    }
    errs
}

fn validate_volume_source(v: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut count = 0;
    for &source in VOLUME_SOURCES {
        let Some(src) = json::field(v, source) else {
            continue;
        };
        let p = path.child(source);
        if count > 0 {
            errs.push(field::forbidden(
                &p,
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        match source {
            "hostPath" if json::string(src, "path").is_empty() => {
                errs.push(field::required(&p.child("path"), ""));
            }
            "secret" => {
                if json::string(src, "secretName").is_empty() {
                    errs.push(field::required(&p.child("secretName"), ""));
                }
                validate_file_mode(src, "defaultMode", &p, &mut errs);
                validate_key_to_paths(src, &p, &mut errs);
            }
            "configMap" => {
                if json::string(src, "name").is_empty() {
                    errs.push(field::required(&p.child("name"), ""));
                }
                validate_file_mode(src, "defaultMode", &p, &mut errs);
                validate_key_to_paths(src, &p, &mut errs);
            }
            "persistentVolumeClaim" if json::string(src, "claimName").is_empty() => {
                errs.push(field::required(&p.child("claimName"), ""));
            }
            "nfs" => {
                if json::string(src, "server").is_empty() {
                    errs.push(field::required(&p.child("server"), ""));
                }
                let nfs_path = json::string(src, "path");
                if nfs_path.is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                } else if !nfs_path.starts_with('/') {
                    errs.push(field::invalid(
                        &p.child("path"),
                        Bad::str(nfs_path),
                        "must be an absolute path",
                    ));
                }
            }
            "csi" if json::string(src, "driver").is_empty() => {
                errs.push(field::required(&p.child("driver"), ""));
            }
            "downwardAPI" | "projected" => {
                validate_file_mode(src, "defaultMode", &p, &mut errs);
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(field::required(path, "must specify a volume type"));
    }
    errs
}

/// validateContainers.
fn validate_containers(
    spec: &Value,
    volumes: &BTreeSet<String>,
    grace: Option<i64>,
    path: &Path,
) -> Vec<Cause> {
    let containers = json::list(spec, "containers");
    if containers.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, volumes, &p));
        let name = json::string(c, "name");
        if !seen.insert(name.to_string()) {
            errs.push(field::duplicate(&p.child("name"), Bad::str(name)));
        }
        errs.extend(validate_probes_and_lifecycle(c, grace, &p));
        if json::field(c, "restartPolicy").is_some() {
            errs.push(field::forbidden(
                &p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(host_port_conflicts(containers, path));
    errs
}

fn validate_init_containers(
    spec: &Value,
    volumes: &BTreeSet<String>,
    grace: Option<i64>,
    path: &Path,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut seen: BTreeSet<String> = json::list(spec, "containers")
        .iter()
        .map(|c| json::string(c, "name").to_string())
        .collect();
    for (i, c) in json::list(spec, "initContainers").iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, volumes, &p));
        let restart = json::opt_str(c, "restartPolicy");
        if let Some(r) = restart
            && r != "Always"
        {
            errs.push(field::not_supported(
                &p.child("restartPolicy"),
                Bad::str(r),
                &["Always"],
            ));
        }
        let name = json::string(c, "name");
        if seen.contains(name) {
            errs.push(field::duplicate(&p.child("name"), Bad::str(name)));
        } else if !name.is_empty() {
            seen.insert(name.to_string());
        }
        errs.extend(host_port_conflicts(std::slice::from_ref(c), path));
        if restart == Some("Always") {
            errs.extend(validate_probes_and_lifecycle(c, grace, &p));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if json::field(c, key).is_some() {
                    errs.push(field::forbidden(
                        &p.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

fn host_port_conflicts(containers: &[Value], path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in json::list(c, "ports").iter().enumerate() {
            let hp = json::int(p, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{hp}",
                json::string(p, "protocol"),
                json::string(p, "hostIP")
            );
            if !seen.insert(key.clone()) {
                errs.push(field::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    Bad::Str(key),
                ));
            }
        }
    }
    errs
}

/// validateContainerCommon.
fn validate_container_common(c: &Value, volumes: &BTreeSet<String>, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = json::string(c, "name");
    if name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    } else {
        for m in names::dns1123_label(name) {
            errs.push(field::invalid(&path.child("name"), Bad::str(name), &m));
        }
    }
    if json::string(c, "image").is_empty() {
        errs.push(field::required(&path.child("image"), ""));
    }
    match json::string(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(field::required(&path.child("terminationMessagePolicy"), "")),
        other => errs.push(field::not_supported(
            &path.child("terminationMessagePolicy"),
            Bad::str(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    errs.extend(validate_container_ports(c, &path.child("ports")));
    errs.extend(validate_env(c, &path.child("env")));
    errs.extend(validate_env_from(c, &path.child("envFrom")));
    errs.extend(validate_volume_mounts(
        c,
        volumes,
        &path.child("volumeMounts"),
    ));
    match json::string(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(field::required(&path.child("imagePullPolicy"), "")),
        other => errs.push(field::not_supported(
            &path.child("imagePullPolicy"),
            Bad::str(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    if let Some(r) = json::field(c, "resources") {
        errs.extend(validate_resource_requirements(r, &path.child("resources")));
    }
    errs
}

fn validate_container_ports(c: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, port) in json::list(c, "ports").iter().enumerate() {
        let p = path.index(i);
        let name = json::string(port, "name");
        if !name.is_empty() {
            let msgs = names::port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(field::invalid(&p.child("name"), Bad::str(name), &m));
                }
            } else if !seen.insert(name.to_string()) {
                errs.push(field::duplicate(&p.child("name"), Bad::str(name)));
            }
        }
        let cp = json::int(port, "containerPort").unwrap_or(0);
        if cp == 0 {
            errs.push(field::required(&p.child("containerPort"), ""));
        } else {
            for m in names::port_num(cp) {
                errs.push(field::invalid(&p.child("containerPort"), Bad::Int(cp), &m));
            }
        }
        let hp = json::int(port, "hostPort").unwrap_or(0);
        if hp != 0 {
            for m in names::port_num(hp) {
                errs.push(field::invalid(&p.child("hostPort"), Bad::Int(hp), &m));
            }
        }
        errs.extend(validate_protocol(port, &p));
    }
    errs
}

/// Port protocol: required, one of SCTP/TCP/UDP.
pub(crate) fn validate_protocol(port: &Value, path: &Path) -> Vec<Cause> {
    match json::string(port, "protocol") {
        "" => vec![field::required(&path.child("protocol"), "")],
        "TCP" | "UDP" | "SCTP" => Vec::new(),
        other => vec![field::not_supported(
            &path.child("protocol"),
            Bad::str(other),
            &["SCTP", "TCP", "UDP"],
        )],
    }
}

const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn validate_env(c: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, e) in json::list(c, "env").iter().enumerate() {
        let p = path.index(i);
        let name = json::string(e, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        } else {
            for m in names::relaxed_env_var_name(name) {
                errs.push(field::invalid(&p.child("name"), Bad::str(name), &m));
            }
        }
        let Some(vf) = json::field(e, "valueFrom") else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(fr) = json::field(vf, "fieldRef") {
            sources += 1;
            errs.extend(validate_object_field_selector(fr, &vp.child("fieldRef")));
        }
        if let Some(rf) = json::field(vf, "resourceFieldRef") {
            sources += 1;
            let resource = json::string(rf, "resource");
            let rp = vp.child("resourceFieldRef");
            if resource.is_empty() {
                errs.push(field::required(&rp.child("resource"), ""));
            } else if !matches!(
                resource,
                "limits.cpu"
                    | "limits.memory"
                    | "limits.ephemeral-storage"
                    | "requests.cpu"
                    | "requests.memory"
                    | "requests.ephemeral-storage"
            ) && !resource.starts_with("requests.hugepages-")
                && !resource.starts_with("limits.hugepages-")
            {
                errs.push(field::not_supported(
                    &rp.child("resource"),
                    Bad::str(resource),
                    &[
                        "limits.cpu",
                        "limits.ephemeral-storage",
                        "limits.memory",
                        "requests.cpu",
                        "requests.ephemeral-storage",
                        "requests.memory",
                    ],
                ));
            }
        }
        for key in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(r) = json::field(vf, key) {
                sources += 1;
                errs.extend(validate_key_selector(r, &vp.child(key)));
            }
        }
        if sources == 0 {
            errs.push(field::invalid(
                &vp,
                Bad::str(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !json::string(e, "value").is_empty() {
            errs.push(field::invalid(
                &vp,
                Bad::str(""),
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(field::invalid(
                &vp,
                Bad::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn validate_object_field_selector(fr: &Value, path: &Path) -> Vec<Cause> {
    let api_version = json::string(fr, "apiVersion");
    let fp = json::string(fr, "fieldPath");
    if api_version.is_empty() {
        return vec![field::required(&path.child("apiVersion"), "")];
    }
    if fp.is_empty() {
        return vec![field::required(&path.child("fieldPath"), "")];
    }
    if let Some(rest) = fp
        .strip_prefix("metadata.annotations['")
        .or_else(|| fp.strip_prefix("metadata.labels['"))
        && let Some(key) = rest.strip_suffix("']")
    {
        let key = if fp.starts_with("metadata.annotations") {
            key.to_lowercase()
        } else {
            key.to_string()
        };
        return names::qualified_name(&key)
            .into_iter()
            .map(|m| field::invalid(path, Bad::Str(key.clone()), &m))
            .collect();
    }
    if !ENV_FIELD_PATHS.contains(&fp) {
        return vec![field::not_supported(
            &path.child("fieldPath"),
            Bad::str(fp),
            ENV_FIELD_PATHS,
        )];
    }
    Vec::new()
}

fn validate_key_selector(r: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = json::string(r, "name");
    for m in names::name_is_dns_subdomain(name, false) {
        errs.push(field::invalid(&path.child("name"), Bad::str(name), &m));
    }
    let key = json::string(r, "key");
    if key.is_empty() {
        errs.push(field::required(&path.child("key"), ""));
    } else {
        for m in names::config_map_key(key) {
            errs.push(field::invalid(&path.child("key"), Bad::str(key), &m));
        }
    }
    errs
}

fn validate_env_from(c: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, e) in json::list(c, "envFrom").iter().enumerate() {
        let p = path.index(i);
        let prefix = json::string(e, "prefix");
        if !prefix.is_empty() {
            for m in names::relaxed_env_var_name(prefix) {
                errs.push(field::invalid(&p.child("prefix"), Bad::str(prefix), &m));
            }
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = json::field(e, key) {
                sources += 1;
                let name = json::string(r, "name");
                if name.is_empty() {
                    errs.push(field::required(&p.child(key).child("name"), ""));
                } else {
                    for m in names::name_is_dns_subdomain(name, true) {
                        errs.push(field::invalid(
                            &p.child(key).child("name"),
                            Bad::str(name),
                            &m,
                        ));
                    }
                }
            }
        }
        if sources == 0 {
            errs.push(field::invalid(
                path,
                Bad::str(""),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(field::invalid(
                path,
                Bad::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn validate_volume_mounts(c: &Value, volumes: &BTreeSet<String>, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut mount_points = BTreeSet::new();
    for (i, m) in json::list(c, "volumeMounts").iter().enumerate() {
        let p = path.index(i);
        let name = json::string(m, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(field::not_found(&p.child("name"), Bad::str(name)));
        }
        let mount_path = json::string(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(field::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_string()) {
            errs.push(field::invalid(
                &p.child("mountPath"),
                Bad::str(mount_path),
                "must be unique",
            ));
        }
        let sub_path = json::string(m, "subPath");
        if !sub_path.is_empty() {
            errs.extend(validate_local_descending_path(
                sub_path,
                &path.child("subPath"),
            ));
        }
        let expr = json::string(m, "subPathExpr");
        if !expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(field::invalid(
                    &p.child("subPathExpr"),
                    Bad::str(expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(validate_local_descending_path(
                expr,
                &path.child("subPathExpr"),
            ));
        }
    }
    errs
}

fn validate_probes_and_lifecycle(c: &Value, grace: Option<i64>, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(l) = json::field(c, "lifecycle") {
        for h in ["postStart", "preStop"] {
            if let Some(handler) = json::field(l, h) {
                errs.extend(validate_handler(
                    handler,
                    grace,
                    &path.child("lifecycle").child(h),
                ));
            }
        }
    }
    for (key, success_must_be_one) in [
        ("livenessProbe", true),
        ("readinessProbe", false),
        ("startupProbe", true),
    ] {
        let Some(probe) = json::field(c, key) else {
            continue;
        };
        let p = path.child(key);
        errs.extend(validate_handler(probe, grace, &p));
        for f in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            if let Some(v) = json::int(probe, f).filter(|v| *v < 0) {
                errs.push(field::invalid(
                    &p.child(f),
                    Bad::Int(v),
                    "must be greater than or equal to 0",
                ));
            }
        }
        if let Some(t) = json::int(probe, "terminationGracePeriodSeconds").filter(|t| *t <= 0) {
            errs.push(field::invalid(
                &p.child("terminationGracePeriodSeconds"),
                Bad::Int(t),
                "must be greater than 0",
            ));
        }
        let success = json::int(probe, "successThreshold").unwrap_or(0);
        if success_must_be_one && success != 1 {
            errs.push(field::invalid(
                &p.child("successThreshold"),
                Bad::Int(success),
                "must be 1",
            ));
        }
        if key == "readinessProbe"
            && let Some(t) = json::int(probe, "terminationGracePeriodSeconds")
        {
            errs.push(field::invalid(
                &p.child("terminationGracePeriodSeconds"),
                Bad::Int(t),
                "must not be set for readinessProbes",
            ));
        }
    }
    errs
}

/// validateHandler: exactly one handler type.
fn validate_handler(h: &Value, grace: Option<i64>, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut count = 0;
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        let Some(v) = json::field(h, kind) else {
            continue;
        };
        let p = path.child(kind);
        if count > 0 {
            errs.push(field::forbidden(
                &p,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        match kind {
            "exec" if json::list(v, "command").is_empty() => {
                errs.push(field::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if json::string(v, "path").is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                }
                errs.extend(validate_port_num_or_name(v.get("port"), &p.child("port")));
                let scheme = json::string(v, "scheme");
                if !matches!(scheme, "HTTP" | "HTTPS") {
                    errs.push(field::not_supported(
                        &p.child("scheme"),
                        Bad::str(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
                for header in json::list(v, "httpHeaders") {
                    let n = json::string(header, "name");
                    for m in names::http_header_name(n) {
                        errs.push(field::invalid(&p.child("httpHeaders"), Bad::str(n), &m));
                    }
                }
            }
            "tcpSocket" => {
                errs.extend(validate_port_num_or_name(v.get("port"), &p.child("port")));
            }
            "grpc" => {
                let port = json::int(v, "port").unwrap_or(0);
                for m in names::port_num(port) {
                    errs.push(field::invalid(&p.child("port"), Bad::Int(port), &m));
                }
            }
            "sleep" => {
                let secs = json::int(v, "seconds").unwrap_or(0);
                if let Some(g) = grace
                    && (secs <= 0 || secs > g)
                {
                    errs.push(field::invalid(
                        &p,
                        Bad::Int(secs),
                        &format!(
                            "must be greater than 0 and less than terminationGracePeriodSeconds ({g}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(field::required(path, "must specify a handler type"));
    }
    errs
}

/// ValidatePortNumOrName for an IntOrString port.
pub(crate) fn validate_port_num_or_name(port: Option<&Value>, path: &Path) -> Vec<Cause> {
    match port {
        Some(Value::String(s)) => names::port_name(s)
            .into_iter()
            .map(|m| field::invalid(path, Bad::str(s), &m))
            .collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            names::port_num(n)
                .into_iter()
                .map(|m| field::invalid(path, Bad::Int(n), &m))
                .collect()
        }
    }
}

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// validateContainerResourceName.
fn validate_container_resource_name(name: &str, path: &Path) -> Vec<Cause> {
    let mut errs: Vec<Cause> = names::qualified_name(name)
        .into_iter()
        .map(|m| field::invalid(path, Bad::str(name), &m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    let hugepages = name.starts_with("hugepages-") || name.starts_with("requests.hugepages-");
    if !name.contains('/') {
        if !STANDARD_RESOURCES.contains(&name) && !hugepages {
            errs.push(field::invalid(
                path,
                Bad::str(name),
                "must be a standard resource type or fully qualified",
            ));
        }
        let container_resource = matches!(name, "cpu" | "memory" | "ephemeral-storage")
            || name.starts_with("hugepages-");
        if !container_resource {
            errs.push(field::invalid(
                path,
                Bad::str(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !name.contains("kubernetes.io/") {
        // IsExtendedResourceName: not native, and `requests.<name>` is a qualified name.
        let extended = !name.starts_with("requests.")
            && names::qualified_name(&format!("requests.{name}")).is_empty();
        if !extended {
            errs.push(field::invalid(
                path,
                Bad::str(name),
                "doesn't follow extended resource name standard",
            ));
        }
    }
    errs
}

/// validateResourceRequirements for a container.
pub(crate) fn validate_resource_requirements(r: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let limits = parse_resource_list(r, "limits", &path.child("limits"), &mut errs);
    let requests = parse_resource_list(r, "requests", &path.child("requests"), &mut errs);
    for (name, q) in &requests {
        let Some(limit) = limits.get(name) else {
            continue;
        };
        let overcommit = !name.starts_with("hugepages-")
            && (!name.contains('/') || name.contains("kubernetes.io/"));
        let ord = q.cmp(limit);
        if !overcommit && ord != std::cmp::Ordering::Equal {
            errs.push(field::invalid(
                &path.child("requests"),
                Bad::Str(q.canonical()),
                &format!("must be equal to {name} limit of {}", limit.canonical()),
            ));
        } else if ord == std::cmp::Ordering::Greater {
            errs.push(field::invalid(
                &path.child("requests"),
                Bad::Str(q.canonical()),
                &format!(
                    "must be less than or equal to {name} limit of {}",
                    limit.canonical()
                ),
            ));
        }
    }
    for name in requests.keys() {
        let overcommit = !name.starts_with("hugepages-")
            && (!name.contains('/') || name.contains("kubernetes.io/"));
        if !overcommit && !limits.contains_key(name) {
            errs.push(field::required(
                &path.child("limits"),
                "Limit must be set for non overcommitable resources",
            ));
        }
    }
    let has = |m: &BTreeMap<String, Quantity>, f: &dyn Fn(&str) -> bool| m.keys().any(|k| f(k));
    let cpu_mem = |k: &str| k == "cpu" || k == "memory";
    let huge = |k: &str| k.starts_with("hugepages-");
    if !has(&limits, &cpu_mem)
        && !has(&requests, &cpu_mem)
        && (has(&limits, &huge) || has(&requests, &huge))
    {
        errs.push(field::forbidden(path, "HugePages require cpu or memory"));
    }
    errs
}

/// Parses and checks one resource list (names, quantities, non-negative).
pub(crate) fn parse_resource_list(
    r: &Value,
    key: &str,
    path: &Path,
    errs: &mut Vec<Cause>,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    for (name, v) in json::object(r, key).into_iter().flatten() {
        let p = path.key(name);
        errs.extend(validate_container_resource_name(name, &p));
        match Quantity::from_json(v) {
            Some(Ok(q)) => {
                if q.is_negative() {
                    errs.push(field::invalid(
                        &p,
                        Bad::Str(q.canonical()),
                        "must be greater than or equal to 0",
                    ));
                }
                out.insert(name.clone(), q);
            }
            Some(Err(e)) => errs.push(field::invalid(&p, Bad::Raw(v.to_string()), e)),
            None => errs.push(field::invalid(
                &p,
                Bad::Raw(v.to_string()),
                apimachinery::quantity::FORMAT_ERROR,
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::default_pod_template;
    use serde_json::json;

    fn check(template: Value) -> Vec<(String, String)> {
        let mut t = template;
        default_pod_template(&mut t);
        validate_pod_template_spec(&t, &Path::new("spec").child("template"))
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    #[test]
    fn valid_templates_pass() {
        let t = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{
                    "name": "web", "image": "nginx:1.25",
                    "ports": [{"name": "http", "containerPort": 80}],
                    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "envFrom": [{"configMapRef": {"name": "cfg"}}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "readinessProbe": {"httpGet": {"port": "http"}},
                    "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "1Gi"}}
                }],
                "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]}],
                "volumes": [{"name": "data", "emptyDir": {}}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
            }
        });
        assert_eq!(check(t), vec![]);
    }

    #[test]
    fn each_rule_reports_kube_field_and_message() {
        let p = "spec.template.spec";
        let cases: Vec<(Value, (String, &str))> = vec![
            (
                json!({"spec": {"containers": []}}),
                (format!("{p}.containers"), "Required value"),
            ),
            (
                json!({"spec": {"containers": [{"name": "c"}]}}),
                (format!("{p}.containers[0].image"), "Required value"),
            ),
            (
                json!({"spec": {"containers": [{"name": "Bad_C", "image": "x"}]}}),
                (
                    format!("{p}.containers[0].name"),
                    "Invalid value: \"Bad_C\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]}}),
                (format!("{p}.containers[1].name"), "Duplicate value: \"c\""),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]}}),
                (
                    format!("{p}.containers[0].ports[0].containerPort"),
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "protocol": "HTTP"}]}]}}),
                (
                    format!("{p}.containers[0].ports[0].protocol"),
                    "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
            ),
            (
                json!({"spec": {"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "x"}]}}),
                (
                    format!("{p}.restartPolicy"),
                    "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]}}),
                (
                    format!("{p}.containers[0].volumeMounts[0].name"),
                    "Not found: \"nope\"",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}),
                (
                    format!("{p}.containers[0].resources.requests"),
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"memory": "lots"}}}]}}),
                (
                    format!("{p}.containers[0].resources.limits[memory]"),
                    "Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 2}}]}}),
                (
                    format!("{p}.containers[0].livenessProbe.successThreshold"),
                    "Invalid value: 2: must be 1",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "readinessProbe": {"periodSeconds": 3}}]}}),
                (
                    format!("{p}.containers[0].readinessProbe"),
                    "Required value: must specify a handler type",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x", "env": [{"name": "A=B"}]}]}}),
                (
                    format!("{p}.containers[0].env[0].name"),
                    "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [{"name": "v", "secret": {}}]}}),
                (
                    format!("{p}.volumes[0].secret.secretName"),
                    "Required value",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/"}}]}}),
                (
                    format!("{p}.volumes[0].hostPath"),
                    "Forbidden: may not specify more than 1 volume type",
                ),
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "image": "x"}], "initContainers": [{"name": "c", "image": "y"}]}}),
                (
                    format!("{p}.initContainers[0].name"),
                    "Duplicate value: \"c\"",
                ),
            ),
            (
                json!({"metadata": {"labels": {"a": "b c"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                (
                    "spec.template.labels".to_string(),
                    "Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ),
            ),
        ];
        for (t, (field, msg)) in cases {
            let errs = check(t.clone());
            assert!(
                errs.iter().any(|(f, m)| *f == field && m == msg),
                "{t}: want {field}: {msg}, got {errs:?}"
            );
        }
    }
}
