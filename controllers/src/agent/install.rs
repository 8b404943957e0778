//! The agent installed into its member cluster, as `karmadactl register` installs
//! karmada-agent (pkg/karmadactl/register: `EnsureNecessaryResourcesExistInMemberCluster`,
//! `makeKarmadaAgentDeployment`) and `karmadactl unregister` removes it: in the agent's
//! namespace (`karmada-system` by default) the Secret `karmada-kubeconfig` with the agent's
//! control-plane kubeconfig, the ServiceAccount `karmada-agent-sa`, and the Deployment
//! `karmada-agent` whose pods run the agent with that kubeconfig mounted; cluster-wide the
//! ClusterRole and ClusterRoleBinding `karmada-agent` that let the ServiceAccount manage the
//! member. The pods run karmada-rs's image and its `agent` subcommand, with the flags
//! karmadactl gives karmada-agent.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use karmada_api::well_known::labels;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::join::{cluster_policy_rules, create_if_absent};

/// The Deployment, ClusterRole and ClusterRoleBinding (`names.KarmadaAgentComponentName`).
pub const AGENT_NAME: &str = "karmada-agent";
/// The agent's ServiceAccount in the member (`KarmadaAgentServiceAccountName`).
pub const SERVICE_ACCOUNT: &str = "karmada-agent-sa";
/// The Secret holding the agent's control-plane kubeconfig, and its key
/// (`KarmadaKubeconfigName`).
pub const KUBECONFIG_SECRET: &str = "karmada-kubeconfig";
/// Where the pods mount that Secret.
pub const KUBECONFIG_DIR: &str = "/etc/kubeconfig";
/// Where deploy/Dockerfile installs the binary in the image.
pub const AGENT_BINARY: &str = "/usr/local/bin/karmada-rs";
/// The agent's metrics port (karmadactl's `--metrics-bind-address=:8080`).
pub const METRICS_PORT: u16 = 8080;
/// The agent's health probe address (karmadactl's `--health-probe-bind-address`).
pub const HEALTH_PROBE_ADDRESS: &str = "0.0.0.0:10357";

/// What the installed agent is told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentDeployment {
    /// Namespace of the agent's objects (`-n/--namespace`).
    pub namespace: String,
    /// The cluster it serves (`--cluster-name`).
    pub cluster: String,
    /// Its image (`--karmada-agent-image`).
    pub image: String,
    /// How many agents run (`--karmada-agent-replicas`); they elect one to act.
    pub replicas: i32,
    /// The member's API server as registration found it (the agent's
    /// `--cluster-api-endpoint`).
    pub member_endpoint: String,
    /// `--cluster-provider`.
    pub provider: String,
    /// `--cluster-region`.
    pub region: String,
    /// `--cluster-zones`.
    pub zones: Vec<String>,
    /// `--enable-cert-rotation`: the agent's certRotation controller runs.
    pub cert_rotation: bool,
    /// `--proxy-server-address`.
    pub proxy_server_address: String,
}

fn system_labels() -> Value {
    json!({labels::KARMADA_SYSTEM: "true"})
}

fn app_labels() -> Value {
    json!({"app": AGENT_NAME})
}

impl AgentDeployment {
    /// The container's command: the agent with karmadactl's flags (the kubeconfig from the
    /// mounted Secret, leader election in the agent's namespace).
    pub fn command(&self) -> Vec<String> {
        let mut controllers = super::selection::Controllers::default();
        if self.cert_rotation {
            controllers = controllers.with(super::selection::CERT_ROTATION);
        }
        let mut command = vec![
            AGENT_BINARY.to_owned(),
            "agent".to_owned(),
            format!("--karmada-kubeconfig={KUBECONFIG_DIR}/{KUBECONFIG_SECRET}"),
            format!("--cluster-name={}", self.cluster),
            format!("--cluster-api-endpoint={}", self.member_endpoint),
            format!("--cluster-provider={}", self.provider),
            format!("--cluster-region={}", self.region),
            format!("--cluster-zones={}", self.zones.join(",")),
            format!("--controllers={controllers}"),
            format!("--proxy-server-address={}", self.proxy_server_address),
            format!("--leader-elect-resource-namespace={}", self.namespace),
        ];
        if self.cert_rotation {
            // Where the renewed kubeconfig is written back (the Secret the pods mount).
            command.push(format!("--karmada-kubeconfig-namespace={}", self.namespace));
        }
        command.extend([
            "--cluster-status-update-frequency=10s".to_owned(),
            format!("--metrics-bind-address=:{METRICS_PORT}"),
            format!("--health-probe-bind-address={HEALTH_PROBE_ADDRESS}"),
        ]);
        command
    }

