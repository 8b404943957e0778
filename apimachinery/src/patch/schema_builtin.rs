//! Merge metadata of the built-in kinds the server serves, written from the Go struct tags
//! (`patchStrategy`, `patchMergeKey`) and markers (`+listType`, `+listMapKey`, `+mapType`,
//! `+structType`) of `k8s.io/api` v0.32 and Karmada v1.18.
//!
//! Only fields that differ from the default are listed: every other object field is a
//! granular struct, every other list is atomic for server-side apply and replaced by strategic
//! merge patch, which is what an untagged Go field means.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use super::schema::{
    ATOMIC, Builder, GroupVersionKindRef, Node, NodeId, OPEN, REPLACED, SCALAR, Schema,
};

/// One served kind: where its type starts in the shared arena and its Go zero value.
struct Entry {
    root: NodeId,
    zero: Arc<Value>,
}

struct Table {
    arena: Arc<Vec<Node>>,
    kinds: HashMap<(&'static str, &'static str, &'static str), Entry>,
}

pub(crate) fn lookup(gvk: &GroupVersionKindRef<'_>) -> Option<Schema> {
    static TABLE: OnceLock<Table> = OnceLock::new();
    let table = TABLE.get_or_init(build);
    let entry = table.kinds.get(&(gvk.group, gvk.version, gvk.kind))?;
    Some(Schema {
        arena: table.arena.clone(),
        root: entry.root,
        zero: entry.zero.clone(),
        strategic: true,
    })
}

/// `metav1.ObjectMeta`: finalizers merge as a set, ownerReferences by uid.
pub(crate) fn object_meta(b: &mut Builder) -> NodeId {
    let labels = b.map(SCALAR);
    let annotations = b.map(SCALAR);
    let finalizers = b.set_of_scalars(true);
    let owner_references = b.list_by(ATOMIC, "uid");
    b.strukt(&[
        ("labels", labels),
        ("annotations", annotations),
        ("finalizers", finalizers),
        ("ownerReferences", owner_references),
    ])
}

/// A list of conditions merged by `type`.
fn conditions(b: &mut Builder) -> NodeId {
    b.list_by(OPEN, "type")
}

/// `core/v1.Container` (also used for `EphemeralContainer`, which has the same tagged fields).
fn container(b: &mut Builder) -> NodeId {
    let ports = b.list_with_defaults(
        OPEN,
        &["containerPort", "protocol"],
        &[("protocol", json!("TCP"))],
        Some("containerPort"),
    );
    let env_var_source = b.strukt(&[
        ("fieldRef", ATOMIC),
        ("resourceFieldRef", ATOMIC),
        ("configMapKeyRef", ATOMIC),
        ("secretKeyRef", ATOMIC),
    ]);
    let env_var = b.strukt(&[("valueFrom", env_var_source)]);
    let env = b.list_by(env_var, "name");
    let resources = resource_requirements(b);
    let volume_mounts = b.list_by(OPEN, "mountPath");
    let volume_devices = b.list_by(OPEN, "devicePath");
    b.strukt(&[
        ("ports", ports),
        ("env", env),
        ("resources", resources),
        ("volumeMounts", volume_mounts),
        ("volumeDevices", volume_devices),
    ])
}

/// `core/v1.ResourceRequirements`: claims are keyed by name for apply but have no patch strategy.
fn resource_requirements(b: &mut Builder) -> NodeId {
    let claims = b.list(OPEN, &["name"], None);
    b.strukt(&[("claims", claims)])
}

/// `core/v1.PersistentVolumeClaimSpec`.
fn pvc_spec(b: &mut Builder) -> NodeId {
    b.strukt(&[("selector", ATOMIC), ("dataSource", ATOMIC)])
}

/// `core/v1.Volume` with its sources' atomic secret references.
fn volume(b: &mut Builder) -> NodeId {
    let with_secret_ref = b.strukt(&[("secretRef", ATOMIC)]);
    let csi = b.strukt(&[("nodePublishSecretRef", ATOMIC)]);
    let meta = object_meta(b);
    let pvc_spec = pvc_spec(b);
    let claim_template = b.strukt(&[("metadata", meta), ("spec", pvc_spec)]);
    let ephemeral = b.strukt(&[("volumeClaimTemplate", claim_template)]);
    b.strukt(&[
        ("iscsi", with_secret_ref),
        ("rbd", with_secret_ref),
        ("flexVolume", with_secret_ref),
        ("cinder", with_secret_ref),
        ("cephfs", with_secret_ref),
        ("scaleIO", with_secret_ref),
        ("storageos", with_secret_ref),
        ("csi", csi),
        ("ephemeral", ephemeral),
    ])
}

/// `core/v1.PodSpec`.
fn pod_spec(b: &mut Builder) -> NodeId {
    let volume = volume(b);
    let volumes = b.list_by(volume, "name");
    let container = container(b);
    let containers = b.list_by(container, "name");
    let init_containers = b.list_by(container, "name");
    let ephemeral_containers = b.list_by(container, "name");
    let image_pull_secrets = b.list_by(ATOMIC, "name");
    let host_aliases = b.list_by(OPEN, "ip");
    let spread_constraint = b.strukt(&[("labelSelector", ATOMIC)]);
    let topology_spread_constraints = b.list(
        spread_constraint,
        &["topologyKey", "whenUnsatisfiable"],
        Some("topologyKey"),
    );
    let scheduling_gates = b.list_by(OPEN, "name");
    let resource_claims = b.list_by(OPEN, "name");
    let node_affinity = b.strukt(&[("requiredDuringSchedulingIgnoredDuringExecution", ATOMIC)]);
    let affinity = b.strukt(&[("nodeAffinity", node_affinity)]);
    let resources = resource_requirements(b);
    b.strukt(&[
        ("volumes", volumes),
        ("initContainers", init_containers),
        ("containers", containers),
        ("ephemeralContainers", ephemeral_containers),
        ("nodeSelector", ATOMIC),
        ("imagePullSecrets", image_pull_secrets),
        ("hostAliases", host_aliases),
        ("topologySpreadConstraints", topology_spread_constraints),
        ("schedulingGates", scheduling_gates),
        ("resourceClaims", resource_claims),
        ("affinity", affinity),
        ("resources", resources),
    ])
}

/// `core/v1.PodStatus`.
fn pod_status(b: &mut Builder) -> NodeId {
    let conditions = conditions(b);
    let host_ips = b.atomic_list_merged_by(OPEN, "ip");
    let pod_ips = b.list_by(OPEN, "ip");
    let resource_claim_statuses = b.list_by(OPEN, "name");
    b.strukt(&[
        ("conditions", conditions),
        ("hostIPs", host_ips),
        ("podIPs", pod_ips),
        ("resourceClaimStatuses", resource_claim_statuses),
    ])
}

/// `core/v1.PodTemplateSpec`.
fn pod_template(b: &mut Builder, pod_spec: NodeId) -> NodeId {
    let meta = object_meta(b);
    b.strukt(&[("metadata", meta), ("spec", pod_spec)])
}

/// `batch/v1.JobSpec`.
fn job_spec(b: &mut Builder, pod_spec: NodeId) -> NodeId {
    let template = pod_template(b, pod_spec);
    b.strukt(&[("selector", ATOMIC), ("template", template)])
}

/// A kind's top level: `metadata` plus its own fields.
fn kind_root(b: &mut Builder, fields: &[(&str, NodeId)]) -> NodeId {
    let meta = object_meta(b);
    let mut all = vec![("metadata", meta)];
    all.extend_from_slice(fields);
    b.strukt(&all)
}

/// A workload's `spec.template` plus atomic `spec.selector`, with `status.conditions` by type.
fn workload(b: &mut Builder, pod_spec: NodeId, extra_spec: &[(&str, NodeId)]) -> NodeId {
    let template = pod_template(b, pod_spec);
    let mut spec_fields = vec![("selector", ATOMIC), ("template", template)];
    spec_fields.extend_from_slice(extra_spec);
    let spec = b.strukt(&spec_fields);
    let conditions = conditions(b);
    let status = b.strukt(&[("conditions", conditions)]);
    kind_root(b, &[("spec", spec), ("status", status)])
}

/// The zero value Go serializes for a workload whose spec has a pod template.
fn workload_zero(extra_spec: Value) -> Value {
    let mut spec = json!({
        "selector": null,
        "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}},
    });
    if let (Value::Object(spec), Value::Object(extra)) = (&mut spec, extra_spec) {
        spec.extend(extra);
    }
    json!({"metadata": {"creationTimestamp": null}, "spec": spec, "status": {}})
}

fn build() -> Table {
    let mut b = Builder::new();
    let mut kinds = HashMap::new();
    let mut add = |group: &'static str, version: &'static str, kind: &'static str, root, zero| {
        kinds.insert(
            (group, version, kind),
            Entry {
                root,
                zero: Arc::new(zero),
            },
        );
    };
    let meta_only = || json!({"metadata": {"creationTimestamp": null}});

