//! The quota check Karmada's ResourceBinding validating webhook makes under
//! FederatedQuotaEnforcement (pkg/webhook/resourcebinding, validateFederatedResourceQuota),
//! made here by the scheduler before it writes a placement: what the new placement adds to
//! what the binding requested before must fit, with each FederatedResourceQuota's
//! `status.overallUsed`, within its `spec.overall`; when it does, the quotas' usage is raised
//! by that much (reserved).
//!
//! Karmada's webhook writes each reservation to the quota's status before it answers, with a
//! conflict retry, so every placement in a namespace waits for the one before. Here the
//! scheduler is the only admitter, so reservations are taken in a ledger in memory, one lock
//! for every check and reservation, and written to `status.overallUsed` behind them (many
//! reservations of one quota make one write). The ledger adopts what others write there (the
//! enforcement controller's recalculation), keeping the reservations not written yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use karmada_api::policy::v1alpha1::FederatedResourceQuota;
use karmada_api::work::v1alpha2::{ResourceBindingSpec, TargetCluster};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio::task::JoinHandle;

use super::usage::{Usage, binding_usage, delta, exceeded};
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_not_found};

/// The webhook whose denial Karmada's scheduler reports.
const WEBHOOK: &str = "resourcebinding.karmada.io";

/// A placement refused for going over a FederatedResourceQuota; the message is the one the
/// scheduler's condition and Event carry.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaExceeded(pub String);

/// One quota's usage as the ledger knows it.
#[derive(Default)]
struct Entry {
    /// `status.overallUsed` as last written (by the ledger or anyone else).
    written: Usage,
    /// Reserved since, not written yet.
    pending: Usage,
    /// The resourceVersion of the ledger's last write: older (or the same) informer updates
    /// are its own echoes and say nothing new.
    written_rv: Option<u64>,
}

/// What `q`'s usage would be with `change`, or the refusal (processSingleFRQ); None when the
/// change does not touch what the quota limits.
fn raise(
    q: &FederatedResourceQuota,
    used: &Usage,
    change: &Usage,
) -> Option<std::result::Result<Usage, QuotaExceeded>> {
    if q.spec.overall.is_empty() {
        return None;
    }
    let limited = change.restricted_to(&q.spec.overall);
    if limited.is_zero() {
        return None;
    }
    let mut requested = used.clone();
    requested.add_usage(&limited);
    let ns = q.metadata.namespace.as_deref().unwrap_or_default();
    let name = q.metadata.name.as_deref().unwrap_or_default();
    Some(match exceeded(ns, name, &requested, &q.spec.overall) {
        Some(msg) => Err(QuotaExceeded(format!(
            "admission webhook \"{WEBHOOK}\" denied the request: {msg}"
        ))),
        None => Ok(limited),
    })
}

fn resource_version(q: &FederatedResourceQuota) -> Option<u64> {
    q.metadata.resource_version.as_deref()?.parse().ok()
}

/// The scheduler's quota ledger.
pub struct Ledger {
    ctx: Arc<Context>,
    entries: Mutex<HashMap<Key, Entry>>,
    writes: WorkQueue<Key>,
}

