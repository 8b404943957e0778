//! The generated field table against an independent rule: a JSON name is the lowerCamelCase of
//! prost's snake_case name, except for the acronyms and special names listed here. A field
//! joined to the wrong Go field would break the rule.

use std::collections::BTreeSet;

use crate::protobuf::fields::FIELD_NAMES;

/// `(message, prost field, JSON name)` where prost's snake_case loses the Go spelling.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    ("BoundObjectReference", "u_id", "uid"),
    ("CSINodeDriver", "node_id", "nodeID"),
    ("NonResourceRule", "non_resource_ur_ls", "nonResourceURLs"),
    ("PolicyRule", "non_resource_ur_ls", "nonResourceURLs"),
    (
        "NonResourcePolicyRule",
        "non_resource_ur_ls",
        "nonResourceURLs",
    ),
    (
        "HorizontalPodAutoscalerSpec",
        "target_cpu_utilization_percentage",
        "targetCPUUtilizationPercentage",
    ),
    (
        "HorizontalPodAutoscalerStatus",
        "current_cpu_utilization_percentage",
        "currentCPUUtilizationPercentage",
    ),
    ("AwsElasticBlockStoreVolumeSource", "volume_id", "volumeID"),
    ("AzureDiskVolumeSource", "disk_uri", "diskURI"),
    ("CinderPersistentVolumeSource", "volume_id", "volumeID"),
    ("CinderVolumeSource", "volume_id", "volumeID"),
    ("ContainerPort", "host_ip", "hostIP"),
    ("ContainerStateTerminated", "container_id", "containerID"),
    ("ContainerStatus", "image_id", "imageID"),
    ("ContainerStatus", "container_id", "containerID"),
    ("DaemonEndpoint", "port", "Port"),
    ("FcVolumeSource", "target_ww_ns", "targetWWNs"),
    ("FlockerVolumeSource", "dataset_uuid", "datasetUUID"),
    ("NodeSpec", "pod_cidr", "podCIDR"),
    ("NodeSpec", "pod_cid_rs", "podCIDRs"),
    ("NodeSpec", "provider_id", "providerID"),
    ("NodeSpec", "external_id", "externalID"),
    ("NodeSystemInfo", "machine_id", "machineID"),
    ("NodeSystemInfo", "system_uuid", "systemUUID"),
    ("NodeSystemInfo", "boot_id", "bootID"),
    ("PersistentVolumeSource", "scale_io", "scaleIO"),
    ("PhotonPersistentDiskVolumeSource", "pd_id", "pdID"),
    ("PodSpec", "host_pid", "hostPID"),
    ("PodSpec", "host_ipc", "hostIPC"),
    ("PodSpec", "set_hostname_as_fqdn", "setHostnameAsFQDN"),
    ("PodStatus", "host_ip", "hostIP"),
    ("PodStatus", "host_ips", "hostIPs"),
    ("PodStatus", "pod_ip", "podIP"),
    ("PodStatus", "pod_ips", "podIPs"),
    ("PortworxVolumeSource", "volume_id", "volumeID"),
    ("ResourceHealth", "resource_id", "resourceID"),
    ("ServiceSpec", "cluster_ip", "clusterIP"),
    ("ServiceSpec", "cluster_ips", "clusterIPs"),
    ("ServiceSpec", "external_ips", "externalIPs"),
    ("ServiceSpec", "load_balancer_ip", "loadBalancerIP"),
    ("SessionAffinityConfig", "client_ip", "clientIP"),
    ("VolumeProjection", "downward_api", "downwardAPI"),
    ("VolumeSource", "downward_api", "downwardAPI"),
    ("VolumeSource", "scale_io", "scaleIO"),
    (
        "VsphereVirtualDiskVolumeSource",
        "storage_policy_id",
        "storagePolicyID",
    ),
    ("IngressClassParametersReference", "a_pi_group", "apiGroup"),
    (
        "APIGroup",
        "server_address_by_client_cid_rs",
        "serverAddressByClientCIDRs",
    ),
    (
        "APIVersions",
        "server_address_by_client_cid_rs",
        "serverAddressByClientCIDRs",
    ),
    ("ServerAddressByClientCIDR", "client_cidr", "clientCIDR"),
    (
        "CustomResourceValidation",
        "open_apiv3_schema",
        "openAPIV3Schema",
    ),
    ("JsonSchemaProps", "schema", "$schema"),
    ("JsonSchemaProps", "r#ref", "$ref"),
    (
        "JsonSchemaProps",
        "x_kubernetes_preserve_unknown_fields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_embedded_resource",
        "x-kubernetes-embedded-resource",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_int_or_string",
        "x-kubernetes-int-or-string",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_list_map_keys",
        "x-kubernetes-list-map-keys",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_list_type",
        "x-kubernetes-list-type",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_map_type",
        "x-kubernetes-map-type",
    ),
    (
        "JsonSchemaProps",
        "x_kubernetes_validations",
        "x-kubernetes-validations",
    ),
    (
        "APIServiceSpec",
        "insecure_skip_tls_verify",
        "insecureSkipTLSVerify",
    ),
];

