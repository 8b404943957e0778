//! The namespace controller (kube-controller-manager's pkg/controller/namespace): empties a
//! terminating namespace of every namespaced object of every served resource, reports progress
//! in the namespace's status conditions, and then removes the `kubernetes` finalizer through the
//! `finalize` subresource, after which the registry deletes the namespace.
//!
//! It reacts to namespace changes and to deletions inside terminating namespaces; a namespace
//! whose content waits on other finalizers is also looked at again after a while.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta as object;
use futures::StreamExt;
use serde_json::{Value, json};

use super::informer::{self, Change};
use super::work_queue::{self, WorkQueue};
use crate::api_server::{ApiError, ApiServer, Deleted, Propagation, Resource, Subresource};

/// The finalizer the namespace controller owns in `spec.finalizers`.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";
/// Roles and RoleBindings, deleted after the rest of a namespace's content.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// How long before a namespace whose content is still terminating is looked at again even
/// without a deletion in it (kube's finalizerEstimateSeconds).
const REMAINING_RECHECK: Duration = Duration::from_secs(15);

/// Deletes in flight at once while emptying a namespace.
const DELETE_CONCURRENCY: usize = 16;

/// What one pass over a namespace's content found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ContentReport {
    /// Objects still present per resource (`configmaps.` / `deployments.apps` as kube names them).
    pub remaining: BTreeMap<String, usize>,
    /// Objects still present per finalizer they carry.
    pub finalizers: BTreeMap<String, usize>,
    /// Failures to list or delete, one message per failure.
    pub errors: Vec<String>,
}

impl ContentReport {
    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.remaining.values().all(|n| *n == 0)
    }
}

/// One namespace status condition (core/v1 NamespaceCondition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// Condition type.
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: &'static str,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// The condition types the controller maintains, in kube's order, with the reason and
/// message of their healthy (`False`) state (kube's status_condition_utils.go).
const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
];

/// The conditions a content report calls for (only the failing ones; the others are healthy).
pub fn report_conditions(report: &ContentReport) -> Vec<Condition> {
    let mut out = Vec::new();
    if !report.errors.is_empty() {
        let mut msgs = report.errors.clone();
        msgs.sort();
        out.push(Condition {
            type_: "NamespaceDeletionContentFailure",
            status: "True",
            reason: "ContentDeletionFailed",
            message: format!(
                "Failed to delete all resource types, {} remaining: {}",
                msgs.len(),
                msgs.join(", ")
            ),
        });
    }
    let remaining: Vec<String> = report
        .remaining
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    if !remaining.is_empty() {
        out.push(Condition {
            type_: "NamespaceContentRemaining",
            status: "True",
            reason: "SomeResourcesRemain",
            message: format!("Some resources are remaining: {}", remaining.join(", ")),
        });
    }
    let finalizers: Vec<String> = report
        .finalizers
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    if !finalizers.is_empty() {
        out.push(Condition {
            type_: "NamespaceFinalizersRemaining",
            status: "True",
            reason: "SomeFinalizerRemain",
            message: format!("Some finalizers are remaining: {}", finalizers.join(", ")),
        });
    }
    out
}

/// Merges `failing` into existing `status.conditions` as kube's updateConditions does: every
/// maintained type is present, healthy unless failing; lastTransitionTime changes only with the
/// status. Returns the new list and whether it differs.
pub fn merge_conditions(
    existing: &[Value],
    failing: &[Condition],
    now: &str,
) -> (Vec<Value>, bool) {
    let mut out = existing.to_vec();
    let mut changed = false;
    for (type_, ok_reason, ok_message) in CONDITIONS {
        let want = failing
            .iter()
            .find(|c| c.type_ == *type_)
            .cloned()
            .unwrap_or(Condition {
                type_,
                status: "False",
                reason: ok_reason,
                message: ok_message.to_string(),
            });
        let field = |c: &Value, f: &str| c.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        match out
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(*type_))
        {
            None => {
                out.push(json!({
                    "type": want.type_,
                    "status": want.status,
                    "lastTransitionTime": now,
                    "reason": want.reason,
                    "message": want.message,
                }));
                changed = true;
            }
            Some(c) => {
                let status_changed = field(c, "status") != want.status;
                if status_changed
                    || field(c, "reason") != want.reason
                    || field(c, "message") != want.message
                {
                    if let Some(m) = c.as_object_mut() {
                        if status_changed {
                            m.insert("lastTransitionTime".into(), json!(now));
                        }
                        m.insert("status".into(), json!(want.status));
                        m.insert("reason".into(), json!(want.reason));
                        m.insert("message".into(), json!(want.message));
                    }
                    changed = true;
                }
            }
        }
    }
    (out, changed)
}

