//! Starting an aggregated server: storage for Clusters, TLS serving, the host clients, the
//! delegated security stack (refreshed as the host's ConfigMap changes), and the cluster
//! proxy reading member credentials from the host.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use storage::Store;
use tokio::task::JoinHandle;

use super::StoreChoice;
use crate::aggregated::authn_config::{self, AuthnFlags};
use crate::aggregated::{Delegated, DelegatedAuth};
use crate::proxy::{ControlPlane, RemoteSecrets, SecretSource};
use crate::resources::Catalog;
use crate::server::{Serving, TlsFiles};
use crate::state::{ApiConfig, ApiState, Flavor};

/// How often the host's authentication ConfigMap is read again.
pub const DEFAULT_AUTHN_REFRESH: Duration = Duration::from_secs(30);

/// How to start an aggregated server.
#[derive(Clone, Debug)]
pub struct AggregatedOptions {
    /// Data directory (store, serving PKI).
    pub data_dir: PathBuf,
    /// Listen address.
    pub bind: SocketAddr,
    /// Storage for Clusters.
    pub store: StoreChoice,
    /// What every key starts with in the store (`--etcd-prefix`, as
    /// karmada-aggregated-apiserver's).
    pub etcd_prefix: String,
    /// Extra serving-certificate SANs (the Service name `<svc>.<ns>.svc` the aggregator
    /// verifies).
    pub tls_sans: Vec<String>,
    /// Serving certificate and key files (instead of the generated ones).
    pub tls_cert_file: Option<PathBuf>,
    /// Serving key file.
    pub tls_private_key_file: Option<PathBuf>,
    /// The host (`--kubeconfig`): member Secrets and `clusters/*/proxy` non-resource paths.
    /// `None`: in-cluster configuration or `$KUBECONFIG`.
    pub kubeconfig: Option<PathBuf>,
    /// Where TokenReviews and the authentication ConfigMap go (default: `kubeconfig`).
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Where SubjectAccessReviews go (default: `kubeconfig`).
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Client-certificate and request-header settings.
    pub authn: AuthnFlags,
    /// How often the authentication ConfigMap is re-read.
    pub authn_refresh: Duration,
}

