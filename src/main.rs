//! The `karmada-rs` binary: command-line wiring only.

mod aggregated;

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
    /// How long Events are kept after they were last recorded (Go duration, e.g. 1h0m0s).
    #[arg(long, env = "KARMADA_RS_EVENT_TTL", default_value = "1h0m0s", value_parser = apiserver::kcm::parse_duration)]
    event_ttl: std::time::Duration,
    #[command(flatten)]
    aggregated: aggregated::AggregatedArgs,
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KARMADA_RS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
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
    if args.aggregated.aggregated {
        return aggregated::serve(
            args.aggregated,
            args.data_dir,
            args.bind,
            store,
            args.tls_sans,
        )
        .await;
    }
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
    // Pushes the members' impersonation RBAC for the cluster proxy.
    let _unified_auth =
        controllers::unified_auth::start(running.client(apiserver::auth::UserInfo::new(
            "system:karmada:controller-manager",
            vec!["system:karmada:controllers".into()],
        )));
    println!(
        "karmada-rs control plane serving at {}\nkubeconfig: {}",
        running.url,
        running.kubeconfig.display()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    running.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_tracing();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(a) => serve(a).await,
    }
}
