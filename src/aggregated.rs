//! `karmada-rs serve --aggregated`: flags and startup of the aggregated API server mode.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Flags of the aggregated mode (names as kube's generic API server options).
#[derive(Args, Debug, Default)]
pub struct AggregatedArgs {
    /// Serve only cluster.karmada.io for a host kube-apiserver (through an APIService), as
    /// karmada-aggregated-apiserver does.
    #[arg(long, env = "KARMADA_RS_AGGREGATED")]
    pub aggregated: bool,
    /// The host API server (member Secrets, `clusters/*/proxy` non-resource paths); default:
    /// in-cluster configuration or $KUBECONFIG.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Where TokenReviews and the extension-apiserver-authentication ConfigMap are read
    /// (default: --kubeconfig).
    #[arg(long, env = "KARMADA_RS_AUTHENTICATION_KUBECONFIG")]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Where SubjectAccessReviews are sent (default: --kubeconfig).
    #[arg(long, env = "KARMADA_RS_AUTHORIZATION_KUBECONFIG")]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// CA bundle verifying the front proxy's client certificate (default: from the host's
    /// ConfigMap).
    #[arg(long, env = "KARMADA_RS_REQUESTHEADER_CLIENT_CA_FILE")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Common names accepted for the front proxy's certificate (empty: any).
    #[arg(
        long,
        env = "KARMADA_RS_REQUESTHEADER_ALLOWED_NAMES",
        value_delimiter = ','
    )]
    pub requestheader_allowed_names: Vec<String>,
    /// Headers carrying the user name.
    #[arg(
        long,
        env = "KARMADA_RS_REQUESTHEADER_USERNAME_HEADERS",
        value_delimiter = ','
    )]
    pub requestheader_username_headers: Vec<String>,
    /// Headers carrying groups.
    #[arg(
        long,
        env = "KARMADA_RS_REQUESTHEADER_GROUP_HEADERS",
        value_delimiter = ','
    )]
    pub requestheader_group_headers: Vec<String>,
    /// Prefixes of headers carrying extra attributes.
    #[arg(
        long,
        env = "KARMADA_RS_REQUESTHEADER_EXTRA_HEADERS_PREFIX",
        value_delimiter = ','
    )]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// Never read the host's extension-apiserver-authentication ConfigMap.
    #[arg(long, env = "KARMADA_RS_AUTHENTICATION_SKIP_LOOKUP")]
    pub authentication_skip_lookup: bool,
    /// Start even when the ConfigMap cannot be read.
    #[arg(long, env = "KARMADA_RS_AUTHENTICATION_TOLERATE_LOOKUP_FAILURE")]
    pub authentication_tolerate_lookup_failure: bool,
}

/// The `serve` flags the aggregated mode shares with the control plane.
pub struct Common {
    /// `--data-dir`.
    pub data_dir: PathBuf,
    /// `--bind`.
    pub bind: SocketAddr,
    /// `--etcd-servers` or the embedded store.
    pub store: apiserver::launch::StoreChoice,
    /// `--etcd-prefix`.
    pub etcd_prefix: String,
    /// `--tls-san`.
    pub tls_sans: Vec<String>,
    /// `--client-ca-file` (default: from the host's ConfigMap).
    pub client_ca_file: Option<PathBuf>,
    /// `--tls-cert-file`.
    pub tls_cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`.
    pub tls_private_key_file: Option<PathBuf>,
}

/// Runs the aggregated API server until SIGINT or SIGTERM.
pub async fn serve(args: AggregatedArgs, common: Common) -> anyhow::Result<()> {
    let Common {
        data_dir,
        bind,
        store,
        etcd_prefix,
        tls_sans,
        client_ca_file,
        tls_cert_file,
        tls_private_key_file,
    } = common;
    let server =
        apiserver::launch::aggregated::start(apiserver::launch::aggregated::AggregatedOptions {
            data_dir,
            bind,
            store,
            etcd_prefix,
            tls_sans,
            tls_cert_file,
            tls_private_key_file,
            kubeconfig: args.kubeconfig,
            authentication_kubeconfig: args.authentication_kubeconfig,
            authorization_kubeconfig: args.authorization_kubeconfig,
            authn: apiserver::aggregated::AuthnFlags {
                client_ca_file,
                requestheader_client_ca_file: args.requestheader_client_ca_file,
                requestheader_allowed_names: args.requestheader_allowed_names,
                requestheader_username_headers: args.requestheader_username_headers,
                requestheader_group_headers: args.requestheader_group_headers,
                requestheader_extra_headers_prefix: args.requestheader_extra_headers_prefix,
                skip_lookup: args.authentication_skip_lookup,
                tolerate_lookup_failure: args.authentication_tolerate_lookup_failure,
            },
            authn_refresh: apiserver::launch::aggregated::DEFAULT_AUTHN_REFRESH,
        })
        .await
        .context("starting the aggregated API server")?;
    println!("karmada-rs aggregated apiserver serving at {}", server.url);
    // Pods are stopped with SIGTERM, terminals with Ctrl-C.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}