/// True when a namespace is terminating and still carries the `kubernetes` finalizer.
pub fn awaits_finalization(ns: &Value) -> bool {
    object::is_terminating(ns)
        && spec_finalizers(ns)
            .iter()
            .any(|f| f == KUBERNETES_FINALIZER)
}

fn spec_finalizers(ns: &Value) -> Vec<String> {
    ns.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// How a namespace sync ended.
enum Outcome {
    /// Finalized, gone, or not terminating.
    Done,
    /// Content is still terminating.
    Remaining,
}

/// The controller's state, owned by its task.
pub struct NamespaceController {
    state: Arc<dyn ApiServer>,
    queue: WorkQueue<String>,
    /// Namespaces awaiting finalization, as the cache shows them.
    terminating: HashSet<String>,
}

impl NamespaceController {
    /// A controller over the server's state.
    pub fn new(state: Arc<dyn ApiServer>) -> NamespaceController {
        NamespaceController {
            state,
            queue: WorkQueue::new(Duration::from_millis(100), Duration::from_secs(30)),
            terminating: HashSet::new(),
        }
    }

    /// Runs until the task is aborted.
    pub async fn run(mut self) {
        let mut changes = informer::spawn(self.state.clone(), 1024);
        loop {
            while let Ok(change) = changes.try_recv() {
                self.apply(change);
            }
            if let Some(ns) = self.queue.pop() {
                match self.sync(&ns).await {
                    Ok(Outcome::Done) => self.queue.forget(&ns),
                    Ok(Outcome::Remaining) => {
                        self.queue.forget(&ns);
                        self.queue.add_after(ns, REMAINING_RECHECK);
                    }
                    Err(e) => {
                        tracing::warn!(namespace = %ns, error = %e, "namespace deletion will retry");
                        self.queue.retry(ns);
                    }
                }
                continue;
            }
            tokio::select! {
                change = changes.recv() => match change {
                    Some(change) => self.apply(change),
                    None => {
                        tracing::error!("namespace controller lost its informer; restarting it");
                        changes = informer::spawn(self.state.clone(), 1024);
                    }
                },
                _ = work_queue::sleep_until(self.queue.next_due()) => {}
            }
        }
    }

    fn is_namespaces(def: &Arc<dyn Resource>) -> bool {
        def.group().is_empty() && def.plural() == "namespaces"
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Resync { def, objects } if Self::is_namespaces(&def) => {
                self.terminating = objects
                    .iter()
                    .filter(|o| awaits_finalization(&o.value()))
                    .map(|o| o.name().to_owned())
                    .collect();
                self.requeue_all();
            }
            Change::Event { def, event } if Self::is_namespaces(&def) => {
                let name = event.object.name().to_owned();
                if !event.deleted && awaits_finalization(&event.object.value()) {
                    self.terminating.insert(name.clone());
                    self.queue.add(name);
                } else {
                    self.terminating.remove(&name);
                }
            }
            Change::Event { event, .. } => {
                // Something left a terminating namespace: it may be empty now.
                if event.deleted && self.terminating.contains(event.object.namespace()) {
                    self.queue.add(event.object.namespace().to_owned());
                }
            }
            Change::Resync { .. } | Change::Gone { .. } | Change::Synced => self.requeue_all(),
        }
    }

    fn requeue_all(&mut self) {
        let names: Vec<String> = self.terminating.iter().cloned().collect();
        for n in names {
            self.queue.add(n);
        }
    }

    fn namespaces(&self) -> Option<Arc<dyn Resource>> {
        self.state.resource("", "v1", "namespaces")
    }

    /// kube's namespacedResourcesDeleter.Delete.
    async fn sync(&self, name: &str) -> Result<Outcome, ApiError> {
        let Some(namespaces) = self.namespaces() else {
            return Ok(Outcome::Done);
        };
        let ns = match self.state.get(&namespaces, "", name).await {
            Ok(ns) => ns,
            Err(e) if e.code == 404 => return Ok(Outcome::Done),
            Err(e) => return Err(e),
        };
        if !awaits_finalization(&ns) {
            return Ok(Outcome::Done);
        }
        let uid = object::uid(&ns).to_string();
        let report = self.delete_content(name).await;
        let existing = ns
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let failing = report_conditions(&report);
        if merge_conditions(&existing, &failing, "").1 {
            self.update_conditions(&namespaces, name, &uid, &failing)
                .await?;
        }
        if !report.errors.is_empty() {
            return Err(ApiError::internal(format!(
                "failed to delete all content: {}",
                report.errors.join(", ")
            )));
        }
        if !report.is_empty() {
            tracing::debug!(namespace = %name, remaining = ?report.remaining, "namespace content remains");
            return Ok(Outcome::Remaining);
        }
        let edit = |cur: &Value| {
            // Not the namespace this pass emptied: it was replaced (a conflict).
            if object::uid(cur) != uid {
                return None;
            }
            let mut next = cur.clone();
            let rest: Vec<Value> = spec_finalizers(cur)
                .into_iter()
                .filter(|f| f != KUBERNETES_FINALIZER)
                .map(Value::String)
                .collect();
            object::set_path(&mut next, ".spec.finalizers", Value::Array(rest));
            Some(next)
        };
        let result = self
            .state
            .guaranteed_update(&namespaces, "", name, Subresource::Finalize, &edit)
            .await;
        match result {
            Ok(_) => {
                tracing::info!(namespace = %name, "namespace content removed; finalized");
                Ok(Outcome::Done)
            }
            Err(e) if e.code == 404 || e.code == 409 => Ok(Outcome::Done),
            Err(e) => Err(e),
        }
    }

    /// Deletes every object of every namespaced resource in `ns` (kube's deleteAllContent,
    /// with the default background propagation) and reports what remains. Roles and
    /// RoleBindings go last, once nothing else is left: the controllers that lift the
    /// remaining objects' finalizers may be allowed to by them (a pull member's agent reaches
    /// its Works through a Role in their execution space), and kube's single pass would take
    /// that access away while they still have work to do.
    async fn delete_content(&self, ns: &str) -> ContentReport {
        let mut report = ContentReport::default();
        let mut defs: Vec<_> = self
            .state
            .stored_resources()
            .into_iter()
            .filter(|d| d.namespaced())
            .collect();
        defs.sort_by_key(|d| d.group() == RBAC_GROUP);
        for def in defs {
            let label = format!("{}.{}", def.plural(), def.group());
            // A consistent list: an object created just before the namespace started
            // terminating must not be missed.
            let items = match self.state.list(&def, ns).await {
                Ok(items) => items,
                Err(e) => {
                    report.errors.push(format!("{label}: {}", e.message));
                    continue;
                }
            };
            if def.group() == RBAC_GROUP && !report.remaining.is_empty() && !items.is_empty() {
                report.remaining.insert(label, items.len());
                continue;
            }
            // Deleted a few at a time: each delete waits for a durable write.
            let left: Vec<Result<Option<Value>, String>> =
                // Parsed up front: the futures then hold no trait object of the server's.
                futures::stream::iter(items.iter().map(|item| (item.name().to_string(), item.value())).collect::<Vec<_>>().into_iter().map(|(name, obj)| {
                    let (state, def) = (&self.state, &def);
                    async move {
                        if object::is_terminating(&obj) {
                            return Ok(Some(obj));
                        }
                        let uid = object::uid(&obj);
                        match state
                            .delete(def, ns, &name, uid, Propagation::Background)
                            .await
                        {
                            Ok(Deleted::Gone) => Ok(None),
                            Ok(Deleted::Terminating(v)) => Ok(Some(v)),
                            Err(e) if e.code == 404 => Ok(None),
                            // Replaced meanwhile: the next pass deletes the new one.
                            Err(e) if e.code == 409 => Ok(Some(Value::Null)),
                            Err(e) => Err(e.message),
                        }
                    }
                }))
                .buffer_unordered(DELETE_CONCURRENCY)
                .collect()
                .await;
            let mut remaining = 0;
            for l in left {
                let obj = match l {
                    Ok(None) => continue,
                    Ok(Some(obj)) => obj,
                    Err(message) => {
                        report.errors.push(format!("{label}: {message}"));
                        Value::Null
                    }
                };
                remaining += 1;
                for f in object::finalizers(&obj) {
                    *report.finalizers.entry(f).or_insert(0) += 1;
                }
            }
            if remaining > 0 {
                report.remaining.insert(label, remaining);
            }
        }
        report
    }

    async fn update_conditions(
        &self,
        namespaces: &Arc<dyn Resource>,
        name: &str,
        uid: &str,
        failing: &[Condition],
    ) -> Result<(), ApiError> {
        let edit = |cur: &Value| {
            // Not the namespace this pass looked at: it was replaced (a conflict).
            if object::uid(cur) != uid {
                return None;
            }
            let existing = cur
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let (conditions, _) = merge_conditions(&existing, failing, &object::now_rfc3339());
            let mut next = cur.clone();
            object::set_path(&mut next, ".status.conditions", Value::Array(conditions));
            Some(next)
        };
        let result = self
            .state
            .guaranteed_update(namespaces, "", name, Subresource::Status, &edit)
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        remaining: &[(&str, usize)],
        finalizers: &[(&str, usize)],
        errors: &[&str],
    ) -> ContentReport {
        ContentReport {
            remaining: remaining.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            finalizers: finalizers
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            errors: errors.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn conditions_from_reports() {
        type Expected = Vec<(&'static str, &'static str, &'static str)>;
        let cases: Vec<(ContentReport, Expected)> = vec![
            (report(&[], &[], &[]), vec![]),
            (
                report(
                    &[("configmaps.", 2), ("deployments.apps", 1)],
                    &[("example.com/hold", 3)],
                    &[],
                ),
                vec![
                    (
                        "NamespaceContentRemaining",
                        "SomeResourcesRemain",
                        "Some resources are remaining: configmaps. has 2 resource instances, deployments.apps has 1 resource instances",
                    ),
                    (
                        "NamespaceFinalizersRemaining",
                        "SomeFinalizerRemain",
                        "Some finalizers are remaining: example.com/hold in 3 resource instances",
                    ),
                ],
            ),
            (
                report(&[("secrets.", 1)], &[], &["secrets.: b", "configmaps.: a"]),
                vec![
                    (
                        "NamespaceDeletionContentFailure",
                        "ContentDeletionFailed",
                        "Failed to delete all resource types, 2 remaining: configmaps.: a, secrets.: b",
                    ),
                    (
                        "NamespaceContentRemaining",
                        "SomeResourcesRemain",
                        "Some resources are remaining: secrets. has 1 resource instances",
                    ),
                ],
            ),
        ];
        for (r, want) in cases {
            let got: Vec<(&str, &str, String)> = report_conditions(&r)
                .into_iter()
                .map(|c| (c.type_, c.reason, c.message))
                .collect();
            let want: Vec<(&str, &str, String)> = want
                .into_iter()
                .map(|(t, r, m)| (t, r, m.to_string()))
                .collect();
            assert_eq!(got, want, "{r:?}");
            assert!(report_conditions(&r).iter().all(|c| c.status == "True"));
        }
    }

    #[test]
    fn merging_conditions() {
        let failing = report_conditions(&report(&[("configmaps.", 1)], &[], &[]));
        let (first, changed) = merge_conditions(&[], &failing, "t1");
        assert!(changed);
        let types: Vec<&str> = first.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "NamespaceDeletionDiscoveryFailure",
                "NamespaceDeletionGroupVersionParsingFailure",
                "NamespaceDeletionContentFailure",
                "NamespaceContentRemaining",
                "NamespaceFinalizersRemaining"
            ]
        );
        assert_eq!(first[3]["status"], "True");
        assert_eq!(first[0]["status"], "False");
        assert_eq!(first[0]["reason"], "ResourcesDiscovered");

        // The same report again changes nothing, not even times.
        let (again, changed) = merge_conditions(&first, &failing, "t2");
        assert!(!changed);
        assert_eq!(again, first);

        // Content gone: the remaining condition turns healthy with a new transition time;
        // the others keep theirs.
        let (done, changed) = merge_conditions(&first, &[], "t3");
        assert!(changed);
        assert_eq!(done[3]["status"], "False");
        assert_eq!(done[3]["reason"], "ContentRemoved");
        assert_eq!(done[3]["lastTransitionTime"], "t3");
        assert_eq!(done[0]["lastTransitionTime"], "t1");

        // Conditions of other types are kept.
        let other = json!({"type": "Custom", "status": "True"});
        let (kept, _) = merge_conditions(std::slice::from_ref(&other), &[], "t4");
        assert_eq!(kept[0], other);
        assert_eq!(kept.len(), 6);
    }

    #[test]
    fn finalization_is_awaited_only_while_terminating_with_the_finalizer() {
        let cases = [
            (
                json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}}),
                false,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {"finalizers": ["kubernetes"]}}),
                true,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {"finalizers": ["other"]}}),
                false,
            ),
            (
                json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}}),
                false,
            ),
        ];
        for (ns, want) in cases {
            assert_eq!(awaits_finalization(&ns), want, "{ns}");
        }
    }
}
