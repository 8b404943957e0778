//! `karmada-rs join` and `karmada-rs unjoin`: push-mode registration as `karmadactl join`
//! and `karmadactl unjoin` do it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use controllers::join::{self, JoinOptions, MemberAccess, UnjoinOptions};

use super::parse_duration;

/// Options of `join`.
#[derive(Args, Clone, Debug)]
pub struct JoinArgs {
    /// Name of the member cluster.
    pub name: String,
    /// Kubeconfig of the member cluster (admin rights are needed to create its credentials).
    #[arg(long, env = "KARMADA_RS_CLUSTER_KUBECONFIG")]
    pub cluster_kubeconfig: PathBuf,
    /// Context in the member kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_CLUSTER_CONTEXT")]
    pub cluster_context: Option<String>,
    /// Kubeconfig of the Karmada control plane; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the control-plane kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
    /// Provider of the member cluster.
    #[arg(long, env = "KARMADA_RS_CLUSTER_PROVIDER")]
    pub cluster_provider: Option<String>,
    /// Region of the member cluster.
    #[arg(long, env = "KARMADA_RS_CLUSTER_REGION")]
    pub cluster_region: Option<String>,
    /// Zones of the member cluster (comma-separated).
    #[arg(long, env = "KARMADA_RS_CLUSTER_ZONES", value_delimiter = ',')]
    pub cluster_zones: Vec<String>,
}

/// Options of `unjoin`.
#[derive(Args, Clone, Debug)]
pub struct UnjoinArgs {
    /// Name of the member cluster.
    pub name: String,
    /// Kubeconfig of the member cluster; when given, the ServiceAccounts, RBAC objects and
    /// namespace that join created there are removed too.
    #[arg(long, env = "KARMADA_RS_CLUSTER_KUBECONFIG")]
    pub cluster_kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig.
    #[arg(long, env = "KARMADA_RS_CLUSTER_CONTEXT")]
    pub cluster_context: Option<String>,
    /// Kubeconfig of the Karmada control plane; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the control-plane kubeconfig.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
    /// Finish even if cleanup cannot complete (e.g. the member is unreachable): after
    /// --wait, remove the finalizers of the cluster's Works, execution space and Cluster,
    /// and ignore member-side failures.
    #[arg(long, env = "KARMADA_RS_FORCE")]
    pub force: bool,
    /// How long to wait for the Cluster to be removed.
    #[arg(long, env = "KARMADA_RS_WAIT", value_parser = parse_duration, default_value = "60s")]
    pub wait: Duration,
}

/// Runs `join`.
pub async fn join(args: JoinArgs) -> anyhow::Result<()> {
    let control_plane =
        join::client_from_kubeconfig(args.kubeconfig.as_deref(), args.karmada_context.as_deref())
            .await?;
    let member = MemberAccess::of_cluster(
        &args.cluster_kubeconfig,
        args.cluster_context.as_deref(),
        &control_plane,
        &args.name,
    )
    .await?;
    let mut opts = JoinOptions::new(&args.name);
    opts.provider = args.cluster_provider.unwrap_or_default();
    opts.region = args.cluster_region.unwrap_or_default();
    opts.zones = args.cluster_zones;
    join::join(&control_plane, &member, &opts)
        .await
        .with_context(|| format!("joining cluster {}", args.name))?;
    println!("cluster({}) is joined successfully", args.name);
    Ok(())
}

/// Runs `unjoin`.
pub async fn unjoin(args: UnjoinArgs) -> anyhow::Result<()> {
    let control_plane =
        join::client_from_kubeconfig(args.kubeconfig.as_deref(), args.karmada_context.as_deref())
            .await?;
    let member = match &args.cluster_kubeconfig {
        Some(path) => Some(
            MemberAccess::of_cluster(
                path,
                args.cluster_context.as_deref(),
                &control_plane,
                &args.name,
            )
            .await?
            .client,
        ),
        None => None,
    };
    let opts = UnjoinOptions {
        name: args.name.clone(),
        force: args.force,
        wait: args.wait,
    };
    let report = join::unjoin(&control_plane, member.as_ref(), &opts)
        .await
        .with_context(|| format!("unjoining cluster {}", args.name))?;
    if report.forced {
        eprintln!(
            "warning: cluster {} did not finish cleaning up; its finalizers were removed and objects may remain in the member",
            args.name
        );
    }
    for leftover in &report.member_leftovers {
        eprintln!("warning: could not remove {leftover} from the member cluster");
    }
    if member.is_none() {
        eprintln!(
            "note: without --cluster-kubeconfig the ServiceAccounts, RBAC objects and namespace {} created in the member cluster are kept",
            join::CLUSTER_NAMESPACE
        );
    }
    println!("cluster({}) is unjoined successfully", args.name);
    Ok(())
}
