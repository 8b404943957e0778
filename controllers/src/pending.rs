//! TEMPORARY SHIMS — stand-ins for modules other helpers are writing (`scheduler::algorithm`,
//! `overrides`, `interpreter` by the logic helper; `member_clients` by the members helper),
//! with the interfaces agreed in CONTROLLERS.md. They cover only what the pipeline's own
//! development needs and are replaced by the real modules when those land on main.

/// Stand-in for `crate::interpreter` (Karmada's native resource interpreter), with its API.
pub mod interpreter {
    use k8s_openapi::jiff::Timestamp;
    use karmada_api::work::v1alpha1::ResourceHealth;
    use karmada_api::work::v1alpha2::{AggregatedStatusItem, ReplicaRequirements, TargetCluster};
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    /// An object the interpreter cannot read.
    #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
    #[error("{0}")]
    pub struct InterpreterError(pub String);

    /// A dependency of a workload (config.karmada.io DependentObjectReference).
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DependentObjectReference {
        /// apiVersion.
        pub api_version: String,
        /// Kind.
        pub kind: String,
        /// Namespace.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        /// Name.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub name: String,
        /// Label selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub label_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    }

    /// Interpreter operations.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Operation {
        /// GetReplicas.
        InterpretReplica,
        /// ReviseReplica.
        ReviseReplica,
        /// AggregateStatus.
        AggregateStatus,
    }

    fn kind(obj: &Value) -> &str {
        obj["kind"].as_str().unwrap_or("")
    }

    /// Whether the kind has a rule for the operation.
    pub fn hook_enabled(_api_version: &str, kind: &str, op: Operation) -> bool {
        match op {
            Operation::InterpretReplica => matches!(
                kind,
                "Deployment" | "StatefulSet" | "ReplicaSet" | "Job" | "Pod"
            ),
            Operation::ReviseReplica => {
                matches!(kind, "Deployment" | "StatefulSet" | "ReplicaSet" | "Job")
            }
            Operation::AggregateStatus => kind == "Deployment",
        }
    }

    /// Replicas and per-replica requirements of a workload.
    pub fn get_replicas(
        obj: &Value,
    ) -> Result<(i32, Option<ReplicaRequirements>), InterpreterError> {
        Ok(match kind(obj) {
            "Deployment" | "StatefulSet" | "ReplicaSet" => (
                obj["spec"]["replicas"].as_i64().unwrap_or(1) as i32,
                Some(ReplicaRequirements::default()),
            ),
            "Job" => {
                let p = obj["spec"]["parallelism"].as_i64().unwrap_or(1);
                let c = obj["spec"]["completions"].as_i64().unwrap_or(p);
                (p.min(c) as i32, Some(ReplicaRequirements::default()))
            }
            "Pod" => (1, Some(ReplicaRequirements::default())),
            _ => (0, None),
        })
    }

    /// The object with its replicas set.
    pub fn revise_replica(obj: &Value, replicas: i64) -> Result<Value, InterpreterError> {
        let mut o = obj.clone();
        match kind(obj) {
            "Deployment" | "StatefulSet" | "ReplicaSet" => o["spec"]["replicas"] = json!(replicas),
            "Job" => o["spec"]["parallelism"] = json!(replicas),
            _ => {}
        }
        Ok(o)
    }

    /// A Job's completions split over the targets by their replicas.
    pub fn divide_job_completions(
        job: &Value,
        targets: &[TargetCluster],
    ) -> Result<Option<Vec<TargetCluster>>, InterpreterError> {
        let Some(c) = job["spec"]["completions"].as_i64() else {
            return Ok(None);
        };
        let total: i64 = targets
            .iter()
            .map(|t| i64::from(t.replicas))
            .sum::<i64>()
            .max(1);
        Ok(Some(
            targets
                .iter()
                .map(|t| TargetCluster {
                    name: t.name.clone(),
                    replicas: (c * i64::from(t.replicas) / total) as i32,
                })
                .collect(),
        ))
    }

    /// A Job with its completions set.
    pub fn revise_job_completions(
        job: &Value,
        completions: i64,
    ) -> Result<Value, InterpreterError> {
        let mut o = job.clone();
        o["spec"]["completions"] = json!(completions);
        Ok(o)
    }