    /// The namespace, labelled as Karmada's.
    pub fn namespace_object(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": self.namespace, "labels": system_labels()},
        })
    }

    /// The Secret with the agent's kubeconfig; `None` leaves its data out (for showing it).
    pub fn secret(&self, kubeconfig: Option<&str>) -> Value {
        let mut s = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": KUBECONFIG_SECRET, "namespace": self.namespace, "labels": system_labels()},
            "type": "Opaque",
        });
        if let Some(k) = kubeconfig {
            s["stringData"] = json!({KUBECONFIG_SECRET: k});
        }
        s
    }

    /// The ClusterRole: everything in the member (the agent applies any kind of object).
    pub fn cluster_role(&self) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": AGENT_NAME, "labels": system_labels()},
            "rules": cluster_policy_rules(),
        })
    }

    /// The ServiceAccount the pods run as.
    pub fn service_account(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": self.namespace, "labels": system_labels()},
        })
    }

    /// The ClusterRoleBinding of the ClusterRole to the ServiceAccount.
    pub fn cluster_role_binding(&self) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": AGENT_NAME, "labels": system_labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": self.namespace}],
        })
    }

    /// The Deployment running the agent.
    pub fn deployment(&self) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": AGENT_NAME, "namespace": self.namespace, "labels": app_labels()},
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": app_labels()},
                "template": {
                    "metadata": {"name": AGENT_NAME, "namespace": self.namespace, "labels": app_labels()},
                    "spec": {
                        "serviceAccountName": SERVICE_ACCOUNT,
                        "containers": [{
                            "name": AGENT_NAME,
                            "image": self.image,
                            "command": self.command(),
                            "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
                            "volumeMounts": [{"name": "kubeconfig", "mountPath": KUBECONFIG_DIR}],
                        }],
                        "volumes": [{"name": "kubeconfig", "secret": {"secretName": KUBECONFIG_SECRET}}],
                        "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}],
                    },
                },
            },
        })
    }

    /// Everything install creates, in its order, for showing (`--dry-run`): the Secret
    /// without its data.
    pub fn objects(&self) -> Vec<Value> {
        vec![
            self.namespace_object(),
            self.secret(None),
            self.cluster_role(),
            self.service_account(),
            self.cluster_role_binding(),
            self.deployment(),
        ]
    }
}

/// A step of installing or removing the agent that failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct InstallError {
    /// What was being done.
    pub step: String,
    /// Why it failed.
    #[source]
    pub source: kube::Error,
}

fn step(what: String) -> impl FnOnce(kube::Error) -> InstallError {
    move |source| InstallError { step: what, source }
}

fn typed<K: serde::de::DeserializeOwned>(v: Value) -> Result<K, kube::Error> {
    serde_json::from_value(v).map_err(kube::Error::SerdeError)
}

/// karmadactl's preflight: the agent's Secret, ServiceAccount and Deployment must not exist
/// yet. Returns what is in the way.
pub async fn preflight(member: &kube::Client, namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    match Api::<Namespace>::all(member.clone())
        .get_opt(namespace)
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => return problems,
        Err(e) => {
            problems.push(format!("reading namespace {namespace}: {e}"));
            return problems;
        }
    }
    let mut check = |found: Result<bool, kube::Error>, kind: &str, name: &str| match found {
        Ok(true) => problems.push(format!("{namespace}/{name} {kind} already exists")),
        Ok(false) => {}
        Err(e) => problems.push(format!("reading {kind} {namespace}/{name}: {e}")),
    };
    check(
        Api::<Secret>::namespaced(member.clone(), namespace)
            .get_opt(KUBECONFIG_SECRET)
            .await
            .map(|o| o.is_some()),
        "Secret",
        KUBECONFIG_SECRET,
    );
    check(
        Api::<ServiceAccount>::namespaced(member.clone(), namespace)
            .get_opt(SERVICE_ACCOUNT)
            .await
            .map(|o| o.is_some()),
        "ServiceAccount",
        SERVICE_ACCOUNT,
    );
    check(
        Api::<Deployment>::namespaced(member.clone(), namespace)
            .get_opt(AGENT_NAME)
            .await
            .map(|o| o.is_some()),
        "Deployment",
        AGENT_NAME,
    );
    problems
}

