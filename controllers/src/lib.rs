//! Karmada's controllers for karmada-rs: the propagation pipeline from resource templates to
//! member clusters and back.
//!
//! Must not depend on the API server crate (nor storage): the control plane is reached through
//! `kube::Client` only.
//!
//! ```text
//! template + (Cluster)PropagationPolicy --detector--> (Cluster)ResourceBinding
//!   --scheduler--> spec.clusters --binding--> Work per cluster (karmada-es-<cluster>)
//!   --execution--> member object --work_status--> Work.status.manifestStatuses
//!   --binding_status--> binding aggregatedStatus --> template .status
//! ```
//!
//! Controllers talk to the control plane only through a `kube::Client` (in-process in
//! karmada-rs, but any kube-apiserver serving Karmada's APIs works) and to members through
//! [`member_clients::MemberClients`]. [`start`] runs them all.

pub mod agent;
pub mod application_failover;
pub mod binding;
pub mod binding_status;
pub mod cluster;
pub mod cluster_taint_policy;
pub mod dependencies;
pub mod detector;
pub mod execution;
pub mod federated_resource_quota;
pub mod graceful_eviction;
pub mod interpreter;
pub mod join;
pub mod mcs;
pub mod member_clients;
/// Karmada's metric series (their own crate, `karmada-metrics/`).
pub use karmada_metrics as metrics;
pub mod namespace_sync;
pub mod overrides;
pub mod rebalance_on_recovery;
pub mod registration;
pub mod remedy;
pub mod runtime;
pub mod scheduler;
pub mod selection;
pub mod simulator;
pub mod taint_manager;
pub mod unified_auth;
pub mod work_status;
pub mod workload_rebalancer;

use std::sync::Arc;

use tokio::task::JoinHandle;

/// The user agent of the controllers' requests, to the control plane and to members. As
/// Karmada's (its binary's name), so field managers read `karmada-controller-manager`.
pub const USER_AGENT: &str = concat!("karmada-controller-manager/", env!("CARGO_PKG_VERSION"));

/// The user agent of a simulated member's workload simulator.
pub const SIMULATOR_USER_AGENT: &str = concat!("karmada-rs-simulator/", env!("CARGO_PKG_VERSION"));

use runtime::Context;
pub use runtime::context::{Concurrency, FailoverSettings, Scope, Settings};

/// How to run the controllers.
#[derive(Clone, Debug, Default)]
pub struct ControllersConfig {
    /// Controller settings.
    pub settings: Settings,
    /// Cluster and cluster-status controller timings.
    pub cluster: cluster::ClusterSettings,
    /// Pull-mode registration (cluster-info signing, agent CSR approval and signing); off
    /// when absent.
    pub registration: Option<registration::RegistrationConfig>,
    /// Which controllers run (`--controllers`).
    pub controllers: selection::Controllers,
}

/// The running controllers; dropping the handle stops them.
pub struct Controllers {
    ctx: Arc<Context>,
    tasks: Vec<JoinHandle<()>>,
    _unified_auth: Option<unified_auth::UnifiedAuth>,
}

impl Controllers {
    /// The handle of controllers started elsewhere in the crate (the agent's).
    pub(crate) fn assemble(
        ctx: Arc<Context>,
        tasks: Vec<JoinHandle<()>>,
        unified_auth: Option<unified_auth::UnifiedAuth>,
    ) -> Controllers {
        Controllers {
            ctx,
            tasks,
            _unified_auth: unified_auth,
        }
    }

    /// The shared informers and clients.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Stops every controller.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // The template informers belong to the context, which their handlers keep alive:
        // they would go on watching (and, on a leader that lost its Lease and leads again,
        // pile up).
        for r in self.ctx.templates.resources() {
            self.ctx.templates.stop(&r.api_version(), &r.kind);
        }
    }
}

