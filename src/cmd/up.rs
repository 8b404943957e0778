//! `karmada-rs up`: the quick start. A control plane and N simulated members in one process,
//! the members joined in push mode exactly as `karmada-rs join` joins them (over HTTPS, with
//! ServiceAccount tokens), the controllers running, and kubeconfigs for all of them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use controllers::join::{self, JoinOptions, MemberAccess};
use karmada_api::cluster::v1alpha1::Cluster;

use super::member::{RunningMember, SimulatorFlags};
use super::{ClusterDefaults, ClusterFlags};

/// How long `up` waits for the members to be Ready before printing a warning.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The quick start's cluster timings: members are probed often and flips are reported fast.
const UP_DEFAULTS: ClusterDefaults = ClusterDefaults {
    status_update_frequency: Duration::from_secs(2),
    success_threshold: Duration::from_secs(2),
    failure_threshold: Duration::from_secs(2),
};

/// Options of `up`.
#[derive(Args, Clone, Debug)]
pub struct UpArgs {
    /// Number of simulated member clusters (member1..memberN).
    #[arg(long, env = "KARMADA_RS_MEMBERS", default_value_t = 2)]
    pub members: u32,
    /// Number of simulated member clusters registered in Pull mode (pull1..pullN): each is
    /// registered with a bootstrap token as `karmada-rs register` does it and served by an
    /// in-process agent; the control plane is never given their addresses.
    #[arg(long, env = "KARMADA_RS_PULL_MEMBERS", default_value_t = 0)]
    pub pull_members: u32,
    /// Directory for all state; an existing one is reused (the members are rejoined).
    /// Default: ./karmada-rs-data.
    #[arg(long, env = "KARMADA_RS_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address of the control plane; port 0 reuses the previous port when free, else any
    /// free port.
    #[arg(long, env = "KARMADA_RS_BIND", default_value = "127.0.0.1:0")]
    pub bind: SocketAddr,
    #[command(flatten)]
    pub sim: SimulatorFlags,
    #[command(flatten)]
    pub cluster: ClusterFlags,
    #[command(flatten)]
    pub failover: super::FailoverFlags,
    #[command(flatten)]
    pub rate_limiter: super::RateLimiterFlags,
    #[command(flatten)]
    pub controller_manager: super::controller_manager::ControllerManagerFlags,
    #[command(flatten)]
    pub scheduler: super::scheduler::SchedulerFlags,
}

/// The default data directory, next to where `up` runs (as the README's commands expect).
fn default_data_dir() -> PathBuf {
    PathBuf::from("karmada-rs-data")
}

