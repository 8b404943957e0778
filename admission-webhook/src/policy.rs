//! The ValidatingAdmissionPolicy admission plugin (k8s.io/apiserver
//! pkg/admission/plugin/policy/validating/plugin.go and policy/generic: the policy source and
//! its informers): the server's policies and bindings, read from the watch caches and handed
//! to the `admission-policy` engine when they change (which compiles a policy again only for a
//! new generation), and each write of any resource — built-in, Karmada's or custom — judged by
//! the engine, with namespaces and param objects read from the watch caches.
//!
//! What the engine decides is applied as kube's plugin applies it: a denial is the request's
//! error (`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...`), warnings go to
//! the `Warning` header, audit annotations onto the request's audit event.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use admission_policy::{
    Attributes as PolicyAttributes, Authorizer, Cluster, Engine, Gvk, Gvr, Operation, ParamKind,
    ParamScope, UserInfo,
};
use genericapiserver::admission_plugin::{
    AdmissionOperation, Attributes, Record, ValidationPlugin,
};
use genericapiserver::error::ApiError;
use genericapiserver::resources::{CatalogSnapshot, ResourceDef};
use genericapiserver::state::ApiState;
use genericapiserver::watch_cache::{CachedObject, WatchCache};
use serde_json::Value;

use crate::dispatch::exempt;
use crate::equivalent;

const GROUP: &str = "admissionregistration.k8s.io";

/// The (key, resourceVersion) pairs of a cache's objects.
type Versions = Vec<(String, i64)>;

/// The ValidatingAdmissionPolicy plugin of one server.
pub struct ValidatingAdmissionPolicy {
    state: Weak<ApiState>,
    /// What the policies' `authorizer` checks ask.
    authorizer: Arc<dyn Authorizer>,
    engine: Engine,
    caches: OnceLock<(Arc<WatchCache>, Arc<WatchCache>)>,
    /// What the engine holds.
    synced: Mutex<Synced>,
}

/// The cache revisions and object versions the engine was last given.
#[derive(Default)]
struct Synced {
    revisions: (i64, i64),
    policies: Versions,
    bindings: Versions,
}

impl ValidatingAdmissionPolicy {
    /// The plugin over the server's policies and bindings.
    pub fn new(
        state: Weak<ApiState>,
        authorizer: Arc<dyn Authorizer>,
    ) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            state,
            authorizer,
            engine: Engine::default(),
            caches: OnceLock::new(),
            synced: Mutex::default(),
        }
    }

    fn caches(&self) -> Option<&(Arc<WatchCache>, Arc<WatchCache>)> {
        if let Some(c) = self.caches.get() {
            return Some(c);
        }
        let state = self.state.upgrade()?;
        let snapshot = state.catalog.snapshot();
        let cache = |plural: &str| {
            let def = snapshot.get(GROUP, "v1", plural)?;
            state.cache(def).ok()
        };
        let pair = (
            cache("validatingadmissionpolicies")?,
            cache("validatingadmissionpolicybindings")?,
        );
        Some(self.caches.get_or_init(|| pair))
    }

    /// Brings the engine in step with the caches; policies whose generation did not change
    /// keep their compiled programs. Returns whether any binding exists.
    fn sync(&self) -> bool {
        let Some((policies, bindings)) = self.caches() else {
            return false;
        };
        if bindings.is_empty() {
            return false;
        }
        let revisions = (policies.revision(), bindings.revision());
        let mut synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        if synced.revisions == revisions {
            return true;
        }
        let listing = |c: &WatchCache| {
            let mut objects = c.all();
            objects.sort_by(|a, b| a.key().cmp(b.key()));
            let versions: Versions = objects
                .iter()
                .map(|o| (o.key().to_string(), o.rv))
                .collect();
            (versions, objects)
        };
        let (pv, po) = listing(policies);
        let (bv, bo) = listing(bindings);
        if synced.policies != pv || synced.bindings != bv {
            let values = |o: &[Arc<CachedObject>]| o.iter().map(|o| o.value()).collect::<Vec<_>>();
            for e in self.engine.sync(&values(&po), &values(&bo)) {
                tracing::warn!(error = %e, "validating admission policy object not understood");
            }
        }
        *synced = Synced {
            revisions,
            policies: pv,
            bindings: bv,
        };
        true
    }
}

/// The server's objects as the engine reads them: namespaces and params from the watch caches,
/// the request's resource and those equivalent to it from the catalog.
struct Objects<'a> {
    state: &'a ApiState,
    /// The resource written.
    def: &'a ResourceDef,
    snapshot: Arc<CatalogSnapshot>,
    authorizer: &'a Arc<dyn Authorizer>,
}

impl Objects<'_> {
    fn def(&self, kind: &ParamKind) -> Option<Arc<ResourceDef>> {
        self.snapshot
            .by_api_version_kind(&kind.api_version, &kind.kind)
            .cloned()
    }

    fn cache(&self, def: &Arc<ResourceDef>) -> Option<Arc<WatchCache>> {
        self.state.cache(def).ok()
    }
}

