//! This server as the kube-controller-manager controllers see it: their [`ApiServer`]
//! interface over the catalog, the watch caches, the registry and the store, and their start at
//! launch. The controllers themselves live in the `kube-controller-manager` crate.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;

use kube_controller_manager::{
    ApiServer,
    api_server::{self as kcm_api, Deleted, Edit, Event, Lagged, Object, Resource, Subscription},
};
pub use kube_controller_manager::{Kcm, KcmOptions};

use crate::aggregator::Aggregator;
use crate::error::ApiError;
use crate::handler::Chain;
use crate::options::{DeleteOptions, ListOptions, Propagation};
use crate::registry::{DeleteOutcome, Registry, Subresource, WriteContext};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{CacheEvent, CachedObject, EventType, Filter};

/// The running kube-controller-manager controllers; dropping it stops them.
#[derive(Debug)]
pub struct Controllers {
    _kcm: Kcm,
    /// kube's serviceaccount-token controller, here because it signs with the server's key.
    _tokens: Option<crate::controller::tokens::TokenController>,
}

/// Starts the controllers `opts` enables over this server's state: the kube-controller-manager
/// crate's and, with `opts.controllers`, the service-account token controller (which needs the
/// server's authentication, so it starts only once that is set). Must run inside a runtime.
pub fn start(chain: &Chain, opts: &KcmOptions) -> Controllers {
    let state = &chain.state;
    let server: Arc<dyn ApiServer> = Arc::new(Server(state.clone(), chain.aggregator.clone()));
    let tokens = if opts.controllers {
        chain.auth().map(|auth| {
            crate::controller::tokens::spawn(
                Arc::downgrade(state),
                auth.tokens.clone(),
                auth.root_ca_pem.clone(),
            )
        })
    } else {
        None
    };
    Controllers {
        _kcm: kube_controller_manager::start(&server, opts),
        _tokens: tokens,
    }
}

/// The controllers' view of the server's state (and of the aggregation layer, for owners
/// served by a backend).
struct Server(Arc<ApiState>, Arc<Aggregator>);

/// A served resource as the controllers see it (the registry crate's [`ResourceDef`] wrapped,
/// since the controllers' trait and the type are both foreign here).
#[derive(Debug)]
struct Served(Arc<ResourceDef>);

impl Resource for Served {
    fn group(&self) -> &str {
        &self.0.group
    }

    fn plural(&self) -> &str {
        &self.0.plural
    }

    fn kind(&self) -> &str {
        &self.0.kind
    }

    fn namespaced(&self) -> bool {
        self.0.namespaced
    }

    fn prefix(&self) -> &str {
        self.0.prefix().unwrap_or_default()
    }

    fn same(&self, other: &dyn Resource) -> bool {
        let other: &dyn std::any::Any = other;
        other
            .downcast_ref::<Served>()
            .is_some_and(|o| o.0 == self.0)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// The server's own description of a resource the controllers hand back.
fn def_of(resource: &Arc<dyn Resource>) -> Result<Arc<ResourceDef>, kcm_api::ApiError> {
    kcm_api::downcast::<Served>(resource)
        .map(|s| s.0.clone())
        .ok_or_else(|| kcm_api::ApiError::internal("a resource this server does not serve"))
}

fn as_resource(def: &Arc<ResourceDef>) -> Arc<dyn Resource> {
    Arc::new(Served(def.clone()))
}

fn objects(items: Vec<Arc<CachedObject>>) -> Vec<Arc<dyn Object>> {
    items.into_iter().map(|o| o as Arc<dyn Object>).collect()
}

fn kcm_error(e: ApiError) -> kcm_api::ApiError {
    kcm_api::ApiError {
        code: e.code,
        message: e.message,
    }
}

/// The identity of the controllers' writes.
fn write_context() -> WriteContext {
    WriteContext {
        manager: kube_controller_manager::FIELD_MANAGER.into(),
        dry_run: false,
        apply: false,
    }
}

fn registry<'a>(
    state: &'a ApiState,
    resource: &Arc<dyn Resource>,
) -> Result<Registry<'a>, kcm_api::ApiError> {
    Ok(Registry::new(state, def_of(resource)?))
}

#[async_trait::async_trait]
impl ApiServer for Server {
    fn stored_resources(&self) -> Vec<Arc<dyn Resource>> {
        let snapshot = self.0.catalog.snapshot();
        let mut seen = HashSet::new();
        snapshot
            .resources
            .iter()
            .filter(|d| d.prefix().is_some_and(|p| seen.insert(p.to_string())))
            .map(as_resource)
            .collect()
    }

    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<dyn Resource>> {
        let snapshot = self.0.catalog.snapshot();
        snapshot.get(group, version, plural).map(as_resource)
    }

