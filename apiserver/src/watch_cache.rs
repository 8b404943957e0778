//! The watch cache (kube-apiserver's `Cacher`): one storage watch per resource feeds an
//! in-memory copy of every object plus a window of recent events. Lists and watches are
//! served from it; each event is serialized once and shared by every watcher.
//!
//! Lock order: only `state` (a std RwLock), never held across an await.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use storage::{EventKind, RangeRequest, Store, WatchItem};
use tokio::sync::{broadcast, watch};

use crate::fields;
use crate::object;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};

/// One object as the cache holds it: its served JSON and what selectors need.
#[derive(Debug)]
pub struct CachedObject {
    /// Storage key.
    pub key: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Kind-specific selectable field values.
    pub fields: Vec<(String, String)>,
    /// resourceVersion of this state.
    pub rv: i64,
    /// The served JSON (with `metadata.resourceVersion`).
    pub json: Bytes,
}

impl CachedObject {
    /// Builds a cached object from a served JSON value.
    pub fn from_value(def: &ResourceDef, key: String, rv: i64, value: &Value) -> CachedObject {
        let defaulted = crate::crd::on_read(def, value);
        let value = defaulted.as_ref().unwrap_or(value);
        CachedObject {
            key,
            namespace: object::namespace(value).to_string(),
            name: object::name(value).to_string(),
            labels: object::labels(value),
            fields: fields::extract(def, value),
            rv,
            json: object::to_json_bytes(value),
        }
    }

    /// Parses the served JSON.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    fn field(&self, f: &str) -> Option<String> {
        match f {
            "metadata.name" => Some(self.name.clone()),
            "metadata.namespace" => Some(self.namespace.clone()),
            _ => self
                .fields
                .iter()
                .find(|(k, _)| k == f)
                .map(|(_, v)| v.clone()),
        }
    }
}

/// Watch event types as they appear on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of one object, shared by every watcher.
#[derive(Debug)]
pub struct CacheEvent {
    /// Revision of the change.
    pub rv: i64,
    /// What happened to the key in storage.
    pub kind: EventType,
    /// The object after the change (for a delete: its last state stamped with the delete's rv).
    pub object: Arc<CachedObject>,
    /// The object before the change.
    pub prev: Option<Arc<CachedObject>>,
    frames: [OnceLock<Bytes>; 3],
    prev_as_deleted: OnceLock<Arc<CachedObject>>,
}

impl CacheEvent {
    fn new(
        rv: i64,
        kind: EventType,
        object: Arc<CachedObject>,
        prev: Option<Arc<CachedObject>>,
    ) -> CacheEvent {
        CacheEvent {
            rv,
            kind,
            object,
            prev,
            frames: Default::default(),
            prev_as_deleted: OnceLock::new(),
        }
    }

    /// The newline-terminated watch frame `{"type":T,"object":...}` for this event seen as
    /// type `t`, built once and shared.
    pub fn frame(&self, t: EventType) -> Bytes {
        let idx = t as usize;
        self.frames[idx]
            .get_or_init(|| {
                let obj = if t == EventType::Deleted && self.kind != EventType::Deleted {
                    // The object stopped matching: kube sends its previous state with the
                    // event's resourceVersion.
                    self.prev_stamped().json.clone()
                } else {
                    self.object.json.clone()
                };
                frame(t.as_str(), &obj)
            })
            .clone()
    }

    /// The previous state stamped with this event's revision (for "stopped matching").
    pub fn prev_stamped(&self) -> Arc<CachedObject> {
        self.prev_as_deleted
            .get_or_init(|| match &self.prev {
                Some(p) => {
                    let mut v = p.value();
                    object::set_resource_version(&mut v, self.rv);
                    Arc::new(CachedObject {
                        key: p.key.clone(),
                        namespace: p.namespace.clone(),
                        name: p.name.clone(),
                        labels: p.labels.clone(),
                        fields: p.fields.clone(),
                        rv: self.rv,
                        json: object::to_json_bytes(&v),
                    })
                }
                None => self.object.clone(),
            })
            .clone()
    }
}

