//! ValidatingAdmissionPolicy micro-benchmark (`cargo bench -p admission-policy --bench
//! evaluate`): the median time of one admission decision (`Engine::validate`: matching, the
//! binding, the variables bound, five CEL validations evaluated, the outcome) on a
//! Deployment-sized object, with the product's allocator (mimalloc). A fixed Rust workload
//! (serializing the same object to JSON) is timed the same way, to read the machine's speed.
//!
//! Environment: VAP_BENCH_CALLS (calls per measurement, default 20000).

use std::time::{Duration, Instant};

use admission_policy::{
    Attributes, Cluster, Engine, Gvk, Gvr, Operation, ParamKind, ParamScope, UserInfo,
};
use serde_json::{Value, json};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct NoCluster;

impl Cluster for NoCluster {
    fn namespace(&self, name: &str) -> Option<Value> {
        Some(
            json!({"metadata": {"name": name, "labels": {"env": "prod"}}, "spec": {}, "status": {"phase": "Active"}}),
        )
    }
    fn param_scope(&self, _: &ParamKind) -> Option<ParamScope> {
        None
    }
    fn param(&self, _: &ParamKind, _: &str, _: &str) -> Option<Value> {
        None
    }
    fn params(&self, _: &ParamKind, _: &str) -> Vec<Value> {
        Vec::new()
    }
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "generation": 4,
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"note": "x".repeat(64)}},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
                "containers": [
                    {"name": "web", "image": "registry.example.com/nginx:1.25", "ports": [{"containerPort": 80}],
                     "env": [{"name": "MODE", "value": "fast"}],
                     "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
                    {"name": "sidecar", "image": "registry.example.com/envoy:1.30",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
        "status": {"observedGeneration": 4, "replicas": 6, "readyReplicas": 6,
            "availableReplicas": 6, "updatedReplicas": 6,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
    })
}

fn policy() -> Value {
    json!({
        "metadata": {"name": "deployment-rules", "generation": 1},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [
                {"expression": "object.spec.replicas <= 10", "message": "at most 10 replicas"},
                {"expression": "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
                 "messageExpression": "'images must come from registry.example.com'"},
                {"expression": "has(object.metadata.labels) && 'app' in object.metadata.labels"},
                {"expression": "object.spec.template.spec.containers.all(c, has(c.resources) && has(c.resources.requests) && 'cpu' in c.resources.requests)"},
                {"expression": "!has(object.spec.template.spec.hostNetwork) || !object.spec.template.spec.hostNetwork"}
            ]
        }
    })
}

fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() / 2]
}

fn p99(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() * 99 / 100]
}

fn measure(calls: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..200 {
        f();
    }
    (0..calls)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let calls: usize = std::env::var("VAP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let registry: &'static component_base::metrics::Registry = Box::leak(Box::default());
    let engine = Engine::new(registry);
    let binding = json!({"metadata": {"name": "deployment-rules-binding"},
        "spec": {"policyName": "deployment-rules", "validationActions": ["Deny"]}});
    assert!(engine.sync(&[policy()], &[binding]).is_empty());
    let none = Engine::new(registry);

    let obj = deployment();
    let attrs = Attributes {
        operation: Operation::Create,
        kind: Gvk::new("apps", "v1", "Deployment"),
        resource: Gvr::new("apps", "v1", "deployments"),
        subresource: String::new(),
        name: "web".into(),
        namespace: "prod".into(),
        object: Some(&obj),
        old_object: None,
        dry_run: false,
        options: None,
        user: UserInfo {
            username: "alice".into(),
            ..Default::default()
        },
    };
    let outcome = engine.validate(&attrs, &NoCluster);
    assert!(
        outcome.denial.is_none(),
        "the object passes every validation: {outcome:?}"
    );
    let mut bad = obj.clone();
    bad["spec"]["replicas"] = json!(20);
    let bad_attrs = Attributes {
        object: Some(&bad),
        ..attrs.clone()
    };
    assert!(
        engine.validate(&bad_attrs, &NoCluster).denial.is_some(),
        "the policy is evaluated"
    );

    let with = measure(calls, || {
        std::hint::black_box(engine.validate(&attrs, &NoCluster));
    });
    let denied = measure(calls, || {
        std::hint::black_box(engine.validate(&bad_attrs, &NoCluster));
    });
    let without = measure(calls, || {
        std::hint::black_box(none.validate(&attrs, &NoCluster));
    });
    let reference = measure(calls, || {
        std::hint::black_box(serde_json::to_vec(&obj).ok());
    });

    println!("| measurement ({calls} calls) | median | p99 |");
    println!("|---|---|---|");
    println!(
        "| admitted object, policy with 5 validations | {} | {} |",
        micros(median(with.clone())),
        micros(p99(with))
    );
    println!(
        "| denied object (replicas), same policy | {} | {} |",
        micros(median(denied.clone())),
        micros(p99(denied))
    );
    println!(
        "| no policy | {} | {} |",
        micros(median(without.clone())),
        micros(p99(without))
    );
    println!(
        "| reference (JSON serialization) | {} | {} |",
        micros(median(reference.clone())),
        micros(p99(reference))
    );
}
