//! The quota check Karmada's ResourceBinding validating webhook makes under
//! FederatedQuotaEnforcement (pkg/webhook/resourcebinding, validateFederatedResourceQuota),
//! made here by the scheduler before it writes a placement: what the new placement adds to
//! what the binding requested before must fit, with each FederatedResourceQuota's
//! `status.overallUsed`, within its `spec.overall`; when it does, the quotas' `overallUsed`
//! is raised by that much (reserved), each write conditional on the quota's resourceVersion
//! so that concurrent placements cannot both take the last of a quota.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::policy::v1alpha1::FederatedResourceQuota;
use karmada_api::work::v1alpha2::{ResourceBindingSpec, TargetCluster};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::usage::{Usage, binding_usage, delta, exceeded};
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::{Context, Result, is_not_found};

/// The webhook whose denial Karmada's scheduler reports.
const WEBHOOK: &str = "resourcebinding.karmada.io";

/// How often a reservation is retried after a conflicting write of the same quota.
const CONFLICT_RETRIES: usize = 5;

/// A placement refused for going over a FederatedResourceQuota; the message is the one the
/// scheduler's condition and Event carry.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaExceeded(pub String);

/// The raised `overallUsed` of one quota, or the refusal (processSingleFRQ); None when the
/// change does not touch what the quota limits.
fn raise(
    q: &FederatedResourceQuota,
    change: &Usage,
) -> Option<std::result::Result<BTreeMap<String, Quantity>, QuotaExceeded>> {
    if q.spec.overall.is_empty() {
        return None;
    }
    let limited = change.restricted_to(&q.spec.overall);
    if limited.is_zero() {
        return None;
    }
    let mut requested = Usage::of(&q.status.overall_used);
    requested.add_usage(&limited);
    let ns = q.metadata.namespace.as_deref().unwrap_or_default();
    let name = q.metadata.name.as_deref().unwrap_or_default();
    Some(match exceeded(ns, name, &requested, &q.spec.overall) {
        Some(msg) => Err(QuotaExceeded(format!(
            "admission webhook \"{WEBHOOK}\" denied the request: {msg}"
        ))),
        None => Ok(requested.to_list()),
    })
}

/// Checks a ResourceBinding's new placement against the quotas of its namespace and reserves
/// what it adds. `Ok(Err(_))` is a refusal; `Err` a failure to read or write a quota.
pub async fn reserve(
    ctx: &Context,
    namespace: &str,
    spec: &ResourceBindingSpec,
    clusters: &[TargetCluster],
) -> Result<std::result::Result<(), QuotaExceeded>> {
    if !ctx.settings.federated_quota_enforcement || namespace.is_empty() {
        return Ok(Ok(()));
    }
    let mut quotas: Vec<FederatedResourceQuota> = ctx
        .frqs
        .by_index(BY_NAMESPACE, namespace)
        .iter()
        .map(|q| (**q).clone())
        .collect();
    if quotas.is_empty() {
        return Ok(Ok(()));
    }
    let placed = ResourceBindingSpec {
        clusters: clusters.to_vec(),
        ..spec.clone()
    };
    let change = delta(&binding_usage(&placed), &binding_usage(spec));
    if change.is_zero() {
        return Ok(Ok(()));
    }
    let api = Api::<FederatedResourceQuota>::namespaced(ctx.client.clone(), namespace);
    for attempt in 0..=CONFLICT_RETRIES {
        let mut raised = Vec::new();
        for q in &quotas {
            match raise(q, &change) {
                None => {}
                Some(Err(refused)) => return Ok(Err(refused)),
                Some(Ok(used)) => raised.push((q, used)),
            }
        }
        let mut conflict = false;
        for (q, used) in &raised {
            let name = q.metadata.name.as_deref().unwrap_or_default();
            let patch = json!({
                "metadata": {"resourceVersion": q.metadata.resource_version},
                "status": {"overallUsed": crate::runtime::patch::merge_diff(
                    &json!(q.status.overall_used), &json!(used))},
            });
            match api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < CONFLICT_RETRIES => {
                    conflict = true;
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !conflict {
            return Ok(Ok(()));
        }
        // Someone else moved a quota: read them afresh and decide again. Quotas already
        // raised in this round are raised again from their new state, so they are re-read too.
        quotas = api.list(&Default::default()).await?.items;
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
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
        for (name, q, want) in cases {
            let got = raise(q, &change);
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
            raise(&quota(&[("cpu", "3")], &[("cpu", "3")]), &release),
            Some(Ok(list(&[("cpu", "2")])))
        );
    }
}
