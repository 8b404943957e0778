//! Where an aggregated server's client-certificate and request-header trust comes from:
//! command-line files, else the host's `kube-system/extension-apiserver-authentication`
//! ConfigMap (kube's `RequestHeaderAuthenticationOptions` and
//! `ClientCertAuthenticationOptions` with the `authentication-kubeconfig` lookup,
//! k8s.io/apiserver/pkg/server/options/authentication.go).

use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;

use super::requestheader::{ChainVerifier, RequestHeader};
use crate::aggregator::front_proxy::{
    AUTHENTICATION_CONFIGMAP, AUTHENTICATION_CONFIGMAP_NAMESPACE,
};

/// Command-line settings; anything unset is looked up in the host's ConfigMap.
#[derive(Clone, Debug, Default)]
pub struct AuthnFlags {
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--requestheader-client-ca-file`.
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// `--requestheader-allowed-names`.
    pub requestheader_allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub requestheader_username_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub requestheader_group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// `--authentication-skip-lookup`: never read the ConfigMap.
    pub skip_lookup: bool,
    /// `--authentication-tolerate-lookup-failure`: start without it when it cannot be read.
    pub tolerate_lookup_failure: bool,
}

/// The trust in effect.
#[derive(Clone, Debug, Default)]
pub struct AuthnConfig {
    /// Front-proxy authentication, when a request-header CA is known.
    pub requestheader: Option<RequestHeader>,
    /// Client-certificate authentication, when a client CA is known.
    pub client_ca: Option<ChainVerifier>,
    /// The PEM bundles behind both (for the TLS handshake's acceptable CAs).
    pub ca_pems: Vec<String>,
}

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AuthnConfigError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The ConfigMap could not be read.
    #[error("unable to load configmap based request-header-client-ca-file: {0}")]
    Lookup(String),
    /// A value is malformed.
    #[error("{0}")]
    Invalid(String),
}

fn read(path: &PathBuf) -> Result<String, AuthnConfigError> {
    std::fs::read_to_string(path).map_err(|source| AuthnConfigError::Io {
        path: path.clone(),
        source,
    })
}

fn json_list(data: &std::collections::BTreeMap<String, String>, key: &str) -> Vec<String> {
    data.get(key)
        .and_then(|s| serde_json::from_str::<Vec<String>>(s).ok())
        .unwrap_or_default()
}

fn or_default(v: &[String], looked_up: Vec<String>, default: &str) -> Vec<String> {
    if !v.is_empty() {
        v.to_vec()
    } else if !looked_up.is_empty() {
        looked_up
    } else {
        vec![default.to_string()]
    }
}

/// Builds the configuration from flags and, unless skipped, the host's ConfigMap.
pub async fn load(
    flags: &AuthnFlags,
    host: Option<&kube::Client>,
) -> Result<AuthnConfig, AuthnConfigError> {
    let mut data = std::collections::BTreeMap::new();
    let need_lookup =
        flags.client_ca_file.is_none() || flags.requestheader_client_ca_file.is_none();
    if need_lookup
        && !flags.skip_lookup
        && let Some(client) = host
    {
        let api: kube::Api<ConfigMap> =
            kube::Api::namespaced(client.clone(), AUTHENTICATION_CONFIGMAP_NAMESPACE);
        match api.get(AUTHENTICATION_CONFIGMAP).await {
            Ok(cm) => data = cm.data.unwrap_or_default(),
            Err(e) if flags.tolerate_lookup_failure => {
                tracing::warn!(error = %e, "cannot read the authentication configuration; continuing without it");
            }
            Err(e) => return Err(AuthnConfigError::Lookup(e.to_string())),
        }
    }
    let mut ca_pems = Vec::new();
    let client_ca_pem = match &flags.client_ca_file {
        Some(p) => Some(read(p)?),
        None => data
            .get("client-ca-file")
            .cloned()
            .filter(|s| !s.trim().is_empty()),
    };
    let client_ca = match &client_ca_pem {
        Some(pem) => {
            ca_pems.push(pem.clone());
            Some(
                ChainVerifier::from_pem(pem)
                    .map_err(|e| AuthnConfigError::Invalid(format!("client CA: {e}")))?,
            )
        }
        None => None,
    };
    // Request-header settings come together: from the flags when the CA file is given, else
    // from the ConfigMap.
    let from_flags = flags.requestheader_client_ca_file.is_some();
    let rh_pem = match &flags.requestheader_client_ca_file {
        Some(p) => Some(read(p)?),
        None => data
            .get("requestheader-client-ca-file")
            .cloned()
            .filter(|s| !s.trim().is_empty()),
    };
    let looked = |k: &str| {
        if from_flags {
            vec![]
        } else {
            json_list(&data, k)
        }
    };
    let requestheader = match rh_pem {
        Some(pem) => {
            ca_pems.push(pem.clone());
            Some(RequestHeader {
                verifier: ChainVerifier::from_pem(&pem).map_err(|e| {
                    AuthnConfigError::Invalid(format!("request-header client CA: {e}"))
                })?,
                allowed_names: if flags.requestheader_allowed_names.is_empty() {
                    looked("requestheader-allowed-names")
                } else {
                    flags.requestheader_allowed_names.clone()
                },
                username_headers: or_default(
                    &flags.requestheader_username_headers,
                    looked("requestheader-username-headers"),
                    "X-Remote-User",
                ),
                group_headers: or_default(
                    &flags.requestheader_group_headers,
                    looked("requestheader-group-headers"),
                    "X-Remote-Group",
                ),
                extra_prefixes: or_default(
                    &flags.requestheader_extra_headers_prefix,
                    looked("requestheader-extra-headers-prefix"),
                    "X-Remote-Extra-",
                ),
            })
        }
        None => None,
    };
    Ok(AuthnConfig {
        requestheader,
        client_ca,
        ca_pems,
    })
}
