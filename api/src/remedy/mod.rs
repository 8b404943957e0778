//! `remedy.karmada.io`: Remedy.

pub mod v1alpha1;