/// Builds a watch frame from a type and the object's JSON bytes.
pub fn frame(t: &str, object_json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object_json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(t.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object_json);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// What a list or watch selects.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only this namespace (`""`: all).
    pub namespace: String,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

impl Filter {
    /// Does the object pass?
    pub fn matches(&self, o: &CachedObject) -> bool {
        (self.namespace.is_empty() || o.namespace == self.namespace)
            && self.labels.matches(&o.labels)
            && self.fields.matches(|f| o.field(f))
    }

    /// True when the filter is a namespace restriction at most.
    pub fn is_trivial(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// How a watcher with this filter sees an event (None: not at all).
    pub fn event_type(&self, ev: &CacheEvent) -> Option<EventType> {
        let now = ev.kind != EventType::Deleted && self.matches(&ev.object);
        let before = match ev.kind {
            EventType::Added => false,
            EventType::Deleted => self.matches(ev.prev.as_ref().unwrap_or(&ev.object)),
            EventType::Modified => ev.prev.as_ref().is_some_and(|p| self.matches(p)),
        };
        match (before, now) {
            (false, true) => Some(EventType::Added),
            (true, true) => Some(EventType::Modified),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        }
    }
}

/// Why a cache read or watch could not be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheError {
    /// The requested revision is older than the cache's window.
    TooOld {
        /// Requested.
        requested: i64,
        /// Oldest servable.
        oldest: i64,
    },
    /// The cache did not reach the requested revision in time.
    NotReady {
        /// Requested.
        requested: i64,
        /// Current.
        current: i64,
    },
}

struct State {
    objects: BTreeMap<String, Arc<CachedObject>>,
    /// The cache reflects the store through this revision.
    revision: i64,
    /// Revision of the last change applied (<= revision).
    last_change: i64,
    /// Recent events, ascending rv; they cover (oldest, revision].
    events: VecDeque<Arc<CacheEvent>>,
    oldest: i64,
    ready: bool,
    tx: broadcast::Sender<Arc<CacheEvent>>,
}

/// Tunables.
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// Events kept for watch resumption.
    pub event_window: usize,
    /// Per-watcher buffer before a slow watcher is cut off.
    pub watcher_buffer: usize,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            event_window: 10_000,
            watcher_buffer: 4_096,
        }
    }
}

/// The cache of one resource.
pub struct WatchCache {
    def: Arc<ResourceDef>,
    prefix: String,
    opts: CacheOptions,
    state: RwLock<State>,
    revision_tx: watch::Sender<i64>,
}

impl std::fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A subscription: the events to replay, then the live receiver.
pub struct Subscription {
    /// Events after the requested revision already in the window.
    pub backlog: Vec<Arc<CacheEvent>>,
    /// Initial objects (for watches without a revision), at `revision`.
    pub initial: Vec<Arc<CachedObject>>,
    /// The revision the subscription starts after.
    pub revision: i64,
    /// Live events.
    pub rx: broadcast::Receiver<Arc<CacheEvent>>,
}

/// A consistent view of matching objects.
pub struct ListResult {
    /// Matching objects in key order.
    pub items: Vec<Arc<CachedObject>>,
    /// The revision the list reflects.
    pub revision: i64,
    /// Key to continue after, when cut by the limit.
    pub continue_key: Option<String>,
    /// Objects remaining after this page (only without selectors).
    pub remaining: Option<usize>,
}

