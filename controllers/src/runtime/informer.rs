//! A shared informer: one list+watch per resource feeding an in-memory store, optional indexes
//! and event handlers (client-go's SharedIndexInformer, on top of kube-runtime's `watcher`).
//! Handlers run after the store is updated, outside its lock, and should only enqueue keys.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::object::Key;

/// A change seen by an informer.
pub enum Change<'a, K> {
    /// A new object.
    Add(&'a Arc<K>),
    /// A changed object: old, new.
    Update(&'a Arc<K>, &'a Arc<K>),
    /// A deleted object (its last known state).
    Delete(&'a Arc<K>),
}

impl<K> Change<'_, K> {
    /// The object as it is now (the last state for a delete).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Change::Add(o) | Change::Delete(o) => o,
            Change::Update(_, n) => n,
        }
    }
}

type Handler<K> = Arc<dyn Fn(&Change<'_, K>) + Send + Sync>;
type IndexFn<K> = Box<dyn Fn(&K) -> Vec<String> + Send + Sync>;
type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// Keys are shared by the objects map and every index: tens of thousands of Works are each
/// filed under two indexes.
struct Store<K> {
    objects: HashMap<Arc<Key>, Arc<K>>,
    indexes: Vec<HashMap<String, HashSet<Arc<Key>>>>,
}

struct Shared<K> {
    name: String,
    store: RwLock<Store<K>>,
    index_fns: Vec<(&'static str, IndexFn<K>)>,
    handlers: RwLock<Vec<Handler<K>>>,
    synced: watch::Sender<bool>,
    transform: Option<Transform<K>>,
}

/// A cache of one resource kept current by a watch, with indexes and event handlers.
pub struct Informer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Informer {
            shared: self.shared.clone(),
        }
    }
}

/// Builds an [`Informer`].
pub struct InformerBuilder<K> {
    name: String,
    index_fns: Vec<(&'static str, IndexFn<K>)>,
    transform: Option<Transform<K>>,
}

impl<K> InformerBuilder<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Adds an index: `f` returns the index values an object is filed under.
    pub fn index(
        mut self,
        name: &'static str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.index_fns.push((name, Box::new(f)));
        self
    }

    /// Trims every object before it is stored (e.g. to drop fields no controller reads).
    pub fn transform(mut self, f: impl Fn(&mut K) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// The informer (not yet running).
    pub fn build(self) -> Informer<K> {
        let n = self.index_fns.len();
        Informer {
            shared: Arc::new(Shared {
                name: self.name,
                store: RwLock::new(Store {
                    objects: HashMap::new(),
                    indexes: vec![HashMap::new(); n],
                }),
                index_fns: self.index_fns,
                handlers: RwLock::new(Vec::new()),
                synced: watch::channel(false).0,
                transform: self.transform,
            }),
        }
    }
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Starts building an informer; `name` appears in logs.
    pub fn builder(name: impl Into<String>) -> InformerBuilder<K> {
        InformerBuilder {
            name: name.into(),
            index_fns: Vec::new(),
            transform: None,
        }
    }

    /// Registers an event handler. Handlers added after the informer synced do not see the
    /// objects already in the store (call [`Informer::list`] for those).
    pub fn on_change(&self, f: impl Fn(&Change<'_, K>) + Send + Sync + 'static) {
        write(&self.shared.handlers).push(Arc::new(f));
    }

    /// The object with this key.
    pub fn get(&self, key: &Key) -> Option<Arc<K>> {
        read(&self.shared.store).objects.get(key).cloned()
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<K>> {
        read(&self.shared.store).objects.values().cloned().collect()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<Key> {
        read(&self.shared.store)
            .objects
            .keys()
            .map(|k| Key::clone(k))
            .collect()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        read(&self.shared.store).objects.len()
    }

    /// True when the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects filed under `value` in the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Arc<K>> {
        let Some(i) = self.shared.index_fns.iter().position(|(n, _)| *n == name) else {
            return Vec::new();
        };
        let st = read(&self.shared.store);
        st.indexes[i]
            .get(value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| st.objects.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True once the first full list has been stored.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until the first full list has been stored.
    pub async fn wait_synced(&self) {
        let mut rx = self.shared.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Starts the list+watch; the task runs until aborted.
    pub fn run(&self, api: Api<K>, config: watcher::Config) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut stream = watcher(api, config).default_backoff().boxed();
            let mut init: Option<HashMap<Key, Arc<K>>> = None;
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::Init) => init = Some(HashMap::new()),
                    Ok(watcher::Event::InitApply(o)) => {
                        let o = this.prepare(o);
                        init.get_or_insert_with(HashMap::new)
                            .insert(Key::of(o.meta()), o);
                    }
                    Ok(watcher::Event::InitDone) => {
                        let listed = init.take().unwrap_or_default();
                        this.replace(listed);
                        this.shared.synced.send_replace(true);
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        let o = this.prepare(o);
                        this.apply(o);
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let o = this.prepare(o);
                        this.delete(o);
                    }
                    Err(e) => {
                        tracing::debug!(informer = %this.shared.name, error = %e, "watch failed; retrying")
                    }
                }
            }
        })
    }

