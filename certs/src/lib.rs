//! Certificates and kubeconfig files: the control plane's CA, serving and client
//! certificates (rcgen), created on first start and reused afterwards.
//!
//! Must not depend on the server, storage, controllers or an async runtime.

pub mod bootstrap_token;
mod kubeconfig;
mod pki;

pub use kubeconfig::{Kubeconfig, KubeconfigCredentials, write_kubeconfig};
pub use pki::{
    ADMIN_GROUP, ADMIN_USER, Ca, IssuedCert, Pki, PkiOptions, client_request, request_subject,
    validity_window,
};

/// Why creating or loading certificates failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// rcgen refused to build or sign a certificate.
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// A kubeconfig could not be serialized.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] serde_yaml::Error),
    /// A PEM file holds no usable certificate or key.
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}
