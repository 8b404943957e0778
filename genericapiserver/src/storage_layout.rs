//! Objects of built-in resources that earlier versions of this server stored under their own
//! keys (`/registry/<group>/<resource>/...` for every group, `/registry/endpoints/...`,
//! `/registry/nodes/...`, `/registry/services/<namespace>/<name>`) are moved to the keys
//! kube-apiserver gives them (`resources::built_in_storage_prefix`), at start, before the
//! watch caches read anything.
//!
//! A move is a create at the new key if it is absent, then a delete of the earlier key only if
//! it is unchanged, so replicas starting together move each object once and nothing written
//! meanwhile is lost; running it again finds nothing to do. Values move as they are (through
//! the store the server uses, so an encrypted value is encrypted again for its new key).

use std::collections::BTreeMap;

use storage::{Error, KeyValue, RangeRequest, Store};

use crate::resources::{ResourceDef, Storage, built_in_storage_prefix, legacy_storage_prefix};

/// One object found under an earlier key.
#[derive(Debug)]
pub struct LegacyObject {
    /// `deployments.apps`.
    pub resource: String,
    /// The key and value it is stored at.
    pub kv: KeyValue,
    /// The key it moves to.
    pub to: String,
}

/// The earlier and the current prefix of each stored built-in resource whose keys changed.
fn changed_prefixes(defs: &[ResourceDef]) -> Vec<(&ResourceDef, String, String)> {
    let mut seen = std::collections::BTreeSet::new();
    defs.iter()
        .filter(|d| matches!(d.storage, Storage::Stored { .. }))
        .filter(|d| d.source == crate::resources::Source::BuiltIn)
        .filter(|d| seen.insert((d.group.clone(), d.plural.clone())))
        .filter_map(|d| {
            let old = legacy_storage_prefix(&d.group, &d.plural);
            let new = built_in_storage_prefix(&d.group, &d.plural);
            (old != new).then_some((d, old, new))
        })
        .collect()
}

/// Every object of `defs` stored under an earlier key, with the key it moves to.
pub async fn legacy_objects(
    store: &dyn Store,
    defs: &[ResourceDef],
) -> Result<Vec<LegacyObject>, Error> {
    let mut found = Vec::new();
    for (def, old, new) in changed_prefixes(defs) {
        let resp = store
            .range(RangeRequest {
                prefix: old.clone(),
                ..Default::default()
            })
            .await?;
        // `/registry/services/` also holds kube's `services/specs/...` and
        // `services/endpoints/...`: an earlier key has exactly the segments of a name
        // (and namespace) after the prefix.
        let segments = if def.namespaced { 2 } else { 1 };
        for kv in resp.kvs {
            let rel = &kv.key[old.len()..];
            if rel.split('/').count() != segments || rel.split('/').any(str::is_empty) {
                continue;
            }
            found.push(LegacyObject {
                resource: def.qualified(),
                to: format!("{new}{rel}"),
                kv,
            });
        }
    }
    Ok(found)
}

