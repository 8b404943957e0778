//! Encryption at rest (`--encryption-provider-config`), as kube-apiserver's
//! EncryptionConfiguration and value transformers (k8s.io/apiserver pkg/server/options/
//! encryptionconfig, pkg/storage/value/encrypt): which resources are stored encrypted, with
//! which keys. The store the server uses is wrapped in a
//! [`storage::transform::TransformingStore`] whose transformer for a key is the chain of the
//! resource the key belongs to, so the backend (embedded files, etcd) holds only ciphertext
//! while reads, lists, watches and the watch cache see plain objects.
//!
//! It depends on the `Store` trait and on how storage keys name resources (`kube-registry`)
//! only: no HTTP stack, no runtime of its own, nothing of the server.

pub mod config;
pub mod provider;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use storage::Store;
use storage::transform::{TransformerFor, TransformingStore, ValueTransformer};

use provider::{Chain, EncryptCheck};

/// A loaded EncryptionConfiguration: the transformer of each configured group/resource
/// (`*` for wildcards).
pub struct Encryption {
    rules: HashMap<(String, String), Arc<dyn ValueTransformer>>,
    keys: kube_registry::resources::StorageKeys,
    check: Arc<dyn ValueTransformer>,
}

impl Encryption {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Arc<Encryption>, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!("error reading encryption provider configuration file {path:?}: {e}")
        })?;
        Encryption::parse(&text)
    }

    /// Builds from a configuration's text.
    pub fn parse(text: &str) -> Result<Arc<Encryption>, String> {
        let c = config::parse(text)?;
        let mut rules: HashMap<(String, String), Arc<dyn ValueTransformer>> = HashMap::new();
        for (i, entry) in c.resources.iter().enumerate() {
            let chain: Arc<dyn ValueTransformer> =
                Arc::new(Chain::new(&entry.providers).map_err(|e| format!("resources[{i}]: {e}"))?);
            for r in &entry.resources {
                // The first entry that names a resource wins (kube's getTransformerOverrides).
                rules
                    .entry(config::parse_group_resource(r))
                    .or_insert_with(|| chain.clone());
            }
        }
        Ok(Arc::new(Encryption {
            rules,
            keys: kube_registry::resources::StorageKeys::new(),
            check: Arc::new(EncryptCheck),
        }))
    }

    /// The transformer of a group/resource: exact, then the group's `*`, then `*.*` (kube's
    /// transformerFromOverrides); unlisted resources are stored as they are.
    pub fn transformer(&self, group: &str, resource: &str) -> Arc<dyn ValueTransformer> {
        let get = |g: &str, r: &str| self.rules.get(&(g.to_string(), r.to_string())).cloned();
        get(group, resource)
            .or_else(|| get(group, "*"))
            .or_else(|| get("*", "*"))
            .unwrap_or_else(|| self.check.clone())
    }

    /// The transformer of a storage key.
    pub fn transformer_for_key(&self, key: &str) -> Option<Arc<dyn ValueTransformer>> {
        let (group, resource) = self.keys.group_resource(key)?;
        Some(self.transformer(group, resource))
    }

    /// `store` with this configuration applied to every value; its keys are under
    /// `etcd_prefix` (kube-apiserver's `--etcd-prefix`).
    pub fn wrap(self: &Arc<Self>, store: Arc<dyn Store>, etcd_prefix: &str) -> Arc<dyn Store> {
        let this = self.clone();
        let keys = kube_registry::resources::StorageKeys::with_etcd_prefix(etcd_prefix);
        let f: TransformerFor = Arc::new(move |key: &str| {
            let (group, resource) = keys.group_resource(key)?;
            Some(this.transformer(group, resource))
        });
        TransformingStore::new(store, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const K32: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    fn encryption(resources: &str) -> Arc<Encryption> {
        Encryption::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{resources}"
        ))
        .expect("valid")
    }

    fn encrypts(e: &Encryption, key: &str) -> bool {
        let t = e.transformer_for_key(key).expect("a resource key");
        t.transform_to_storage(key, &Bytes::from_static(b"{}"))
            .expect("write")
            .starts_with(provider::ENCRYPTED_PREFIX)
    }

    #[test]
    fn keys_are_matched_as_kube_matches_resources() {
        let e = encryption(&format!(
            "- resources: [secrets, '*.apps']\n  providers:\n  - secretbox:\n      keys:\n      - name: k\n        secret: {K32}\n"
        ));
        assert!(encrypts(&e, "/registry/secrets/default/s"));
        assert!(encrypts(&e, "/registry/apps/deployments/default/d"));
        assert!(!encrypts(&e, "/registry/configmaps/default/c"));
        assert!(!encrypts(&e, "/registry/work.karmada.io/works/ns/w"));
        let all = encryption(&format!(
            "- resources: [configmaps]\n  providers:\n  - identity: {{}}\n- resources: ['*.*']\n  providers:\n  - aesgcm:\n      keys:\n      - name: k\n        secret: {K32}\n"
        ));
        assert!(
            !encrypts(&all, "/registry/configmaps/default/c"),
            "exact match first"
        );
        assert!(encrypts(&all, "/registry/work.karmada.io/works/ns/w"));
        assert!(encrypts(&all, "/registry/secrets/default/s"));
        let core = encryption(&format!(
            "- resources: ['*.']\n  providers:\n  - aescbc:\n      keys:\n      - name: k\n        secret: {K32}\n"
        ));
        assert!(encrypts(&core, "/registry/namespaces/default"));
        assert!(!encrypts(&core, "/registry/apps/deployments/default/d"));
    }
}
