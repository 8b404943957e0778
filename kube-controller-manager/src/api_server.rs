//! What the controllers need of the API server, as one narrow interface the server implements
//! and passes in when it starts them: the stored resources (discovery), each resource's
//! objects and changes (a snapshot, then events: the informers' list and watch), consistent
//! reads, deletes with preconditions and guaranteed updates (the writes kube-controller-manager
//! makes through its clients).

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::watch;

/// One stored resource as the server serves it; the server hands its own description back
/// with every call (see [`ApiServer`]).
pub trait Resource: Any + Send + Sync + fmt::Debug {
    /// API group (`""` for core).
    fn group(&self) -> &str;
    /// Plural resource name, e.g. `deployments`.
    fn plural(&self) -> &str;
    /// Kind, e.g. `Deployment`.
    fn kind(&self) -> &str;
    /// Namespaced or cluster-scoped.
    fn namespaced(&self) -> bool;
    /// The storage key prefix its objects are kept under (several served versions of one
    /// resource share it and its objects).
    fn prefix(&self) -> &str;
    /// True when `other` describes this resource exactly as it is served (a changed one is
    /// followed anew).
    fn same(&self, other: &dyn Resource) -> bool;
    /// The resource as the server's own type (see [`downcast`]).
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;

    /// `deployments.apps`: the group-qualified resource, as kube names it in messages.
    fn qualified(&self) -> String {
        if self.group().is_empty() {
            self.plural().to_string()
        } else {
            format!("{}.{}", self.plural(), self.group())
        }
    }
}

/// One object as the server's watch cache holds it (apimachinery's accessor interface, which
/// the server implements for its cached objects).
pub use apimachinery::meta::Object;

/// One change of a resource's objects.
pub struct Event {
    /// True for a deletion (`object` is then the last state).
    pub deleted: bool,
    /// The object.
    pub object: Arc<dyn Object>,
}

/// The subscriber fell too far behind and missed events: it must take a fresh snapshot.
#[derive(Debug)]
pub struct Lagged;

/// A resource's objects and then their changes, from a cache that has listed.
pub struct Subscription {
    /// Every object at the start.
    pub initial: Vec<Arc<dyn Object>>,
    /// The changes after it; the stream ends when the cache relists or stops.
    pub events: BoxStream<'static, Result<Event, Lagged>>,
}

/// How a delete removes an object's dependents (metav1.DeletionPropagation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background.
    Background,
    /// Delete dependents first.
    Foreground,
    /// Keep dependents.
    Orphan,
}

/// What a delete did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone.
    Gone,
    /// The object is terminating (finalizers pending); the object as it is now.
    Terminating(Value),
}

/// Which part of an object a guaranteed update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource.
    Main,
    /// The `status` subresource.
    Status,
    /// A Namespace's `finalize` subresource.
    Finalize,
}

/// An error the API server answered with: its HTTP status code and message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status code (404 not found, 409 conflict...).
    pub code: u16,
    /// The Status message.
    pub message: String,
}

impl ApiError {
    /// A failure of the controllers themselves (500).
    pub fn internal(message: impl std::fmt::Display) -> ApiError {
        ApiError {
            code: 500,
            message: format!("Internal error occurred: {message}"),
        }
    }
}

/// The edit of a guaranteed update: the next state from the current one, or None when the
/// current object is not the one the controller meant (replaced under the same name: the
/// update then fails with a conflict).
pub type Edit<'a> = &'a (dyn Fn(&Value) -> Option<Value> + Send + Sync);

/// The API server as the controllers see it. Every write is made as kube-controller-manager
/// (its field manager).
#[async_trait::async_trait]
pub trait ApiServer: Send + Sync + 'static {
    /// The stored resources, one per storage prefix.
    fn stored_resources(&self) -> Vec<Arc<dyn Resource>>;
    /// A resource by group, version and plural, if served.
    fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<dyn Resource>>;
    /// The stored resource serving a group and kind (any version).
    fn resource_for_kind(&self, group: &str, kind: &str) -> Option<Arc<dyn Resource>>;
    /// Signalled whenever the set of served resources changes.
    fn resources_changed(&self) -> watch::Receiver<u64>;
    /// Subscribes to a resource's objects, waiting up to `ready` for its cache's first list.
    async fn subscribe(
        &self,
        resource: &Arc<dyn Resource>,
        ready: Duration,
    ) -> Result<Subscription, String>;
    /// Every object of a resource as its cache holds it now.
    fn cached(&self, resource: &Arc<dyn Resource>) -> Result<Vec<Arc<dyn Object>>, ApiError>;
    /// A consistent list of a resource's objects in a namespace.
    async fn list(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
    ) -> Result<Vec<Arc<dyn Object>>, ApiError>;
    /// A consistent read of one object.
    async fn get(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError>;
    /// Deletes one object if its uid is still `uid`, as a client's delete does.
    async fn delete(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
        uid: &str,
        propagation: Propagation,
    ) -> Result<Deleted, ApiError>;
    /// Writes `edit` of the current object, retrying on conflicting writes.
    async fn guaranteed_update(
        &self,
        resource: &Arc<dyn Resource>,
        namespace: &str,
        name: &str,
        subresource: Subresource,
        edit: Edit<'_>,
    ) -> Result<(), ApiError>;
    /// Removes an object from storage if it is still at revision `rv`, whatever its
    /// finalizers (an expired lease); a conflict or absence is reported as 409 or 404.
    async fn expire(&self, key: &str, rv: i64) -> Result<(), ApiError>;
    /// Whether an object exists in the backend serving its group through an APIService
    /// (`None`: the group is not served that way).
    async fn remote_object_exists(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Option<Result<bool, ApiError>>;
}

/// Downcasts a resource to the server's own type (for the server's implementation).
pub fn downcast<T: Resource>(resource: &Arc<dyn Resource>) -> Option<Arc<T>> {
    resource.clone().into_any().downcast::<T>().ok()
}
