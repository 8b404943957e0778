//! Which controllers of a component run: the `--controllers` flag of karmada-controller-manager
//! and karmada-agent (pkg/controllers/context's `IsControllerEnabled`). `*` enables every
//! controller that is on by default, `foo` enables `foo`, `-foo` disables it; the first entry
//! naming a controller decides, and without `*` only the named ones run.

use std::fmt;

/// The controllers one component knows.
#[derive(Debug)]
pub struct ControllerSet {
    /// The component, as error messages name it.
    pub component: &'static str,
    /// Every controller it runs.
    pub all: &'static [&'static str],
    /// The ones `*` leaves off.
    pub disabled_by_default: &'static [&'static str],
    /// Controllers of the Karmada component that karmada-rs's does not have: they may be
    /// named to disable them, not to enable them.
    pub absent: &'static [&'static str],
}

/// A `--controllers` value.
#[derive(Clone, Debug)]
pub struct Controllers {
    entries: Vec<String>,
    set: &'static ControllerSet,
}

impl PartialEq for Controllers {
    fn eq(&self, other: &Controllers) -> bool {
        self.entries == other.entries && std::ptr::eq(self.set, other.set)
    }
}

/// A `--controllers` entry that names no controller of the component.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// Not a controller name of the component.
    #[error("unknown controller {name:?} in --controllers; {component}'s controllers are: {known}")]
    Unknown {
        /// The entry.
        name: String,
        /// The component.
        component: &'static str,
        /// Its controllers, comma-separated.
        known: String,
    },
    /// A Karmada controller karmada-rs does not have.
    #[error(
        "controller {name:?} is not available in {component} of karmada-rs; it can only be disabled (-{name})"
    )]
    Absent {
        /// The entry.
        name: String,
        /// The component.
        component: &'static str,
    },
}

impl Controllers {
    /// Karmada's default, `*`.
    pub fn default_for(set: &'static ControllerSet) -> Controllers {
        Controllers {
            entries: vec!["*".into()],
            set,
        }
    }

    /// Parses the entries of `--controllers` (empty ones are skipped, as pflag's string
    /// slices drop them).
    pub fn parse<S: AsRef<str>>(
        set: &'static ControllerSet,
        entries: &[S],
    ) -> Result<Controllers, SelectionError> {
        let mut kept = Vec::new();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            if entry != "*" {
                let (negated, name) = match entry.strip_prefix('-') {
                    Some(n) => (true, n),
                    None => (false, entry),
                };
                if set.absent.contains(&name) {
                    if !negated {
                        return Err(SelectionError::Absent {
                            name: name.to_owned(),
                            component: set.component,
                        });
                    }
                } else if !set.all.contains(&name) {
                    return Err(SelectionError::Unknown {
                        name: entry.to_owned(),
                        component: set.component,
                        known: set.all.join(", "),
                    });
                }
            }
            kept.push(entry.to_owned());
        }
        Ok(Controllers { entries: kept, set })
    }

    /// Whether `name` runs (`IsControllerEnabled`).
    pub fn enabled(&self, name: &str) -> bool {
        let mut star = false;
        for entry in &self.entries {
            if entry == name {
                return true;
            }
            if entry.strip_prefix('-') == Some(name) {
                return false;
            }
            star |= entry == "*";
        }
        star && !self.set.disabled_by_default.contains(&name)
    }

    /// This selection with `name` enabled (its negations dropped, so that it wins).
    pub fn with(mut self, name: &str) -> Controllers {
        let negated = format!("-{name}");
        self.entries.retain(|e| *e != negated);
        self.entries.push(name.to_owned());
        self
    }
}

impl fmt::Display for Controllers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.entries.join(","))
    }
}