    fn prepare(&self, mut o: K) -> Arc<K> {
        o.meta_mut().managed_fields = None;
        if let Some(t) = &self.shared.transform {
            t(&mut o);
        }
        Arc::new(o)
    }

    fn unindex(&self, st: &mut Store<K>, key: &Key, o: &K) {
        for (i, (_, f)) in self.shared.index_fns.iter().enumerate() {
            for v in f(o) {
                if let Some(set) = st.indexes[i].get_mut(&v) {
                    set.remove(key);
                    if set.is_empty() {
                        st.indexes[i].remove(&v);
                    }
                }
            }
        }
    }

    fn index(&self, st: &mut Store<K>, key: &Arc<Key>, o: &K) {
        for (i, (_, f)) in self.shared.index_fns.iter().enumerate() {
            for v in f(o) {
                st.indexes[i].entry(v).or_default().insert(key.clone());
            }
        }
    }

    /// Inserts or replaces an object as if the watch had delivered it, and runs the handlers.
    pub fn apply(&self, o: Arc<K>) {
        let key = Key::of(o.meta());
        let old = {
            let mut st = write(&self.shared.store);
            let key = match st.objects.get_key_value(&key) {
                Some((k, _)) => k.clone(),
                None => Arc::new(key),
            };
            let old = st.objects.insert(key.clone(), o.clone());
            if let Some(old) = &old {
                self.unindex(&mut st, &key, old);
            }
            self.index(&mut st, &key, &o);
            old
        };
        match old {
            Some(old) => {
                if old.meta().resource_version != o.meta().resource_version {
                    self.dispatch(&Change::Update(&old, &o));
                }
            }
            None => self.dispatch(&Change::Add(&o)),
        }
    }

    fn delete(&self, o: Arc<K>) {
        let key = Key::of(o.meta());
        let old = {
            let mut st = write(&self.shared.store);
            let old = st.objects.remove(&key);
            if let Some(old) = &old {
                self.unindex(&mut st, &key, old);
            }
            old
        };
        // The watch's final state is newer than the stored one.
        let _ = old;
        self.dispatch(&Change::Delete(&o));
    }

    fn replace(&self, listed: HashMap<Key, Arc<K>>) {
        let listed: HashMap<Arc<Key>, Arc<K>> =
            listed.into_iter().map(|(k, o)| (Arc::new(k), o)).collect();
        // (old, new): an update, an add (no old) or a delete (no new).
        type Pair<K> = (Option<Arc<K>>, Option<Arc<K>>);
        let mut changes: Vec<Pair<K>> = Vec::new();
        {
            let mut st = write(&self.shared.store);
            let old = std::mem::take(&mut st.objects);
            for idx in st.indexes.iter_mut() {
                idx.clear();
            }
            for (k, o) in &old {
                if !listed.contains_key(k) {
                    changes.push((Some(o.clone()), None));
                }
            }
            for (k, o) in listed {
                self.index(&mut st, &k, &o);
                match old.get(&k) {
                    Some(prev) if prev.meta().resource_version == o.meta().resource_version => {}
                    Some(prev) => changes.push((Some(prev.clone()), Some(o.clone()))),
                    None => changes.push((None, Some(o.clone()))),
                }
                st.objects.insert(k, o);
            }
        }
        for c in changes {
            match c {
                (Some(old), Some(new)) => self.dispatch(&Change::Update(&old, &new)),
                (None, Some(new)) => self.dispatch(&Change::Add(&new)),
                (Some(old), None) => self.dispatch(&Change::Delete(&old)),
                (None, None) => {}
            }
        }
    }

    fn dispatch(&self, c: &Change<'_, K>) {
        let handlers: Vec<Handler<K>> = read(&self.shared.handlers).clone();
        for h in handlers {
            h(c);
        }
    }
}
