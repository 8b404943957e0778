//! karmada-scheduler's flags that change its decisions (cmd/scheduler/app/options).

use clap::Args;

/// The scheduler's flags of `serve` and `up`.
#[derive(Args, Clone, Copy, Debug)]
pub struct SchedulerFlags {
    /// Enable workload with replicas 0 to be propagated to member clusters: the selected
    /// clusters that get no replicas stay in the binding with 0.
    #[arg(long, env = "KARMADA_RS_ENABLE_EMPTY_WORKLOAD_PROPAGATION", action = clap::ArgAction::Set, default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub enable_empty_workload_propagation: bool,
}

impl SchedulerFlags {
    /// Fills the controllers' settings.
    pub fn apply(&self, settings: &mut controllers::Settings) {
        settings.enable_empty_workload_propagation = self.enable_empty_workload_propagation;
    }
}
