//! Building a template's binding from its policy (BuildResourceBinding and
//! BuildClusterResourceBinding) and writing it without touching the scheduler's fields.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::names;
use karmada_api::policy::v1alpha1::{PropagationSpec, Suspension as PolicySuspension};
use karmada_api::well_known::{annotations, labels};
use karmada_api::work::v1alpha2::{ObjectReference, ResourceBindingSpec, Suspension};

use crate::runtime::bindings::Binding;
use crate::runtime::events::Recorder;
use crate::runtime::{
    Context, Error, Key, RawObject, Result, is_already_exists, is_conflict, write,
};

/// The claim a policy puts on a template and its binding.
pub struct Claim {
    labels: Vec<(&'static str, String)>,
    annotations: Vec<(&'static str, String)>,
    /// Whether the claimant is a PropagationPolicy.
    pp: bool,
}

impl Claim {
    /// A PropagationPolicy's claim (AddPPClaimMetadata).
    pub fn pp(id: &str, meta: &ObjectMeta) -> Claim {
        Claim {
            labels: vec![(labels::PROPAGATION_POLICY_PERMANENT_ID, id.to_owned())],
            annotations: vec![
                (
                    annotations::PROPAGATION_POLICY_NAMESPACE,
                    meta.namespace.clone().unwrap_or_default(),
                ),
                (
                    annotations::PROPAGATION_POLICY_NAME,
                    meta.name.clone().unwrap_or_default(),
                ),
            ],
            pp: true,
        }
    }

    /// A ClusterPropagationPolicy's claim (AddCPPClaimMetadata).
    pub fn cpp(id: &str, meta: &ObjectMeta) -> Claim {
        Claim {
            labels: vec![(
                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                id.to_owned(),
            )],
            annotations: vec![(
                annotations::CLUSTER_PROPAGATION_POLICY_NAME,
                meta.name.clone().unwrap_or_default(),
            )],
            pp: false,
        }
    }
}

/// The desired binding of a template: metadata and spec.
pub struct Desired {
    meta: ObjectMeta,
    spec: ResourceBindingSpec,
    pp: bool,
}

/// A controller owner reference to a template (metav1.NewControllerRef).
pub fn controller_ref(obj: &RawObject) -> OwnerReference {
    OwnerReference {
        api_version: obj.api_version.clone(),
        kind: obj.kind.clone(),
        name: obj.name().to_owned(),
        uid: obj.uid().to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Builds the binding a policy asks for.
/// The binding's priority from the policy's priority class (PriorityBasedScheduling): the
/// value of a scheduling.k8s.io/v1 PriorityClass; the other sources are refused, as Karmada
/// refuses them.
async fn schedule_priority(
    ctx: &Context,
    p: &karmada_api::policy::v1alpha1::SchedulePriority,
) -> Result<karmada_api::work::v1alpha2::SchedulePriority> {
    use karmada_api::policy::v1alpha1::PriorityClassSource;
    match p.priority_class_source {
        PriorityClassSource::KubePriorityClass => {
            let classes: kube::Api<k8s_openapi::api::scheduling::v1::PriorityClass> =
                kube::Api::all(ctx.client.clone());
            let class = classes.get(&p.priority_class_name).await.map_err(|e| {
                tracing::error!(name = %p.priority_class_name, error = %e, "getting the Kube PriorityClass failed");
                Error::msg(match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                })
            })?;
            Ok(karmada_api::work::v1alpha2::SchedulePriority {
                priority: class.value,
            })
        }
        PriorityClassSource::PodPriorityClass => Err(Error::msg(
            "priority class source is PodPriorityClass, but PodPriorityClass is not supported yet",
        )),
        PriorityClassSource::FederatedPriorityClass => Err(Error::msg(
            "priority class source is FederatedPriorityClass, but FederatedPriorityClass is not supported yet",
        )),
    }
}

pub async fn build(
    ctx: &Context,
    recorder: &Recorder,
    obj: &RawObject,
    spec: &PropagationSpec,
    claim: &Claim,
) -> Result<Desired> {
    let cluster_scoped = obj.namespace().is_empty();
    let value = obj.to_value()?;
    let (replicas, requirements) = if ctx.interpreter.hook_enabled(
        &obj.api_version,
        &obj.kind,
        lua::Operation::InterpretReplica,
    ) {
        match ctx.interpreter.get_replicas(&value).await {
            Ok(r) => {
                recorder.normal(
                    &super::template_target(obj),
                    "GetReplicasSucceed",
                    "Get replicas of resource template successfully.",
                );
                r
            }
            Err(e) => {
                recorder.warning(
                    &super::template_target(obj),
                    "GetReplicasFailed",
                    e.to_string(),
                );
                return Err(Error::msg(e.to_string()));
            }
        }
    } else {
        (0, None)
    };
    let mut b = ResourceBindingSpec {
        propagate_deps: spec.propagate_deps && !cluster_scoped,
        scheduler_name: spec.scheduler_name.clone(),
        placement: Some(spec.placement.clone()),
        failover: spec.failover.clone(),
        conflict_resolution: spec.conflict_resolution,
        preserve_resources_on_deletion: spec.preserve_resources_on_deletion,
        resource: ObjectReference {
            api_version: obj.api_version.clone(),
            kind: obj.kind.clone(),
            namespace: obj.namespace().to_owned(),
            name: obj.name().to_owned(),
            uid: obj.uid().to_owned(),
            resource_version: obj.resource_version().to_owned(),
        },
        replicas,
        replica_requirements: requirements,
        ..Default::default()
    };
    if ctx.settings.priority_based_scheduling
        && let Some(p) = &spec.schedule_priority
    {
        b.schedule_priority = Some(schedule_priority(ctx, p).await?);
    }
    if let Some(s) = &spec.suspension {
        b.suspension = Some(Suspension {
            policy: s.clone(),
            scheduling: None,
        });
    }
    let finalizer = if cluster_scoped {
        karmada_api::well_known::finalizers::CLUSTER_RESOURCE_BINDING_CONTROLLER
    } else {
        karmada_api::well_known::finalizers::BINDING_CONTROLLER
    };
    let meta = ObjectMeta {
        name: Some(names::binding_name(&obj.kind, obj.name())),
        namespace: (!cluster_scoped).then(|| obj.namespace().to_owned()),
        owner_references: Some(vec![controller_ref(obj)]),
        finalizers: Some(vec![finalizer.to_owned()]),
        labels: Some(
            claim
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        ),
        annotations: Some(
            claim
                .annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        ),
        ..Default::default()
    };
    Ok(Desired {
        meta,
        spec: b,
        pp: claim.pp,
    })
}

fn merge_maps(
    existing: &Option<BTreeMap<String, String>>,
    desired: &Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let mut m = existing.clone().unwrap_or_default();
    for (k, v) in desired.iter().flatten() {
        m.insert(k.clone(), v.clone());
    }
    (!m.is_empty()).then_some(m)
}

/// MergePolicySuspension: the policy's dispatching suspension replaces the binding's, the
/// binding's own scheduling suspension stays.
fn merge_suspension(
    binding: Option<Suspension>,
    policy: Option<&PolicySuspension>,
) -> Option<Suspension> {
    match policy {
        Some(p) => {
            let mut s = binding.unwrap_or_default();
            s.policy = p.clone();
            Some(s)
        }
        None => {
            let s = binding?;
            s.scheduling.map(|scheduling| Suspension {
                policy: PolicySuspension::default(),
                scheduling: Some(scheduling),
            })
        }
    }
}

/// Applies the desired fields to an existing binding as Karmada's CreateOrUpdate mutate
/// function does, leaving the scheduling result and the dependency snapshot alone.
fn merge_into<B: Binding>(
    existing: &mut B,
    d: &Desired,
    policy_suspension: Option<&PolicySuspension>,
    pp: bool,
) {
    {
        let m = existing.meta_mut();
        m.annotations = merge_maps(&m.annotations, &d.meta.annotations);
        m.labels = merge_maps(&m.labels, &d.meta.labels);
        let mut fins = m.finalizers.clone().unwrap_or_default();
        for f in d.meta.finalizers.iter().flatten() {
            if !fins.contains(f) {
                fins.push(f.clone());
            }
        }
        m.finalizers = (!fins.is_empty()).then_some(fins);
        m.owner_references = d.meta.owner_references.clone();
        if pp {
            // excludeClusterPolicy: a PropagationPolicy's claim displaces a cluster policy's.
            if let Some(l) = m.labels.as_mut() {
                l.remove(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID);
            }
            if let Some(a) = m.annotations.as_mut() {
                a.remove(annotations::CLUSTER_PROPAGATION_POLICY_NAME);
            }
        }
    }
    let namespaced = !d.spec.resource.namespace.is_empty();
    let s = existing.spec_mut();
    s.resource = d.spec.resource.clone();
    s.replica_requirements = d.spec.replica_requirements.clone();
    s.replicas = d.spec.replicas;
    s.components = d.spec.components.clone();
    if namespaced {
        s.propagate_deps = d.spec.propagate_deps;
        s.schedule_priority = d.spec.schedule_priority.clone();
        s.workload_affinity_groups = d.spec.workload_affinity_groups.clone();
    }
    s.scheduler_name = d.spec.scheduler_name.clone();
    s.placement = d.spec.placement.clone();
    s.failover = d.spec.failover.clone();
    s.conflict_resolution = d.spec.conflict_resolution;
    s.preserve_resources_on_deletion = d.spec.preserve_resources_on_deletion;
    s.suspension = merge_suspension(s.suspension.take(), policy_suspension);
}

/// Creates the binding or updates the policy-derived part of it. Returns whether anything was
/// written.
pub async fn create_or_update<B: Binding>(
    ctx: &Context,
    obj: &RawObject,
    desired: Desired,
    policy_suspension: Option<&PolicySuspension>,
) -> Result<bool> {
    let pp = desired.pp;
    let key = Key::of(&desired.meta);
    let api = B::api(ctx.client.clone(), &key);
    let mut current = B::informer(ctx).get(&key).map(|b| (*b).clone());
    for _ in 0..5 {
        match current.take() {
            None => {
                let mut b = B::build(desired.meta.clone(), desired.spec.clone());
                b.meta_mut().resource_version = None;
                match write::create(api.clone(), &b).await {
                    Ok(_) => return Ok(true),
                    Err(e) if is_already_exists(&e) => {
                        current = Some(api.get(&key.name).await?);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Some(existing) => {
                if existing.meta().deletion_timestamp.is_some() {
                    return Err(Error::msg(format!("{} {key} is being deleted", B::KIND)));
                }
                let owner = existing
                    .meta()
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true))
                    .map(|o| o.uid.as_str());
                if owner.is_some_and(|u| u != obj.uid()) {
                    return Err(Error::msg(
                        "failed to update binding due to different owner reference UID, will try again later after binding is garbage collected, see https://github.com/karmada-io/karmada/issues/2090",
                    ));
                }
                let mut updated = existing.clone();
                merge_into(&mut updated, &desired, policy_suspension, pp);
                if serde_json::to_value(&updated)? == serde_json::to_value(&existing)? {
                    return Ok(false);
                }
                match write::replace(api.clone(), &key.name, &updated).await {
                    Ok(_) => return Ok(true),
                    Err(e) if is_conflict(&e) => {
                        current = api.get_opt(&key.name).await?;
                    }
                    Err(e) if crate::runtime::is_not_found(&e) => current = None,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Err(Error::msg(format!("{} {key}: too many conflicts", B::KIND)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use karmada_api::policy::v1alpha1::SuspendClusters;

    #[test]
    fn merge_suspension_table() {
        let policy = PolicySuspension {
            dispatching: Some(true),
            dispatching_on_clusters: None,
        };
        let sched = Suspension {
            policy: PolicySuspension {
                dispatching: None,
                dispatching_on_clusters: Some(SuspendClusters {
                    cluster_names: vec!["m1".into()],
                }),
            },
            scheduling: Some(true),
        };
        assert_eq!(merge_suspension(None, None), None);
        assert_eq!(
            merge_suspension(None, Some(&policy)),
            Some(Suspension {
                policy: policy.clone(),
                scheduling: None
            })
        );
        assert_eq!(
            merge_suspension(Some(sched.clone()), Some(&policy)),
            Some(Suspension {
                policy: policy.clone(),
                scheduling: Some(true)
            })
        );
        assert_eq!(
            merge_suspension(Some(sched), None),
            Some(Suspension {
                policy: PolicySuspension::default(),
                scheduling: Some(true)
            })
        );
        assert_eq!(
            merge_suspension(
                Some(Suspension {
                    policy,
                    scheduling: None
                }),
                None
            ),
            None
        );
    }
}
