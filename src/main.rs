//! The `karmada-rs` binary: command-line wiring only.

mod cmd;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "karmada-rs",
    version,
    about = "The Karmada multi-cluster control plane in one binary"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the control plane: API server and controllers.
    Serve(ServeArgs),
    /// Simulated member clusters.
    #[command(subcommand)]
    Member(cmd::member::MemberCommand),
    /// Register a member cluster in push mode (as `karmadactl join`).
    Join(cmd::join::JoinArgs),
    /// Remove a member cluster (as `karmadactl unjoin`).
    Unjoin(cmd::join::UnjoinArgs),
    /// Quick start: a control plane and simulated members, joined, in one process.
    Up(cmd::up::UpArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Directory for the store, certificates and the admin kubeconfig.
    #[arg(long, env = "KARMADA_RS_DATA_DIR")]
    data_dir: PathBuf,
    /// etcd endpoints (comma-separated); the embedded store is used when absent.
    #[arg(long, env = "KARMADA_RS_ETCD_SERVERS", value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// Address to listen on.
    #[arg(long, env = "KARMADA_RS_BIND", default_value = "127.0.0.1:6443")]
    bind: SocketAddr,
    /// Extra subject alternative names for the serving certificate.
    #[arg(long = "tls-san", env = "KARMADA_RS_TLS_SAN", value_delimiter = ',')]
    tls_sans: Vec<String>,
    #[command(flatten)]
    cluster: cmd::ClusterFlags,
    /// How long Events are kept after they were last recorded (Go duration, e.g. 1h0m0s).
    #[arg(long, env = "KARMADA_RS_EVENT_TTL", default_value = "1h0m0s", value_parser = apiserver::kcm::parse_duration)]
    event_ttl: std::time::Duration,
}

/// Logs to stderr, filtered by `KARMADA_RS_LOG` or else at `default`.
fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KARMADA_RS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let store = if args.etcd_servers.is_empty() {
        apiserver::launch::StoreChoice::Embedded
    } else {
        apiserver::launch::StoreChoice::Etcd(Box::new(storage::etcd::EtcdOptions::new(
            args.etcd_servers,
        )))
    };
    let running = apiserver::launch::start(apiserver::launch::ServeOptions {
        data_dir: args.data_dir,
        bind: args.bind,
        store,
        tls_sans: args.tls_sans,
        flavor: apiserver::state::Flavor::ControlPlane,
        kubeconfig_name: "karmada.kubeconfig".into(),
        context_name: "karmada".into(),
        kcm: apiserver::kcm::KcmOptions {
            event_ttl: args.event_ttl,
            ..Default::default()
        },
    })
    .await
    .context("starting the API server")?;
    let client = running.client(cmd::controller_user());
    let members = controllers::member_clients::MemberClients::new(client.clone());
    let cluster_controllers = controllers::cluster::start(args.cluster.controllers(
        client,
        members,
        cmd::KARMADA_DEFAULTS,
    ));
    println!(
        "karmada-rs control plane serving at {}\nkubeconfig: {}",
        running.url,
        running.kubeconfig.display()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    for h in cluster_controllers {
        h.abort();
    }
    running.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The quick start and the one-shot commands talk to a person on the terminal: only
    // problems are logged unless asked for more.
    init_tracing(match cli.command {
        Command::Serve(_) | Command::Member(_) => "info",
        Command::Join(_) | Command::Unjoin(_) | Command::Up(_) => "warn",
    });
    match cli.command {
        Command::Serve(a) => serve(a).await,
        Command::Member(cmd::member::MemberCommand::Serve(a)) => cmd::member::serve(a).await,
        Command::Join(a) => cmd::join::join(a).await,
        Command::Unjoin(a) => cmd::join::unjoin(a).await,
        Command::Up(a) => cmd::up::up(a).await,
    }
}
