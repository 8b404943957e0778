//! What every karmada-rs component shares, as Kubernetes' `k8s.io/component-base` holds it for
//! kube's components:
//!
//! - [`metrics`]: a Prometheus registry (counters, gauges, histograms with labels) rendered in
//!   the text format Go's client writes, so dashboards and alerts built for Karmada and
//!   Kubernetes read ours unchanged;
//! - [`metrics::workqueue`]: client-go's `workqueue_*` series, one set per named queue;
//! - [`rate_limiter`]: client-go's work queue rate limiters with Karmada's `--rate-limiter-*`
//!   options;
//! - [`featuregate`]: `--feature-gates` as component-base's featuregate reads it, with Karmada's
//!   gates (`pkg/features`).
//!
//! Must not depend on: an HTTP stack, an async runtime, storage, or any other crate of the
//! workspace (everything else may depend on it).

pub mod featuregate;
pub mod metrics;
pub mod rate_limiter;