/// Runs `up` until Ctrl-C.
pub async fn up(args: UpArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let failover = args.failover.apply();
    let dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    std::fs::create_dir_all(dir.join("members"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize().unwrap_or(dir);

    let bind = super::reuse_port(args.bind, &dir.join("karmada.kubeconfig"));
    let control_plane = apiserver::launch::start(apiserver::launch::ServeOptions {
        data_dir: dir.clone(),
        bind,
        store: apiserver::launch::StoreChoice::Embedded,
        tls_sans: Vec::new(),
        flavor: apiserver::state::Flavor::ControlPlane,
        kubeconfig_name: "karmada.kubeconfig".into(),
        kcm: apiserver::controller::kcm::KcmOptions::default(),
        context_name: "karmada".into(),
        unsafe_no_fsync: false,
        limits: Default::default(),
        ..Default::default()
    });
    let names: Vec<String> = (1..=args.members).map(|i| format!("member{i}")).collect();
    let pull_names: Vec<String> = (1..=args.pull_members)
        .map(|i| format!("pull{i}"))
        .collect();
    let members = futures::future::try_join_all(names.iter().chain(&pull_names).map(|name| {
        let member_dir = dir.join("members").join(name);
        super::member::start(
            member_dir,
            SocketAddr::new(args.bind.ip(), 0),
            name,
            Vec::new(),
            &args.sim,
            // Simulated members are disposable, as kind's and KWOK's etcd run with
            // --unsafe-no-fsync; the control plane syncs every write.
            true,
        )
    }));
    let (control_plane, members) = tokio::join!(control_plane, members);
    let control_plane = control_plane.context("starting the control plane")?;
    super::serve_controller_metrics(&control_plane);
    let mut members: Vec<RunningMember> = members?;
    let pull_members = members.split_off(names.len());

    let client = control_plane.client_with_agent(super::controller_user(), controllers::USER_AGENT);
    let (settings, cluster) = super::controller_manager::controller_settings(
        failover,
        &args.rate_limiter,
        &args.controller_manager,
        &args.scheduler,
        args.cluster.settings(UP_DEFAULTS),
    );
    let running_controllers = controllers::start(
        controllers::ControllersConfig {
            settings,
            cluster,
            registration: Some(super::registration(&control_plane)),
            controllers: args.controller_manager.controllers(),
        },
        client.clone(),
    );

    let mut member_kubeconfigs = Vec::new();
    for (name, m) in names.iter().zip(&members) {
        let target = dir.join("members").join(format!("{name}.kubeconfig"));
        std::fs::copy(&m.server.kubeconfig, &target)
            .with_context(|| format!("writing {}", target.display()))?;
        member_kubeconfigs.push(target);
    }
    futures::future::try_join_all(names.iter().zip(&member_kubeconfigs).map(
        |(name, kubeconfig)| {
            let client = client.clone();
            async move {
                let access = MemberAccess::from_kubeconfig(kubeconfig, None).await?;
                let mut opts = JoinOptions::new(name.as_str());
                opts.rejoin = true;
                join::join(&client, &access, &opts)
                    .await
                    .with_context(|| format!("joining {name}"))
            }
        },
    ))
    .await?;
    let mut pull_kubeconfigs = Vec::new();
    for (name, m) in pull_names.iter().zip(&pull_members) {
        let target = dir.join("members").join(format!("{name}.kubeconfig"));
        std::fs::copy(&m.server.kubeconfig, &target)
            .with_context(|| format!("writing {}", target.display()))?;
        pull_kubeconfigs.push(target);
    }
    // Ctrl-C stops the agents (releasing nothing: they do not elect).
    let (stop_agents, stop) = tokio::sync::watch::channel(false);
    let agents = register_pull_members(&dir, &pull_names, &pull_kubeconfigs, &args, &stop).await?;

    let all: Vec<String> = names.iter().chain(&pull_names).cloned().collect();
    let ready = wait_ready(&client, &all).await;
    let elapsed = started.elapsed();
    member_kubeconfigs.extend(pull_kubeconfigs);
    print_usage(&dir, &control_plane.url, &all, &member_kubeconfigs, elapsed);
    if !ready {
        eprintln!(
            "warning: not every member reported Ready within {READY_TIMEOUT:?}; see `kubectl get clusters`"
        );
    }

    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    stop_agents.send_replace(true);
    for a in agents {
        a.abort();
    }
    running_controllers.shutdown();
    for m in members.into_iter().chain(pull_members) {
        m.shutdown().await;
    }
    control_plane.shutdown().await;
    Ok(())
}

/// Registers each pull member with its own bootstrap token, as `token create` and `register`
/// do it over HTTPS, and starts its agent in this process.
async fn register_pull_members(
    dir: &Path,
    names: &[String],
    kubeconfigs: &[PathBuf],
    args: &UpArgs,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut agents = Vec::new();
    if names.is_empty() {
        return Ok(agents);
    }
    let common = super::token::CommonArgs {
        kubeconfig: Some(dir.join("karmada.kubeconfig")),
        karmada_context: None,
    };
    let (addr, hash) = super::token::discovery_target(&common)?;
    let admin =
        controllers::join::client_from_kubeconfig(common.kubeconfig.as_deref(), None).await?;
    let secrets = kube::Api::namespaced(admin, certs::bootstrap_token::SECRET_NAMESPACE);
    for (name, kubeconfig) in names.iter().zip(kubeconfigs) {
        let token =
            super::token::new_token(&secrets, Duration::from_secs(3600), "karmada-rs up").await?;
        let agent_kubeconfig = dir.join("members").join(format!("{name}-agent.kubeconfig"));
        let bootstrap = super::register::BootstrapArgs {
            addr: addr.clone(),
            token: token.to_string(),
            ca_cert_hashes: vec![hash.clone()],
            discovery_token_unsafe_skip_ca_verification: false,
            cluster_name: name.clone(),
            cert_expiration: Duration::from_secs(365 * 24 * 3600),
            timeout: READY_TIMEOUT,
            quiet: true,
        };
        let found = super::register::discover_control_plane(&bootstrap)
            .await
            .with_context(|| format!("registering {name}"))?;
        let issued = super::register::agent_kubeconfig(&bootstrap, &found)
            .await
            .with_context(|| format!("registering {name}"))?;
        certs::write_kubeconfig(&agent_kubeconfig, &issued)
            .with_context(|| format!("writing {}", agent_kubeconfig.display()))?;
        let mut agent =
            super::agent::AgentArgs::new(agent_kubeconfig, name.clone(), Some(kubeconfig.clone()));
        // One agent per cluster, in this process: nothing to elect.
        agent.leader_election.leader_elect = false;
        agent
            .controllers
            .push(controllers::agent::selection::CERT_ROTATION.into());
        agent.quiet = true;
        agent.rate_limiter = args.rate_limiter;
        let concurrency = args.controller_manager.concurrency;
        agent.concurrent_work_syncs = concurrency.concurrent_work_syncs as u32;
        agent.concurrent_cluster_syncs = concurrency.concurrent_cluster_syncs as u32;
        agent.cluster = ClusterFlags {
            cluster_status_update_frequency: Some(UP_DEFAULTS.status_update_frequency),
            cluster_success_threshold: Some(UP_DEFAULTS.success_threshold),
            cluster_failure_threshold: Some(UP_DEFAULTS.failure_threshold),
            ..args.cluster.clone()
        };
        let name = name.clone();
        let stop = stop.clone();
        agents.push(tokio::spawn(async move {
            if let Err(e) = super::agent::serve(agent, stop).await {
                tracing::error!(cluster = %name, error = %e, "the agent stopped");
            }
        }));
    }
    Ok(agents)
}

/// Waits until every named Cluster is Ready.
async fn wait_ready(client: &kube::Client, names: &[String]) -> bool {
    let clusters = kube::Api::<Cluster>::all(client.clone());
    let deadline = Instant::now() + READY_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(list) = clusters.list(&Default::default()).await {
            let ready = names.iter().all(|n| {
                list.items.iter().any(|c| {
                    c.metadata.name.as_deref() == Some(n.as_str())
                        && c.ready_status() == Some("True")
                })
            });
            if ready {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn print_usage(
    dir: &Path,
    url: &str,
    names: &[String],
    member_kubeconfigs: &[PathBuf],
    elapsed: Duration,
) {
    let karmada = dir.join("karmada.kubeconfig");
    println!("karmada-rs control plane serving at {url}");
    println!(
        "karmada-rs is up in {:.1}s: control plane and {} member cluster(s) ({}), state in {}",
        elapsed.as_secs_f64(),
        names.len(),
        names.join(", "),
        dir.display()
    );
    println!();
    println!("Use the control plane:");
    println!("  export KUBECONFIG={}", karmada.display());
    println!("  kubectl get clusters");
    println!(
        "  kubectl apply -f samples/nginx-deployment.yaml -f samples/propagationpolicy-duplicated.yaml"
    );
    println!("  kubectl get deployment nginx");
    println!("  kubectl get rb,work -A");
    if !names.is_empty() {
        println!();
        println!("Look into the members:");
        for (name, kubeconfig) in names.iter().zip(member_kubeconfigs) {
            println!(
                "  kubectl --kubeconfig {} get deployments,nodes   # {name}",
                kubeconfig.display()
            );
        }
    }
    println!();
    println!("Press Ctrl-C to stop; run `karmada-rs up` again to resume.");
}
