//! kubeconfig files as kubectl and client-go read them.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

use crate::Error;

/// How a kubeconfig user authenticates.
#[derive(Clone, Debug)]
pub enum KubeconfigCredentials {
    /// A client certificate and key (PEM).
    ClientCert {
        /// Certificate PEM.
        cert_pem: String,
        /// Key PEM.
        key_pem: String,
    },
    /// A bearer token.
    Token(String),
}

/// The pieces of a single-context kubeconfig.
#[derive(Clone, Debug)]
pub struct Kubeconfig {
    /// Name used for the cluster, user and context entries.
    pub name: String,
    /// The API server URL, e.g. `https://127.0.0.1:6443`.
    pub server: String,
    /// The CA that signed the server's certificate (PEM).
    pub ca_pem: String,
    /// The user's credentials.
    pub credentials: KubeconfigCredentials,
    /// Default namespace of the context, if any.
    pub namespace: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct File<'a> {
    api_version: &'a str,
    kind: &'a str,
    clusters: Vec<Named<ClusterEntry>>,
    users: Vec<Named<UserEntry>>,
    contexts: Vec<Named<ContextEntry>>,
    current_context: &'a str,
    preferences: std::collections::BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Named<T> {
    name: String,
    #[serde(flatten)]
    value: T,
}

#[derive(Serialize)]
struct ClusterEntry {
    cluster: ClusterData,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterData {
    server: String,
    certificate_authority_data: String,
}

#[derive(Serialize)]
struct UserEntry {
    user: UserData,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "kebab-case")]
struct UserData {
    #[serde(skip_serializing_if = "Option::is_none")]
    client_certificate_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

#[derive(Serialize)]
struct ContextEntry {
    context: ContextData,
}

#[derive(Serialize)]
struct ContextData {
    cluster: String,
    user: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
}

impl Kubeconfig {
    /// Renders the kubeconfig as YAML.
    pub fn to_yaml(&self) -> Result<String, Error> {
        let user = match &self.credentials {
            KubeconfigCredentials::ClientCert { cert_pem, key_pem } => UserData {
                client_certificate_data: Some(STANDARD.encode(cert_pem)),
                client_key_data: Some(STANDARD.encode(key_pem)),
                token: None,
            },
            KubeconfigCredentials::Token(t) => UserData {
                token: Some(t.clone()),
                ..Default::default()
            },
        };
        let file = File {
            api_version: "v1",
            kind: "Config",
            clusters: vec![Named {
                name: self.name.clone(),
                value: ClusterEntry {
                    cluster: ClusterData {
                        server: self.server.clone(),
                        certificate_authority_data: STANDARD.encode(&self.ca_pem),
                    },
                },
            }],
            users: vec![Named {
                name: self.name.clone(),
                value: UserEntry { user },
            }],
            contexts: vec![Named {
                name: self.name.clone(),
                value: ContextEntry {
                    context: ContextData {
                        cluster: self.name.clone(),
                        user: self.name.clone(),
                        namespace: self.namespace.clone(),
                    },
                },
            }],
            current_context: &self.name,
            preferences: Default::default(),
        };
        Ok(serde_yaml::to_string(&file)?)
    }
}

/// Writes a kubeconfig with mode 0600 (it holds credentials).
pub fn write_kubeconfig(path: &Path, config: &Kubeconfig) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(crate::io_err(parent))?;
    }
    crate::pki::write_private(path, &config.to_yaml()?)
}