impl Cluster for Objects<'_> {
    fn namespace(&self, name: &str) -> Option<Value> {
        let def = self.snapshot.get("", "v1", "namespaces")?;
        let key = def.key("", name)?;
        Some(self.cache(def)?.get(&key)?.value())
    }

    fn param_scope(&self, kind: &ParamKind) -> Option<ParamScope> {
        let def = self.def(kind)?;
        Some(if def.namespaced {
            ParamScope::Namespaced
        } else {
            ParamScope::Cluster
        })
    }

    fn param(&self, kind: &ParamKind, namespace: &str, name: &str) -> Option<Value> {
        let def = self.def(kind)?;
        let key = def.key(namespace, name)?;
        Some(self.cache(&def)?.get(&key)?.value())
    }

    fn equivalent_resources(&self, resource: &Gvr, subresource: &str) -> Vec<(Gvr, Gvk)> {
        let Some(def) = self
            .snapshot
            .get(&resource.group, &resource.version, &resource.resource)
        else {
            return Vec::new();
        };
        equivalent::equivalents(&self.snapshot, def, subresource)
            .iter()
            .map(|d| {
                (
                    Gvr::new(&d.group, &d.version, &d.plural),
                    Gvk::new(&d.group, &d.version, &d.kind),
                )
            })
            .collect()
    }

    fn authorizer(&self) -> Option<Arc<dyn Authorizer>> {
        Some(self.authorizer.clone())
    }

    fn versioned(&self, object: &Value, resource: &Gvr) -> Option<Value> {
        let own = self.def.group == resource.group
            && self.def.version == resource.version
            && self.def.plural == resource.resource;
        // The request's own resource (nearly every match) needs no catalog lookup.
        let target = if own {
            self.def
        } else {
            self.snapshot
                .get(&resource.group, &resource.version, &resource.resource)?
        };
        equivalent::view(self.def, target, object)
    }

    fn params(&self, kind: &ParamKind, namespace: &str) -> Vec<Value> {
        let Some(def) = self.def(kind) else {
            return Vec::new();
        };
        let Some(cache) = self.cache(&def) else {
            return Vec::new();
        };
        let mut objects: Vec<_> = cache
            .all()
            .into_iter()
            .filter(|o| !def.namespaced || o.namespace() == namespace)
            .collect();
        objects.sort_by(|a, b| a.key().cmp(b.key()));
        objects.iter().map(|o| o.value()).collect()
    }
}

fn operation(op: AdmissionOperation) -> Operation {
    match op {
        AdmissionOperation::Create => Operation::Create,
        AdmissionOperation::Update => Operation::Update,
        AdmissionOperation::Delete => Operation::Delete,
        AdmissionOperation::Connect => Operation::Connect,
    }
}

/// authentication.k8s.io/v1 UserInfo JSON as the engine's user.
fn user_info(user: Option<&Value>) -> UserInfo {
    let Some(u) = user else {
        return UserInfo::default();
    };
    let s = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    UserInfo {
        username: s("username"),
        uid: s("uid"),
        groups: crate::rules::strings(u, "groups"),
        // Authentication always gives lists of strings; anything else is left out.
        extra: u
            .get("extra")
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default(),
    }
}

/// kube's status reasons a policy can deny with (`Invalid` otherwise).
fn static_reason(reason: &str) -> &'static str {
    match reason {
        "Forbidden" => "Forbidden",
        "Unauthorized" => "Unauthorized",
        "RequestEntityTooLarge" => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

#[async_trait::async_trait]
impl ValidationPlugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool {
        // Without a binding no policy applies; the configuration kinds are exempt as for
        // webhooks (kube's IsExemptAdmissionConfigurationResource).
        !exempt(def) && op != AdmissionOperation::Connect && self.sync()
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        record: &mut Record,
    ) -> Result<(), ApiError> {
        let Some(state) = self.state.upgrade() else {
            return Ok(());
        };
        if !self.sync() {
            return Ok(());
        }
        let def = attrs.def;
        let name = if attrs.name.is_empty() {
            obj.and_then(|o| o.pointer("/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or("")
        } else {
            attrs.name
        };
        let request = PolicyAttributes {
            operation: operation(attrs.operation),
            kind: Gvk::new(&def.group, &def.version, &def.kind),
            resource: Gvr::new(&def.group, &def.version, &def.plural),
            subresource: attrs.subresource.to_string(),
            name: name.to_string(),
            namespace: attrs.namespace.to_string(),
            object: obj,
            old_object: attrs.old_object,
            dry_run: attrs.dry_run,
            options: Some(attrs.options),
            user: user_info(attrs.user),
        };
        let objects = Objects {
            state: &state,
            def,
            snapshot: state.catalog.snapshot(),
            authorizer: &self.authorizer,
        };
        let outcome = self.engine.validate(&request, &objects);
        record.warnings.extend(outcome.warnings);
        record.audit_annotations.extend(outcome.audit_annotations);
        let Some(denial) = outcome.denial else {
            return Ok(());
        };
        let resource = if def.group.is_empty() {
            def.plural.clone()
        } else {
            format!("{}.{}", def.plural, def.group)
        };
        let message = if name.is_empty() {
            format!("{resource} is forbidden: {}", denial.message)
        } else {
            format!("{resource} \"{name}\" is forbidden: {}", denial.message)
        };
        let mut err = ApiError::forbidden_message(&def.group, &def.plural, name, message);
        err.code = denial.code;
        err.reason = static_reason(&denial.reason);
        // kube adds the policy's message as a cause (kubectl prints it for Invalid).
        if let Some(details) = err.details.as_mut() {
            details.causes.push(apimachinery::status::Cause {
                reason: String::new(),
                message: denial.message,
                field: String::new(),
            });
        }
        Err(err)
    }
}
