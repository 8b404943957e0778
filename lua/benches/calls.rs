//! Lua call micro-benchmark (`cargo bench -p lua --bench calls`): the median time of one
//! InterpretHealth and one GetReplicas call through the runtime with a cached script, on a
//! Deployment-sized custom resource (the object converted to Lua, the function run, the
//! result converted back and checked), from one thread and from two at once, with the
//! product's allocator (mimalloc).
//!
//! Environment: LUA_BENCH_CALLS (calls per measurement, default 20000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lua::{Limits, NoPods, Operation, Runtime, Script, operations};
use serde_json::{Value, json};

// Lua's allocations go through Rust's global allocator: the one `karmada-rs` uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HEALTH: &str = r#"
function InterpretHealth(observedObj)
  local s = observedObj.status
  if s == nil or s.observedGeneration ~= observedObj.metadata.generation then
    return false
  end
  return (s.availableReplicas or 0) >= (observedObj.spec.replicas or 1)
end
"#;

const REPLICAS: &str = r#"
local kube = require("kube")
function GetReplicas(obj)
  local spec = obj.spec.template.spec
  local requires = { nodeClaim = { nodeSelector = spec.nodeSelector, tolerations = spec.tolerations } }
  local cpu, memory = {}, {}
  for _, c in ipairs(spec.containers) do
    if c.resources ~= nil and c.resources.requests ~= nil then
      table.insert(cpu, c.resources.requests.cpu)
      table.insert(memory, c.resources.requests.memory)
    end
  end
  requires.resourceRequest = { cpu = kube.resourceAdd(unpack(cpu)), memory = kube.resourceAdd(unpack(memory)) }
  requires.namespace = obj.metadata.namespace
  return obj.spec.replicas, requires
end
"#;

fn object() -> Value {
    json!({
        "apiVersion": "apps.example.io/v1", "kind": "Workload",
        "metadata": {"name": "web", "namespace": "prod", "generation": 4,
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"note": "x".repeat(64)}},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
                "containers": [
                    {"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                     "env": [{"name": "MODE", "value": "fast"}],
                     "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
                    {"name": "sidecar", "image": "envoy:1.30",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
        "status": {"observedGeneration": 4, "replicas": 6, "readyReplicas": 6,
            "availableReplicas": 6, "updatedReplicas": 6,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
    })
}

fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() / 2]
}

fn measure(calls: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    // Warm up: every state of the pool compiles the script once.
    for _ in 0..200 {
        f();
    }
    let mut each = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        f();
        each.push(t.elapsed());
    }
    let p99 = {
        let mut s = each.clone();
        s.sort();
        s[(s.len() * 99 / 100).min(s.len() - 1)]
    };
    (median(each), p99)
}

fn main() {
    let calls: usize = std::env::var("LUA_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let rt = Runtime::new(Arc::new(NoPods), Limits::default());
    let health = Script::new(HEALTH, Operation::InterpretHealth.function());
    let replicas = Script::new(REPLICAS, Operation::InterpretReplica.function());
    let obj = object();
    assert_eq!(operations::interpret_health(&rt, &health, &obj), Ok(true));
    let (n, req) = operations::get_replicas(&rt, &replicas, &obj).expect("GetReplicas");
    assert_eq!(n, 6);
    assert_eq!(
        req.as_ref().map(|r| r["resourceRequest"].clone()),
        Some(json!({"cpu": "350m", "memory": "192Mi"}))
    );

    println!("lua call benchmark: {calls} calls each, cached scripts, Deployment-sized object");
    // A fixed amount of plain Rust work on the same object, timed the same way: runs of this
    // benchmark differ by the machine's speed at the time (other processes, a busy sibling
    // hyperthread, frequency), which this figure shows apart from the Lua calls.
    let (m, _) = measure(calls, || {
        std::hint::black_box(serde_json::to_vec(std::hint::black_box(&obj)).map(|v| v.len())).ok();
    });
    println!(
        "  reference (serialize the object to JSON): median {:.1} µs",
        m.as_secs_f64() * 1e6
    );
    let (m, p99) = measure(calls, || {
        let _ = operations::interpret_health(&rt, &health, &obj);
    });
    println!(
        "  InterpretHealth: median {:.1} µs, p99 {:.1} µs",
        m.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    let (m, p99) = measure(calls, || {
        let _ = operations::get_replicas(&rt, &replicas, &obj);
    });
    println!(
        "  GetReplicas:     median {:.1} µs, p99 {:.1} µs",
        m.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    // Two workers sharing the pool at once.
    let medians: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (rt, health, obj) = (rt.clone(), health.clone(), obj.clone());
                s.spawn(move || {
                    measure(calls, || {
                        let _ = operations::interpret_health(&rt, &health, &obj);
                    })
                    .0
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    println!(
        "  InterpretHealth from 2 threads sharing the pool: medians {}",
        medians
            .iter()
            .map(|m| format!("{:.1} µs", m.as_secs_f64() * 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
