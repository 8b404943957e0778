//! Leader election flags (Karmada's `--leader-elect*`, shared by `serve` and `agent`) and the
//! loop that runs a component's controllers only while this replica holds its Lease:
//! `karmada-controller-manager` for the control plane, `karmada-agent-<cluster>` for an agent
//! (controller-runtime's election, which both Karmada components use).

use std::time::Duration;

use clap::Args;
use leaderelection::{
    Ended, Interface, LeaderCallbacks, LeaderElectionConfig, LeaderElector, Leading,
};
use tokio::sync::watch;

/// The Lease's name, as Karmada's controller manager names it.
pub const LEASE_NAME: &str = "karmada-controller-manager";

/// The user agent of the election's requests (client-go's `<component>/leader-election`).
const USER_AGENT: &str = "karmada-controller-manager/leader-election";

/// Leader election among replicas (Karmada's controller-manager flags).
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionFlags {
    /// Run the controllers only while this replica holds the leader Lease, so that replicas
    /// over one etcd never run them twice.
    #[arg(
        long,
        env = "KARMADA_RS_LEADER_ELECT",
        num_args = 0..=1,
        default_missing_value = "true",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub leader_elect: bool,
    /// How long the other replicas wait after the leader's last renewal they saw before
    /// taking the Lease.
    #[arg(long, env = "KARMADA_RS_LEADER_ELECT_LEASE_DURATION", value_parser = super::parse_duration, default_value = "15s")]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops its controllers; shorter
    /// than the lease duration.
    #[arg(long, env = "KARMADA_RS_LEADER_ELECT_RENEW_DEADLINE", value_parser = super::parse_duration, default_value = "10s")]
    pub leader_elect_renew_deadline: Duration,
    /// How long replicas wait between attempts to acquire or renew the Lease.
    #[arg(long, env = "KARMADA_RS_LEADER_ELECT_RETRY_PERIOD", value_parser = super::parse_duration, default_value = "2s")]
    pub leader_elect_retry_period: Duration,
    /// The namespace of the leader Lease.
    #[arg(
        long,
        env = "KARMADA_RS_LEADER_ELECT_RESOURCE_NAMESPACE",
        default_value = "karmada-system"
    )]
    pub leader_elect_resource_namespace: String,
}

impl Default for LeaderElectionFlags {
    /// The flags' defaults (Karmada's), for components started in-process.
    fn default() -> LeaderElectionFlags {
        LeaderElectionFlags {
            leader_elect: true,
            leader_elect_lease_duration: Duration::from_secs(15),
            leader_elect_renew_deadline: Duration::from_secs(10),
            leader_elect_retry_period: Duration::from_secs(2),
            leader_elect_resource_namespace: karmada_api::names::NAMESPACE_KARMADA_SYSTEM.into(),
        }
    }
}

impl LeaderElectionFlags {
    /// The settings of the election for the Lease `name`, `None` when it is off; bad
    /// combinations are refused with client-go's words and the flags' values.
    pub fn config(&self, name: &str) -> anyhow::Result<Option<LeaderElectionConfig>> {
        if !self.leader_elect {
            return Ok(None);
        }
        if self.leader_elect_resource_namespace.is_empty() {
            anyhow::bail!("--leader-elect-resource-namespace must not be empty");
        }
        let config = LeaderElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            release_on_cancel: true,
            name: name.into(),
        };
        config.validate().map_err(|e| {
            anyhow::anyhow!(
                "invalid leader election flags: {e} (--leader-elect-lease-duration={:?}, --leader-elect-renew-deadline={:?}, --leader-elect-retry-period={:?})",
                self.leader_elect_lease_duration,
                self.leader_elect_renew_deadline,
                self.leader_elect_retry_period
            )
        })?;
        Ok(Some(config))
    }
}

/// Campaigns for the Lease through `running` and runs what `start` starts while this
/// replica leads, until `shutdown` turns true; then stops it and releases the Lease.
///
/// A replica that loses the Lease stops its controllers and campaigns again rather than
/// exiting as Karmada's controller manager and kube-controller-manager do: those are
/// processes of their own, restarted by their Deployment, while here the same process serves
/// the API, which must stay up on every replica (an etcd outage would otherwise end every
/// replica's API at once). Stopping drops every controller task, as an exit would, and
/// leading again starts them afresh from empty caches, as a restarted process would.
pub async fn run(
    config: LeaderElectionConfig,
    namespace: &str,
    running: &apiserver::launch::Running,
    start: impl FnMut() -> Leading + Send + 'static,
    shutdown: &mut watch::Receiver<bool>,
) {
    let identity = leaderelection::resourcelock::default_identity();
    let lock = leaderelection::LeaseLock::new(
        running.client_with_agent(super::controller_user(), USER_AGENT),
        namespace,
        LEASE_NAME,
        &identity,
    );
    let mut elector = match LeaderElector::new(config, lock) {
        Ok(e) => e,
        // The settings were validated at startup and the identity is never empty.
        Err(e) => {
            tracing::error!(error = %e, "leader election cannot start");
            return;
        }
    };
    let status = elector.master_status();
    running
        .state
        .metrics
        .add_collector(Box::new(move || status.render()));
    campaign(&mut elector, start, shutdown).await;
}

/// Campaigns through `elector` and runs what `start` starts while it leads, until `shutdown`
/// turns true (the Lease is then released if the elector was configured to). A lost Lease
/// stops the work and the campaign starts over (see [`run`]).
pub async fn campaign<L: Interface>(
    elector: &mut LeaderElector<L>,
    start: impl FnMut() -> Leading + Send + 'static,
    shutdown: &mut watch::Receiver<bool>,
) {
    let identity = elector.lock().identity().to_owned();
    let lease = elector.lock().describe();
    tracing::info!(%identity, %lease, "leader election: campaigning for the controllers' Lease");
    let me = identity.clone();
    let mut callbacks = LeaderCallbacks {
        on_started_leading: Box::new(start),
        on_stopped_leading: Box::new(|| tracing::info!("leader election: controllers stopped")),
        on_new_leader: Box::new(move |holder| {
            if holder == me {
                tracing::info!(identity = %holder, "leader election: this replica leads, starting the controllers");
            } else if !holder.is_empty() {
                tracing::info!(leader = %holder, "leader election: new leader elected");
            }
        }),
    };
    loop {
        match elector.run(&mut callbacks, shutdown).await {
            Ended::Shutdown => return,
            Ended::Lost => tracing::error!(
                %identity,
                "leader election lost: the controllers stopped; campaigning again"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: LeaderElectionFlags,
    }

    #[test]
    fn the_default_is_the_flags_defaults() {
        assert_eq!(
            Cli::parse_from(["test"]).flags,
            LeaderElectionFlags::default()
        );
    }
}
