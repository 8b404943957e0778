//! The ResourceInterpreterCustomizations shipped with karmada-rs for widely used CRDs (as
//! Karmada bundles its `default/thirdparty` customizations): written for karmada-rs from each
//! project's documented status fields, enabled by default, and overridden operation by
//! operation by a user's customization of the same kind.

use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;

/// The shipped customization files.
const FILES: &[(&str, &str)] = &[
    (
        "argoproj.io-v1alpha1-Rollout.yaml",
        include_str!("customizations/argoproj.io-v1alpha1-Rollout.yaml"),
    ),
    (
        "apps.kruise.io-v1alpha1-CloneSet.yaml",
        include_str!("customizations/apps.kruise.io-v1alpha1-CloneSet.yaml"),
    ),
    (
        "helm.toolkit.fluxcd.io-v2-HelmRelease.yaml",
        include_str!("customizations/helm.toolkit.fluxcd.io-v2-HelmRelease.yaml"),
    ),
    (
        "kyverno.io-v1-ClusterPolicy.yaml",
        include_str!("customizations/kyverno.io-v1-ClusterPolicy.yaml"),
    ),
    (
        "flink.apache.org-v1beta1-FlinkDeployment.yaml",
        include_str!("customizations/flink.apache.org-v1beta1-FlinkDeployment.yaml"),
    ),
];

/// The shipped customizations, parsed. A file that does not parse is a bug caught by the
/// tests; it is left out rather than failing the controllers.
pub fn customizations() -> Vec<ResourceInterpreterCustomization> {
    FILES
        .iter()
        .filter_map(|(name, text)| match serde_yaml::from_str(text) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(file = %name, error = %e, "shipped customization does not parse");
                None
            }
        })
        .collect()
}

/// The shipped customization files, by name, for tools that list or print them.
pub fn files() -> &'static [(&'static str, &'static str)] {
    FILES
}

#[cfg(test)]
mod tests;
