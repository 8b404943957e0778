//! Informers created at run time for resources found by discovery (client-go's dynamic
//! informer manager): one per resource, started and stopped as the set of needed resources
//! changes, all sharing the same event handlers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::discovery::ServedResource;
use super::informer::{Change, Informer};
use super::object::RawObject;

type Handler = Arc<dyn Fn(&ServedResource, &Change<'_, RawObject>) + Send + Sync>;

struct Entry {
    resource: ServedResource,
    informer: Informer<RawObject>,
    task: JoinHandle<()>,
}

/// The running informers of one API server, keyed by apiVersion and kind.
pub struct DynamicInformers {
    client: Client,
    label_selector: Option<String>,
    transform: Option<fn(&mut RawObject)>,
    entries: Mutex<HashMap<(String, String), Entry>>,
    handlers: Mutex<Vec<Handler>>,
}

impl DynamicInformers {
    /// No informers yet; `label_selector` restricts every watch.
    pub fn new(
        client: Client,
        label_selector: Option<String>,
        transform: Option<fn(&mut RawObject)>,
    ) -> Arc<DynamicInformers> {
        Arc::new(DynamicInformers {
            client,
            label_selector,
            transform,
            entries: Mutex::new(HashMap::new()),
            handlers: Mutex::new(Vec::new()),
        })
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<(String, String), Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a handler for every informer, present and future.
    pub fn on_change(
        &self,
        f: impl Fn(&ServedResource, &Change<'_, RawObject>) + Send + Sync + 'static,
    ) {
        let h: Handler = Arc::new(f);
        self.handlers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        for e in self.entries().values() {
            let r = e.resource.clone();
            let h = h.clone();
            e.informer.on_change(move |c| h(&r, c));
        }
    }

    /// The informer of a resource, started if it was not running.
    pub fn ensure(&self, resource: &ServedResource) -> Informer<RawObject> {
        let key = (resource.api_version(), resource.kind.clone());
        let mut entries = self.entries();
        if let Some(e) = entries.get(&key) {
            return e.informer.clone();
        }
        let mut builder =
            Informer::builder(format!("{}/{}", resource.api_version(), resource.plural));
        if let Some(t) = self.transform {
            builder = builder.transform(t);
        }
        let informer: Informer<RawObject> = builder.build();
        for h in self
            .handlers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let r = resource.clone();
            let h = h.clone();
            informer.on_change(move |c| h(&r, c));
        }
        let api: Api<RawObject> = Api::all_with(self.client.clone(), &resource.api_resource());
        let mut config = watcher::Config::default();
        if let Some(s) = &self.label_selector {
            config = config.labels(s);
        }
        let task = informer.run(api, config);
        entries.insert(
            key,
            Entry {
                resource: resource.clone(),
                informer: informer.clone(),
                task,
            },
        );
        informer
    }

    /// Stops the informer of a resource.
    pub fn stop(&self, api_version: &str, kind: &str) -> bool {
        match self
            .entries()
            .remove(&(api_version.to_owned(), kind.to_owned()))
        {
            Some(e) => {
                e.task.abort();
                true
            }
            None => false,
        }
    }

    /// The informer for a kind, if running.
    pub fn get(&self, api_version: &str, kind: &str) -> Option<Informer<RawObject>> {
        self.entries()
            .get(&(api_version.to_owned(), kind.to_owned()))
            .map(|e| e.informer.clone())
    }

    /// The resource behind a kind, if its informer runs.
    pub fn resource(&self, api_version: &str, kind: &str) -> Option<ServedResource> {
        self.entries()
            .get(&(api_version.to_owned(), kind.to_owned()))
            .map(|e| e.resource.clone())
    }

    /// The running resources.
    pub fn resources(&self) -> Vec<ServedResource> {
        self.entries()
            .values()
            .map(|e| e.resource.clone())
            .collect()
    }

    /// The client the informers use.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl Drop for DynamicInformers {
    fn drop(&mut self) {
        for e in self.entries().values() {
            e.task.abort();
        }
    }
}