/// Starts every controller against the control plane `client`. Must be called inside a tokio
/// runtime. Event handlers are registered before the informers start, so no object is missed.
pub fn start(config: ControllersConfig, client: kube::Client) -> Controllers {
    let members = member_clients::MemberClients::new(client.clone());
    let (ctx, events_task) = Context::new(client.clone(), config.settings, members.clone());
    let mut tasks = vec![events_task];
    ctx.load_interpreter_configuration();
    let watcher = execution::ObjectWatcher::new(ctx.clone());
    let selected = &config.controllers;
    let enabled = |c: &str| {
        let on = selected.enabled(c);
        if !on {
            tracing::warn!(controller = c, "the controller is disabled (--controllers)");
        }
        on
    };
    use selection::names as n;
    // The resource detector, its dependencies distributor and the scheduler are not
    // controller-manager controllers in Karmada: they always run.
    tasks.extend(detector::start(ctx.clone()));
    tasks.extend(scheduler::start(ctx.clone()));
    tasks.extend(dependencies::start(ctx.clone()));
    if enabled(n::BINDING) {
        tasks.extend(binding::start(ctx.clone()));
    }
    if enabled(n::EXECUTION) {
        tasks.extend(execution::start(ctx.clone(), watcher.clone()));
    }
    if enabled(n::WORK_STATUS) {
        tasks.extend(work_status::start(ctx.clone(), watcher));
    }
    if enabled(n::BINDING_STATUS) {
        tasks.extend(binding_status::start(ctx.clone()));
    }
    if enabled(n::NAMESPACE) {
        tasks.extend(namespace_sync::start(ctx.clone()));
    }
    // Failover: cluster taints from ClusterTaintPolicies, NoExecute evictions (Karmada's
    // taint manager belongs to the cluster controller), and the eviction tasks' end.
    if enabled(n::CLUSTER_TAINT_POLICY) {
        tasks.extend(cluster_taint_policy::start(ctx.clone()));
    }
    if enabled(n::CLUSTER) {
        tasks.extend(taint_manager::start(ctx.clone()));
    }
    if enabled(n::APPLICATION_FAILOVER) {
        tasks.extend(application_failover::start(ctx.clone()));
    }
    if enabled(n::GRACEFUL_EVICTION) {
        tasks.extend(graceful_eviction::start(ctx.clone()));
    }
    if enabled(n::WORKLOAD_REBALANCER) {
        tasks.extend(workload_rebalancer::start(ctx.clone()));
    }
    tasks.extend(rebalance_on_recovery::start(ctx.clone()));
    // Multi-cluster services (the Multi-Cluster Services API).
    if enabled(n::SERVICE_EXPORT) {
        tasks.extend(mcs::collect::start(
            ctx.clone(),
            mcs::collect::Flavor::ServiceExport,
        ));
    }
    if enabled(n::ENDPOINT_SLICE) {
        tasks.extend(mcs::endpoint_slice::start(ctx.clone()));
    }
    if enabled(n::SERVICE_IMPORT) {
        tasks.extend(mcs::service_import::start(ctx.clone()));
    }
    // MultiClusterService, behind its feature gate as in Karmada.
    if ctx.settings.multi_cluster_service {
        if enabled(n::MULTI_CLUSTER_SERVICE) {
            tasks.extend(mcs::multi_cluster_service::start(ctx.clone()));
        }
        if enabled(n::ENDPOINTSLICE_COLLECT) {
            tasks.extend(mcs::collect::start(
                ctx.clone(),
                mcs::collect::Flavor::MultiClusterService,
            ));
        }
        if enabled(n::ENDPOINTSLICE_DISPATCH) {
            tasks.extend(mcs::dispatch::start(ctx.clone()));
        }
    }
    // Federated resource quotas and remedies.
    if enabled(n::FEDERATED_RESOURCE_QUOTA_SYNC) {
        tasks.extend(federated_resource_quota::sync::start(ctx.clone()));
    }
    if enabled(n::FEDERATED_RESOURCE_QUOTA_STATUS) {
        tasks.extend(federated_resource_quota::status::start(ctx.clone()));
    }
    if enabled(n::FEDERATED_RESOURCE_QUOTA_ENFORCEMENT) {
        tasks.extend(federated_resource_quota::enforcement::start(ctx.clone()));
    }
    if enabled(n::REMEDY) {
        tasks.extend(remedy::start(ctx.clone()));
    }
    // Execution spaces, cluster status and taints share the pipeline's member clients.
    let (run_cluster, run_status) = (enabled(n::CLUSTER), enabled(n::CLUSTER_STATUS));
    if run_cluster || run_status {
        tasks.extend(cluster::start(cluster::ClusterControllers {
            settings: config.cluster,
            run_cluster,
            run_status,
            ..cluster::ClusterControllers::new(client.clone(), members)
        }));
    }
    if let Some(r) = config.registration
        && enabled(n::AGENT_CSR_APPROVING)
    {
        tasks.extend(registration::start(client.clone(), r));
    }
    tasks.extend(ctx.run_informers());
    // Pushes the members' impersonation RBAC for users granted the cluster proxy.
    let unified_auth = enabled(n::UNIFIED_AUTH).then(|| unified_auth::start(client));
    Controllers {
        ctx,
        tasks,
        _unified_auth: unified_auth,
    }
}