/// Why an aggregated server could not start.
#[derive(Debug, thiserror::Error)]
pub enum AggregatedError {
    /// Storage failed.
    #[error("storage: {0}")]
    Storage(#[from] storage::Error),
    /// Certificates failed.
    #[error("certificates: {0}")]
    Certs(#[from] certs::Error),
    /// TLS failed.
    #[error("tls: {0}")]
    Tls(#[from] crate::server::TlsError),
    /// A kubeconfig is unusable.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// Which.
        path: String,
        /// Why.
        message: String,
    },
    /// The authentication configuration is unusable.
    #[error("authentication: {0}")]
    Authn(#[from] authn_config::AuthnConfigError),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The watch caches did not start.
    #[error("{0}")]
    Api(#[from] crate::error::ApiError),
}

/// A running aggregated server.
pub struct AggregatedServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its HTTPS URL.
    pub url: String,
    /// Shared state.
    pub state: Arc<ApiState>,
    /// The CA of the serving certificate (PEM): the APIService's `caBundle`.
    pub serving_ca_pem: String,
    serving: Serving,
    refresher: JoinHandle<()>,
}

impl AggregatedServer {
    /// Stops serving.
    pub async fn shutdown(self) {
        self.refresher.abort();
        self.serving.shutdown(Duration::from_secs(5)).await;
    }
}

/// A client for a kubeconfig file, or the inferred configuration (in-cluster, `$KUBECONFIG`).
pub async fn host_client(path: Option<&PathBuf>) -> Result<kube::Client, AggregatedError> {
    let err = |message: String| AggregatedError::Kubeconfig {
        path: path
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(inferred)".into()),
        message,
    };
    let config = match path {
        Some(p) => {
            let kc = kube::config::Kubeconfig::read_from(p).map_err(|e| err(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| err(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| err(e.to_string()))?,
    };
    kube::Client::try_from(config).map_err(|e| err(e.to_string()))
}

async fn open_store(
    data_dir: &std::path::Path,
    choice: &StoreChoice,
) -> Result<Arc<dyn Store>, AggregatedError> {
    Ok(match choice {
        StoreChoice::Embedded => storage::embedded::EmbeddedStore::open(
            &data_dir.join("store"),
            storage::embedded::EmbeddedOptions {
                progress_interval: Duration::from_millis(20),
                ..Default::default()
            },
        )? as Arc<dyn Store>,
        StoreChoice::Etcd(e) => {
            storage::etcd::EtcdStore::connect((**e).clone()).await? as Arc<dyn Store>
        }
    })
}

fn read(path: &PathBuf) -> Result<String, AggregatedError> {
    std::fs::read_to_string(path).map_err(|source| AggregatedError::Io {
        path: path.clone(),
        source,
    })
}

/// Starts an aggregated server.
pub async fn start(opts: AggregatedOptions) -> Result<AggregatedServer, AggregatedError> {
    crate::karmada::install();
    std::fs::create_dir_all(&opts.data_dir).map_err(|source| AggregatedError::Io {
        path: opts.data_dir.clone(),
        source,
    })?;
    let host = host_client(opts.kubeconfig.as_ref()).await?;
    let authn_client = match &opts.authentication_kubeconfig {
        Some(p) => host_client(Some(p)).await?,
        None => host.clone(),
    };
    let authz_client = match &opts.authorization_kubeconfig {
        Some(p) => host_client(Some(p)).await?,
        None => host.clone(),
    };
    let authn = authn_config::load(&opts.authn, Some(&authn_client)).await?;

    let store = storage::prefixed::PrefixedStore::wrap(
        open_store(&opts.data_dir, &opts.store).await?,
        crate::resources::ROOT,
        &opts.etcd_prefix,
    );
    let pki = certs::Pki::ensure(
        &opts.data_dir.join("pki"),
        &certs::PkiOptions {
            extra_sans: opts.tls_sans.clone(),
        },
    )?;
    let (cert_pem, key_pem, serving_ca_pem) =
        match (&opts.tls_cert_file, &opts.tls_private_key_file) {
            (Some(c), Some(k)) => (read(c)?, read(k)?, read(c)?),
            _ => (
                pki.serving.cert_pem.clone(),
                pki.serving.key_pem.clone(),
                pki.ca.cert_pem().to_string(),
            ),
        };
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|source| AggregatedError::Bind {
            addr: opts.bind,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| AggregatedError::Bind {
            addr: opts.bind,
            source,
        })?;
    let host_name = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        addr.ip().to_string()
    };

    let resources = crate::karmada::resources()
        .into_iter()
        .filter(|r| r.group == crate::proxy::CLUSTER_GROUP)
        .collect();
    let state = ApiState::new(
        store,
        Arc::new(Catalog::new(resources)),
        ApiConfig {
            flavor: Flavor::Aggregated,
            external_address: format!("{host_name}:{}", addr.port()),
            ..Default::default()
        },
    );
    state.warm(Duration::from_secs(30)).await?;
    let tls_cas = authn.ca_pems.clone();
    let auth = Arc::new(DelegatedAuth::new(
        authn,
        Delegated::new(authn_client.clone(), authz_client),
    ));
    let chain = crate::handler::Chain::new(state.clone());
    chain.set_delegated_auth(auth.clone());
    chain
        .cluster_proxy
        .set_secrets(SecretSource::Remote(RemoteSecrets::new(host.clone())));
    chain
        .cluster_proxy
        .set_control_plane(ControlPlane::Remote(host));

    let router = crate::handler::router(chain);
    let tls = crate::server::server_config(&TlsFiles {
        cert_pem,
        key_pem,
        client_ca_pems: tls_cas,
    })?;
    let serving =
        crate::server::serve(listener, tls, router).map_err(|source| AggregatedError::Bind {
            addr: opts.bind,
            source,
        })?;
    let refresher = {
        let (flags, every) = (opts.authn.clone(), opts.authn_refresh);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match authn_config::load(&flags, Some(&authn_client)).await {
                    Ok(c) => auth.set_config(c),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot refresh the authentication configuration")
                    }
                }
            }
        })
    };
    let url = format!("https://{host_name}:{}", addr.port());
    tracing::info!(%url, "aggregated API server ready");
    Ok(AggregatedServer {
        addr,
        url,
        state,
        serving_ca_pem,
        serving,
        refresher,
    })
}