/// `pod_i_ps` → `podIPs`: the inverse of prost's (heck's) snake_case for most names.
fn lower_camel(snake: &str) -> String {
    let snake = snake.strip_prefix("r#").unwrap_or(snake);
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn json_names_follow_prost_names() {
    let mut used = BTreeSet::new();
    let mut wrong = Vec::new();
    for (message, fields) in FIELD_NAMES {
        let short = message.rsplit("::").next().unwrap_or(message).trim();
        for (field, json) in *fields {
            if json.is_empty() {
                // An inlined struct has no name of its own.
                continue;
            }
            if let Some(exception) = EXCEPTIONS
                .iter()
                .find(|(m, f, _)| *m == short && f == field)
            {
                used.insert(*exception);
                if exception.2 != *json {
                    wrong.push(format!("{short}.{field}: {json}, expected {}", exception.2));
                }
            } else if lower_camel(field) != *json {
                wrong.push(format!("{short}.{field}: {json}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let unused: Vec<_> = EXCEPTIONS.iter().filter(|e| !used.contains(*e)).collect();
    assert!(unused.is_empty(), "stale exceptions: {unused:?}");
}

#[test]
fn lower_camel_cases() {
    for (snake, camel) in [
        ("name", "name"),
        ("pod_i_ps", "podIPs"),
        ("r#type", "type"),
        ("api_version", "apiVersion"),
        ("x_kubernetes_list_type", "xKubernetesListType"),
    ] {
        assert_eq!(lower_camel(snake), camel);
    }
}

#[test]
fn inlined_structs_are_the_known_ones() {
    let inlined: BTreeSet<(&str, &str)> = FIELD_NAMES
        .iter()
        .flat_map(|(message, fields)| {
            let short = message.rsplit("::").next().unwrap_or(message).trim();
            fields
                .iter()
                .filter(|(_, json)| json.is_empty())
                .map(move |(field, _)| (short, *field))
        })
        .collect();
    let expected: BTreeSet<(&str, &str)> = [
        ("ConfigMapEnvSource", "local_object_reference"),
        ("ConfigMapKeySelector", "local_object_reference"),
        ("ConfigMapProjection", "local_object_reference"),
        ("ConfigMapVolumeSource", "local_object_reference"),
        ("EphemeralContainer", "ephemeral_container_common"),
        ("IngressRule", "ingress_rule_value"),
        // admissionregistration/v1: `Rule` inlined in RuleWithOperations, which is inlined in
        // NamedRuleWithOperations.
        ("NamedRuleWithOperations", "rule_with_operations"),
        ("RuleWithOperations", "rule"),
        ("PersistentVolumeSpec", "persistent_volume_source"),
        ("Probe", "handler"),
        ("SecretEnvSource", "local_object_reference"),
        ("SecretKeySelector", "local_object_reference"),
        ("SecretProjection", "local_object_reference"),
        ("Volume", "volume_source"),
    ]
    .into_iter()
    .collect();
    assert_eq!(inlined, expected);
}
