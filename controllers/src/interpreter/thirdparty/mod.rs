//! The ResourceInterpreterCustomizations shipped with karmada-rs for widely used CRDs (Karmada's
//! `pkg/resourceinterpreter/default/thirdparty`): every kind Karmada bundles, each answering
//! Karmada's test cases as Karmada's does (HelmChart's reflected status also keeps the
//! member's observedGeneration), plus Argo Rollouts and Flux's v2 HelmRelease;
//! written for karmada-rs from each project's documented fields, enabled by default, and
//! overridden operation by operation by a user's customization of the same kind.

use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;

/// A shipped file: its name and its text, embedded from `customizations/`.
macro_rules! shipped {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("customizations/", $name)))),*]
    };
}

/// The shipped customization files, one per kind (`<group>-<version>-<Kind>.yaml`).
const FILES: &[(&str, &str)] = shipped![
    "apps.kruise.io-v1alpha1-AdvancedCronJob.yaml",
    "apps.kruise.io-v1alpha1-BroadcastJob.yaml",
    "apps.kruise.io-v1alpha1-CloneSet.yaml",
    "apps.kruise.io-v1alpha1-DaemonSet.yaml",
    "apps.kruise.io-v1alpha1-SidecarSet.yaml",
    "apps.kruise.io-v1alpha1-UnitedDeployment.yaml",
    "apps.kruise.io-v1beta1-StatefulSet.yaml",
    "argoproj.io-v1alpha1-Rollout.yaml",
    "argoproj.io-v1alpha1-Workflow.yaml",
    "batch.volcano.sh-v1alpha1-Job.yaml",
    "flink.apache.org-v1beta1-FlinkDeployment.yaml",
    "helm.toolkit.fluxcd.io-v2-HelmRelease.yaml",
    "helm.toolkit.fluxcd.io-v2beta1-HelmRelease.yaml",
    "kubeflow.org-v1-Notebook.yaml",
    "kubeflow.org-v1-PyTorchJob.yaml",
    "kubeflow.org-v1-TFJob.yaml",
    "kubeflow.org-v2beta1-MPIJob.yaml",
    "kustomize.toolkit.fluxcd.io-v1-Kustomization.yaml",
    "kyverno.io-v1-ClusterPolicy.yaml",
    "kyverno.io-v1-Policy.yaml",
    "ray.io-v1-RayCluster.yaml",
    "ray.io-v1-RayJob.yaml",
    "ray.io-v1-RayService.yaml",
    "source.toolkit.fluxcd.io-v1-GitRepository.yaml",
    "source.toolkit.fluxcd.io-v1beta2-Bucket.yaml",
    "source.toolkit.fluxcd.io-v1beta2-HelmChart.yaml",
    "source.toolkit.fluxcd.io-v1beta2-HelmRepository.yaml",
    "source.toolkit.fluxcd.io-v1beta2-OCIRepository.yaml",
    "sparkoperator.k8s.io-v1beta2-SparkApplication.yaml",
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

#[cfg(test)]
mod flux_tests;

#[cfg(test)]
mod kruise_tests;

#[cfg(test)]
mod batch_tests;