impl Ledger {
    /// The ledger and its writer.
    pub fn start(ctx: Arc<Context>) -> (Arc<Ledger>, JoinHandle<()>) {
        let ledger = Arc::new(Ledger {
            writes: WorkQueue::with_rate_limiter(
                "federated-resource-quota-reservations",
                ctx.settings.rate_limiter,
            ),
            entries: Mutex::default(),
            ctx: ctx.clone(),
        });
        let l = ledger.clone();
        ctx.frqs.on_change(move |ch| l.observe(ch));
        let l = ledger.clone();
        let writer = tokio::spawn(async move {
            l.ctx.wait_synced().await;
            let l2 = l.clone();
            for h in l.writes.run(1, move |k| {
                let l = l2.clone();
                async move { l.write(k).await }
            }) {
                let _ = h.await;
            }
        });
        (ledger, writer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adopts what others write to a quota's usage.
    fn observe(&self, ch: &Change<'_, FederatedResourceQuota>) {
        let key = Key::of(&ch.object().metadata);
        let mut entries = self.lock();
        if let Change::Delete(_) = ch {
            entries.remove(&key);
            return;
        }
        let Some(e) = entries.get_mut(&key) else {
            return;
        };
        let q = ch.object();
        let own_echo = match (resource_version(q), e.written_rv) {
            (Some(rv), Some(mine)) => rv <= mine,
            _ => false,
        };
        if !own_echo {
            e.written = Usage::of(&q.status.overall_used);
        }
    }

    /// Checks a ResourceBinding's new placement against the quotas of its namespace and
    /// reserves what it adds.
    pub fn reserve(
        &self,
        namespace: &str,
        spec: &ResourceBindingSpec,
        clusters: &[TargetCluster],
    ) -> std::result::Result<(), QuotaExceeded> {
        if namespace.is_empty() {
            return Ok(());
        }
        let quotas = self.ctx.frqs.by_index(BY_NAMESPACE, namespace);
        if quotas.is_empty() {
            return Ok(());
        }
        let placed = ResourceBindingSpec {
            clusters: clusters.to_vec(),
            ..spec.clone()
        };
        let change = delta(&binding_usage(&placed), &binding_usage(spec));
        if change.is_zero() {
            return Ok(());
        }
        let mut entries = self.lock();
        let mut raised = Vec::new();
        for q in &quotas {
            let key = Key::of(&q.metadata);
            let used = match entries.get(&key) {
                Some(e) => {
                    let mut u = e.written.clone();
                    u.add_usage(&e.pending);
                    u
                }
                None => Usage::of(&q.status.overall_used),
            };
            match raise(q, &used, &change) {
                None => {}
                Some(Err(refused)) => return Err(refused),
                Some(Ok(limited)) => raised.push((key, q, limited)),
            }
        }
        for (key, q, limited) in raised {
            let e = entries.entry(key.clone()).or_insert_with(|| Entry {
                written: Usage::of(&q.status.overall_used),
                ..Entry::default()
            });
            e.pending.add_usage(&limited);
            self.writes.add(key);
        }
        Ok(())
    }

    /// Writes a quota's reserved usage to its status.
    async fn write(&self, key: Key) -> Result<Requeue> {
        let (before, total) = {
            let mut entries = self.lock();
            let Some(e) = entries.get_mut(&key) else {
                return Ok(Requeue::No);
            };
            if e.pending.is_zero() {
                return Ok(Requeue::No);
            }
            let before = e.written.clone();
            let mut total = e.written.clone();
            total.add_usage(&e.pending);
            e.written = total.clone();
            e.pending = Usage::default();
            (before, total)
        };
        let api =
            Api::<FederatedResourceQuota>::namespaced(self.ctx.client.clone(), &key.namespace);
        let patch = json!({"status": {"overallUsed": total.to_list()}});
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(q) => {
                if let Some(e) = self.lock().get_mut(&key) {
                    e.written_rv = resource_version(&q).max(e.written_rv);
                }
                Ok(Requeue::No)
            }
            Err(e) if is_not_found(&e) => {
                self.lock().remove(&key);
                Ok(Requeue::No)
            }
            Err(err) => {
                // Not written: the reservations wait for the next attempt.
                if let Some(e) = self.lock().get_mut(&key) {
                    e.pending.add_usage(&delta(&total, &before));
                    e.written = before;
                }
                Err(err.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;
    use karmada_api::policy::v1alpha1::{FederatedResourceQuotaSpec, FederatedResourceQuotaStatus};

    /// The raised usage, or the refusal's message.
    type Outcome = std::result::Result<&'static [(&'static str, &'static str)], &'static str>;

    fn list(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    fn quota(overall: &[(&str, &str)], used: &[(&str, &str)]) -> FederatedResourceQuota {
        FederatedResourceQuota {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("q".into()),
                ..Default::default()
            },
            spec: FederatedResourceQuotaSpec {
                overall: list(overall),
                ..Default::default()
            },
            status: FederatedResourceQuotaStatus {
                overall_used: list(used),
                ..Default::default()
            },
        }
    }

    #[test]
    fn placements_are_raised_or_refused() {
        let change = Usage::of(&list(&[("cpu", "1"), ("memory", "1Gi")]));
        let cases: &[(&str, FederatedResourceQuota, Option<Outcome>)] = &[
            (
                "fits",
                quota(&[("cpu", "2")], &[("cpu", "1")]),
                Some(Ok(&[("cpu", "2")])),
            ),
            (
                "over",
                quota(&[("cpu", "2")], &[("cpu", "1500m")]),
                Some(Err(
                    "admission webhook \"resourcebinding.karmada.io\" denied the request: FederatedResourceQuota(ns/q) exceeded for resource cpu: requested sum 2500m, limit 2.",
                )),
            ),
            ("limits something else", quota(&[("pods", "2")], &[]), None),
            ("no limits", quota(&[], &[]), None),
        ];
        // The quota's usage with what `raise` adds.
        let raised = |q: &FederatedResourceQuota, change: &Usage| {
            let used = Usage::of(&q.status.overall_used);
            raise(q, &used, change).map(|r| {
                r.map(|limited| {
                    let mut u = used.clone();
                    u.add_usage(&limited);
                    u.to_list()
                })
            })
        };
        for (name, q, want) in cases {
            let got = raised(q, &change);
            match (got, want) {
                (None, None) => {}
                (Some(Ok(used)), Some(Ok(w))) => assert_eq!(used, list(w), "{name}"),
                (Some(Err(e)), Some(Err(w))) => assert_eq!(e.0, *w, "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
        // Releasing replicas lowers the usage.
        let release = delta(&Usage::default(), &change);
        assert_eq!(
            raised(&quota(&[("cpu", "3")], &[("cpu", "3")]), &release),
            Some(Ok(list(&[("cpu", "2")])))
        );
    }
}