    /// The desired object with member-owned fields of the observed one kept.
    pub fn retain(desired: &Value, observed: &Value) -> Result<Value, InterpreterError> {
        let mut d = desired.clone();
        if kind(desired) == "Service" {
            for f in ["clusterIP", "clusterIPs", "healthCheckNodePort"] {
                if let Some(v) = observed["spec"].get(f) {
                    d["spec"][f] = v.clone();
                }
            }
        }
        Ok(d)
    }

    /// The status to report in the Work.
    pub fn reflect_status(obj: &Value) -> Result<Option<Value>, InterpreterError> {
        let Some(status) = obj.get("status") else {
            return Ok(None);
        };
        if kind(obj) == "Deployment" {
            let mut s = serde_json::Map::new();
            for f in [
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
                "observedGeneration",
            ] {
                if let Some(v) = status.get(f) {
                    s.insert(f.to_owned(), v.clone());
                }
            }
            if let Some(g) = obj["metadata"].get("generation") {
                s.insert("generation".into(), g.clone());
            }
            if let Some(g) = obj["metadata"]["annotations"]
                .get("resourcetemplate.karmada.io/generation")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<i64>().ok())
            {
                s.insert("resourceTemplateGeneration".into(), json!(g));
            }
            return Ok(Some(Value::Object(s)));
        }
        Ok(Some(status.clone()))
    }

    /// Health of a member object.
    pub fn interpret_health(obj: &Value) -> ResourceHealth {
        if kind(obj) == "Deployment" {
            let s = &obj["status"];
            let ok = s["observedGeneration"] == obj["metadata"]["generation"]
                && s["updatedReplicas"].as_i64().unwrap_or(0)
                    >= obj["spec"]["replicas"].as_i64().unwrap_or(1)
                && s["availableReplicas"].as_i64().unwrap_or(0)
                    >= s["updatedReplicas"].as_i64().unwrap_or(0);
            return if ok {
                ResourceHealth::Healthy
            } else {
                ResourceHealth::Unhealthy
            };
        }
        ResourceHealth::Healthy
    }

    /// The template's new status from the members' statuses; None when the kind has no rule or
    /// nothing changed.
    pub fn aggregate_status(
        template: &Value,
        items: &[AggregatedStatusItem],
        _now: Timestamp,
    ) -> Result<Option<Value>, InterpreterError> {
        if kind(template) != "Deployment" {
            return Ok(None);
        }
        let mut sums = [0i64; 5];
        let fields = [
            "replicas",
            "readyReplicas",
            "updatedReplicas",
            "availableReplicas",
            "unavailableReplicas",
        ];
        for it in items {
            if let Some(s) = &it.status {
                for (i, f) in fields.iter().enumerate() {
                    sums[i] += s[*f].as_i64().unwrap_or(0);
                }
            }
        }
        let old = template.get("status").cloned().unwrap_or(json!({}));
        let mut st = old.clone();
        for (i, f) in fields.iter().enumerate() {
            st[*f] = json!(sums[i]);
        }
        Ok((st != old).then_some(st))
    }

    /// ConfigMaps, Secrets, ServiceAccounts and PVCs a workload's pod template refers to.
    pub fn get_dependencies(
        obj: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpreterError> {
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let spec = match kind(obj) {
            "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet" | "Job" => {
                &obj["spec"]["template"]["spec"]
            }
            "Pod" => &obj["spec"],
            _ => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        let mut add = |kind: &str, name: &str| {
            let d = DependentObjectReference {
                api_version: "v1".into(),
                kind: kind.into(),
                namespace: ns.clone(),
                name: name.into(),
                label_selector: None,
            };
            if !name.is_empty() && !out.contains(&d) {
                out.push(d);
            }
        };
        for c in spec["containers"].as_array().into_iter().flatten() {
            for e in c["envFrom"].as_array().into_iter().flatten() {
                if let Some(n) = e["configMapRef"]["name"].as_str() {
                    add("ConfigMap", n);
                }
                if let Some(n) = e["secretRef"]["name"].as_str() {
                    add("Secret", n);
                }
            }
        }
        for v in spec["volumes"].as_array().into_iter().flatten() {
            if let Some(n) = v["configMap"]["name"].as_str() {
                add("ConfigMap", n);
            }
            if let Some(n) = v["secret"]["secretName"].as_str() {
                add("Secret", n);
            }
            if let Some(n) = v["persistentVolumeClaim"]["claimName"].as_str() {
                add("PersistentVolumeClaim", n);
            }
        }
        if let Some(n) = spec["serviceAccountName"].as_str()
            && n != "default"
        {
            add("ServiceAccount", n);
        }
        Ok(out)
    }
}

/// Stand-in for `crate::overrides`.
pub mod overrides {
    use karmada_api::cluster::v1alpha1::Cluster;
    use karmada_api::policy::v1alpha1::{ClusterOverridePolicy, OverridePolicy};
    use serde_json::Value;

    /// The overridden object and the annotations recording which policies applied.
    pub struct Applied {
        /// The object after overrides.
        pub object: Value,
        /// `policy.karmada.io/applied-cluster-overrides`.
        pub applied_cluster_overrides: Option<String>,
        /// `policy.karmada.io/applied-overrides`.
        pub applied_overrides: Option<String>,
    }

    /// An override could not be applied.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct OverrideError(pub String);

    /// Applies the overrides targeting `cluster` (shim: plaintext and labels on clusterNames).
    pub fn apply_overrides(
        template: &Value,
        cluster: &Cluster,
        _cops: &[ClusterOverridePolicy],
        ops: &[OverridePolicy],
    ) -> Result<Applied, OverrideError> {
        let mut obj = template.clone();
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let ns = template["metadata"]["namespace"].as_str().unwrap_or("");
        let mut applied = Vec::new();
        for op in ops {
            if op.metadata.namespace.as_deref() != Some(ns) {
                continue;
            }
            let selected = op.spec.resource_selectors.is_empty()
                || op.spec.resource_selectors.iter().any(|s| {
                    s.api_version == template["apiVersion"].as_str().unwrap_or("")
                        && s.kind == template["kind"].as_str().unwrap_or("")
                        && (s.name.is_empty()
                            || s.name == template["metadata"]["name"].as_str().unwrap_or(""))
                });
            if !selected {
                continue;
            }
            for rule in &op.spec.override_rules {
                let targets = rule
                    .target_cluster
                    .as_ref()
                    .map(|t| t.cluster_names.is_empty() || t.cluster_names.contains(&name))
                    .unwrap_or(true);
                if !targets {
                    continue;
                }
                for l in &rule.overriders.labels_overrider {
                    for (k, v) in &l.value {
                        obj["metadata"]["labels"][k] = Value::String(v.clone());
                    }
                }
                for p in &rule.overriders.plaintext {
                    if let Some(t) = obj.pointer_mut(&p.path) {
                        *t = p.value.clone().unwrap_or(Value::Null);
                    }
                }
                applied.push(serde_json::json!({"policyName": op.metadata.name, "overriders": rule.overriders}));
            }
        }
        Ok(Applied {
            object: obj,
            applied_cluster_overrides: None,
            applied_overrides: (!applied.is_empty()).then(|| Value::Array(applied).to_string()),
        })
    }
}

/// Stand-in for `crate::scheduler::algorithm`, with its API.
pub mod algorithm {
    use std::collections::BTreeMap;

    use karmada_api::cluster::v1alpha1::Cluster;
    use karmada_api::policy::v1alpha1::{ClusterAffinity, Placement, ReplicaSchedulingType};
    use karmada_api::work::v1alpha2::{
        ReplicaRequirements, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
    };

    /// Message of the `Scheduled` condition on success.
    pub const SUCCESSFUL_SCHEDULING_MESSAGE: &str = "Binding has been scheduled successfully.";

    /// What to schedule.
    pub struct ScheduleInput<'a> {
        /// The placement.
        pub placement: &'a Placement,
        /// Replicas of the workload.
        pub replicas: i32,
        /// Per-replica requirements.
        pub replica_requirements: Option<&'a ReplicaRequirements>,
        /// apiVersion of the template.
        pub api_version: &'a str,
        /// Kind of the template.
        pub kind: &'a str,
        /// All clusters.
        pub clusters: &'a [Cluster],
        /// The previous result.
        pub previous: &'a [TargetCluster],
    }

    impl<'a> ScheduleInput<'a> {
        /// The input for a binding.
        pub fn for_binding(
            spec: &'a ResourceBindingSpec,
            _status: &'a ResourceBindingStatus,
            clusters: &'a [Cluster],
        ) -> Option<Self> {
            Some(ScheduleInput {
                placement: spec.placement.as_ref()?,
                replicas: spec.replicas,
                replica_requirements: spec.replica_requirements.as_ref(),
                api_version: &spec.resource.api_version,
                kind: &spec.resource.kind,
                clusters,
                previous: &spec.clusters,
            })
        }
    }

    /// A successful decision.
    pub struct ScheduleResult {
        /// The new spec.clusters.
        pub clusters: Vec<TargetCluster>,
        /// The clusterAffinities group used.
        pub affinity_name: Option<String>,
    }

    /// No cluster fits.
    #[derive(Debug)]
    pub struct FitError {
        /// Clusters considered.
        pub num_all_clusters: usize,
        /// Why each was rejected.
        pub reasons: BTreeMap<String, String>,
    }

    impl std::fmt::Display for FitError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "0/{} clusters are available: {} cluster(s) did not match the placement.",
                self.num_all_clusters,
                self.reasons.len()
            )
        }
    }

    /// Scheduling failed.
    #[derive(Debug, thiserror::Error)]
    pub enum ScheduleError {
        /// No cluster fits.
        #[error("{0}")]
        NoClusterFit(FitError),
        /// Clusters fit but cannot take the replicas.
        #[error("{0}")]
        Unschedulable(String),
        /// Another error.
        #[error("{0}")]
        Failed(String),
    }

    impl ScheduleError {
        /// The reason of the Scheduled condition.
        pub fn reason(&self) -> &'static str {
            match self {
                ScheduleError::NoClusterFit(_) => "NoClusterFit",
                ScheduleError::Unschedulable(_) => "Unschedulable",
                ScheduleError::Failed(_) => "SchedulerError",
            }
        }
    }

    fn matches(a: &ClusterAffinity, c: &Cluster) -> bool {
        let name = c.metadata.name.as_deref().unwrap_or("");
        if a.exclude_clusters.iter().any(|e| e == name) {
            return false;
        }
        if let Some(sel) = &a.label_selector
            && !crate::runtime::selector::matches(sel, c.metadata.labels.as_ref())
        {
            return false;
        }
        a.cluster_names.is_empty() || a.cluster_names.iter().any(|n| n == name)
    }

    /// Chooses clusters (shim: affinity, API enablement, Duplicated and static-weight Divided).
    pub fn schedule(input: &ScheduleInput<'_>) -> Result<ScheduleResult, ScheduleError> {
        let (av, kind) = (input.api_version, input.kind);
        let mut reasons = BTreeMap::new();
        let mut fit: Vec<&Cluster> = Vec::new();
        for c in input
            .clusters
            .iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
        {
            let name = c.metadata.name.clone().unwrap_or_default();
            if !input
                .placement
                .cluster_affinity
                .as_ref()
                .map(|a| matches(a, c))
                .unwrap_or(true)
            {
                reasons.insert(
                    name,
                    "cluster(s) did not match the placement cluster affinity constraint".into(),
                );
            } else if !c
                .status
                .api_enablements
                .iter()
                .any(|e| e.group_version == av && e.resources.iter().any(|r| r.kind == kind))
            {
                reasons.insert(name, "cluster(s) did not have the API resource".into());
            } else {
                fit.push(c);
            }
        }
        fit.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        if fit.is_empty() {
            return Err(ScheduleError::NoClusterFit(FitError {
                num_all_clusters: input.clusters.len(),
                reasons,
            }));
        }
        let names: Vec<String> = fit
            .iter()
            .map(|c| c.metadata.name.clone().unwrap_or_default())
            .collect();
        if input.placement.replica_scheduling_type() == ReplicaSchedulingType::Duplicated
            || input.replicas == 0
        {
            return Ok(ScheduleResult {
                clusters: names
                    .into_iter()
                    .map(|name| TargetCluster {
                        name,
                        replicas: input.replicas,
                    })
                    .collect(),
                affinity_name: None,
            });
        }
        let weights: Vec<i64> = fit
            .iter()
            .map(|c| {
                input
                    .placement
                    .replica_scheduling
                    .as_ref()
                    .and_then(|r| r.weight_preference.as_ref())
                    .map(|w| {
                        w.static_weight_list
                            .iter()
                            .filter(|s| matches(&s.target_cluster, c))
                            .map(|s| s.weight)
                            .max()
                            .unwrap_or(0)
                    })
                    .unwrap_or(1)
            })
            .collect();
        let total: i64 = weights.iter().sum::<i64>().max(1);
        let mut out: Vec<TargetCluster> = names
            .iter()
            .zip(&weights)
            .map(|(n, w)| TargetCluster {
                name: n.clone(),
                replicas: (i64::from(input.replicas) * w / total) as i32,
            })
            .collect();
        let mut rest = input.replicas - out.iter().map(|t| t.replicas).sum::<i32>();
        let mut i = 0;
        while rest > 0 && !out.is_empty() {
            let n = out.len();
            out[i % n].replicas += 1;
            rest -= 1;
            i += 1;
        }
        out.retain(|t| t.replicas > 0);
        Ok(ScheduleResult {
            clusters: out,
            affinity_name: None,
        })
    }
}

