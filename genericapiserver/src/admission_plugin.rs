//! The dynamic admission-plugin interface (k8s.io/apiserver pkg/admission: `Attributes`,
//! `MutationInterface`, `ValidationInterface`): what a plugin is told about a request, what it
//! answers, and the set of plugins a server runs. [`crate::admission`] runs them in kube's
//! order; the plugins themselves (webhooks, policies) live in crates above this one and are
//! handed to the state at launch ([`crate::state::ApiState::set_admission_plugins`]).

use std::sync::Arc;

use serde_json::Value;

use crate::error::ApiError;
use crate::resources::ResourceDef;

/// kube's admission.Operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdmissionOperation {
    /// `CREATE`.
    Create,
    /// `UPDATE` (updates and patches, of the main resource or a subresource).
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT` (proxy, exec...).
    Connect,
}

impl AdmissionOperation {
    /// The name AdmissionReview, rules and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionOperation::Create => "CREATE",
            AdmissionOperation::Update => "UPDATE",
            AdmissionOperation::Delete => "DELETE",
            AdmissionOperation::Connect => "CONNECT",
        }
    }

    /// The options kind sent with the request (`CreateOptions`...).
    pub fn options_kind(self) -> &'static str {
        match self {
            AdmissionOperation::Create => "CreateOptions",
            AdmissionOperation::Update => "UpdateOptions",
            AdmissionOperation::Delete => "DeleteOptions",
            AdmissionOperation::Connect => "",
        }
    }
}

/// What a plugin knows about one request (kube's admission.Attributes). The object itself is
/// passed beside it: mutable to a mutating plugin, read-only to a validating one.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// The resource written (group, version, plural, kind, scope, where it comes from).
    pub def: &'a ResourceDef,
    /// What is done.
    pub operation: AdmissionOperation,
    /// `""` for the main resource, else `status`, `scale`, `finalize`...
    pub subresource: &'a str,
    /// The object's name (generated already when the client gave `generateName`).
    pub name: &'a str,
    /// Its namespace, `""` for cluster-scoped objects.
    pub namespace: &'a str,
    /// The stored object on update and delete.
    pub old_object: Option<&'a Value>,
    /// `dryRun=All`: nothing will be stored.
    pub dry_run: bool,
    /// Who asks, as authentication.k8s.io/v1 UserInfo JSON (`username`, `uid`, `groups`,
    /// `extra`); `None` for the server's own writes outside any request.
    pub user: Option<&'a Value>,
    /// The request's options (`CreateOptions`, `UpdateOptions` or `DeleteOptions` JSON).
    pub options: &'a Value,
}

/// What plugins add to a request besides their verdict: API warnings (the `Warning` header)
/// and audit annotations (on the request's audit event).
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Warnings, in the order given.
    pub warnings: Vec<String>,
    /// `key`, `value` pairs; keys are prefixed by the plugin (kube's
    /// `<webhook name>/<key>`).
    pub audit_annotations: Vec<(String, String)>,
}

/// A mutating plugin (kube's MutationInterface). It may change the object; a denial is the
/// error returned, whose status code and message reach the client as they are.
#[async_trait::async_trait]
pub trait MutationPlugin: Send + Sync {
    /// The plugin's name (the `name` of `apiserver_admission_controller_*` series).
    fn name(&self) -> &'static str;
    /// Whether the plugin has anything to do for this resource and operation at all; cheap,
    /// called on every write (false keeps the request's path free of the plugin).
    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool;
    /// Admits (and may change) `obj`; on delete `obj` is `null`.
    async fn admit(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
        record: &mut Record,
    ) -> Result<(), ApiError>;
}

/// A validating plugin (kube's ValidationInterface): allow, or deny with an error.
#[async_trait::async_trait]
pub trait ValidationPlugin: Send + Sync {
    /// The plugin's name.
    fn name(&self) -> &'static str;
    /// As [`MutationPlugin::handles`].
    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool;
    /// Validates `obj` (`None` on delete, where `attrs.old_object` is the object deleted).
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        record: &mut Record,
    ) -> Result<(), ApiError>;
}

/// The requesting user as authentication.k8s.io/v1 UserInfo JSON, from the request's scope.
pub type UserSource = fn() -> Option<Value>;

/// The dynamic admission plugins of a server, in the order they run.
#[derive(Clone)]
pub struct AdmissionPlugins {
    /// Mutating plugins (MutatingAdmissionWebhook).
    pub mutating: Vec<Arc<dyn MutationPlugin>>,
    /// Validating plugins (ValidatingAdmissionPolicy, ValidatingAdmissionWebhook).
    pub validating: Vec<Arc<dyn ValidationPlugin>>,
    /// Who the current request is (authentication sits above admission).
    pub user: UserSource,
}

impl std::fmt::Debug for AdmissionPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionPlugins")
            .field(
                "mutating",
                &self.mutating.iter().map(|p| p.name()).collect::<Vec<_>>(),
            )
            .field(
                "validating",
                &self.validating.iter().map(|p| p.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

tokio::task_local! {
    static SINK: Arc<std::sync::Mutex<Vec<(String, String)>>>;
}

/// Runs `fut` collecting the audit annotations admission adds while serving one request; the
/// handler copies them onto the request's audit event.
pub async fn collect_audit_annotations<F: std::future::Future>(
    fut: F,
) -> (F::Output, Vec<(String, String)>) {
    let sink = Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = SINK.scope(sink.clone(), fut).await;
    let annotations = std::mem::take(&mut *sink.lock().unwrap_or_else(|p| p.into_inner()));
    (out, annotations)
}

/// Adds audit annotations to the request being served (nothing outside a request).
pub fn add_audit_annotations(annotations: &[(String, String)]) {
    if annotations.is_empty() {
        return;
    }
    let _ = SINK.try_with(|s| {
        s.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(annotations.iter().cloned())
    });
}
