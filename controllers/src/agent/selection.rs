//! Which of the agent's controllers run: karmada-agent's `--controllers` flag
//! (cmd/agent/app, pkg/controllers/context's `IsControllerEnabled`). `*` enables every
//! controller that is on by default, `foo` enables `foo`, `-foo` disables it; the first entry
//! naming a controller decides, and without `*` only the named ones run.

pub use crate::selection::{ControllerSet, SelectionError};

/// Karmada's cluster status controller: the cluster's status and, for a Pull cluster, its
/// Lease.
pub const CLUSTER_STATUS: &str = "clusterStatus";
/// Karmada's execution controller: applies the execution space's Works to the member.
pub const EXECUTION: &str = "execution";
/// Karmada's work status controller: reflects the applied objects' status into their Works.
pub const WORK_STATUS: &str = "workStatus";
/// Karmada's certificate rotation controller: renews the agent's client certificate before
/// it expires (off by default, as in Karmada; `register --enable-cert-rotation` turns it on).
pub const CERT_ROTATION: &str = "certRotation";

/// Every controller the agent runs, in the order they start.
pub const ALL: &[&str] = &[
    CLUSTER_STATUS,
    EXECUTION,
    WORK_STATUS,
    SERVICE_EXPORT,
    CERT_ROTATION,
];

/// Karmada's service export controller: reports the EndpointSlices of the Services exported
/// from the member (ServiceExport) to the control plane.
pub const SERVICE_EXPORT: &str = "serviceExport";

/// karmada-agent's controllers. The MultiClusterService EndpointSlice collection
/// (endpointsliceCollect) is not in the agent: it may be named to disable it, not to enable
/// it.
pub static AGENT: ControllerSet = ControllerSet {
    component: "the agent",
    all: ALL,
    disabled_by_default: &[CERT_ROTATION],
    absent: &["endpointsliceCollect"],
};

/// The agent's `--controllers` value.
pub type Controllers = crate::selection::Controllers;

/// Parses the agent's `--controllers` entries.
pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Controllers, SelectionError> {
    Controllers::parse(&AGENT, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_enables_the_defaults_only() {
        let c = parse(&["*"]).unwrap();
        for name in [CLUSTER_STATUS, EXECUTION, WORK_STATUS] {
            assert!(c.enabled(name), "{name}");
        }
        assert!(!c.enabled(CERT_ROTATION));
    }

    #[test]
    fn explicit_names_and_negations_decide_in_order() {
        let c = parse(&["*", "certRotation"]).unwrap();
        assert!(c.enabled(CERT_ROTATION));
        let c = parse(&["-execution", "*", "execution"]).unwrap();
        assert!(!c.enabled(EXECUTION), "the first entry naming it decides");
        assert!(c.enabled(WORK_STATUS));
        let c = parse(&["execution"]).unwrap();
        assert!(c.enabled(EXECUTION));
        assert!(!c.enabled(WORK_STATUS), "without * only the named ones run");
        let c = parse(&["", "*", ""]).unwrap();
        assert_eq!(c.to_string(), "*");
        let c = Controllers::default_for(&AGENT).with(CERT_ROTATION);
        assert_eq!(c.to_string(), "*,certRotation");
        assert!(c.enabled(CERT_ROTATION));
        let c = parse(&["-certRotation", "*"]).unwrap().with(CERT_ROTATION);
        assert!(c.enabled(CERT_ROTATION));
    }

    #[test]
    fn unknown_and_absent_controllers_are_refused() {
        assert!(matches!(
            parse(&["*", "nope"]),
            Err(SelectionError::Unknown { name, .. }) if name == "nope"
        ));
        assert!(matches!(
            parse(&["endpointsliceCollect"]),
            Err(SelectionError::Absent { name, .. }) if name == "endpointsliceCollect"
        ));
        let c = parse(&["*", "-serviceExport", "-endpointsliceCollect"]).unwrap();
        assert!(c.enabled(EXECUTION));
        assert!(!c.enabled(SERVICE_EXPORT));
        assert!(parse(&["*"]).unwrap().enabled(SERVICE_EXPORT));
        let msg = parse(&["nope"]).unwrap_err().to_string();
        assert!(
            msg.contains("clusterStatus, execution, workStatus, serviceExport, certRotation"),
            "{msg}"
        );
    }
}
