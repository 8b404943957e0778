//! Every stored resource's changes as one stream, for the controllers kube-controller-manager
//! runs through shared informers (client-go's dynamic informers over discovered resources).
//!
//! Each resource is followed through the server's watch cache: an initial snapshot (a [`Change::Resync`]),
//! then its events. A subscriber that falls behind, or a cache that relisted, gets a fresh
//! snapshot. Resources appearing or disappearing with CRDs are followed as the catalog changes.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tokio_stream::StreamMap;

use crate::api_server::{ApiServer, Event, Object, Resource};

/// How long a subscription waits for a cache's first list before retrying.
const READY_WAIT: Duration = Duration::from_secs(10);

/// One change seen by a subscriber.
pub enum Change {
    /// The complete current content of a resource: the first view of it, or a fresh view after
    /// events were missed. Objects of the resource not listed here are gone.
    Resync {
        /// The resource.
        def: Arc<dyn Resource>,
        /// Every object it holds.
        objects: Vec<Arc<dyn Object>>,
    },
    /// One event of a resource.
    Event {
        /// The resource.
        def: Arc<dyn Resource>,
        /// The event.
        event: Event,
    },
    /// The resource is no longer served (its CRD was deleted).
    Gone {
        /// The resource.
        def: Arc<dyn Resource>,
    },
    /// The set of followed resources was established (first at start) or changed with the
    /// catalog; every resync and removal this caused was delivered before.
    Synced,
}

enum Item {
    Event(Event),
    /// Events were dropped: the subscriber was too slow.
    Lagged,
    /// The cache replaced its event stream (it relisted) or stopped.
    Closed,
}

type ItemStream = Pin<Box<dyn Stream<Item = Item> + Send>>;

/// A subscription to every stored resource's changes.
pub struct AllResources {
    state: Arc<dyn ApiServer>,
    streams: StreamMap<String, ItemStream>,
    defs: HashMap<String, Arc<dyn Resource>>,
    catalog: watch::Receiver<u64>,
    pending: VecDeque<Change>,
}

impl AllResources {
    /// Subscribes to every stored resource; the first changes are one [`Change::Resync`] per
    /// resource and then [`Change::Synced`], delivered before any event.
    pub async fn new(state: Arc<dyn ApiServer>) -> AllResources {
        let mut catalog = state.resources_changed();
        catalog.mark_unchanged();
        let mut all = AllResources {
            state,
            streams: StreamMap::new(),
            defs: HashMap::new(),
            catalog,
            pending: VecDeque::new(),
        };
        all.follow_catalog().await;
        all
    }

    /// Number of resources followed.
    pub fn resources(&self) -> usize {
        self.defs.len()
    }

    /// The next change.
    pub async fn next(&mut self) -> Change {
        loop {
            if let Some(c) = self.pending.pop_front() {
                return c;
            }
            tokio::select! {
                changed = self.catalog.changed() => {
                    if changed.is_err() {
                        // The catalog is gone with the server; nothing more will change.
                        std::future::pending::<()>().await;
                    }
                    self.follow_catalog().await;
                }
                Some((prefix, item)) = self.streams.next() => match item {
                    Item::Event(event) => {
                        if let Some(def) = self.defs.get(&prefix) {
                            return Change::Event { def: def.clone(), event };
                        }
                    }
                    Item::Lagged | Item::Closed => {
                        if let Some(def) = self.defs.get(&prefix).cloned() {
                            tracing::debug!(resource = %def.qualified(), "informer resubscribing");
                            self.subscribe(def).await;
                        }
                    }
                },
            }
        }
    }

    /// Subscribes to new or changed resources and drops removed ones.
    async fn follow_catalog(&mut self) {
        let wanted = self.state.stored_resources();
        let mut keep = std::collections::HashSet::new();
        for def in wanted {
            let prefix = def.prefix().to_string();
            keep.insert(prefix.clone());
            if self.defs.get(&prefix).is_some_and(|d| d.same(def.as_ref())) {
                continue;
            }
            self.subscribe(def).await;
        }
        let gone: Vec<String> = self
            .defs
            .keys()
            .filter(|p| !keep.contains(*p))
            .cloned()
            .collect();
        for prefix in gone {
            self.streams.remove(&prefix);
            if let Some(def) = self.defs.remove(&prefix) {
                self.pending.push_back(Change::Gone { def });
            }
        }
        self.pending.push_back(Change::Synced);
    }

    /// (Re)subscribes to one resource, queueing its snapshot. Retries until its cache has
    /// listed: a resource whose storage is unreachable has no state to report yet.
    async fn subscribe(&mut self, def: Arc<dyn Resource>) {
        let prefix = def.prefix().to_string();
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.state.subscribe(&def, READY_WAIT).await {
                Ok(sub) => {
                    let events: ItemStream = Box::pin(
                        sub.events
                            .map(|r| match r {
                                Ok(ev) => Item::Event(ev),
                                Err(_) => Item::Lagged,
                            })
                            .chain(futures::stream::once(async { Item::Closed })),
                    );
                    self.streams.insert(prefix.clone(), events);
                    self.defs.insert(prefix, def.clone());
                    self.pending.push_back(Change::Resync {
                        def,
                        objects: sub.initial,
                    });
                    return;
                }
                Err(e) => {
                    tracing::warn!(resource = %def.qualified(), error = %e, "informer cannot subscribe yet; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// Runs a subscription in its own task, delivering changes through a bounded channel (a slow
/// consumer makes the subscription lag, which it repairs with resyncs). The task ends when the
/// receiver is dropped.
pub fn spawn(state: Arc<dyn ApiServer>, capacity: usize) -> tokio::sync::mpsc::Receiver<Change> {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity);
    tokio::spawn(async move {
        let mut all = tokio::select! {
            _ = tx.closed() => return,
            all = AllResources::new(state) => all,
        };
        loop {
            let change = tokio::select! {
                _ = tx.closed() => return,
                change = all.next() => change,
            };
            if tx.send(change).await.is_err() {
                return;
            }
        }
    });
    rx
}
