//! What a control plane runs for pull-mode registration, as kube-controller-manager's
//! bootstrapsigner, tokencleaner and csrsigning controllers and Karmada's agentcsrapproving
//! controller do:
//!
//! - [`cluster_info`]: keeps `kube-public/cluster-info` holding a kubeconfig with the control
//!   plane's address and CA, and one detached JWS per valid signing token; deletes expired
//!   bootstrap token Secrets.
//! - [`csr`]: approves agents' CertificateSigningRequests (a token holder's for a new agent,
//!   an agent's for its own renewal) after a SubjectAccessReview, creates a new agent's RBAC,
//!   and signs approved `kubernetes.io/kube-apiserver-client` requests with the CA.

pub mod cluster_info;
pub mod csr;

use std::sync::Arc;

use tokio::task::JoinHandle;

/// Signs a PEM certificate request (validity, key encipherment) into a PEM certificate.
pub type Signer =
    Arc<dyn Fn(&str, std::time::Duration, bool) -> Result<String, String> + Send + Sync>;

/// What the registration controllers need.
#[derive(Clone)]
pub struct RegistrationConfig {
    /// The control plane's URL as joining members reach it (cluster-info's server).
    pub server: String,
    /// The CA bundle (PEM) clients verify the control plane with.
    pub ca_pem: String,
    /// The `kubernetes.io/kube-apiserver-client` signer.
    pub signer: Signer,
    /// The longest certificate the signer issues (kube's `--cluster-signing-duration`, 1 year).
    pub max_duration: std::time::Duration,
}

impl std::fmt::Debug for RegistrationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrationConfig")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Starts the registration controllers.
pub fn start(client: kube::Client, config: RegistrationConfig) -> Vec<JoinHandle<()>> {
    vec![
        cluster_info::start(client.clone(), config.clone()),
        csr::start(client, config),
    ]
}
