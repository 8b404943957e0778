//! Authorization micro-benchmark: decisions per request with 1,000 roles and 1,000 bindings
//! loaded (plus the bootstrap policy), for users bound directly, through groups and through
//! service accounts, allowed and denied, resource and non-resource requests.
//!
//! Run: `cargo bench -p apiserver --bench authz` (optional argument after `--`: decisions to
//! time, default 200000). Prints the median and p99 of one decision, and the index build time.

use std::hint::black_box;
use std::time::Instant;

use apiserver::auth::rbac::{Authorizer, Index};
use apiserver::auth::{Attributes, UserInfo};
use apiserver::controller::rbac_bootstrap;
use apiserver::request_info::{RequestInfo, parse_query, request_info};
use serde_json::{Value, json};

const ROLES: usize = 1000;
const BINDINGS: usize = 1000;
const NAMESPACES: usize = 50;
const GROUPS: usize = 20;

const RESOURCES: &[(&str, &str)] = &[
    ("", "configmaps"),
    ("", "secrets"),
    ("", "pods"),
    ("", "services"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("batch", "jobs"),
    ("work.karmada.io", "works"),
    ("policy.karmada.io", "propagationpolicies"),
    ("cluster.karmada.io", "clusters"),
];
const VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// A tiny deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn rules(rng: &mut Rng) -> Value {
    let rules: Vec<Value> = (0..5)
        .map(|_| {
            let (g, r) = RESOURCES[rng.below(RESOURCES.len())];
            let verbs: Vec<&str> = (0..3).map(|_| VERBS[rng.below(VERBS.len())]).collect();
            let mut rule = json!({"apiGroups": [g], "resources": [r], "verbs": verbs});
            if rng.below(5) == 0 {
                rule["resourceNames"] = json!([format!("obj-{}", rng.below(10))]);
            }
            rule
        })
        .collect();
    json!(rules)
}

fn policy() -> (Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut roles = Vec::new();
    let mut cluster_roles = rbac_bootstrap::cluster_roles();
    for i in 0..ROLES {
        if i % 2 == 0 {
            cluster_roles
                .push(json!({"metadata": {"name": format!("cr-{i}")}, "rules": rules(&mut rng)}));
        } else {
            roles.push(json!({"metadata": {"name": format!("r-{i}"), "namespace": format!("ns-{}", i % NAMESPACES)}, "rules": rules(&mut rng)}));
        }
    }
    let mut role_bindings = Vec::new();
    let mut cluster_role_bindings = rbac_bootstrap::cluster_role_bindings();
    for i in 0..BINDINGS {
        let user = json!({"kind": "User", "name": format!("user-{i}")});
        if i % 2 == 0 {
            let subjects = if i % 10 == 0 {
                json!([user, {"kind": "Group", "name": format!("group-{}", i % GROUPS)}])
            } else {
                json!([user])
            };
            cluster_role_bindings.push(json!({
                "metadata": {"name": format!("crb-{i}")},
                "roleRef": {"kind": "ClusterRole", "name": format!("cr-{i}")},
                "subjects": subjects,
            }));
        } else {
            role_bindings.push(json!({
                "metadata": {"name": format!("rb-{i}"), "namespace": format!("ns-{}", i % NAMESPACES)},
                "roleRef": {"kind": "Role", "name": format!("r-{i}")},
                "subjects": [user, {"kind": "ServiceAccount", "name": format!("sa-{i}")}],
            }));
        }
    }
    (roles, cluster_roles, role_bindings, cluster_role_bindings)
}

fn requests(n: usize) -> Vec<(UserInfo, RequestInfo)> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|_| {
            let k = rng.below(BINDINGS);
            let user = match rng.below(4) {
                0 => UserInfo::new(
                    format!("system:serviceaccount:ns-{}:sa-{k}", k % NAMESPACES),
                    vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:ns-{}", k % NAMESPACES),
                    ],
                ),
                _ => UserInfo::new(format!("user-{k}"), vec![format!("group-{}", k % GROUPS)]),
            };
            let (g, r) = RESOURCES[rng.below(RESOURCES.len())];
            let ns = format!("ns-{}", rng.below(NAMESPACES));
            let path = match rng.below(6) {
                0 => "/api/v1".to_string(),
                1 => format!("{}/namespaces/{ns}/{r}", prefix(g)),
                _ => format!("{}/namespaces/{ns}/{r}/obj-{}", prefix(g), rng.below(10)),
            };
            let method = match rng.below(3) {
                0 => http::Method::GET,
                1 => http::Method::PUT,
                _ => http::Method::DELETE,
            };
            let info = request_info(&method, &path, &parse_query(None));
            (user, info)
        })
        .collect()
}

fn prefix(group: &str) -> String {
    let version = match group {
        "" | "apps" | "batch" => "v1",
        "work.karmada.io" | "policy.karmada.io" | "cluster.karmada.io" => "v1alpha1",
        _ => "v1",
    };
    if group.is_empty() {
        "/api/v1".into()
    } else {
        format!("/apis/{group}/{version}")
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Test runners list a target's tests first (`--list`): this target has none.
    if args.iter().any(|a| a == "--list") {
        return;
    }
    // `cargo bench` passes `--bench`; run as a test (`cargo test --all-targets`), a short
    // smoke run keeps the code exercised without the cost.
    let full = args.iter().any(|a| a == "--bench");
    let n: usize =
        args.iter()
            .find_map(|a| a.parse().ok())
            .unwrap_or(if full { 200_000 } else { 1_000 });
    let (roles, cluster_roles, role_bindings, cluster_role_bindings) = policy();
    let started = Instant::now();
    let index = Index::build(
        &roles,
        &cluster_roles,
        &role_bindings,
        &cluster_role_bindings,
    );
    let build = started.elapsed();
    println!(
        "policy: {} roles + {} clusterroles, {} bindings indexed in {:.2} ms",
        roles.len(),
        cluster_roles.len(),
        index.bindings(),
        build.as_secs_f64() * 1000.0
    );
    let authz = Authorizer::new();
    authz.set_index(index);

    let reqs = requests(n);
    // Warm up.
    for (u, i) in reqs.iter().take(n.min(10_000)) {
        black_box(authz.authorize(&Attributes::from_request(u, i)));
    }
    let mut times = Vec::with_capacity(n);
    let mut allowed = 0usize;
    for (u, i) in &reqs {
        let t = Instant::now();
        let d = authz.authorize(&Attributes::from_request(u, i));
        times.push(t.elapsed().as_nanos() as u64);
        allowed += usize::from(black_box(d.allowed));
    }
    times.sort_unstable();
    println!(
        "authorize: {n} decisions ({:.0}% allowed): median {:.2} µs, p99 {:.2} µs, max {:.2} µs",
        allowed as f64 * 100.0 / n as f64,
        percentile(&times, 0.5) as f64 / 1000.0,
        percentile(&times, 0.99) as f64 / 1000.0,
        *times.last().unwrap_or(&0) as f64 / 1000.0,
    );
}
