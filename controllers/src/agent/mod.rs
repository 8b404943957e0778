//! karmada-agent (cmd/agent): the controllers of one Pull cluster, run next to its member.
//! The agent makes only outbound connections: it watches its execution space and its Cluster
//! on the control plane, applies Works to the member with the same execution and work-status
//! controllers as push mode, collects the cluster's status with the same cluster-status
//! controller, renews the cluster's Lease, and keeps the reverse tunnel through which the
//! cluster proxy reaches the member ([`tunnel`]). Its identity may touch nothing else, so its
//! informers are narrowed to its cluster ([`crate::Scope::Agent`]). `--controllers` chooses
//! which controllers run ([`selection`]); replicas elect the one that runs them through the
//! Lease [`leader_election_id`]; [`install`] is what `register` puts into the member to run
//! the agent there.

pub mod install;
pub mod lease;
pub mod rbac;
pub mod selection;
pub mod tunnel;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::member_clients::MemberClients;
use crate::runtime::Context;
use crate::runtime::discovery::served_resources;
use crate::{Controllers, Scope, cluster, execution, work_status};

/// The user agent of an agent's requests, as Karmada's binary names itself.
pub const USER_AGENT: &str = concat!("karmada-agent/", env!("CARGO_PKG_VERSION"));

/// The name of the Lease the agent's replicas elect their leader with, in the control
/// plane's `--leader-elect-resource-namespace` (karmada-agent's `LeaderElectionID`).
pub fn leader_election_id(cluster: &str) -> String {
    format!("karmada-agent-{cluster}")
}

/// How to run an agent.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The cluster this agent serves (`--cluster-name`).
    pub cluster: String,
    /// Workers per controller (Karmada's `--concurrent-*-syncs`).
    pub concurrency: crate::Concurrency,
    /// Cluster-status timings.
    pub cluster_settings: cluster::ClusterSettings,
    /// Lease timings.
    pub lease: lease::LeaseSettings,
    /// How often the member's served resources are discovered again (for Works of kinds
    /// added later, e.g. by a CRD).
    pub discovery_interval: Duration,
    /// How the controllers' queues delay retries (Karmada's `--rate-limiter-*` flags).
    pub rate_limiter: crate::runtime::RateLimiterOptions,
    /// Which controllers run (`--controllers`).
    pub controllers: selection::Controllers,
}

impl AgentConfig {
    /// Karmada's defaults for `cluster`.
    pub fn new(cluster: impl Into<String>) -> AgentConfig {
        AgentConfig {
            cluster: cluster.into(),
            concurrency: crate::Concurrency::default(),
            cluster_settings: cluster::ClusterSettings::default(),
            lease: lease::LeaseSettings::default(),
            discovery_interval: Duration::from_secs(30),
            rate_limiter: crate::runtime::RateLimiterOptions::default(),
            controllers: selection::Controllers::default(),
        }
    }
}

/// Starts the agent's controllers: `control_plane` acts as the agent's identity, `member`
/// reaches its member cluster. Dropping the handle stops them.
pub fn start(
    config: AgentConfig,
    control_plane: kube::Client,
    member: kube::Client,
) -> Controllers {
    let name = config.cluster.clone();
    let scope = Scope::Agent(name.clone());
    let members = MemberClients::pinned(control_plane.clone(), &name, member.clone());
    let settings = crate::Settings {
        concurrency: config.concurrency,
        discovery_interval: config.discovery_interval,
        scope: scope.clone(),
        rate_limiter: config.rate_limiter,
        ..crate::Settings::default()
    };
    let (ctx, events_task) = Context::new(control_plane.clone(), settings, members.clone());
    let mut tasks = vec![events_task];
    tasks.push(discover_member(
        ctx.clone(),
        member.clone(),
        config.discovery_interval,
    ));
    let watcher = execution::ObjectWatcher::new(ctx.clone());
    let enabled = |c: &str| {
        let on = config.controllers.enabled(c);
        if !on {
            tracing::warn!(controller = c, "the controller is disabled (--controllers)");
        }
        on
    };
    if enabled(selection::EXECUTION) {
        tasks.extend(execution::start(ctx.clone(), watcher.clone()));
    }
    if enabled(selection::WORK_STATUS) {
        tasks.extend(work_status::start(ctx.clone(), watcher));
    }
    // A Pull member's exported Services are reported by its agent, as Karmada's agent does.
    if enabled(selection::SERVICE_EXPORT) {
        tasks.extend(crate::mcs::collect::start(
            ctx.clone(),
            crate::mcs::collect::Flavor::ServiceExport,
        ));
    }
    // Karmada's cluster status controller renews a Pull cluster's Lease too.
    if enabled(selection::CLUSTER_STATUS) {
        tasks.extend(cluster::start_agent(
            cluster::ClusterControllers {
                settings: config.cluster_settings,
                scope,
                ..cluster::ClusterControllers::new(control_plane.clone(), members)
            },
            &name,
        ));
        tasks.push(lease::start(
            control_plane.clone(),
            name.clone(),
            config.lease,
        ));
    }
    tasks.push(tunnel::start(control_plane, member, name));
    tasks.extend(ctx.run_informers());
    Controllers::assemble(ctx, tasks, None)
}

/// Keeps the context's served resources those of the member (the agent maps a Work's kinds
/// with the member's discovery, as its RESTMapper does); the first round is retried until
/// it succeeds.
fn discover_member(ctx: Arc<Context>, member: kube::Client, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut retry = Duration::from_millis(200);
        loop {
            let delay = match served_resources(&member).await {
                Ok(all) => {
                    ctx.served.send_replace(Arc::new(all));
                    retry = Duration::from_millis(200);
                    every
                }
                Err(e) => {
                    tracing::warn!(error = %e, "discovering the member's resources failed");
                    let d = retry;
                    retry = (retry * 2).min(every);
                    d
                }
            };
            tokio::time::sleep(delay).await;
        }
    })
}