/// karmada-controller-manager's controller names (cmd/controller-manager/app's
/// `NewControllerInitializers`).
pub mod names {
    /// Cluster objects: execution spaces, taints from conditions, health monitoring.
    pub const CLUSTER: &str = "cluster";
    /// Cluster status collection from Push members.
    pub const CLUSTER_STATUS: &str = "clusterStatus";
    /// Bindings to Works.
    pub const BINDING: &str = "binding";
    /// Works' status to bindings and templates.
    pub const BINDING_STATUS: &str = "bindingStatus";
    /// Works applied to Push members.
    pub const EXECUTION: &str = "execution";
    /// Member objects' status to Works.
    pub const WORK_STATUS: &str = "workStatus";
    /// Namespaces propagated to every member.
    pub const NAMESPACE: &str = "namespace";
    /// Exported Services' EndpointSlices collected from the members.
    pub const SERVICE_EXPORT: &str = "serviceExport";
    /// Collected EndpointSlices written to the control plane.
    pub const ENDPOINT_SLICE: &str = "endpointSlice";
    /// ServiceImports' derived Services.
    pub const SERVICE_IMPORT: &str = "serviceImport";
    /// RBAC for users of the cluster proxy pushed to the members.
    pub const UNIFIED_AUTH: &str = "unifiedAuth";
    /// Static quota assignments pushed to the members.
    pub const FEDERATED_RESOURCE_QUOTA_SYNC: &str = "federatedResourceQuotaSync";
    /// Quota usage collected from the members.
    pub const FEDERATED_RESOURCE_QUOTA_STATUS: &str = "federatedResourceQuotaStatus";
    /// Quota usage computed from the bindings.
    pub const FEDERATED_RESOURCE_QUOTA_ENFORCEMENT: &str = "federatedResourceQuotaEnforcement";
    /// Graceful eviction tasks' end.
    pub const GRACEFUL_EVICTION: &str = "gracefulEviction";
    /// Application failover.
    pub const APPLICATION_FAILOVER: &str = "applicationFailover";
    /// FederatedHPA.
    pub const FEDERATED_HPA: &str = "federatedHorizontalPodAutoscaler";
    /// CronFederatedHPA.
    pub const CRON_FEDERATED_HPA: &str = "cronFederatedHorizontalPodAutoscaler";
    /// Marks HPA scale targets (off by default).
    pub const HPA_SCALE_TARGET_MARKER: &str = "hpaScaleTargetMarker";
    /// Syncs HPA-scaled replicas back to templates (off by default).
    pub const DEPLOYMENT_REPLICAS_SYNCER: &str = "deploymentReplicasSyncer";
    /// MultiClusterService: Services to provider and consumer clusters.
    pub const MULTI_CLUSTER_SERVICE: &str = "multiclusterservice";
    /// EndpointSlices of a MultiClusterService's provider clusters collected.
    pub const ENDPOINTSLICE_COLLECT: &str = "endpointsliceCollect";
    /// Collected EndpointSlices dispatched to consumer clusters.
    pub const ENDPOINTSLICE_DISPATCH: &str = "endpointsliceDispatch";
    /// Remedy actions on clusters.
    pub const REMEDY: &str = "remedy";
    /// WorkloadRebalancer.
    pub const WORKLOAD_REBALANCER: &str = "workloadRebalancer";
    /// Pull agents' certificate signing requests approved.
    pub const AGENT_CSR_APPROVING: &str = "agentcsrapproving";
    /// ClusterTaintPolicy.
    pub const CLUSTER_TAINT_POLICY: &str = "clustertaintpolicy";
}

use names::*;

/// karmada-controller-manager's controllers, in Karmada's order.
pub static CONTROLLER_MANAGER: ControllerSet = ControllerSet {
    component: "the controller manager",
    all: &[
        CLUSTER,
        CLUSTER_STATUS,
        BINDING,
        BINDING_STATUS,
        EXECUTION,
        WORK_STATUS,
        NAMESPACE,
        SERVICE_EXPORT,
        ENDPOINT_SLICE,
        SERVICE_IMPORT,
        UNIFIED_AUTH,
        FEDERATED_RESOURCE_QUOTA_SYNC,
        FEDERATED_RESOURCE_QUOTA_STATUS,
        FEDERATED_RESOURCE_QUOTA_ENFORCEMENT,
        GRACEFUL_EVICTION,
        APPLICATION_FAILOVER,
        MULTI_CLUSTER_SERVICE,
        ENDPOINTSLICE_COLLECT,
        ENDPOINTSLICE_DISPATCH,
        REMEDY,
        WORKLOAD_REBALANCER,
        AGENT_CSR_APPROVING,
        CLUSTER_TAINT_POLICY,
    ],
    disabled_by_default: &[HPA_SCALE_TARGET_MARKER, DEPLOYMENT_REPLICAS_SYNCER],
    absent: &[
        FEDERATED_HPA,
        CRON_FEDERATED_HPA,
        HPA_SCALE_TARGET_MARKER,
        DEPLOYMENT_REPLICAS_SYNCER,
    ],
};

impl Default for Controllers {
    /// The controller manager's default, `*`.
    fn default() -> Controllers {
        Controllers::default_for(&CONTROLLER_MANAGER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controller_manager_knows_karmadas_names() {
        let c = Controllers::parse(&CONTROLLER_MANAGER, &["*", "-serviceExport"]).unwrap();
        assert!(!c.enabled(SERVICE_EXPORT));
        assert!(c.enabled(BINDING));
        assert!(!c.enabled(HPA_SCALE_TARGET_MARKER));
        let e = Controllers::parse(&CONTROLLER_MANAGER, &["bindng"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "unknown controller \"bindng\" in --controllers; the controller manager's controllers are: {}",
                CONTROLLER_MANAGER.all.join(", ")
            )
        );
        assert!(
            Controllers::parse(
                &CONTROLLER_MANAGER,
                &["*", "-federatedHorizontalPodAutoscaler"]
            )
            .is_ok()
        );
        assert_eq!(
            Controllers::parse(&CONTROLLER_MANAGER, &["federatedHorizontalPodAutoscaler"])
                .unwrap_err()
                .to_string(),
            "controller \"federatedHorizontalPodAutoscaler\" is not available in the controller manager of karmada-rs; it can only be disabled (-federatedHorizontalPodAutoscaler)"
        );
    }
}
