//! `networking.karmada.io`: MultiClusterService and MultiClusterIngress.

pub mod v1alpha1;
