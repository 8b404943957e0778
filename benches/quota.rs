//! FederatedResourceQuota enforcement's cost to the scheduler (`cargo bench --bench quota`):
//! a control plane (`karmada-rs serve`) with one simulated member, a namespace with a
//! FederatedResourceQuota large enough for everything and one PropagationPolicy, and
//! `QUOTA_BENCH_N` Deployments (default 300) whose pods request cpu and memory, created by 16
//! clients at once. Measured: the scheduler's mean time per binding (Karmada's
//! `karmada_scheduler_e2e_scheduling_duration_seconds`, sum over count of the successful
//! attempts) and the time from the first create until every ResourceBinding is Scheduled.
//! Once with FederatedQuotaEnforcement off and once on (each scheduled binding then reserves
//! its usage in the quota), on fresh control planes, alternating `QUOTA_BENCH_REPS` times
//! (default 3); the medians are reported with every run, and the median ratio of each on run
//! to the off run before it.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use karmada_api::work::v1alpha2::ResourceBinding;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::json;
use support::{
    client, create_concurrently, env_or, first_time_count_reaches, join_ready, metrics_text, spawn,
    spawn_members,
};

fn deployment(i: usize) -> Deployment {
    let name = format!("d{i}");
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}
    }))
    .expect("deployment")
}

fn karmada(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "policy.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "policy.karmada.io/v1alpha1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Sums the `_sum` or `_count` series of a histogram over the lines whose labels contain
/// `with`.
fn series(text: &str, name: &str, with: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{') && l.contains(with))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

struct Run {
    per_binding: Duration,
    all_scheduled: Duration,
}

async fn run(n: usize, enforce: bool) -> Run {
    let mut args = vec!["serve", "--bind", "127.0.0.1:0"];
    if enforce {
        args.push("--feature-gates=FederatedQuotaEnforcement=true");
    }
    let cp_process = spawn(
        &args,
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let names = vec!["member1".to_owned()];
    let members = spawn_members(&names);
    let cp: Client = client(&cp_process.kubeconfig).await;
    join_ready(&cp, &names, &members).await;

    let ns: Api<Namespace> = Api::all(cp.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "bench"}})).expect("ns"),
    )
    .await
    .expect("namespace");
    let create = |ar: ApiResource, body: serde_json::Value| {
        let api: Api<DynamicObject> = Api::namespaced_with(cp.clone(), "bench", &ar);
        async move {
            api.create(
                &PostParams::default(),
                &serde_json::from_value(body).expect("object"),
            )
            .await
            .expect("create");
        }
    };
    create(
        karmada("FederatedResourceQuota", "federatedresourcequotas"),
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "FederatedResourceQuota",
            "metadata": {"name": "team", "namespace": "bench"},
            "spec": {"overall": {"cpu": "100000", "memory": "100000Gi"}}}),
    )
    .await;
    create(
        karmada("PropagationPolicy", "propagationpolicies"),
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "all", "namespace": "bench"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let rbs: Api<ResourceBinding> = Api::namespaced(cp.clone(), "bench");
    let scheduled = tokio::spawn(first_time_count_reaches(
        watcher(rbs, watcher::Config::default()),
        n,
        |b: &ResourceBinding| {
            b.status
                .conditions
                .iter()
                .any(|c| c.type_ == "Scheduled" && c.status == "True")
        },
    ));
    let start = Instant::now();
    let deploys: Api<Deployment> = Api::namespaced(cp.clone(), "bench");
    create_concurrently(&deploys, n, 16, None, deployment).await;
    let done = tokio::time::timeout(Duration::from_secs(600), scheduled)
        .await
        .expect("every binding scheduled within 600 s")
        .expect("watch task");
    if enforce {
        // Every placement was reserved: 2 replicas × 10m cpu each.
        let frqs: Api<DynamicObject> = Api::namespaced_with(
            cp.clone(),
            "bench",
            &karmada("FederatedResourceQuota", "federatedresourcequotas"),
        );
        // Go prints whole cpus without a suffix.
        let want = if (n * 20).is_multiple_of(1000) {
            format!("{}", n * 20 / 1000)
        } else {
            format!("{}m", n * 20)
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let q = frqs.get("team").await.expect("quota");
            let used = q.data["status"]["overallUsed"]["cpu"]
                .as_str()
                .map(str::to_owned);
            if used.as_deref() == Some(want.as_str()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "overallUsed cpu {used:?}, want {want}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let text = metrics_text(&cp).await;
    let name = "karmada_scheduler_e2e_scheduling_duration_seconds";
    let sum = series(&text, &format!("{name}_sum"), "result=\"scheduled\"");
    let count = series(&text, &format!("{name}_count"), "result=\"scheduled\"");
    Run {
        per_binding: Duration::from_secs_f64(sum / count.max(1.0)),
        all_scheduled: done.duration_since(start),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let n = env_or("QUOTA_BENCH_N", 300);
    let reps = env_or("QUOTA_BENCH_REPS", 3).max(1);
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..reps {
        off.push(run(n, false).await);
        on.push(run(n, true).await);
    }
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1000.0);
    let list = |runs: &[Run], f: fn(&Run) -> Duration| {
        runs.iter().map(|r| ms(f(r))).collect::<Vec<_>>().join(", ")
    };
    let per = |runs: &[Run]| median(runs.iter().map(|r| r.per_binding).collect());
    let all = |runs: &[Run]| median(runs.iter().map(|r| r.all_scheduled).collect());
    println!("quota enforcement, {n} Deployments (2 replicas each) to 1 member, {reps} runs each");
    println!("| gate | scheduling per binding (median) | runs | all Scheduled (median) | runs |");
    println!("|---|---|---|---|---|");
    for (label, runs) in [("off", &off), ("on", &on)] {
        println!(
            "| FederatedQuotaEnforcement={label} | {} | {} | {} | {} |",
            ms(per(runs)),
            list(runs, |r| r.per_binding),
            ms(all(runs)),
            list(runs, |r| r.all_scheduled)
        );
    }
    let overhead = per(&on).as_secs_f64() / per(&off).as_secs_f64() - 1.0;
    // Each on run follows its off run: their ratio is less exposed to a shared machine's
    // changing load than the medians are.
    let mut ratios: Vec<f64> = off
        .iter()
        .zip(&on)
        .map(|(a, b)| b.per_binding.as_secs_f64() / a.per_binding.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "enforcement adds {:.1} % to the scheduling time per binding by the medians, {:.1} % by the median of the run pairs' ratios (target: at most 10 %)",
        overhead * 100.0,
        (ratios[ratios.len() / 2] - 1.0) * 100.0
    );
}