/// Stand-in for `crate::member_clients`.
pub mod member_clients {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::Secret;
    use karmada_api::cluster::v1alpha1::Cluster;
    use kube::{Api, Client};

    /// A member client could not be built.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct MemberError(pub String);

    /// Clients of member clusters, built from Cluster objects and their secrets, cached.
    #[derive(Clone)]
    pub struct MemberClients {
        control_plane: Client,
        cache: Arc<Mutex<HashMap<String, Client>>>,
    }

    impl MemberClients {
        /// Clients built through the control plane.
        pub fn new(control_plane: Client) -> Self {
            MemberClients {
                control_plane,
                cache: Arc::new(Mutex::new(HashMap::new())),
            }
        }

        /// The client of a cluster.
        pub async fn get(&self, cluster: &str) -> Result<Client, MemberError> {
            if let Some(c) = self
                .cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(cluster)
            {
                return Ok(c.clone());
            }
            let err = |e: &dyn std::fmt::Display| MemberError(format!("cluster {cluster}: {e}"));
            let c: Cluster = Api::all(self.control_plane.clone())
                .get(cluster)
                .await
                .map_err(|e| err(&e))?;
            let sref = c
                .spec
                .secret_ref
                .clone()
                .ok_or_else(|| MemberError(format!("cluster {cluster} has no secretRef")))?;
            let secret: Secret = Api::namespaced(self.control_plane.clone(), &sref.namespace)
                .get(&sref.name)
                .await
                .map_err(|e| err(&e))?;
            let data = secret.data.unwrap_or_default();
            let url: http::Uri = c.spec.api_endpoint.parse().map_err(|e| err(&e))?;
            let mut cfg = kube::Config::new(url);
            cfg.accept_invalid_certs = c.spec.insecure_skip_tls_verification;
            if let Some(ca) = data.get("caBundle") {
                let pem = String::from_utf8_lossy(&ca.0).to_string();
                let der: Vec<Vec<u8>> = pem_to_der(&pem);
                if !der.is_empty() {
                    cfg.root_cert = Some(der);
                }
            }
            if let Some(t) = data.get("token") {
                cfg.auth_info.token = Some(String::from_utf8_lossy(&t.0).to_string().into());
            }
            // Shim only: client certificates until member API servers accept tokens.
            if let (Some(cert), Some(key)) = (data.get("clientCert"), data.get("clientKey")) {
                use base64_shim::encode;
                cfg.auth_info.client_certificate_data = Some(encode(&cert.0));
                cfg.auth_info.client_key_data = Some(encode(&key.0).into());
            }
            let client = Client::try_from(cfg).map_err(|e| err(&e))?;
            self.cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(cluster.to_owned(), client.clone());
            Ok(client)
        }

