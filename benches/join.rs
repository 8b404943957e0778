//! Cluster join benchmark: how long from `join` until the Cluster is Ready with its status
//! collected (kubernetesVersion, apiEnablements, nodeSummary, resourceSummary), the figure
//! Karmada publishes as "cluster join to Ready" (P50 5.4 s).
//!
//! Starts the real `karmada-rs serve` (Karmada's default controller timings) and `karmada-rs
//! member serve` processes on loopback, joins each member with the join library over HTTPS
//! (what `karmada-rs join` runs), and watches the Cluster through the control plane's API.
//! Run: `cargo bench --bench join` (prints a Markdown table).

mod support;

use std::time::{Duration, Instant};

use controllers::join::{self, JoinOptions, MemberAccess};
use karmada_api::cluster::v1alpha1::Cluster;
use kube::Api;
use kube::runtime::wait::await_condition;
use support::{Process, percentile, spawn};

const MEMBERS: usize = 20;

/// Ready, with every collected field present.
fn collected(c: Option<&Cluster>) -> bool {
    let Some(c) = c else { return false };
    c.ready_status() == Some("True")
        && !c.status.kubernetes_version.is_empty()
        && !c.status.api_enablements.is_empty()
        && c.status
            .node_summary
            .as_ref()
            .is_some_and(|n| n.total_num > 0)
        && c.status
            .resource_summary
            .as_ref()
            .is_some_and(|r| !r.allocatable.is_empty())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let cp = spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let members: Vec<Process> = (0..MEMBERS)
        .map(|i| {
            spawn(
                &["member", "serve", "--name", &format!("bench{i}")],
                "karmada-rs member serving at",
                "kubeconfig",
                None,
            )
        })
        .collect();
    let client = join::client_from_kubeconfig(Some(&cp.kubeconfig), None)
        .await
        .expect("control-plane client");
    let clusters = Api::<Cluster>::all(client.clone());

    let mut join_calls = Vec::new();
    let mut to_ready = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let name = format!("bench{i}");
        let access = MemberAccess::from_kubeconfig(&m.kubeconfig, None)
            .await
            .expect("member kubeconfig");
        let start = Instant::now();
        join::join(&client, &access, &JoinOptions::new(&name))
            .await
            .expect("join");
        join_calls.push(start.elapsed());
        tokio::time::timeout(
            Duration::from_secs(60),
            await_condition(clusters.clone(), &name, collected),
        )
        .await
        .expect("cluster Ready within 60 s")
        .expect("watch");
        to_ready.push(start.elapsed());
    }
    join_calls.sort();
    to_ready.sort();
    // The control plane goes first so it does not log the members going away.
    drop(cp);
    drop(members);

    println!("| measure ({MEMBERS} joins, one at a time) | P50 | P90 | max |");
    println!("|---|---|---|---|");
    for (what, v) in [
        (
            "join call (member credentials, secrets, Cluster)",
            &join_calls,
        ),
        ("join to Ready with status collected", &to_ready),
    ] {
        println!(
            "| {what} | {} | {} | {} |",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.9)),
            ms(*v.last().unwrap_or(&Duration::ZERO))
        );
    }
}
