//! Feature gates as `k8s.io/component-base/featuregate` reads `--feature-gates`
//! (`A=true,B=false`, `AllAlpha`, `AllBeta`, locked gates), with Karmada's gates
//! (`pkg/features`, v1.19) and what karmada-rs does with each.
//!
//! A gate karmada-rs acts on can be switched; a gate whose feature karmada-rs always (or never)
//! has is locked to that value, as Kubernetes locks graduated gates: setting it otherwise is
//! refused with the reason, so no gate is accepted without effect. The gates of features
//! karmada-rs has (PropagationPolicyPreemption, PriorityBasedScheduling, MultiClusterService,
//! FederatedQuotaEnforcement)
//! may be switched; the others name features it does not have yet, whose fields the API
//! server accepts with a warning.

use std::collections::BTreeMap;
use std::fmt;

/// The stage of a gate (`featuregate.prerelease`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreRelease {
    /// Off by default, may change or go.
    Alpha,
    /// On or off by default, well tested.
    Beta,
}

impl PreRelease {
    fn label(self) -> &'static str {
        match self {
            PreRelease::Alpha => "ALPHA",
            PreRelease::Beta => "BETA",
        }
    }
}

/// One gate: Karmada's name, default and stage, and karmada-rs's support.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The gate's name.
    pub name: &'static str,
    /// Karmada's default.
    pub default: bool,
    /// Karmada's stage.
    pub pre_release: PreRelease,
    /// `Some((value, why))`: karmada-rs always behaves as `value`, for the reason given.
    pub locked: Option<(bool, &'static str)>,
}

impl Spec {
    /// The value when the flag does not set it.
    pub fn initial(&self) -> bool {
        self.locked.map_or(self.default, |(v, _)| v)
    }
}

/// `Failover`.
pub const FAILOVER: &str = "Failover";
/// `GracefulEviction`.
pub const GRACEFUL_EVICTION: &str = "GracefulEviction";
/// `PropagateDeps`.
pub const PROPAGATE_DEPS: &str = "PropagateDeps";
/// `CustomizedClusterResourceModeling`.
pub const CUSTOMIZED_CLUSTER_RESOURCE_MODELING: &str = "CustomizedClusterResourceModeling";
/// `PropagationPolicyPreemption`.
pub const POLICY_PREEMPTION: &str = "PropagationPolicyPreemption";
/// `MultiClusterService`.
pub const MULTI_CLUSTER_SERVICE: &str = "MultiClusterService";
/// `ResourceQuotaEstimate`.
pub const RESOURCE_QUOTA_ESTIMATE: &str = "ResourceQuotaEstimate";
/// `StatefulFailoverInjection`.
pub const STATEFUL_FAILOVER_INJECTION: &str = "StatefulFailoverInjection";
/// `PriorityBasedScheduling`.
pub const PRIORITY_BASED_SCHEDULING: &str = "PriorityBasedScheduling";
/// `FederatedQuotaEnforcement`.
pub const FEDERATED_QUOTA_ENFORCEMENT: &str = "FederatedQuotaEnforcement";
/// `LoggingAlphaOptions`.
pub const LOGGING_ALPHA_OPTIONS: &str = "LoggingAlphaOptions";
/// `LoggingBetaOptions`.
pub const LOGGING_BETA_OPTIONS: &str = "LoggingBetaOptions";
/// `ContextualLogging`.
pub const CONTEXTUAL_LOGGING: &str = "ContextualLogging";
/// `MultiplePodTemplatesScheduling`.
pub const MULTIPLE_POD_TEMPLATES_SCHEDULING: &str = "MultiplePodTemplatesScheduling";
/// `ControllerPriorityQueue`.
pub const CONTROLLER_PRIORITY_QUEUE: &str = "ControllerPriorityQueue";
/// `WorkloadAffinity`.
pub const WORKLOAD_AFFINITY: &str = "WorkloadAffinity";
/// `SchedulingOvercommitProtection`.
pub const SCHEDULING_OVERCOMMIT_PROTECTION: &str = "SchedulingOvercommitProtection";