/// Creates the agent's objects in the member in karmadactl's order: the namespace unless it
/// exists, the kubeconfig Secret and ClusterRole (created or updated), the ServiceAccount
/// unless it exists, the ClusterRoleBinding (created or updated), then the Deployment.
pub async fn install(
    member: &kube::Client,
    agent: &AgentDeployment,
    kubeconfig: &str,
) -> Result<(), InstallError> {
    let ns = &agent.namespace;
    let namespace: Namespace =
        typed(agent.namespace_object()).map_err(step(format!("namespace {ns}")))?;
    create_if_absent(&Api::all(member.clone()), &namespace)
        .await
        .map_err(step(format!("creating namespace {ns}")))?;
    super::rbac::put(
        Api::<Secret>::namespaced(member.clone(), ns),
        agent.secret(Some(kubeconfig)),
    )
    .await
    .map_err(step(format!("writing secret {ns}/{KUBECONFIG_SECRET}")))?;
    super::rbac::put(
        Api::<ClusterRole>::all(member.clone()),
        agent.cluster_role(),
    )
    .await
    .map_err(step(format!("writing clusterrole {AGENT_NAME}")))?;
    let sa: ServiceAccount =
        typed(agent.service_account()).map_err(step(format!("serviceaccount {ns}")))?;
    create_if_absent(&Api::namespaced(member.clone(), ns), &sa)
        .await
        .map_err(step(format!(
            "creating serviceaccount {ns}/{SERVICE_ACCOUNT}"
        )))?;
    super::rbac::put(
        Api::<ClusterRoleBinding>::all(member.clone()),
        agent.cluster_role_binding(),
    )
    .await
    .map_err(step(format!("writing clusterrolebinding {AGENT_NAME}")))?;
    let deployment: Deployment =
        typed(agent.deployment()).map_err(step(format!("deployment {ns}")))?;
    Api::<Deployment>::namespaced(member.clone(), ns)
        .create(&PostParams::default(), &deployment)
        .await
        .map_err(step(format!("creating deployment {ns}/{AGENT_NAME}")))?;
    Ok(())
}

