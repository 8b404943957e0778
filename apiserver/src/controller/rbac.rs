//! Keeps the authorizer's index in step with the RBAC objects, and runs ClusterRole
//! aggregation, from the watch caches of the four RBAC resources. Any change (or a lagging
//! subscription) triggers one rebuild of the whole index after a short pause that folds
//! bursts of writes together; requests keep using the previous index until the new one is
//! swapped in.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::json;

use crate::auth::rbac::{Authorizer, Index, RBAC_GROUP, aggregation};
use crate::error::ApiError;
use crate::registry::{Registry, Subresource, WriteContext};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{CacheEvent, EventReceiver, Filter, RecvError, TryRecvError, WatchCache};

/// How long a rebuild waits for more changes after the first one.
const SETTLE: Duration = Duration::from_millis(2);
/// How often the task checks whether its server is gone.
const LIVENESS: Duration = Duration::from_secs(1);
/// How long the start waits for the RBAC caches to hold the server's own writes.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// The field manager of aggregation writes.
const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";

/// The RBAC resources, in the order roles, clusterroles, rolebindings, clusterrolebindings.
fn defs(state: &ApiState) -> Result<[Arc<ResourceDef>; 4], ApiError> {
    let snapshot = state.catalog.snapshot();
    let get = |plural: &str| {
        snapshot
            .get(RBAC_GROUP, "v1", plural)
            .cloned()
            .ok_or_else(|| ApiError::internal(format!("{plural}.{RBAC_GROUP} are not served")))
    };
    Ok([
        get("roles")?,
        get("clusterroles")?,
        get("rolebindings")?,
        get("clusterrolebindings")?,
    ])
}

fn caches(state: &ApiState) -> Result<[Arc<WatchCache>; 4], ApiError> {
    let [a, b, c, d] = defs(state)?;
    Ok([
        state.cache(&a)?,
        state.cache(&b)?,
        state.cache(&c)?,
        state.cache(&d)?,
    ])
}

/// Revisions of this server's writes to the four RBAC resources, in the order of [`defs`]
/// (0: none). The caches must reach them before the index is built from them.
pub type Written = [i64; 4];

/// Where `plural` goes in [`Written`].
pub fn written_index(plural: &str) -> Option<usize> {
    [
        "roles",
        "clusterroles",
        "rolebindings",
        "clusterrolebindings",
    ]
    .iter()
    .position(|p| *p == plural)
}

/// Waits until the RBAC caches are listed and hold this server's own writes: what others
/// stored before the caches listed is in their list, and later changes arrive as events, as
/// with kube's informers. (Waiting for the store's current revision instead would wait
/// forever on an etcd that sends no progress notifications: the revision moves with writes
/// to every resource.)
pub async fn sync(state: &ApiState, written: Written, timeout: Duration) -> Result<(), ApiError> {
    for (c, rev) in caches(state)?.iter().zip(written) {
        c.wait_for(rev, timeout).await.map_err(|_| {
            ApiError::unavailable(format!(
                "the {} cache did not catch up with revision {rev} (at {})",
                c.def().qualified(),
                c.revision()
            ))
        })?;
    }
    Ok(())
}

/// Rebuilds the index from the caches and swaps it in.
pub fn rebuild(state: &ApiState, authz: &Authorizer) -> Result<(), ApiError> {
    let [roles, cluster_roles, role_bindings, cluster_role_bindings] = caches(state)?;
    let values = |c: &WatchCache| c.all().iter().map(|o| o.value()).collect::<Vec<_>>();
    let index = Index::build(
        &values(&roles),
        &values(&cluster_roles),
        &values(&role_bindings),
        &values(&cluster_role_bindings),
    );
    tracing::debug!(bindings = index.bindings(), "RBAC index rebuilt");
    authz.set_index(index);
    Ok(())
}