/// Moves every object of `defs` stored under an earlier key; returns how many objects of each
/// resource moved.
pub async fn move_legacy_keys(
    store: &dyn Store,
    defs: &[ResourceDef],
) -> Result<BTreeMap<String, usize>, Error> {
    let mut moved = BTreeMap::new();
    for o in legacy_objects(store, defs).await? {
        let from = o.kv.key.as_str();
        match store.create(&o.to, o.kv.value.clone()).await {
            Ok(_) => {}
            // Another replica moved it first.
            Err(Error::AlreadyExists { current, .. }) if current.value == o.kv.value => {}
            Err(Error::AlreadyExists { .. }) => {
                tracing::warn!(
                    resource = %o.resource,
                    from,
                    to = %o.to,
                    "an object is stored under both its earlier and its current key with different values: the current one is served, the earlier one is left as it is"
                );
                continue;
            }
            Err(e) => return Err(e),
        }
        match store.delete(from, o.kv.mod_revision).await {
            Ok(_) | Err(Error::NotFound { .. }) => {
                *moved.entry(o.resource.clone()).or_insert(0) += 1;
            }
            Err(Error::Conflict { .. }) => tracing::warn!(
                resource = %o.resource,
                from,
                to = %o.to,
                "an object changed under its earlier key while it was moved: it is left there, the copy at the current key is served"
            ),
            Err(e) => return Err(e),
        }
    }
    for (resource, n) in &moved {
        tracing::info!(%resource, objects = n, "moved to kube-apiserver's keys");
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn store() -> (tempfile::TempDir, std::sync::Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store =
            storage::embedded::EmbeddedStore::open(dir.path(), Default::default()).expect("open");
        (dir, store)
    }

    #[tokio::test]
    async fn earlier_keys_move_once_and_current_ones_stay() {
        let (_dir, store) = store();
        let defs = crate::resources::built_in();
        let put = |k: &'static str, v: &'static str| {
            let store = store.clone();
            async move { store.create(k, Bytes::from(v)).await.expect("create") }
        };
        put("/registry/apps/deployments/ns/d", "{\"d\":1}").await;
        put("/registry/services/ns/s", "{\"s\":1}").await;
        put("/registry/endpoints/ns/s", "{\"e\":1}").await;
        put("/registry/nodes/n1", "{\"n\":1}").await;
        // Already at kube's keys: left alone.
        put("/registry/services/specs/ns/t", "{\"t\":1}").await;
        put("/registry/configmaps/ns/c", "{\"c\":1}").await;
        // Moved by another replica already, and a conflicting copy.
        put(
            "/registry/rbac.authorization.k8s.io/clusterroles/r",
            "{\"r\":1}",
        )
        .await;
        put("/registry/clusterroles/r", "{\"r\":1}").await;
        put("/registry/coordination.k8s.io/leases/ns/l", "{\"old\":1}").await;
        put("/registry/leases/ns/l", "{\"new\":1}").await;

        let found = legacy_objects(store.as_ref(), &defs).await.expect("scan");
        let mut keys: Vec<_> = found
            .iter()
            .map(|o| (o.kv.key.as_str(), o.to.as_str()))
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![
                (
                    "/registry/apps/deployments/ns/d",
                    "/registry/deployments/ns/d"
                ),
                (
                    "/registry/coordination.k8s.io/leases/ns/l",
                    "/registry/leases/ns/l"
                ),
                (
                    "/registry/endpoints/ns/s",
                    "/registry/services/endpoints/ns/s"
                ),
                ("/registry/nodes/n1", "/registry/minions/n1"),
                (
                    "/registry/rbac.authorization.k8s.io/clusterroles/r",
                    "/registry/clusterroles/r"
                ),
                ("/registry/services/ns/s", "/registry/services/specs/ns/s"),
            ]
        );

        let moved = move_legacy_keys(store.as_ref(), &defs).await.expect("move");
        assert_eq!(moved.values().sum::<usize>(), 5, "{moved:?}");
        let get = |k: &'static str| {
            let store = store.clone();
            async move { store.get(k).await.expect("get").0.map(|kv| kv.value) }
        };
        assert_eq!(
            get("/registry/deployments/ns/d").await,
            Some(Bytes::from("{\"d\":1}"))
        );
        assert_eq!(get("/registry/apps/deployments/ns/d").await, None);
        assert_eq!(
            get("/registry/services/specs/ns/s").await,
            Some(Bytes::from("{\"s\":1}"))
        );
        assert_eq!(
            get("/registry/services/endpoints/ns/s").await,
            Some(Bytes::from("{\"e\":1}"))
        );
        assert_eq!(
            get("/registry/minions/n1").await,
            Some(Bytes::from("{\"n\":1}"))
        );
        assert_eq!(
            get("/registry/rbac.authorization.k8s.io/clusterroles/r").await,
            None
        );
        // Different values under both keys: the current one is kept, the earlier one left.
        assert_eq!(
            get("/registry/leases/ns/l").await,
            Some(Bytes::from("{\"new\":1}"))
        );
        assert!(
            get("/registry/coordination.k8s.io/leases/ns/l")
                .await
                .is_some()
        );

        // A second run finds only what it had to leave.
        let again = move_legacy_keys(store.as_ref(), &defs)
            .await
            .expect("move again");
        assert!(again.is_empty(), "{again:?}");
    }
}