impl WatchCache {
    /// Creates the cache of a stored resource (it is empty until [`WatchCache::run`] lists).
    pub fn new(def: Arc<ResourceDef>, opts: CacheOptions) -> Arc<WatchCache> {
        let prefix = def.prefix().unwrap_or_default().to_string();
        let (tx, _) = broadcast::channel(opts.watcher_buffer.max(16));
        let (revision_tx, _) = watch::channel(0);
        Arc::new(WatchCache {
            def,
            prefix,
            opts,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                revision: 0,
                last_change: 0,
                events: VecDeque::new(),
                oldest: 0,
                ready: false,
                tx,
            }),
            revision_tx,
        })
    }

    /// The resource this cache holds.
    pub fn def(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The revision the cache reflects (0 until it has listed).
    pub fn revision(&self) -> i64 {
        self.read().revision
    }

    /// True once the initial list is loaded.
    pub fn is_ready(&self) -> bool {
        self.read().ready
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// True when no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the cache in sync with the store until the task is dropped.
    pub async fn run(self: Arc<Self>, store: Arc<dyn Store>) {
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.sync_once(&store).await {
                Ok(()) => backoff = Duration::from_millis(100),
                Err(e) => {
                    tracing::warn!(prefix = %self.prefix, error = %e, "watch cache lost its storage watch; relisting");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn sync_once(&self, store: &Arc<dyn Store>) -> Result<(), storage::Error> {
        let resp = store
            .range(RangeRequest {
                prefix: self.prefix.clone(),
                ..Default::default()
            })
            .await?;
        let mut objects = BTreeMap::new();
        for kv in resp.kvs {
            match object::from_stored(&kv.value, kv.mod_revision) {
                Ok(v) => {
                    let o =
                        CachedObject::from_value(&self.def, kv.key.clone(), kv.mod_revision, &v);
                    objects.insert(kv.key, Arc::new(o));
                }
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "skipping undecodable stored object")
                }
            }
        }
        let rev = resp.revision;
        {
            let mut st = self.write();
            st.last_change = objects.values().map(|o| o.rv).max().unwrap_or(0);
            st.objects = objects;
            st.revision = rev;
            st.events.clear();
            st.oldest = rev;
            st.ready = true;
            // Watchers of the old state cannot be continued consistently: end them (they
            // resume from their last revision or relist, as with kube's cacher).
            let (tx, _) = broadcast::channel(self.opts.watcher_buffer.max(16));
            st.tx = tx;
        }
        self.revision_tx.send_replace(rev);

        let mut stream = store.watch(&self.prefix, rev).await?;
        while let Some(item) = stream.next().await {
            match item? {
                WatchItem::Events(events) => {
                    for ev in events {
                        self.apply(ev);
                    }
                }
                WatchItem::Progress(r) => {
                    let mut st = self.write();
                    if r > st.revision {
                        st.revision = r;
                    }
                    drop(st);
                    self.revision_tx.send_if_modified(|cur| {
                        if r > *cur {
                            *cur = r;
                            true
                        } else {
                            false
                        }
                    });
                }
            }
        }
        Err(storage::Error::Unavailable("storage watch ended".into()))
    }

    fn apply(&self, ev: storage::Event) {
        let rv = ev.kv.mod_revision;
        let key = ev.kv.key.clone();
        let mut st = self.write();
        let prev = st.objects.get(&key).cloned();
        let cache_ev = match ev.kind {
            EventKind::Put => {
                let value = match object::from_stored(&ev.kv.value, rv) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::error!(key = %key, error = %e, "skipping undecodable stored object");
                        st.revision = st.revision.max(rv);
                        return;
                    }
                };
                let obj = Arc::new(CachedObject::from_value(&self.def, key.clone(), rv, &value));
                st.objects.insert(key, obj.clone());
                let t = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                CacheEvent::new(rv, t, obj, prev)
            }
            EventKind::Delete => {
                st.objects.remove(&key);
                let Some(p) = prev else {
                    st.revision = st.revision.max(rv);
                    return;
                };
                // A deleted object is its last state with the delete's revision.
                let mut v = p.value();
                object::set_resource_version(&mut v, rv);
                let obj = Arc::new(CachedObject::from_value(&self.def, key, rv, &v));
                CacheEvent::new(rv, EventType::Deleted, obj, Some(p))
            }
        };
        let cache_ev = Arc::new(cache_ev);
        st.revision = st.revision.max(rv);
        st.last_change = rv;
        st.events.push_back(cache_ev.clone());
        while st.events.len() > self.opts.event_window {
            if let Some(old) = st.events.pop_front() {
                st.oldest = old.rv;
            }
        }
        // No receivers is fine; a full channel makes slow receivers lag (they are cut off).
        let _ = st.tx.send(cache_ev);
        let r = st.revision;
        drop(st);
        self.revision_tx.send_replace(r);
    }

    /// Waits until the cache reflects at least `rev`, up to `timeout`.
    pub async fn wait_for(&self, rev: i64, timeout: Duration) -> Result<(), CacheError> {
        let mut rx = self.revision_tx.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let st = self.read();
                if st.ready && st.revision >= rev {
                    return Ok(());
                }
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    let st = self.read();
                    if st.ready && st.revision >= rev {
                        return Ok(());
                    }
                    return Err(CacheError::NotReady {
                        requested: rev,
                        current: st.revision,
                    });
                }
            }
        }
    }

    /// Can the current state answer a read "exactly at `rev`"? True when no change happened
    /// between `rev` and the cache's revision.
    pub fn serves_exact(&self, rev: i64) -> bool {
        let st = self.read();
        st.ready && st.last_change <= rev && rev <= st.revision
    }

    /// Lists matching objects from the current state, starting after `start_after` (a full
    /// key), at most `limit` (0: all).
    pub fn list(&self, filter: &Filter, start_after: Option<&str>, limit: usize) -> ListResult {
        let st = self.read();
        let ns_prefix = if filter.namespace.is_empty() {
            self.prefix.clone()
        } else {
            format!("{}{}/", self.prefix, filter.namespace)
        };
        let lower = match start_after {
            Some(k) if k >= ns_prefix.as_str() => std::ops::Bound::Excluded(k.to_string()),
            _ => std::ops::Bound::Included(ns_prefix.clone()),
        };
        let mut items = Vec::new();
        let mut continue_key = None;
        let mut remaining = None;
        let mut iter = st
            .objects
            .range((lower, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&ns_prefix));
        for (k, o) in iter.by_ref() {
            if !filter.matches(o) {
                continue;
            }
            items.push(o.clone());
            if limit > 0 && items.len() == limit {
                continue_key = Some(k.clone());
                break;
            }
        }
        if continue_key.is_some() {
            let rest = iter.count();
            if rest == 0 {
                continue_key = None;
            } else if filter.is_trivial() {
                remaining = Some(rest);
            }
        }
        ListResult {
            items,
            revision: st.revision,
            continue_key,
            remaining,
        }
    }

    /// One object by key from the current state.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.read().objects.get(key).cloned()
    }

    /// Subscribes to changes after `after` (`None`: start with the current objects as
    /// initial events).
    pub fn subscribe(
        &self,
        after: Option<i64>,
        filter: &Filter,
    ) -> Result<Subscription, CacheError> {
        let st = self.read();
        match after {
            None => {
                let initial = st
                    .objects
                    .values()
                    .filter(|o| filter.matches(o))
                    .cloned()
                    .collect();
                Ok(Subscription {
                    backlog: vec![],
                    initial,
                    revision: st.revision,
                    rx: st.tx.subscribe(),
                })
            }
            Some(rev) => {
                if rev < st.oldest {
                    return Err(CacheError::TooOld {
                        requested: rev,
                        oldest: st.oldest,
                    });
                }
                if rev > st.revision {
                    return Err(CacheError::NotReady {
                        requested: rev,
                        current: st.revision,
                    });
                }
                let start = st.events.partition_point(|e| e.rv <= rev);
                let backlog = st.events.iter().skip(start).cloned().collect();
                Ok(Subscription {
                    backlog,
                    initial: vec![],
                    revision: st.revision,
                    rx: st.tx.subscribe(),
                })
            }
        }
    }

    /// The revision watch channel (for bookmarks).
    pub fn revision_watch(&self) -> watch::Receiver<i64> {
        self.revision_tx.subscribe()
    }

    /// Every object currently held (for controllers inside the server, e.g. GC).
    pub fn all(&self) -> Vec<Arc<CachedObject>> {
        self.read().objects.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::built_in;
    use crate::selectors::LabelSelector;
    use bytes::Bytes;
    use serde_json::json;

    fn cm_def() -> Arc<ResourceDef> {
        Arc::new(
            built_in()
                .into_iter()
                .find(|d| d.plural == "configmaps")
                .expect("configmaps"),
        )
    }

    fn cm(name: &str, labels: serde_json::Value) -> Bytes {
        Bytes::from(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "default", "labels": labels}})
            .to_string(),
        )
    }

    async fn setup(opts: CacheOptions) -> (tempfile::TempDir, Arc<dyn Store>, Arc<WatchCache>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = storage::embedded::EmbeddedStore::open(
            dir.path(),
            storage::embedded::EmbeddedOptions {
                progress_interval: Duration::from_millis(10),
                ..Default::default()
            },
        )
        .expect("store");
        let cache = WatchCache::new(cm_def(), opts);
        tokio::spawn(cache.clone().run(store.clone()));
        cache
            .wait_for(0, Duration::from_secs(5))
            .await
            .expect("ready");
        (dir, store, cache)
    }

    async fn next(rx: &mut broadcast::Receiver<Arc<CacheEvent>>) -> Arc<CacheEvent> {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("event in time")
            .expect("event")
    }

    #[tokio::test]
    async fn selector_transitions_and_resume() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let key = "/registry/configmaps/default/a";
        let kv = store
            .create(key, cm("a", json!({"app": "x"})))
            .await
            .expect("create");
        let filter = Filter {
            labels: LabelSelector::parse("app=x").expect("selector"),
            ..Default::default()
        };
        cache
            .wait_for(kv.mod_revision, Duration::from_secs(5))
            .await
            .expect("caught up");
        let mut sub = cache
            .subscribe(Some(kv.mod_revision), &filter)
            .expect("subscribe");
        // Stops matching: DELETED for this watcher; matches again: ADDED; change: MODIFIED.
        let kv2 = store
            .update(key, cm("a", json!({"app": "y"})), kv.mod_revision)
            .await
            .expect("update");
        let ev = next(&mut sub.rx).await;
        assert_eq!(filter.event_type(&ev), Some(EventType::Deleted));
        assert!(
            ev.frame(EventType::Deleted)
                .starts_with(b"{\"type\":\"DELETED\"")
        );
        let kv3 = store
            .update(key, cm("a", json!({"app": "x"})), kv2.mod_revision)
            .await
            .expect("update");
        assert_eq!(
            filter.event_type(&*next(&mut sub.rx).await),
            Some(EventType::Added)
        );
        let kv4 = store
            .update(
                key,
                cm("a", json!({"app": "x", "v": "2"})),
                kv3.mod_revision,
            )
            .await
            .expect("update");
        assert_eq!(
            filter.event_type(&*next(&mut sub.rx).await),
            Some(EventType::Modified)
        );
        store.delete(key, kv4.mod_revision).await.expect("delete");
        let del = next(&mut sub.rx).await;
        assert_eq!(filter.event_type(&del), Some(EventType::Deleted));
        assert_eq!(
            del.object.rv, del.rv,
            "a deleted object carries the delete's revision"
        );

        // Resuming from the first revision replays the same four events from the window.
        cache
            .wait_for(del.rv, Duration::from_secs(5))
            .await
            .expect("caught up");
        let resumed = cache
            .subscribe(Some(kv.mod_revision), &filter)
            .expect("resume");
        let types: Vec<_> = resumed
            .backlog
            .iter()
            .map(|e| filter.event_type(e))
            .collect();
        assert_eq!(
            types,
            vec![
                Some(EventType::Deleted),
                Some(EventType::Added),
                Some(EventType::Modified),
                Some(EventType::Deleted)
            ]
        );
    }

    #[tokio::test]
    async fn too_old_and_slow_watchers() {
        let (_d, store, cache) = setup(CacheOptions {
            event_window: 4,
            watcher_buffer: 16,
        })
        .await;
        let first = store
            .create("/registry/configmaps/default/x0", cm("x0", json!({})))
            .await
            .expect("create");
        let slow = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe");
        for i in 1..40 {
            store
                .create(
                    &format!("/registry/configmaps/default/x{i}"),
                    cm(&format!("x{i}"), json!({})),
                )
                .await
                .expect("create");
        }
        let last = store.current_revision().await.expect("rev");
        cache
            .wait_for(last, Duration::from_secs(5))
            .await
            .expect("caught up");
        // The window keeps 4 events: the first revision is too old to resume from.
        assert!(matches!(
            cache.subscribe(Some(first.mod_revision), &Filter::default()),
            Err(CacheError::TooOld { .. })
        ));
        // A watcher that never read lags behind its buffer and is cut off instead of
        // holding every event in memory.
        let mut rx = slow.rx;
        assert!(matches!(
            rx.recv().await,
            Err(broadcast::error::RecvError::Lagged(_))
        ));
        // Lists see everything.
        let all = cache.list(&Filter::default(), None, 0);
        assert_eq!(all.items.len(), 40);
        let page = cache.list(&Filter::default(), None, 10);
        assert_eq!(page.items.len(), 10);
        assert_eq!(page.remaining, Some(30));
        let rest = cache.list(&Filter::default(), page.continue_key.as_deref(), 0);
        assert_eq!(rest.items.len(), 30);
    }
}
