//! karmada-controller-manager's flags that shape propagation: `--feature-gates`,
//! `--skipped-propagating-namespaces` and the `--concurrent-*-syncs` worker counts
//! (cmd/controller-manager/app/options).

use clap::Args;
use component_base::featuregate::{self, FeatureGates};
use controllers::selection::{self, Controllers};

/// `--feature-gates`, read as Kubernetes components read it.
fn parse_gates(s: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(s).map_err(|e| e.to_string())
}

/// The help of `--feature-gates`: Karmada's sentence and every gate.
fn gates_help() -> String {
    format!(
        "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n{}",
        featuregate::known_features()
    )
}

/// A `--skipped-propagating-namespaces` item: a regular expression matched against whole
/// namespace names.
fn parse_namespace_pattern(s: &str) -> Result<String, String> {
    regex::Regex::new(&format!("^(?:{s})$"))
        .map(|_| s.to_owned())
        .map_err(|e| format!("{s:?} is not a valid regular expression: {e}"))
}

/// A `--concurrent-*-syncs` value: at least one worker.
fn parse_workers(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?} is not a number of workers: {e}")),
    }
}

/// The controller manager's flags of `serve` and `up`.
#[derive(Args, Clone, Debug)]
pub struct ControllerManagerFlags {
    /// Every gate is validated against what karmada-rs implements: a gate whose feature
    /// karmada-rs lacks (or always has) is locked, and setting it otherwise is refused.
    #[arg(long, env = "KARMADA_RS_FEATURE_GATES", default_value = "", value_parser = parse_gates, long_help = gates_help(), help = "Feature gates: Name=true|false,... (see --help)")]
    pub feature_gates: FeatureGates,
    /// Comma-separated namespaces that should be skipped from propagating (regular
    /// expressions matched against whole names).
    #[arg(long, env = "KARMADA_RS_SKIPPED_PROPAGATING_NAMESPACES", value_delimiter = ',', default_value = "kube-.*", value_parser = parse_namespace_pattern)]
    pub skipped_propagating_namespaces: Vec<String>,
    /// Controllers to run: `*` runs the ones on by default, `foo` runs foo, `-foo` does not
    /// (Karmada's names, e.g. serviceExport, multiclusterservice, workloadRebalancer).
    #[arg(long, env = "KARMADA_RS_CONTROLLERS", value_delimiter = ',', default_value = "*", value_parser = parse_controller)]
    pub controllers: Vec<String>,
    #[command(flatten)]
    pub concurrency: ConcurrencyFlags,
}

/// A `--controllers` entry: one of the controller manager's names, `*`, or `-name`.
fn parse_controller(s: &str) -> Result<String, String> {
    Controllers::parse(&selection::CONTROLLER_MANAGER, &[s])
        .map(|_| s.to_owned())
        .map_err(|e| e.to_string())
}

/// Karmada's `--concurrent-*-syncs` (controller manager defaults).
#[derive(Args, Clone, Copy, Debug)]
pub struct ConcurrencyFlags {
    /// The number of Clusters that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_CLUSTER_SYNCS", default_value = "5", value_parser = parse_workers)]
    pub concurrent_cluster_syncs: usize,
    /// The number of ClusterResourceBindings that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_CLUSTERRESOURCEBINDING_SYNCS", default_value = "5", value_parser = parse_workers)]
    pub concurrent_clusterresourcebinding_syncs: usize,
    /// The number of ResourceBindings that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_RESOURCEBINDING_SYNCS", default_value = "5", value_parser = parse_workers)]
    pub concurrent_resourcebinding_syncs: usize,
    /// The number of Works that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_WORK_SYNCS", default_value = "5", value_parser = parse_workers)]
    pub concurrent_work_syncs: usize,
    /// The number of Namespaces that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_NAMESPACE_SYNCS", default_value = "1", value_parser = parse_workers)]
    pub concurrent_namespace_syncs: usize,
    /// The number of PropagationPolicy that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_PROPAGATION_POLICY_SYNCS", default_value = "1", value_parser = parse_workers)]
    pub concurrent_propagation_policy_syncs: usize,
    /// The number of ClusterPropagationPolicy that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_CLUSTER_PROPAGATION_POLICY_SYNCS", default_value = "1", value_parser = parse_workers)]
    pub concurrent_cluster_propagation_policy_syncs: usize,
    /// The number of resource templates that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_RESOURCE_TEMPLATE_SYNCS", default_value = "5", value_parser = parse_workers)]
    pub concurrent_resource_template_syncs: usize,
    /// The number of dependent resource that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_DEPENDENT_RESOURCE_SYNCS", default_value = "2", value_parser = parse_workers)]
    pub concurrent_dependent_resource_syncs: usize,
}