/// Karmada's gates (`features.DefaultFeatureGates`, v1.19).
pub const KARMADA_GATES: &[Spec] = &[
    Spec {
        name: FAILOVER,
        default: false,
        pre_release: PreRelease::Beta,
        locked: Some((
            true,
            "cluster failover is always available in karmada-rs; --enable-no-execute-taint-eviction switches taint-based eviction",
        )),
    },
    Spec {
        name: GRACEFUL_EVICTION,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((true, "evictions are always graceful in karmada-rs")),
    },
    Spec {
        name: PROPAGATE_DEPS,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((
            true,
            "a policy's propagateDeps field alone decides in karmada-rs",
        )),
    },
    Spec {
        name: CUSTOMIZED_CLUSTER_RESOURCE_MODELING,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((
            true,
            "--enable-cluster-resource-modeling switches resource modeling in karmada-rs",
        )),
    },
    Spec {
        name: POLICY_PREEMPTION,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: None,
    },
    Spec {
        name: MULTI_CLUSTER_SERVICE,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: None,
    },
    Spec {
        name: RESOURCE_QUOTA_ESTIMATE,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((false, "karmada-rs has no scheduler estimator yet")),
    },
    Spec {
        name: STATEFUL_FAILOVER_INJECTION,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((
            true,
            "a policy's statePreservation rules alone decide in karmada-rs",
        )),
    },
    Spec {
        name: PRIORITY_BASED_SCHEDULING,
        default: true,
        pre_release: PreRelease::Beta,
        locked: None,
    },
    Spec {
        name: FEDERATED_QUOTA_ENFORCEMENT,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: None,
    },
    Spec {
        name: LOGGING_ALPHA_OPTIONS,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((false, "karmada-rs has no alpha logging options")),
    },
    Spec {
        name: LOGGING_BETA_OPTIONS,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((true, "KARMADA_RS_LOG sets karmada-rs's logging")),
    },
    Spec {
        name: CONTEXTUAL_LOGGING,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((true, "karmada-rs always logs with context")),
    },
    Spec {
        name: MULTIPLE_POD_TEMPLATES_SCHEDULING,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((false, "karmada-rs does not schedule by component yet")),
    },
    Spec {
        name: CONTROLLER_PRIORITY_QUEUE,
        default: true,
        pre_release: PreRelease::Beta,
        locked: Some((
            false,
            "karmada-rs's queues put placement before status instead (see README, Cluster health and failover)",
        )),
    },
    Spec {
        name: WORKLOAD_AFFINITY,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((
            false,
            "karmada-rs does not implement workload affinity yet (placement.workloadAffinity is accepted with a warning)",
        )),
    },
    Spec {
        name: SCHEDULING_OVERCOMMIT_PROTECTION,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: Some((
            false,
            "karmada-rs does not implement scheduling overcommit protection",
        )),
    },
];

const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// Why `--feature-gates` was refused; the messages are Kubernetes'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateError(String);

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GateError {}