/// Runs one aggregation pass over the cached ClusterRoles; returns how many were rewritten
/// and the revision of the last rewrite (0: none).
pub async fn aggregate(state: &ApiState) -> Result<(usize, i64), ApiError> {
    let [_, cluster_roles_def, _, _] = defs(state)?;
    let cluster_roles: Vec<_> = state
        .cache(&cluster_roles_def)?
        .all()
        .iter()
        .map(|o| o.value())
        .collect();
    let changes = aggregation::plan(&cluster_roles);
    let reg = Registry::new(state, cluster_roles_def);
    let ctx = WriteContext {
        manager: AGGREGATION_MANAGER.into(),
        dry_run: false,
        apply: false,
    };
    let mut written = 0;
    for (name, rules) in &changes {
        let rules = json!(rules);
        let res = reg
            .guaranteed_update_written("", name, Subresource::Main, &ctx, |cur| {
                let mut next = cur.clone();
                next["rules"] = rules.clone();
                Ok(next)
            })
            .await;
        match res {
            Ok(w) => {
                tracing::debug!(clusterrole = %name, "aggregated rules updated");
                written = written.max(w.revision.unwrap_or(0));
            }
            // Deleted meanwhile: the next pass sees it gone.
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok((changes.len(), written))
}

/// Aggregates until nothing changes (aggregated roles may feed others, as `edit` feeds
/// `admin`), then builds the index. Used at start, before the server serves.
pub async fn settle(
    state: &ApiState,
    authz: &Authorizer,
    mut written: Written,
) -> Result<(), ApiError> {
    let cluster_roles = written_index("clusterroles").unwrap_or(1);
    for _ in 0..8 {
        sync(state, written, SYNC_TIMEOUT).await?;
        let (changed, rev) = aggregate(state).await?;
        written[cluster_roles] = written[cluster_roles].max(rev);
        if changed == 0 {
            break;
        }
    }
    sync(state, written, SYNC_TIMEOUT).await?;
    rebuild(state, authz)
}

fn subscribe(cache: &Arc<WatchCache>) -> Result<EventReceiver, ApiError> {
    cache
        .subscribe(Some(cache.revision()), &Filter::default())
        .map(|s| s.rx)
        .map_err(|e| ApiError::internal(format!("{e:?}")))
}

/// What woke the task.
enum Wake {
    /// Something changed (or a subscriber lagged): index `i` of the four resources.
    Changed(usize),
    /// A cache was replaced: subscribe again.
    Closed,
    /// Nothing happened for a while.
    Idle,
}

async fn next(subs: &mut [EventReceiver; 4]) -> Wake {
    let [a, b, c, d] = subs;
    let one = |r: Result<Arc<CacheEvent>, RecvError>, i: usize| match r {
        Ok(_) | Err(RecvError::Lagged) => Wake::Changed(i),
        Err(RecvError::Closed) => Wake::Closed,
    };
    tokio::select! {
        r = a.recv() => one(r, 0),
        r = b.recv() => one(r, 1),
        r = c.recv() => one(r, 2),
        r = d.recv() => one(r, 3),
        _ = tokio::time::sleep(LIVENESS) => Wake::Idle,
    }
}

/// Drains pending events; returns whether any ClusterRole changed and whether a channel
/// closed.
fn drain(subs: &mut [EventReceiver; 4]) -> (bool, bool) {
    let (mut cluster_roles, mut closed) = (false, false);
    for (i, rx) in subs.iter_mut().enumerate() {
        loop {
            match rx.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged) => cluster_roles |= i == 1,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => {
                    closed = true;
                    break;
                }
            }
        }
    }
    (cluster_roles, closed)
}

/// Starts the background task; it ends when the server's state is dropped.
pub fn spawn(state: Weak<ApiState>, authz: Arc<Authorizer>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(50);
        'subscribe: loop {
            let Some(st) = state.upgrade() else { return };
            let subs = caches(&st).and_then(|cs| {
                Ok([
                    subscribe(&cs[0])?,
                    subscribe(&cs[1])?,
                    subscribe(&cs[2])?,
                    subscribe(&cs[3])?,
                ])
            });
            let mut subs = match subs {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch RBAC objects; retrying");
                    drop(st);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            // Changes between the last build and these subscriptions are picked up here.
            if let Err(e) = rebuild(&st, &authz) {
                tracing::warn!(error = %e, "RBAC index rebuild failed");
            }
            drop(st);
            loop {
                let first = next(&mut subs).await;
                let Some(st) = state.upgrade() else { return };
                let mut aggregate_now = match first {
                    Wake::Idle => continue,
                    Wake::Closed => continue 'subscribe,
                    Wake::Changed(i) => i == 1,
                };
                tokio::time::sleep(SETTLE).await;
                let (cluster_roles, closed) = drain(&mut subs);
                aggregate_now |= cluster_roles;
                if aggregate_now && let Err(e) = aggregate(&st).await {
                    tracing::warn!(error = %e, "ClusterRole aggregation failed");
                }
                if let Err(e) = rebuild(&st, &authz) {
                    tracing::warn!(error = %e, "RBAC index rebuild failed");
                }
                if closed {
                    continue 'subscribe;
                }
                backoff = Duration::from_millis(50);
            }
        }
    })
}