        /// Drops a cached client.
        pub fn invalidate(&self, cluster: &str) {
            self.cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(cluster);
        }
    }

    fn pem_to_der(pem: &str) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut inside = false;
        for line in pem.lines() {
            if line.starts_with("-----BEGIN") {
                inside = true;
                cur.clear();
            } else if line.starts_with("-----END") {
                inside = false;
                if let Some(d) = base64_shim::decode(&cur) {
                    out.push(d);
                }
            } else if inside {
                cur.push_str(line.trim());
            }
        }
        out
    }

    mod base64_shim {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        pub fn encode(b: &[u8]) -> String {
            let mut s = String::new();
            for c in b.chunks(3) {
                let n = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                for i in 0..4 {
                    if i <= c.len() {
                        s.push(char::from(T[((n >> (18 - 6 * i)) & 63) as usize]));
                    } else {
                        s.push('=');
                    }
                }
            }
            s
        }
        pub fn decode(s: &str) -> Option<Vec<u8>> {
            let mut out = Vec::new();
            let mut buf = 0u32;
            let mut bits = 0;
            for ch in s.bytes() {
                if ch == b'=' {
                    break;
                }
                let v = T.iter().position(|&t| t == ch)? as u32;
                buf = (buf << 6) | v;
                bits += 6;
                if bits >= 8 {
                    bits -= 8;
                    out.push((buf >> bits) as u8);
                    buf &= (1 << bits) - 1;
                }
            }
            Some(out)
        }
    }
}
