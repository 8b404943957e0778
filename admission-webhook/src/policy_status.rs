//! The ValidatingAdmissionPolicy status controller (kube-controller-manager
//! pkg/controller/validatingadmissionpolicystatus): each policy whose `status.observedGeneration`
//! is behind its generation gets its `status.typeChecking` — the `admission-policy` type
//! checker run against the OpenAPI v3 schemas this server publishes (built-in kinds, Karmada's
//! and custom resources alike) — written through the status subresource.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use admission_policy::typecheck::{self, SchemaResolver};
use admission_policy::{Gvk, Gvr};
use genericapiserver::options::WriteContext;
use genericapiserver::registry::{Registry, Subresource};
use genericapiserver::resources::{CatalogSnapshot, ResourceDef};
use genericapiserver::state::ApiState;
use genericapiserver::watch_cache::{Filter, RecvError, TryRecvError};
use serde_json::Value;
use tokio::task::JoinHandle;

/// How often the controller looks again without an event (a write that failed, a CRD whose
/// schema arrived after its policy).
const RESYNC: Duration = Duration::from_secs(5);

/// The server's schemas by kind, from the published OpenAPI v3 group-version documents.
struct Schemas {
    snapshot: Arc<CatalogSnapshot>,
    /// Parsed documents by key (`api/v1`, `apis/apps/v1`), read when a kind needs them.
    documents: HashMap<String, Value>,
}

fn document_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

impl Schemas {
    /// Parses the documents of the group-versions a policy's kinds live in.
    fn for_policy(snapshot: Arc<CatalogSnapshot>, policy: &Value) -> Schemas {
        let published = genericapiserver::openapi::documents(&snapshot);
        let mut keys: Vec<String> = Vec::new();
        let rules = policy
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for rule in rules {
            for g in crate::rules::strings(rule, "apiGroups") {
                for v in crate::rules::strings(rule, "apiVersions") {
                    keys.push(document_key(&g, &v));
                }
            }
        }
        if let Some(api_version) = policy
            .pointer("/spec/paramKind/apiVersion")
            .and_then(Value::as_str)
        {
            let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
            keys.push(document_key(g, v));
        }
        let documents = keys
            .into_iter()
            .filter_map(|k| {
                let doc = published.groups.get(&k)?;
                let v: Value = serde_json::from_slice(&doc.bytes).ok()?;
                Some((k, v))
            })
            .collect();
        Schemas {
            snapshot,
            documents,
        }
    }
}

impl SchemaResolver for Schemas {
    fn kinds_for(&self, r: &Gvr) -> Vec<Gvk> {
        self.snapshot
            .get(&r.group, &r.version, &r.resource)
            .map(|d| vec![Gvk::new(&d.group, &d.version, &d.kind)])
            .unwrap_or_default()
    }

    fn schema(&self, k: &Gvk) -> Option<Value> {
        let doc = self.documents.get(&document_key(&k.group, &k.version))?;
        doc.pointer("/components/schemas")?
            .as_object()?
            .values()
            .find(|s| {
                s.get("x-kubernetes-group-version-kind")
                    .and_then(Value::as_array)
                    .is_some_and(|gvks| {
                        gvks.iter().any(|g| {
                            g["group"] == k.group.as_str()
                                && g["version"] == k.version.as_str()
                                && g["kind"] == k.kind.as_str()
                        })
                    })
            })
            .cloned()
    }

    fn component(&self, name: &str) -> Option<&Value> {
        self.documents
            .values()
            .find_map(|d| d.pointer("/components/schemas")?.get(name))
    }
}

fn policy_def(state: &ApiState) -> Option<Arc<ResourceDef>> {
    state
        .catalog
        .snapshot()
        .get(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )
        .cloned()
}

/// Starts the controller; the task ends when the state is dropped.
pub fn start(state: &Arc<ApiState>) -> JoinHandle<()> {
    tokio::spawn(run(Arc::downgrade(state)))
}

async fn run(state: Weak<ApiState>) {
    loop {
        let Some(s) = state.upgrade() else {
            return;
        };
        let Some(def) = policy_def(&s) else {
            return;
        };
        let subscription = s
            .cache(&def)
            .map(|cache| cache.subscribe(None, &Filter::default()));
        drop(s);
        let mut rx = match subscription {
            Ok(Ok(sub)) => sub.rx,
            _ => {
                tokio::time::sleep(RESYNC).await;
                continue;
            }
        };
        loop {
            let Some(s) = state.upgrade() else {
                return;
            };
            reconcile(&s, &def).await;
            drop(s);
            let closed = tokio::select! {
                r = rx.recv() => matches!(r, Err(RecvError::Closed)),
                _ = tokio::time::sleep(RESYNC) => false,
            };
            // Several events often arrive together: one pass handles them all.
            while let Ok(_) | Err(TryRecvError::Lagged) = rx.try_recv() {}
            if closed {
                // The cache relisted: subscribe again.
                break;
            }
        }
    }
}

/// One pass: every policy whose status is behind its generation is checked and written.
async fn reconcile(state: &ApiState, def: &Arc<ResourceDef>) {
    let Ok(cache) = state.cache(def) else {
        return;
    };
    let writer = WriteContext {
        manager: "validatingadmissionpolicy-status-controller".into(),
        dry_run: false,
        apply: false,
    };
    for object in cache.all() {
        let policy = object.value();
        let generation = policy.pointer("/metadata/generation").cloned();
        if policy.pointer("/status/observedGeneration") == generation.as_ref() {
            continue;
        }
        let schemas = Schemas::for_policy(state.catalog.snapshot(), &policy);
        let status = match typecheck::status(&policy, &schemas) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(policy = object.name(), error = %e, "policy not understood");
                continue;
            }
        };
        let result = Registry::new(state, def.clone())
            .guaranteed_update("", object.name(), Subresource::Status, &writer, |cur| {
                let mut next = cur.clone();
                // Checked at a generation the object no longer has: the next pass checks it.
                if cur.pointer("/metadata/generation") != generation.as_ref() {
                    return Ok(next);
                }
                let current = next.as_object_mut().map(|o| {
                    o.entry("status")
                        .or_insert_with(|| Value::Object(Default::default()))
                });
                if let (Some(Value::Object(cur)), Some(new)) = (current, status.as_object()) {
                    cur.extend(new.clone());
                }
                Ok(next)
            })
            .await;
        match result {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => {
                tracing::warn!(policy = object.name(), error = %e.message, "updating policy status")
            }
        }
    }
}
