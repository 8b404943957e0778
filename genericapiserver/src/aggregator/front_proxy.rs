//! The aggregator's front-proxy identity and what aggregated API servers read to trust it:
//! a front-proxy CA and its client certificate (kube-apiserver's
//! `--requestheader-client-ca-file`, `--proxy-client-cert-file`/`--proxy-client-key-file`),
//! and the `kube-system/extension-apiserver-authentication` ConfigMap that kube-apiserver's
//! `ClusterAuthenticationInfo` controller publishes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::registry::{Registry, Subresource, WriteContext};
use crate::state::ApiState;

/// Common name of the aggregator's client certificate (kubeadm's).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
/// The header carrying the user name.
pub const USERNAME_HEADER: &str = "X-Remote-User";
/// The header carrying groups.
pub const GROUP_HEADER: &str = "X-Remote-Group";
/// The prefix of extra-attribute headers.
pub const EXTRA_HEADER_PREFIX: &str = "X-Remote-Extra-";
/// Namespace of the authentication ConfigMap.
pub const AUTHENTICATION_CONFIGMAP_NAMESPACE: &str = "kube-system";
/// Name of the authentication ConfigMap.
pub const AUTHENTICATION_CONFIGMAP: &str = "extension-apiserver-authentication";

/// Why the front-proxy files could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum FrontProxyError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Generating a certificate failed.
    #[error("front-proxy certificates: {0}")]
    Certs(#[from] certs::Error),
}

/// The front-proxy trust and identity of an aggregator.
#[derive(Clone, Debug)]
pub struct FrontProxy {
    /// The CA aggregated servers verify the client certificate against (PEM).
    pub ca_pem: String,
    /// The aggregator's client certificate (PEM).
    pub client_cert_pem: String,
    /// Its key (PEM).
    pub client_key_pem: String,
    /// Common names aggregated servers accept (`requestheader-allowed-names`).
    pub allowed_names: Vec<String>,
}

fn read_opt(path: &Path) -> Result<Option<String>, FrontProxyError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FrontProxyError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write(path: &Path, contents: &str, mode: u32) -> Result<(), FrontProxyError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| FrontProxyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(contents.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Loads the front-proxy CA and client certificate from `pki_dir`, creating what is missing.
pub fn ensure(pki_dir: &Path) -> Result<FrontProxy, FrontProxyError> {
    std::fs::create_dir_all(pki_dir).map_err(|source| FrontProxyError::Io {
        path: pki_dir.to_path_buf(),
        source,
    })?;
    let (ca_crt, ca_key) = (
        pki_dir.join("front-proxy-ca.crt"),
        pki_dir.join("front-proxy-ca.key"),
    );
    let (cl_crt, cl_key) = (
        pki_dir.join("front-proxy-client.crt"),
        pki_dir.join("front-proxy-client.key"),
    );
    let (ca, fresh) = match (read_opt(&ca_crt)?, read_opt(&ca_key)?) {
        (Some(c), Some(k)) => (certs::Ca::from_pem(&c, &k)?, false),
        _ => {
            let ca = certs::Ca::generate()?;
            write(&ca_key, &ca.key_pem(), 0o600)?;
            write(&ca_crt, ca.cert_pem(), 0o644)?;
            (ca, true)
        }
    };
    let client = match (read_opt(&cl_crt)?, read_opt(&cl_key)?) {
        (Some(c), Some(k)) if !fresh => (c, k),
        _ => {
            let c = ca.issue_client(FRONT_PROXY_CLIENT, &[])?;
            write(&cl_key, &c.key_pem, 0o600)?;
            write(&cl_crt, &c.cert_pem, 0o644)?;
            (c.cert_pem, c.key_pem)
        }
    };
    Ok(FrontProxy {
        ca_pem: ca.cert_pem().to_string(),
        client_cert_pem: client.0,
        client_key_pem: client.1,
        allowed_names: vec![FRONT_PROXY_CLIENT.to_string()],
    })
}

/// The data of the `extension-apiserver-authentication` ConfigMap (keys as kube-apiserver
/// writes them; list values are JSON arrays in strings).
pub fn authentication_data(client_ca_pem: &str, fp: &FrontProxy) -> Value {
    let list = |v: &[&str]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    let names: Vec<&str> = fp.allowed_names.iter().map(String::as_str).collect();
    json!({
        "client-ca-file": client_ca_pem,
        "requestheader-client-ca-file": fp.ca_pem,
        "requestheader-allowed-names": list(&names),
        "requestheader-username-headers": list(&[USERNAME_HEADER]),
        "requestheader-group-headers": list(&[GROUP_HEADER]),
        "requestheader-extra-headers-prefix": list(&[EXTRA_HEADER_PREFIX]),
    })
}

/// Creates or updates the `kube-system/extension-apiserver-authentication` ConfigMap.
pub async fn publish(state: &Arc<ApiState>, data: Value) -> Result<(), ApiError> {
    let Some(def) = state
        .catalog
        .snapshot()
        .get("", "v1", "configmaps")
        .cloned()
    else {
        return Ok(());
    };
    let reg = Registry::new(state, def);
    let ctx = WriteContext {
        manager: "kube-apiserver".into(),
        dry_run: false,
        apply: false,
    };
    let (ns, name) = (AUTHENTICATION_CONFIGMAP_NAMESPACE, AUTHENTICATION_CONFIGMAP);
    match reg.get(ns, name).await {
        Ok(cur) if cur.get("data") == Some(&data) => Ok(()),
        Ok(_) => {
            reg.guaranteed_update(ns, name, Subresource::Main, &ctx, |cur| {
                let mut next = cur.clone();
                next["data"] = data.clone();
                Ok(next)
            })
            .await?;
            Ok(())
        }
        Err(e) if e.code == 404 => {
            let obj = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns},
                "data": data,
            });
            match reg.create(ns, obj, &ctx).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = ensure(dir.path()).unwrap();
        let b = ensure(dir.path()).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem);
        assert_eq!(a.client_cert_pem, b.client_cert_pem);
        let der = crate::server::parse_certs(&a.client_cert_pem).unwrap();
        let user = crate::auth::user_from_certificate(&der[0]).unwrap();
        assert_eq!(user.name, FRONT_PROXY_CLIENT);
        let data = authentication_data("CA", &a);
        assert_eq!(
            data["requestheader-allowed-names"],
            "[\"front-proxy-client\"]"
        );
        assert_eq!(
            data["requestheader-username-headers"],
            "[\"X-Remote-User\"]"
        );
        assert_eq!(
            data["requestheader-extra-headers-prefix"],
            "[\"X-Remote-Extra-\"]"
        );
    }
}