/// The value of every known gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    enabled: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            enabled: KARMADA_GATES
                .iter()
                .map(|s| (s.name, s.initial()))
                .collect(),
        }
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    /// Reads a `--feature-gates` value over the defaults (`featureGate.Set`): comma-separated
    /// `Name=bool` pairs; `AllAlpha` and `AllBeta` set every switchable gate of that stage that
    /// the value does not name itself.
    pub fn parse(value: &str) -> Result<FeatureGates, GateError> {
        let mut pairs: Vec<(String, bool)> = Vec::new();
        for item in value.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((k, v)) = item.split_once('=') else {
                return Err(GateError(format!("missing bool value for {item}")));
            };
            let (k, v) = (k.trim(), v.trim());
            let Some(b) = parse_bool(v) else {
                return Err(GateError(format!(
                    "invalid value of {k}={v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax"
                )));
            };
            pairs.push((k.to_owned(), b));
        }
        let mut gates = FeatureGates::default();
        let named: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        for (k, v) in &pairs {
            let stage = match k.as_str() {
                ALL_ALPHA => Some(PreRelease::Alpha),
                ALL_BETA => Some(PreRelease::Beta),
                _ => None,
            };
            match stage {
                Some(stage) => {
                    for s in KARMADA_GATES {
                        if s.pre_release == stage && s.locked.is_none() && !named.contains(&s.name)
                        {
                            gates.enabled.insert(s.name, *v);
                        }
                    }
                }
                None => gates.set(k, *v)?,
            }
        }
        Ok(gates)
    }

    /// Sets one gate; unknown and locked gates are refused.
    pub fn set(&mut self, name: &str, value: bool) -> Result<(), GateError> {
        let Some(spec) = KARMADA_GATES.iter().find(|s| s.name == name) else {
            return Err(GateError(format!("unrecognized feature gate: {name}")));
        };
        if let Some((locked, why)) = spec.locked
            && locked != value
        {
            return Err(GateError(format!(
                "cannot set feature gate {name} to {value}, feature is locked to {locked}: {why}"
            )));
        }
        self.enabled.insert(spec.name, value);
        Ok(())
    }

    /// Whether a gate is on; unknown gates are off.
    pub fn enabled(&self, name: &str) -> bool {
        self.enabled.get(name).copied().unwrap_or(false)
    }

    /// `Name=value` of every gate, for logs and explanations.
    pub fn summary(&self) -> String {
        self.enabled
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The help text of `--feature-gates` (`featureGate.KnownFeatures`), one gate a line.
pub fn known_features() -> String {
    let mut lines: Vec<String> = vec![
        format!("{ALL_ALPHA}=true|false (ALPHA - default=false)"),
        format!("{ALL_BETA}=true|false (BETA - default=false)"),
    ];
    for s in KARMADA_GATES {
        let mut line = format!(
            "{}=true|false ({} - default={})",
            s.name,
            s.pre_release.label(),
            s.default
        );
        if let Some((v, _)) = s.locked {
            line.push_str(&format!(" [karmada-rs: locked to {v}]"));
        }
        lines.push(line);
    }
    lines.sort();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_read_as_karmada_rs_behaves() {
        let g = FeatureGates::default();
        // Locked gates read as karmada-rs behaves, whatever Karmada's default.
        assert!(g.enabled(FAILOVER), "Karmada: Beta, off");
        // A gate karmada-rs implements takes Karmada's default.
        assert!(g.enabled(PRIORITY_BASED_SCHEDULING), "Karmada: Beta, on");
        assert!(!g.enabled(POLICY_PREEMPTION));
        assert!(!g.enabled(WORKLOAD_AFFINITY));
        assert!(!g.enabled(MULTIPLE_POD_TEMPLATES_SCHEDULING));
        assert!(!g.enabled(RESOURCE_QUOTA_ESTIMATE));
        assert!(!g.enabled(MULTI_CLUSTER_SERVICE));
        assert!(!g.enabled("NoSuchGate"));
    }

    /// A flag value and the gates it leaves on or off, or the error it gets.
    type Case = (
        &'static str,
        Result<&'static [(&'static str, bool)], &'static str>,
    );

    #[test]
    fn parse_table() {
        let cases: &[Case] = &[
            (
                "",
                Ok(&[(PRIORITY_BASED_SCHEDULING, true), (FAILOVER, true)]),
            ),
            (
                "Failover=true, GracefulEviction=1,WorkloadAffinity=false",
                Ok(&[
                    (FAILOVER, true),
                    (GRACEFUL_EVICTION, true),
                    (WORKLOAD_AFFINITY, false),
                ]),
            ),
            // The stage-wide switches set the switchable gates only; locked ones keep their value.
            (
                "AllAlpha=true,AllBeta=false",
                Ok(&[
                    (WORKLOAD_AFFINITY, false),
                    (GRACEFUL_EVICTION, true),
                    (MULTI_CLUSTER_SERVICE, true),
                    (PRIORITY_BASED_SCHEDULING, false),
                ]),
            ),
            (
                "NoSuchGate=true",
                Err("unrecognized feature gate: NoSuchGate"),
            ),
            (
                "WorkloadAffinity",
                Err("missing bool value for WorkloadAffinity"),
            ),
            (
                "WorkloadAffinity=yes",
                Err(
                    "invalid value of WorkloadAffinity=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
                ),
            ),
            (
                "ResourceQuotaEstimate=true",
                Err(
                    "cannot set feature gate ResourceQuotaEstimate to true, feature is locked to false: karmada-rs has no scheduler estimator yet",
                ),
            ),
            (
                "MultiClusterService=true",
                Ok(&[(MULTI_CLUSTER_SERVICE, true)]),
            ),
            (
                "PriorityBasedScheduling=false",
                Ok(&[(PRIORITY_BASED_SCHEDULING, false)]),
            ),
            (
                "GracefulEviction=false",
                Err(
                    "cannot set feature gate GracefulEviction to false, feature is locked to true: evictions are always graceful in karmada-rs",
                ),
            ),
        ];
        for (flag, want) in cases {
            match (FeatureGates::parse(flag), want) {
                (Ok(g), Ok(expect)) => {
                    for (name, v) in *expect {
                        assert_eq!(g.enabled(name), *v, "{flag}: {name}");
                    }
                }
                (Err(e), Err(msg)) => assert_eq!(e.to_string(), *msg, "{flag}"),
                (got, _) => panic!("{flag}: {got:?}"),
            }
        }
    }

    #[test]
    fn help_names_every_gate() {
        let help = known_features();
        for s in KARMADA_GATES {
            assert!(
                help.contains(&format!("{}=true|false", s.name)),
                "{}",
                s.name
            );
        }
        assert!(
            help.contains("PriorityBasedScheduling=true|false (BETA - default=true)\n"),
            "{help}"
        );
        assert!(
            help.contains("MultiClusterService=true|false (ALPHA - default=false)\n"),
            "{help}"
        );
        assert!(help.contains(
            "ResourceQuotaEstimate=true|false (ALPHA - default=false) [karmada-rs: locked to false]"
        ));
    }
}