    fn resource_for_kind(&self, group: &str, kind: &str) -> Option<Arc<dyn Resource>> {
        let snapshot = self.0.catalog.snapshot();
        snapshot
            .by_kind(group, kind)
            .filter(|d| d.prefix().is_some())
            .map(as_resource)
    }

    fn resources_changed(&self) -> watch::Receiver<u64> {
        self.0.catalog.subscribe()
    }

    async fn subscribe(
        &self,
        resource: &Arc<dyn Resource>,
        ready: Duration,
    ) -> Result<Subscription, String> {
        let def = def_of(resource).map_err(|e| e.message)?;
        let cache = self.0.cache(&def).map_err(|e| e.to_string())?;
        cache
            .wait_for(0, ready)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let sub = cache
            .subscribe(None, &Filter::default())
            .map_err(|e| format!("{e:?}"))?;
        let events = sub
            .rx
            .into_stream()
            .map(|r| {
                r.map(|ev: Arc<CacheEvent>| Event {
                    deleted: ev.kind == EventType::Deleted,
                    object: ev.object.clone(),
                })
                .map_err(|_| Lagged)
            })
            .boxed();
        Ok(Subscription {
            initial: objects(sub.initial),
            events,
        })
    }

    fn cached(
        &self,
        resource: &Arc<dyn Resource>,
    ) -> Result<Vec<Arc<dyn Object>>, kcm_api::ApiError> {
        let cache = self.0.cache(&def_of(resource)?).map_err(kcm_error)?;
        Ok(objects(cache.all()))
    }

    async fn list(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
    ) -> Result<Vec<Arc<dyn Object>>, kcm_api::ApiError> {
        // No resourceVersion: a consistent list.
        let opts = ListOptions::parse(&HashMap::new()).map_err(kcm_error)?;
        let page = registry(&self.0, resource)?
            .list(namespace, &opts)
            .await
            .map_err(kcm_error)?;
        Ok(objects(page.items))
    }

    async fn get(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
    ) -> Result<Value, kcm_api::ApiError> {
        registry(&self.0, resource)?
            .get(namespace, name)
            .await
            .map_err(kcm_error)
    }

    async fn delete(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
        uid: &str,
        propagation: kcm_api::Propagation,
    ) -> Result<Deleted, kcm_api::ApiError> {
        let opts = DeleteOptions {
            precondition_uid: Some(uid.to_string()),
            propagation: Some(match propagation {
                kcm_api::Propagation::Background => Propagation::Background,
                kcm_api::Propagation::Foreground => Propagation::Foreground,
                kcm_api::Propagation::Orphan => Propagation::Orphan,
            }),
            ..Default::default()
        };
        match registry(&self.0, resource)?
            .delete(namespace, name, &opts)
            .await
            .map_err(kcm_error)?
        {
            DeleteOutcome::Deleted(_) => Ok(Deleted::Gone),
            DeleteOutcome::Terminating(v) => Ok(Deleted::Terminating(v)),
        }
    }

    async fn guaranteed_update(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
        subresource: kcm_api::Subresource,
        edit: Edit<'_>,
    ) -> Result<(), kcm_api::ApiError> {
        let reg = registry(&self.0, resource)?;
        let sub = match subresource {
            kcm_api::Subresource::Main => Subresource::Main,
            kcm_api::Subresource::Status => Subresource::Status,
            kcm_api::Subresource::Finalize => Subresource::Finalize,
        };
        let def = reg.def().clone();
        reg.guaranteed_update(namespace, name, sub, &write_context(), |cur| {
            edit(cur).ok_or_else(|| {
                ApiError::conflict(&def.group, &def.plural, name, "the object was replaced")
            })
        })
        .await
        .map(|_| ())
        .map_err(kcm_error)
    }

    async fn expire(&self, key: &str, rv: i64) -> Result<(), kcm_api::ApiError> {
        self.0
            .store
            .delete(key, rv)
            .await
            .map(|_| ())
            .map_err(|e| kcm_error(e.into()))
    }

    async fn remote_object_exists(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Option<Result<bool, kcm_api::ApiError>> {
        crate::aggregator::remote_object_exists(&self.1, group, kind, namespace, name, uid)
            .await
            .map(|r| r.map_err(kcm_error))
    }
}
