//! Simulated nodes: registered at start like kubelets (or KWOK) would, Ready, with the
//! configured allocatable resources.

use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::{SimulatorConfig, SimulatorError};

/// The label marking nodes this simulator manages (KWOK's `type=kwok`).
const SIMULATED_LABEL: &str = "type";
const SIMULATED_VALUE: &str = "kwok";
/// The InternalIP of the `i`-th node.
fn node_ip(i: u32) -> String {
    format!("10.0.{}.{}", i / 250, i % 250 + 1)
}

/// The name of the `i`-th simulated node (1-based).
pub fn node_name(prefix: &str, i: u32) -> String {
    format!("{prefix}-node-{i}")
}

fn node_object(name: &str, ip: &str, config: &SimulatorConfig, kubelet_version: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                SIMULATED_LABEL: SIMULATED_VALUE,
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
    })
    .as_object()
    .map(|m| {
        let mut m = m.clone();
        m.insert(
            "status".into(),
            node_status(name, ip, config, kubelet_version),
        );
        Value::Object(m)
    })
    .unwrap_or(Value::Null)
}

fn node_status(name: &str, ip: &str, config: &SimulatorConfig, kubelet_version: &str) -> Value {
    let now = k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
        .to_string();
    let resources = json!({
        "cpu": config.node_cpu,
        "memory": config.node_memory,
        "pods": config.node_pods,
    });
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        })
    };
    json!({
        "allocatable": resources,
        "capacity": resources,
        "phase": "Running",
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": ip},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": "",
            "containerRuntimeVersion": "kwok",
            "kernelVersion": "",
            "kubeProxyVersion": kubelet_version,
            "kubeletVersion": kubelet_version,
            "machineID": "",
            "operatingSystem": "linux",
            "osImage": "",
            "systemUUID": "",
        },
    })
}

/// Registers (or refreshes) the configured nodes and removes simulated nodes beyond the
/// configured count.
pub(super) async fn ensure(
    client: &kube::Client,
    config: &SimulatorConfig,
) -> Result<(), SimulatorError> {
    let kubelet_version = client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .unwrap_or_else(|_| "v1.32.0".into());
    let nodes = Api::<Node>::all(client.clone());
    let err = |node: &str| {
        let node = node.to_owned();
        move |source| SimulatorError::Node { node, source }
    };
    let wanted: Vec<String> = (1..=config.nodes)
        .map(|i| node_name(&config.node_prefix, i))
        .collect();
    for (i, name) in (1..).zip(&wanted) {
        let obj = node_object(name, &node_ip(i), config, &kubelet_version);
        let node: Node = serde_json::from_value(obj.clone()).unwrap_or_default();
        let created = match nodes.create(&PostParams::default(), &node).await {
            Ok(n) => Some(n),
            Err(kube::Error::Api(s)) if s.is_already_exists() => None,
            Err(e) => return Err(err(name)(e)),
        };
        // The status of a new node may have been reset on create; a restarted member
        // refreshes heartbeats and resources.
        let has_status = created
            .as_ref()
            .and_then(|n| n.status.as_ref())
            .and_then(|s| s.allocatable.as_ref())
            .is_some_and(|a| a.contains_key("cpu"));
        if !has_status {
            let patch = json!({"status": obj.get("status").cloned().unwrap_or(Value::Null)});
            nodes
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(err(name))?;
        }
    }
    let selector = format!("{SIMULATED_LABEL}={SIMULATED_VALUE}");
    let existing = nodes
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(err("*"))?;
    let prefix = format!("{}-node-", config.node_prefix);
    for n in existing.items {
        let name = n.name_any();
        if name.starts_with(&prefix) && !wanted.contains(&name) {
            match nodes.delete(&name, &Default::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => return Err(err(&name)(e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_the_configured_resources() {
        let config = SimulatorConfig {
            node_cpu: "4".into(),
            node_memory: "16Gi".into(),
            node_pods: "50".into(),
            ..Default::default()
        };
        let obj = node_object("m1-node-1", "10.0.0.2", &config, "v1.32.0");
        let node: Node = serde_json::from_value(obj).unwrap();
        let status = node.status.unwrap();
        let alloc = status.allocatable.unwrap();
        assert_eq!(alloc["cpu"].0, "4");
        assert_eq!(alloc["memory"].0, "16Gi");
        assert_eq!(alloc["pods"].0, "50");
        let ready = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.status, "True");
        assert_eq!(node_name("m1", 2), "m1-node-2");
    }
}