    let pod_spec = pod_spec(&mut b);

    // core/v1
    let ns_conditions = conditions(&mut b);
    let ns_status = b.strukt(&[("conditions", ns_conditions)]);
    let namespace = kind_root(&mut b, &[("status", ns_status)]);
    add(
        "",
        "v1",
        "Namespace",
        namespace,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );
    let config_map = kind_root(&mut b, &[]);
    add("", "v1", "ConfigMap", config_map, meta_only());
    let secret = kind_root(&mut b, &[]);
    add("", "v1", "Secret", secret, meta_only());

    let service_ports = b.list_with_defaults(
        OPEN,
        &["port", "protocol"],
        &[("protocol", json!("TCP"))],
        Some("port"),
    );
    let service_spec = b.strukt(&[("ports", service_ports), ("selector", ATOMIC)]);
    let service_conditions = conditions(&mut b);
    let service_status = b.strukt(&[("conditions", service_conditions)]);
    let service = kind_root(
        &mut b,
        &[("spec", service_spec), ("status", service_status)],
    );
    add(
        "",
        "v1",
        "Service",
        service,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {"loadBalancer": {}}}),
    );

    let sa_secrets = b.list_by(ATOMIC, "name");
    let service_account = kind_root(&mut b, &[("secrets", sa_secrets)]);
    add("", "v1", "ServiceAccount", service_account, meta_only());

    let event = kind_root(&mut b, &[("involvedObject", ATOMIC), ("related", ATOMIC)]);
    add(
        "",
        "v1",
        "Event",
        event,
        json!({
            "metadata": {"creationTimestamp": null},
            "involvedObject": {},
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
            "eventTime": null,
        }),
    );

    let pvc_spec = pvc_spec(&mut b);
    let pvc_conditions = conditions(&mut b);
    let pvc_status = b.strukt(&[("conditions", pvc_conditions)]);
    let pvc = kind_root(&mut b, &[("spec", pvc_spec), ("status", pvc_status)]);
    add(
        "",
        "v1",
        "PersistentVolumeClaim",
        pvc,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"resources": {}}, "status": {}}),
    );

    let pod_status = pod_status(&mut b);
    let pod = kind_root(&mut b, &[("spec", pod_spec), ("status", pod_status)]);
    add(
        "",
        "v1",
        "Pod",
        pod,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}, "status": {}}),
    );

    let pod_cidrs = b.set_of_scalars(true);
    let node_spec = b.strukt(&[("podCIDRs", pod_cidrs)]);
    let node_conditions = conditions(&mut b);
    let node_addresses = b.list_by(OPEN, "type");
    let node_status = b.strukt(&[
        ("conditions", node_conditions),
        ("addresses", node_addresses),
    ]);
    let node = kind_root(&mut b, &[("spec", node_spec), ("status", node_status)]);
    add(
        "",
        "v1",
        "Node",
        node,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {},
            "status": {"daemonEndpoints": {"kubeletEndpoint": {}}, "nodeInfo": {}},
        }),
    );

    let endpoints = kind_root(&mut b, &[]);
    add("", "v1", "Endpoints", endpoints, meta_only());

    // Every list of these is `+listType=atomic` or untagged: only the root is special.
    let persistent_volume = kind_root(&mut b, &[]);
    add(
        "",
        "v1",
        "PersistentVolume",
        persistent_volume,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );
    let resource_quota = kind_root(&mut b, &[]);
    add(
        "",
        "v1",
        "ResourceQuota",
        resource_quota,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );
    let limit_range = kind_root(&mut b, &[]);
    add(
        "",
        "v1",
        "LimitRange",
        limit_range,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"limits": null}}),
    );

    // apps/v1
    let deployment = workload(&mut b, pod_spec, &[]);
    add(
        "apps",
        "v1",
        "Deployment",
        deployment,
        workload_zero(json!({"strategy": {}})),
    );
    let stateful_set = workload(&mut b, pod_spec, &[]);
    add(
        "apps",
        "v1",
        "StatefulSet",
        stateful_set,
        workload_zero(json!({"updateStrategy": {}})),
    );
    let daemon_set = workload(&mut b, pod_spec, &[]);
    add(
        "apps",
        "v1",
        "DaemonSet",
        daemon_set,
        workload_zero(json!({"updateStrategy": {}})),
    );
    let replica_set = workload(&mut b, pod_spec, &[]);
    add(
        "apps",
        "v1",
        "ReplicaSet",
        replica_set,
        workload_zero(json!({})),
    );

    // A RawExtension without content marshals to null.
    let controller_revision = kind_root(&mut b, &[]);
    add(
        "apps",
        "v1",
        "ControllerRevision",
        controller_revision,
        json!({"metadata": {"creationTimestamp": null}, "data": null, "revision": 0}),
    );

    // batch/v1
    let job_spec_node = job_spec(&mut b, pod_spec);
    let job_conditions = b.atomic_list_merged_by(OPEN, "type");
    let uid_set = b.set_of_scalars(false);
    let uncounted = b.strukt(&[("succeeded", uid_set), ("failed", uid_set)]);
    let job_status = b.strukt(&[
        ("conditions", job_conditions),
        ("uncountedTerminatedPods", uncounted),
    ]);
    let job = kind_root(&mut b, &[("spec", job_spec_node), ("status", job_status)]);
    let job_zero_spec = json!({
        "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}},
    });
    add(
        "batch",
        "v1",
        "Job",
        job,
        json!({"metadata": {"creationTimestamp": null}, "spec": job_zero_spec, "status": {}}),
    );
    let job_template_meta = object_meta(&mut b);
    let job_template = b.strukt(&[("metadata", job_template_meta), ("spec", job_spec_node)]);
    let cron_spec = b.strukt(&[("jobTemplate", job_template)]);
    let cron_job = kind_root(&mut b, &[("spec", cron_spec)]);
    add(
        "batch",
        "v1",
        "CronJob",
        cron_job,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": job_zero_spec}},
            "status": {},
        }),
    );

    // coordination.k8s.io/v1
    let lease = kind_root(&mut b, &[]);
    add(
        "coordination.k8s.io",
        "v1",
        "Lease",
        lease,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}}),
    );

    // admissionregistration.k8s.io/v1: webhooks and their matchConditions merge by name (the
    // rules are atomic); a policy's matchConditions, variables by name and status conditions by
    // type.
    let match_conditions = b.list_by(OPEN, "name");
    let webhook = b.strukt(&[("matchConditions", match_conditions)]);
    let webhooks = b.list_by(webhook, "name");
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let root = kind_root(&mut b, &[("webhooks", webhooks)]);
        add(
            "admissionregistration.k8s.io",
            "v1",
            kind,
            root,
            json!({"metadata": {"creationTimestamp": null}}),
        );
    }
    let policy_match_conditions = b.list_by(OPEN, "name");
    let variables = b.list_by(OPEN, "name");
    let policy_spec = b.strukt(&[
        ("matchConditions", policy_match_conditions),
        ("variables", variables),
    ]);
    let policy_conditions = conditions(&mut b);
    let policy_status = b.strukt(&[("conditions", policy_conditions)]);
    let policy = kind_root(&mut b, &[("spec", policy_spec), ("status", policy_status)]);
    add(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        policy,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );
    let binding = kind_root(&mut b, &[]);
    add(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        binding,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}}),
    );

    // certificates.k8s.io/v1: status.conditions merge by type (listMapKey=type); the spec's
    // lists are atomic.
    let csr_conditions = conditions(&mut b);
    let csr_status = b.strukt(&[("conditions", csr_conditions)]);
    let csr = kind_root(&mut b, &[("status", csr_status)]);
    add(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        csr,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"request": null, "signerName": ""}, "status": {}}),
    );

    // rbac.authorization.k8s.io/v1
    for kind in ["Role", "ClusterRole"] {
        let root = kind_root(&mut b, &[]);
        add(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
            root,
            json!({"metadata": {"creationTimestamp": null}, "rules": null}),
        );
    }
    for kind in ["RoleBinding", "ClusterRoleBinding"] {
        let root = kind_root(&mut b, &[("roleRef", ATOMIC)]);
        add(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
            root,
            json!({"metadata": {"creationTimestamp": null}, "roleRef": {}}),
        );
    }

    // apiextensions.k8s.io/v1: spec.versions (with the schemas) is atomic.
    let crd_conditions = b.list(OPEN, &["type"], None);
    let crd_status = b.strukt(&[("conditions", crd_conditions)]);
    let crd = kind_root(&mut b, &[("status", crd_status)]);
    add(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        crd,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"names": {}, "versions": null},
            "status": {"acceptedNames": {}, "conditions": null, "storedVersions": null},
        }),
    );

    // apiregistration.k8s.io/v1
    let api_service_conditions = conditions(&mut b);
    let api_service_status = b.strukt(&[("conditions", api_service_conditions)]);
    let api_service = kind_root(&mut b, &[("status", api_service_status)]);
    add(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        api_service,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );

    // autoscaling/v1
    let scale = kind_root(&mut b, &[]);
    add(
        "autoscaling",
        "v1",
        "Scale",
        scale,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );

    // networking.k8s.io/v1: rules, tls, ingress/egress rules and policyTypes are atomic lists.
    let ingress = kind_root(&mut b, &[]);
    add(
        "networking.k8s.io",
        "v1",
        "Ingress",
        ingress,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {"loadBalancer": {}}}),
    );
    let network_policy_spec = b.strukt(&[("podSelector", ATOMIC)]);
    let network_policy = kind_root(&mut b, &[("spec", network_policy_spec)]);
    add(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        network_policy,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"podSelector": {}}}),
    );

    // policy/v1: the selector is replaced by strategic merge patch (`patchStrategy:"replace"`).
    let pdb_spec = b.strukt(&[("selector", REPLACED)]);
    let pdb_conditions = conditions(&mut b);
    let pdb_status = b.strukt(&[("conditions", pdb_conditions)]);
    let pdb = kind_root(&mut b, &[("spec", pdb_spec), ("status", pdb_status)]);
    add(
        "policy",
        "v1",
        "PodDisruptionBudget",
        pdb,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {},
            "status": {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            },
        }),
    );

    // autoscaling/v2: metrics, policies and currentMetrics are atomic lists.
    let hpa_conditions = conditions(&mut b);
    let hpa_status = b.strukt(&[("conditions", hpa_conditions)]);
    let hpa = kind_root(&mut b, &[("status", hpa_status)]);
    add(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        hpa,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"scaleTargetRef": {"kind": "", "name": ""}, "maxReplicas": 0},
            "status": {"desiredReplicas": 0, "currentMetrics": null},
        }),
    );

    // autoscaling/v1: no lists at all.
    let hpa_v1 = kind_root(&mut b, &[]);
    add(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        hpa_v1,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"scaleTargetRef": {"kind": "", "name": ""}, "maxReplicas": 0},
            "status": {"currentReplicas": 0, "desiredReplicas": 0},
        }),
    );

    // scheduling.k8s.io/v1 and storage.k8s.io/v1
    let priority_class = kind_root(&mut b, &[]);
    add(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        priority_class,
        json!({"metadata": {"creationTimestamp": null}, "value": 0}),
    );
    let storage_class = kind_root(&mut b, &[]);
    add(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        storage_class,
        json!({"metadata": {"creationTimestamp": null}, "provisioner": ""}),
    );

    // core/v1 PodTemplate and ReplicationController: a pod template as in apps/v1; the
    // controller's selector is an atomic map and its conditions merge by type.
    let template = pod_template(&mut b, pod_spec);
    let pod_template_kind = kind_root(&mut b, &[("template", template)]);
    add(
        "",
        "v1",
        "PodTemplate",
        pod_template_kind,
        json!({
            "metadata": {"creationTimestamp": null},
            "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}},
        }),
    );
    let rc_template = pod_template(&mut b, pod_spec);
    let rc_spec = b.strukt(&[("selector", ATOMIC), ("template", rc_template)]);
    let rc_conditions = conditions(&mut b);
    let rc_status = b.strukt(&[("conditions", rc_conditions)]);
    let rc = kind_root(&mut b, &[("spec", rc_spec), ("status", rc_status)]);
    add(
        "",
        "v1",
        "ReplicationController",
        rc,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {"replicas": 0}}),
    );
    let cs_conditions = conditions(&mut b);
    let component_status = kind_root(&mut b, &[("conditions", cs_conditions)]);
    add("", "v1", "ComponentStatus", component_status, meta_only());

    // discovery.k8s.io/v1: endpoints and ports are atomic lists.
    let endpoint_slice = kind_root(&mut b, &[]);
    add(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        endpoint_slice,
        json!({
            "metadata": {"creationTimestamp": null},
            "addressType": "",
            "endpoints": null,
            "ports": null,
        }),
    );

    // events.k8s.io/v1: object references are atomic structs.
    let events_event = kind_root(&mut b, &[("regarding", ATOMIC), ("related", ATOMIC)]);
    add(
        "events.k8s.io",
        "v1",
        "Event",
        events_event,
        json!({
            "metadata": {"creationTimestamp": null},
            "eventTime": null,
            "regarding": {},
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null,
        }),
    );

    // networking.k8s.io/v1 IngressClass and node.k8s.io/v1 RuntimeClass.
    let ingress_class = kind_root(&mut b, &[]);
    add(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        ingress_class,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}}),
    );
    let scheduling = b.strukt(&[("nodeSelector", ATOMIC)]);
    let runtime_class = kind_root(&mut b, &[("scheduling", scheduling)]);
    add(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        runtime_class,
        json!({"metadata": {"creationTimestamp": null}, "handler": ""}),
    );

    // flowcontrol.apiserver.k8s.io/v1: rules and subjects are atomic lists; status conditions
    // merge by type.
    for kind in ["FlowSchema", "PriorityLevelConfiguration"] {
        let fc_conditions = conditions(&mut b);
        let fc_status = b.strukt(&[("conditions", fc_conditions)]);
        let root = kind_root(&mut b, &[("status", fc_status)]);
        let spec = if kind == "FlowSchema" {
            json!({"priorityLevelConfiguration": {"name": ""}, "matchingPrecedence": 0})
        } else {
            json!({"type": ""})
        };
        add(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            kind,
            root,
            json!({"metadata": {"creationTimestamp": null}, "spec": spec, "status": {}}),
        );
    }

    // storage.k8s.io/v1 CSI objects: a CSIDriver's lifecycle modes are a set, a CSINode's
    // drivers merge by name, a capacity's node topology is an atomic selector.
    let modes = b.set_of_scalars(false);
    let csi_driver_spec = b.strukt(&[("volumeLifecycleModes", modes)]);
    let csi_driver = kind_root(&mut b, &[("spec", csi_driver_spec)]);
    add(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        csi_driver,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}}),
    );
    let drivers = b.list_by(OPEN, "name");
    let csi_node_spec = b.strukt(&[("drivers", drivers)]);
    let csi_node = kind_root(&mut b, &[("spec", csi_node_spec)]);
    add(
        "storage.k8s.io",
        "v1",
        "CSINode",
        csi_node,
        json!({"metadata": {"creationTimestamp": null}, "spec": {"drivers": null}}),
    );
    let capacity = kind_root(&mut b, &[("nodeTopology", ATOMIC)]);
    add(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        capacity,
        json!({"metadata": {"creationTimestamp": null}, "storageClassName": ""}),
    );
    let volume_attachment = kind_root(&mut b, &[]);
    add(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        volume_attachment,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"attacher": "", "source": {}, "nodeName": ""},
            "status": {"attached": false},
        }),
    );

    // cluster.karmada.io/v1alpha1: Karmada's Go types carry no merge tags or list markers, so
    // every list (taints, conditions, apiEnablements...) is atomic and replaced.
    let cluster = kind_root(&mut b, &[]);
    add(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
        cluster,
        json!({"metadata": {"creationTimestamp": null}, "spec": {}, "status": {}}),
    );

    Table {
        arena: b.finish_shared(),
        kinds,
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{ListType, SmpList};
    use super::*;

    fn gvk<'a>(api_version: &'a str, kind: &'a str) -> GroupVersionKindRef<'a> {
        GroupVersionKindRef::from_api_version(api_version, kind)
    }

    /// Walks object field names from a kind's root.
    fn at(schema: &Schema, path: &[&str]) -> NodeId {
        let mut id = schema.root;
        for part in path {
            id = if *part == "[]" {
                schema.elem(id)
            } else {
                schema.field(id, part).0
            };
        }
        id
    }

    #[test]
    fn served_kinds_resolve() {
        let served = [
            ("v1", "Namespace"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "Service"),
            ("v1", "ServiceAccount"),
            ("v1", "Event"),
            ("v1", "PersistentVolumeClaim"),
            ("v1", "Pod"),
            ("v1", "Node"),
            ("v1", "Endpoints"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "ReplicaSet"),
            ("batch/v1", "Job"),
            ("batch/v1", "CronJob"),
            ("coordination.k8s.io/v1", "Lease"),
            ("certificates.k8s.io/v1", "CertificateSigningRequest"),
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicy",
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("apiregistration.k8s.io/v1", "APIService"),
            ("autoscaling/v1", "Scale"),
            ("cluster.karmada.io/v1alpha1", "Cluster"),
            ("v1", "PersistentVolume"),
            ("v1", "ResourceQuota"),
            ("v1", "LimitRange"),
            ("apps/v1", "ControllerRevision"),
            ("networking.k8s.io/v1", "Ingress"),
            ("networking.k8s.io/v1", "NetworkPolicy"),
            ("policy/v1", "PodDisruptionBudget"),
            ("autoscaling/v2", "HorizontalPodAutoscaler"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
            ("storage.k8s.io/v1", "StorageClass"),
            ("v1", "PodTemplate"),
            ("v1", "ReplicationController"),
            ("autoscaling/v1", "HorizontalPodAutoscaler"),
            ("discovery.k8s.io/v1", "EndpointSlice"),
            ("events.k8s.io/v1", "Event"),
            ("networking.k8s.io/v1", "IngressClass"),
            ("node.k8s.io/v1", "RuntimeClass"),
            ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
            (
                "flowcontrol.apiserver.k8s.io/v1",
                "PriorityLevelConfiguration",
            ),
            ("storage.k8s.io/v1", "CSIDriver"),
            ("storage.k8s.io/v1", "CSINode"),
            ("storage.k8s.io/v1", "CSIStorageCapacity"),
            ("storage.k8s.io/v1", "VolumeAttachment"),
        ];
        for (api_version, kind) in served {
            let schema = Schema::builtin(&gvk(api_version, kind));
            assert!(schema.is_some(), "{api_version} {kind}");
            assert!(schema.is_some_and(|s| s.supports_strategic_merge()));
        }
        for (api_version, kind) in [
            ("policy.karmada.io/v1alpha1", "PropagationPolicy"),
            ("apps/v1beta1", "Deployment"),
            ("v1", "Deployment"),
        ] {
            assert!(Schema::builtin(&gvk(api_version, kind)).is_none(), "{kind}");
        }
    }

    #[test]
    fn tagged_lists() {
        let key = |k: &str| SmpList::Merge(Some(k.to_string()));
        let deployment = Schema::builtin(&gvk("apps/v1", "Deployment")).unwrap();
        let pod_spec = ["spec", "template", "spec"];
        type Case<'a> = (&'a Schema, Vec<&'a str>, SmpList, Option<Vec<&'a str>>);
        let cases: Vec<Case> = vec![
            (
                &deployment,
                [&pod_spec[..], &["containers"]].concat(),
                key("name"),
                Some(vec!["name"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["initContainers"]].concat(),
                key("name"),
                Some(vec!["name"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["volumes"]].concat(),
                key("name"),
                Some(vec!["name"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["containers", "[]", "env"]].concat(),
                key("name"),
                Some(vec!["name"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["containers", "[]", "ports"]].concat(),
                key("containerPort"),
                Some(vec!["containerPort", "protocol"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["containers", "[]", "volumeMounts"]].concat(),
                key("mountPath"),
                Some(vec!["mountPath"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["imagePullSecrets"]].concat(),
                key("name"),
                Some(vec!["name"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["hostAliases"]].concat(),
                key("ip"),
                Some(vec!["ip"]),
            ),
            (
                &deployment,
                [&pod_spec[..], &["tolerations"]].concat(),
                SmpList::Replace,
                None,
            ),
            (
                &deployment,
                [&pod_spec[..], &["containers", "[]", "args"]].concat(),
                SmpList::Replace,
                None,
            ),
            (
                &deployment,
                vec!["status", "conditions"],
                key("type"),
                Some(vec!["type"]),
            ),
            (
                &deployment,
                vec!["metadata", "ownerReferences"],
                key("uid"),
                Some(vec!["uid"]),
            ),
            (
                &deployment,
                vec!["spec", "template", "metadata", "ownerReferences"],
                key("uid"),
                Some(vec!["uid"]),
            ),
        ];
        for (schema, path, smp, keys) in cases {
            let id = at(schema, &path);
            assert_eq!(schema.smp_list(id), &smp, "{path:?}");
            match (schema.list_type(id), keys) {
                (ListType::Map { keys, .. }, Some(want)) => assert_eq!(keys, &want, "{path:?}"),
                (ListType::Atomic, None) => {}
                (other, want) => panic!("{path:?}: {other:?} vs {want:?}"),
            }
        }

        let service = Schema::builtin(&gvk("v1", "Service")).unwrap();
        let ports = at(&service, &["spec", "ports"]);
        assert_eq!(service.smp_list(ports), &key("port"));
        let finalizers = at(&service, &["metadata", "finalizers"]);
        assert_eq!(service.smp_list(finalizers), &SmpList::Merge(None));
        assert_eq!(service.list_type(finalizers), &ListType::Set);
        let cluster = Schema::builtin(&gvk("cluster.karmada.io/v1alpha1", "Cluster")).unwrap();
        let taints = at(&cluster, &["spec", "taints"]);
        assert_eq!(cluster.smp_list(taints), &SmpList::Replace);
        assert_eq!(cluster.list_type(taints), &ListType::Atomic);
    }
}
