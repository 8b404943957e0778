//! Where the cluster proxy reads member credentials: the control plane's own Secrets (watch
//! cache, then storage), or, in `--aggregated` mode, the host API server's Secrets read with
//! its client and kept briefly — as karmada-aggregated-apiserver reads them from
//! karmada-apiserver through a lister with a direct-get fallback (`ProxyREST.Connect`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;

use crate::state::ApiState;

/// How long a Secret read from the host is reused before it is read again.
pub const REMOTE_SECRET_TTL: Duration = Duration::from_secs(10);

/// The parts of a Secret the proxy uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretData {
    /// Its resourceVersion: a change means clients built from it are stale.
    pub version: String,
    /// Decoded `data`.
    pub data: BTreeMap<String, Vec<u8>>,
}

impl SecretData {
    /// Reads `data` (base64) and `metadata.resourceVersion` from a Secret's JSON.
    pub fn from_json(v: &serde_json::Value) -> SecretData {
        let version = v
            .pointer("/metadata/resourceVersion")
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .to_string();
        let mut data = BTreeMap::new();
        if let Some(m) = v.get("data").and_then(|d| d.as_object()) {
            for (k, val) in m {
                if let Some(s) = val.as_str()
                    && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s)
                {
                    data.insert(k.clone(), bytes);
                }
            }
        }
        SecretData { version, data }
    }
}

/// A Secret lookup failure other than "not found".
#[derive(Debug, thiserror::Error)]
#[error("reading secret {namespace}/{name}: {message}")]
pub struct SecretError {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Why.
    pub message: String,
}

/// Secrets read from the host, by namespace and name, with when they were read.
type RemoteCache = HashMap<(String, String), (Instant, Option<Arc<SecretData>>)>;

/// Secrets of a remote (host) API server, cached for [`REMOTE_SECRET_TTL`].
#[derive(Clone)]
pub struct RemoteSecrets {
    client: kube::Client,
    cache: Arc<Mutex<RemoteCache>>,
    ttl: Duration,
}

impl std::fmt::Debug for RemoteSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSecrets").finish_non_exhaustive()
    }
}

impl RemoteSecrets {
    /// Reads Secrets through `client`.
    pub fn new(client: kube::Client) -> RemoteSecrets {
        RemoteSecrets {
            client,
            cache: Arc::default(),
            ttl: REMOTE_SECRET_TTL,
        }
    }

    async fn get(&self, ns: &str, name: &str) -> Result<Option<Arc<SecretData>>, SecretError> {
        let key = (ns.to_string(), name.to_string());
        if let Ok(cache) = self.cache.lock()
            && let Some((at, v)) = cache.get(&key)
            && at.elapsed() < self.ttl
        {
            return Ok(v.clone());
        }
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(self.client.clone(), ns);
        let found = api.get_opt(name).await.map_err(|e| SecretError {
            namespace: ns.to_string(),
            name: name.to_string(),
            message: e.to_string(),
        })?;
        let value = found.map(|s| {
            Arc::new(SecretData {
                version: s.metadata.resource_version.unwrap_or_default(),
                data: s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect(),
            })
        });
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, (Instant::now(), value.clone()));
        }
        Ok(value)
    }
}

/// Where Secrets come from.
#[derive(Clone, Debug, Default)]
pub enum SecretSource {
    /// This server's own Secrets.
    #[default]
    Local,
    /// A host API server's Secrets.
    Remote(RemoteSecrets),
}

impl SecretSource {
    /// The resourceVersion of a Secret, cheaply (`None`: it does not exist).
    pub async fn version(
        &self,
        state: &ApiState,
        ns: &str,
        name: &str,
    ) -> Result<Option<String>, SecretError> {
        match self {
            SecretSource::Local => {
                if let Some(o) = local_cached(state, ns, name) {
                    return Ok(Some(o.rv.to_string()));
                }
                Ok(self.get(state, ns, name).await?.map(|s| s.version.clone()))
            }
            SecretSource::Remote(r) => Ok(r.get(ns, name).await?.map(|s| s.version.clone())),
        }
    }

    /// Reads a Secret (`None`: it does not exist).
    pub async fn get(
        &self,
        state: &ApiState,
        ns: &str,
        name: &str,
    ) -> Result<Option<Arc<SecretData>>, SecretError> {
        match self {
            SecretSource::Local => {
                if let Some(o) = local_cached(state, ns, name) {
                    let mut v = SecretData::from_json(&o.value());
                    v.version = o.rv.to_string();
                    return Ok(Some(Arc::new(v)));
                }
                // Not in the cache yet (just created): a consistent read from storage.
                let snapshot = state.catalog.snapshot();
                let Some(def) = snapshot.get("", "v1", "secrets").cloned() else {
                    return Ok(None);
                };
                match crate::registry::Registry::new(state, def)
                    .get(ns, name)
                    .await
                {
                    Ok(v) => {
                        let mut s = SecretData::from_json(&v);
                        if let Some(rv) = v
                            .pointer("/metadata/resourceVersion")
                            .and_then(|r| r.as_str())
                        {
                            s.version = rv.to_string();
                        }
                        Ok(Some(Arc::new(s)))
                    }
                    Err(e) if e.code == 404 => Ok(None),
                    Err(e) => Err(SecretError {
                        namespace: ns.to_string(),
                        name: name.to_string(),
                        message: e.message,
                    }),
                }
            }
            SecretSource::Remote(r) => r.get(ns, name).await,
        }
    }
}

fn local_cached(
    state: &ApiState,
    ns: &str,
    name: &str,
) -> Option<Arc<crate::watch_cache::CachedObject>> {
    let snapshot = state.catalog.snapshot();
    let def = snapshot.get("", "v1", "secrets")?;
    let cache = state.cache(def).ok()?;
    cache.get(&def.key(ns, name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_json() {
        let v = serde_json::json!({
            "metadata": {"resourceVersion": "42"},
            "data": {"token": "YWJj", "caBundle": "ZGVm", "bad": "%%%"},
        });
        let s = SecretData::from_json(&v);
        assert_eq!(s.version, "42");
        assert_eq!(s.data["token"], b"abc");
        assert_eq!(s.data["caBundle"], b"def");
        assert!(!s.data.contains_key("bad"));
    }
}
