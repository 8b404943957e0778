//! The webhook configurations as the server holds them (k8s.io/apiserver
//! pkg/admission/configuration: mutating_webhook_manager, validating_webhook_manager): read
//! from the watch cache, compiled (rules, selectors, CEL conditions, client configuration)
//! when the cache's content changes, and handed out as an immutable snapshot, so that a
//! request never reads storage for them.

use std::sync::{Arc, OnceLock, RwLock, Weak};
use std::time::Duration;

use genericapiserver::state::ApiState;
use genericapiserver::watch_cache::WatchCache;
use serde_json::Value;

use crate::client::ClientConfig;
use crate::rules::Rule;
use admission_policy::MatchConditions;

/// Which configurations a manager reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookType {
    /// MutatingWebhookConfiguration.
    Mutating,
    /// ValidatingWebhookConfiguration.
    Validating,
}

impl HookType {
    fn plural(self) -> &'static str {
        match self {
            HookType::Mutating => "mutatingwebhookconfigurations",
            HookType::Validating => "validatingwebhookconfigurations",
        }
    }

    /// `admit` or `validating`, as metrics name the type.
    pub fn metric_type(self) -> &'static str {
        match self {
            HookType::Mutating => "admit",
            HookType::Validating => "validating",
        }
    }
}

/// One webhook of a configuration, ready to match and call.
#[derive(Debug)]
pub struct Webhook {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub name: String,
    /// Its rules.
    pub rules: Vec<Rule>,
    /// `matchPolicy: Equivalent` (the default).
    pub equivalent: bool,
    /// namespaceSelector (`{}`: all).
    pub namespace_selector: Value,
    /// objectSelector.
    pub object_selector: Value,
    /// matchConditions.
    pub conditions: MatchConditions,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// timeoutSeconds.
    pub timeout: Duration,
    /// sideEffects.
    pub side_effects: String,
    /// The AdmissionReview version sent (`v1` when listed, else `v1beta1`).
    pub review_version: &'static str,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke: bool,
    /// Where it is called, or why its configuration cannot be used.
    pub client: Result<ClientConfig, String>,
}

impl Webhook {
    fn compile(configuration: &str, w: &Value) -> Webhook {
        let s = |k: &str| w.get(k).and_then(Value::as_str).unwrap_or("");
        let versions: Vec<&str> = w
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let review_version = if versions.contains(&"v1") || !versions.contains(&"v1beta1") {
            "v1"
        } else {
            "v1beta1"
        };
        Webhook {
            configuration: configuration.to_string(),
            name: s("name").to_string(),
            rules: w
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| rs.iter().map(Rule::from_json).collect())
                .unwrap_or_default(),
            equivalent: s("matchPolicy") != "Exact",
            namespace_selector: w.get("namespaceSelector").cloned().unwrap_or(Value::Null),
            object_selector: w.get("objectSelector").cloned().unwrap_or(Value::Null),
            conditions: MatchConditions::compile(
                w.get("matchConditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                        (f("name"), f("expression"))
                    }),
            ),
            ignore_failures: s("failurePolicy") == "Ignore",
            timeout: Duration::from_secs(
                w.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            side_effects: s("sideEffects").to_string(),
            review_version,
            reinvoke: s("reinvocationPolicy") == "IfNeeded",
            client: ClientConfig::from_json(w.get("clientConfig").unwrap_or(&Value::Null)),
        }
    }
}

/// The webhooks of every configuration of one type, in kube's order: configurations by name,
/// then each configuration's webhooks as listed.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The cache revision it was built at.
    revision: i64,
    /// Which configuration versions it holds (key, resourceVersion).
    versions: Vec<(String, i64)>,
    /// The webhooks.
    pub hooks: Vec<Arc<Webhook>>,
}

/// The configurations of one type, kept in step with the watch cache.
pub struct Manager {
    state: Weak<ApiState>,
    hook_type: HookType,
    cache: OnceLock<Arc<WatchCache>>,
    snapshot: RwLock<Arc<Snapshot>>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("hook_type", &self.hook_type)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager over the server's watch cache of the configurations.
    pub fn new(state: Weak<ApiState>, hook_type: HookType) -> Manager {
        Manager {
            state,
            hook_type,
            cache: OnceLock::new(),
            snapshot: RwLock::new(Arc::default()),
        }
    }

    /// The server's state, while it runs.
    pub fn state(&self) -> Option<Arc<ApiState>> {
        self.state.upgrade()
    }

    fn watch_cache(&self) -> Option<&Arc<WatchCache>> {
        if let Some(c) = self.cache.get() {
            return Some(c);
        }
        let state = self.state.upgrade()?;
        let snapshot = state.catalog.snapshot();
        let def = snapshot.get(
            "admissionregistration.k8s.io",
            "v1",
            self.hook_type.plural(),
        )?;
        let cache = state.cache(def).ok()?;
        Some(self.cache.get_or_init(|| cache))
    }

    /// The current webhooks; rebuilt only when the cache moved and its objects changed.
    pub fn webhooks(&self) -> Arc<Snapshot> {
        let Some(cache) = self.watch_cache() else {
            return Arc::default();
        };
        let revision = cache.revision();
        {
            let current = self.snapshot.read().unwrap_or_else(|p| p.into_inner());
            if current.revision == revision {
                return current.clone();
            }
        }
        let mut objects = cache.all();
        objects.sort_by(|a, b| a.key().cmp(b.key()));
        let versions: Vec<(String, i64)> = objects
            .iter()
            .map(|o| (o.key().to_string(), o.rv))
            .collect();
        let mut current = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
        if current.versions == versions {
            let same = Snapshot {
                revision,
                versions,
                hooks: current.hooks.clone(),
            };
            *current = Arc::new(same);
            return current.clone();
        }
        let mut hooks = Vec::new();
        for o in &objects {
            let v = o.value();
            let name = o.name().to_string();
            for w in v
                .get("webhooks")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                hooks.push(Arc::new(Webhook::compile(&name, w)));
            }
        }
        tracing::debug!(
            kind = self.hook_type.plural(),
            webhooks = hooks.len(),
            "admission webhook configuration loaded"
        );
        *current = Arc::new(Snapshot {
            revision,
            versions,
            hooks,
        });
        current.clone()
    }
}