impl ConcurrencyFlags {
    /// The controllers' worker counts.
    pub fn concurrency(&self) -> controllers::Concurrency {
        controllers::Concurrency {
            cluster: self.concurrent_cluster_syncs,
            cluster_resource_binding: self.concurrent_clusterresourcebinding_syncs,
            resource_binding: self.concurrent_resourcebinding_syncs,
            work: self.concurrent_work_syncs,
            namespace: self.concurrent_namespace_syncs,
            propagation_policy: self.concurrent_propagation_policy_syncs,
            cluster_propagation_policy: self.concurrent_cluster_propagation_policy_syncs,
            resource_template: self.concurrent_resource_template_syncs,
            dependent_resource: self.concurrent_dependent_resource_syncs,
        }
    }
}

/// The controllers' settings and the cluster controllers' from the flags `serve` and `up` share.
pub fn controller_settings(
    failover: controllers::FailoverSettings,
    rate_limiter: &super::RateLimiterFlags,
    manager: &ControllerManagerFlags,
    scheduler: &super::scheduler::SchedulerFlags,
    mut cluster: controllers::cluster::ClusterSettings,
) -> (controllers::Settings, controllers::cluster::ClusterSettings) {
    let mut settings = controllers::Settings {
        failover,
        rate_limiter: rate_limiter.options(),
        ..Default::default()
    };
    manager.apply(&mut settings);
    scheduler.apply(&mut settings);
    cluster.concurrent_syncs = settings.concurrency.cluster;
    (settings, cluster)
}

impl ControllerManagerFlags {
    /// Fills the controllers' settings. Of the gates only PriorityBasedScheduling,
    /// PropagationPolicyPreemption, MultiClusterService and FederatedQuotaEnforcement may be
    /// switched; every other is locked to what karmada-rs does, and parsing refused any other
    /// value.
    pub fn apply(&self, settings: &mut controllers::Settings) {
        settings.priority_based_scheduling = self
            .feature_gates
            .enabled(featuregate::PRIORITY_BASED_SCHEDULING);
        settings.policy_preemption = self.feature_gates.enabled(featuregate::POLICY_PREEMPTION);
        settings.multi_cluster_service = self
            .feature_gates
            .enabled(featuregate::MULTI_CLUSTER_SERVICE);
        settings.federated_quota_enforcement = self
            .feature_gates
            .enabled(featuregate::FEDERATED_QUOTA_ENFORCEMENT);
        settings.skipped_namespaces = self.skipped_propagating_namespaces.clone();
        settings.concurrency = self.concurrency.concurrency();
    }

    /// The controllers `--controllers` selects.
    pub fn controllers(&self) -> Controllers {
        // Each entry was checked when parsed.
        Controllers::parse(&selection::CONTROLLER_MANAGER, &self.controllers).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_are_checked() {
        assert!(parse_gates("Failover=true").is_ok());
        assert_eq!(
            parse_gates("Bogus=true").unwrap_err(),
            "unrecognized feature gate: Bogus"
        );
        assert!(
            parse_gates("WorkloadAffinity=true")
                .unwrap_err()
                .starts_with("cannot set feature gate WorkloadAffinity to true")
        );
        assert_eq!(parse_namespace_pattern("kube-.*").unwrap(), "kube-.*");
        assert!(
            parse_namespace_pattern("team-(a")
                .unwrap_err()
                .contains("is not a valid regular expression")
        );
        assert_eq!(parse_workers("3"), Ok(3));
        assert_eq!(parse_workers("0").unwrap_err(), "must be at least 1");
        assert!(parse_workers("x").is_err());
    }
}