/// Waits until the agent's Deployment has rolled out (karmadactl's `WaitForDeploymentRollout`):
/// its generation observed, every replica updated and available.
pub async fn wait_for_rollout(
    member: &kube::Client,
    namespace: &str,
    timeout: Duration,
) -> Result<(), String> {
    let api = Api::<Deployment>::namespaced(member.clone(), namespace);
    let deadline = Instant::now() + timeout;
    loop {
        let why = match api.get(AGENT_NAME).await {
            Ok(d) => {
                let status = d.status.unwrap_or_default();
                let wanted = d.spec.and_then(|s| s.replicas).unwrap_or(1);
                let updated = status.updated_replicas.unwrap_or(0);
                let available = status.available_replicas.unwrap_or(0);
                if d.metadata.generation != status.observed_generation {
                    format!(
                        "current generation {}, observed generation {}",
                        d.metadata.generation.unwrap_or(0),
                        status.observed_generation.unwrap_or(0)
                    )
                } else if updated < wanted {
                    format!(
                        "the number of pods targeted by the deployment ({wanted} pods) is different from the number of pods targeted by the deployment that have the desired template spec ({updated} pods)"
                    )
                } else if available < updated {
                    format!("expected {updated} replicas, got {available} available replicas")
                } else {
                    return Ok(());
                }
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "wait for Deployment({namespace}/{AGENT_NAME}) rollout: timed out after {timeout:?}: {why}"
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Deletes what [`install`] created but the namespace, in karmadactl unregister's order
/// (Deployment, ServiceAccount, ClusterRole, ClusterRoleBinding, Secret); objects already gone
/// are skipped. Returns what was deleted.
pub async fn remove(member: &kube::Client, namespace: &str) -> Result<Vec<String>, InstallError> {
    async fn delete<K>(
        api: Api<K>,
        name: &str,
        what: String,
    ) -> Result<Option<String>, InstallError>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(Some(what)),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(None),
            Err(e) => Err(step(format!("deleting {what}"))(e)),
        }
    }
    let steps = [
        delete(
            Api::<Deployment>::namespaced(member.clone(), namespace),
            AGENT_NAME,
            format!("Deployment {namespace}/{AGENT_NAME}"),
        )
        .await?,
        delete(
            Api::<ServiceAccount>::namespaced(member.clone(), namespace),
            SERVICE_ACCOUNT,
            format!("ServiceAccount {namespace}/{SERVICE_ACCOUNT}"),
        )
        .await?,
        delete(
            Api::<ClusterRole>::all(member.clone()),
            AGENT_NAME,
            format!("ClusterRole {AGENT_NAME}"),
        )
        .await?,
        delete(
            Api::<ClusterRoleBinding>::all(member.clone()),
            AGENT_NAME,
            format!("ClusterRoleBinding {AGENT_NAME}"),
        )
        .await?,
        delete(
            Api::<Secret>::namespaced(member.clone(), namespace),
            KUBECONFIG_SECRET,
            format!("Secret {namespace}/{KUBECONFIG_SECRET}"),
        )
        .await?,
    ];
    Ok(steps.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> AgentDeployment {
        AgentDeployment {
            namespace: "karmada-system".into(),
            cluster: "edge1".into(),
            image: "ghcr.io/karmada-rs/karmada-rs:0.1.0".into(),
            replicas: 2,
            member_endpoint: "https://10.0.0.2:6443".into(),
            provider: "aws".into(),
            region: "eu-west-1".into(),
            zones: vec!["eu-west-1a".into(), "eu-west-1b".into()],
            cert_rotation: false,
            proxy_server_address: String::new(),
        }
    }

    #[test]
    fn the_command_passes_karmadactls_flags() {
        let a = agent();
        assert_eq!(
            a.command(),
            [
                "/usr/local/bin/karmada-rs",
                "agent",
                "--karmada-kubeconfig=/etc/kubeconfig/karmada-kubeconfig",
                "--cluster-name=edge1",
                "--cluster-api-endpoint=https://10.0.0.2:6443",
                "--cluster-provider=aws",
                "--cluster-region=eu-west-1",
                "--cluster-zones=eu-west-1a,eu-west-1b",
                "--controllers=*",
                "--proxy-server-address=",
                "--leader-elect-resource-namespace=karmada-system",
                "--cluster-status-update-frequency=10s",
                "--metrics-bind-address=:8080",
                "--health-probe-bind-address=0.0.0.0:10357",
            ]
        );
        let rotating = AgentDeployment {
            cert_rotation: true,
            namespace: "agents".into(),
            ..agent()
        }
        .command();
        assert!(rotating.contains(&"--controllers=*,certRotation".to_owned()));
        assert!(rotating.contains(&"--karmada-kubeconfig-namespace=agents".to_owned()));
        assert!(rotating.contains(&"--leader-elect-resource-namespace=agents".to_owned()));
    }

    #[test]
    fn the_objects_are_valid_and_wired_together() {
        let a = agent();
        let d: Deployment = typed(a.deployment()).unwrap();
        let spec = d.spec.unwrap();
        assert_eq!(spec.replicas, Some(2));
        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.service_account_name.as_deref(), Some(SERVICE_ACCOUNT));
        let c = &pod.containers[0];
        assert_eq!(c.image.as_deref(), Some(a.image.as_str()));
        assert_eq!(
            c.volume_mounts.as_ref().unwrap()[0].mount_path,
            KUBECONFIG_DIR
        );
        let volume = &pod.volumes.unwrap()[0];
        assert_eq!(
            volume.secret.as_ref().unwrap().secret_name.as_deref(),
            Some(KUBECONFIG_SECRET)
        );
        let s: Secret = typed(a.secret(Some("kc"))).unwrap();
        assert_eq!(
            s.string_data
                .unwrap()
                .get(KUBECONFIG_SECRET)
                .map(String::as_str),
            Some("kc")
        );
        let b: ClusterRoleBinding = typed(a.cluster_role_binding()).unwrap();
        let subject = &b.subjects.unwrap()[0];
        assert_eq!(
            (subject.name.as_str(), subject.namespace.as_deref()),
            (SERVICE_ACCOUNT, Some("karmada-system"))
        );
        let _: ClusterRole = typed(a.cluster_role()).unwrap();
        let _: ServiceAccount = typed(a.service_account()).unwrap();
        let _: Namespace = typed(a.namespace_object()).unwrap();
        assert_eq!(a.objects().len(), 6);
        assert!(a.objects()[1].get("stringData").is_none());
    }
}
