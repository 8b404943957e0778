//! `apps.karmada.io`: WorkloadRebalancer.

pub mod v1alpha1;
