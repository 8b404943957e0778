//! `karmada-rs member serve`: a simulated member cluster (an API server with the built-in
//! groups only, plus the KWOK-like workload simulator).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use controllers::simulator::pod_network::PodCidr;
use controllers::simulator::{self, SimulatorConfig};

use super::parse_duration;

/// `member` subcommands.
#[derive(Subcommand)]
pub enum MemberCommand {
    /// Run a simulated member cluster; writes DIR/kubeconfig.
    Serve(MemberServeArgs),
}

/// Options of `member serve`.
#[derive(Args, Clone, Debug)]
pub struct MemberServeArgs {
    /// Directory for the store, certificates and the kubeconfig.
    #[arg(long, env = "KARMADA_RS_DATA_DIR")]
    pub data_dir: PathBuf,
    /// Address to listen on; port 0 reuses the port of an existing DIR/kubeconfig when free,
    /// else picks any free port.
    #[arg(long, env = "KARMADA_RS_BIND", default_value = "127.0.0.1:0")]
    pub bind: SocketAddr,
    /// Name of the cluster: the kubeconfig context and the prefix of node names.
    #[arg(long, env = "KARMADA_RS_NAME", default_value = "member")]
    pub name: String,
    /// Extra subject alternative names for the serving certificate.
    #[arg(long = "tls-san", env = "KARMADA_RS_TLS_SAN", value_delimiter = ',')]
    pub tls_sans: Vec<String>,
    #[command(flatten)]
    pub sim: SimulatorFlags,
    /// Acknowledge writes without waiting for stable storage, as etcd's --unsafe-no-fsync: a
    /// crashed process loses nothing, a crashed machine may lose the latest writes. `up` runs
    /// its simulated members this way.
    #[arg(long, env = "KARMADA_RS_UNSAFE_NO_FSYNC")]
    pub unsafe_no_fsync: bool,
}

/// Options of the workload simulator.
#[derive(Args, Clone, Debug)]
pub struct SimulatorFlags {
    /// Number of simulated nodes.
    #[arg(long, env = "KARMADA_RS_NODES", default_value_t = 3)]
    pub nodes: u32,
    /// Allocatable cpu of each node.
    #[arg(long, env = "KARMADA_RS_NODE_CPU", default_value = "8")]
    pub node_cpu: String,
    /// Allocatable memory of each node.
    #[arg(long, env = "KARMADA_RS_NODE_MEMORY", default_value = "32Gi")]
    pub node_memory: String,
    /// Allocatable pods of each node.
    #[arg(long, env = "KARMADA_RS_NODE_PODS", default_value = "110")]
    pub node_pods: String,
    /// How long workloads take to become ready (or complete) after a change.
    #[arg(long, env = "KARMADA_RS_READY_DELAY", value_parser = parse_duration, default_value = "500ms")]
    pub ready_delay: Duration,
    /// The pod CIDR of the simulated pods' addresses. Default: a /20 of 10.0.0.0/8 chosen by
    /// the cluster name, distinct for `up`'s memberN and pullN.
    #[arg(long, env = "KARMADA_RS_POD_CIDR")]
    pub pod_cidr: Option<PodCidr>,
}

impl SimulatorFlags {
    /// The simulator configuration for a cluster.
    pub fn config(&self, name: &str) -> SimulatorConfig {
        SimulatorConfig {
            node_prefix: name.to_owned(),
            nodes: self.nodes,
            node_cpu: self.node_cpu.clone(),
            node_memory: self.node_memory.clone(),
            node_pods: self.node_pods.clone(),
            ready_delay: self.ready_delay,
            pod_cidr: self.pod_cidr.unwrap_or_else(|| PodCidr::for_cluster(name)),
        }
    }
}

/// A running simulated member.
pub struct RunningMember {
    /// The API server.
    pub server: apiserver::launch::Running,
    /// Its simulator.
    pub simulator: simulator::Simulator,
}

impl RunningMember {
    /// Stops the simulator, then the server.
    pub async fn shutdown(self) {
        self.simulator.stop();
        self.server.shutdown().await;
    }
}

/// Starts a member API server and its simulator.
pub async fn start(
    data_dir: PathBuf,
    bind: SocketAddr,
    name: &str,
    tls_sans: Vec<String>,
    sim: &SimulatorFlags,
    unsafe_no_fsync: bool,
) -> anyhow::Result<RunningMember> {
    let bind = super::reuse_port(bind, &data_dir.join("kubeconfig"));
    let server = apiserver::launch::start(apiserver::launch::ServeOptions {
        data_dir,
        bind,
        store: apiserver::launch::StoreChoice::Embedded,
        tls_sans,
        flavor: apiserver::state::Flavor::Member,
        kubeconfig_name: "kubeconfig".into(),
        kcm: apiserver::controller::kcm::KcmOptions::default(),
        context_name: name.to_owned(),
        unsafe_no_fsync,
        limits: Default::default(),
        ..Default::default()
    })
    .await
    .with_context(|| format!("starting the API server of member {name}"))?;
    let client =
        server.client_with_agent(super::controller_user(), controllers::SIMULATOR_USER_AGENT);
    let simulator = simulator::start(client, sim.config(name))
        .await
        .with_context(|| format!("starting the simulator of member {name}"))?;
    Ok(RunningMember { server, simulator })
}

/// Runs `member serve` until Ctrl-C.
pub async fn serve(args: MemberServeArgs) -> anyhow::Result<()> {
    let member = start(
        args.data_dir.clone(),
        args.bind,
        &args.name,
        args.tls_sans.clone(),
        &args.sim,
        args.unsafe_no_fsync,
    )
    .await?;
    println!(
        "karmada-rs member serving at {}\nkubeconfig: {}",
        member.server.url,
        member.server.kubeconfig.display()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    member.shutdown().await;
    Ok(())
}
