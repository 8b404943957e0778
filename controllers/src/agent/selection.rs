//! Which of the agent's controllers run: karmada-agent's `--controllers` flag
//! (cmd/agent/app, pkg/controllers/context's `IsControllerEnabled`). `*` enables every
//! controller that is on by default, `foo` enables `foo`, `-foo` disables it; the first entry
//! naming a controller decides, and without `*` only the named ones run.

use std::fmt;

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

/// Karmada's agent controllers that karmada-rs does not have (multi-cluster services): they
/// may be named to disable them, not to enable them.
const ABSENT: &[&str] = &["serviceExport", "endpointsliceCollect"];

/// Every controller the agent runs, in the order they start.
pub const ALL: &[&str] = &[CLUSTER_STATUS, EXECUTION, WORK_STATUS, CERT_ROTATION];

/// The ones `*` leaves off.
const DISABLED_BY_DEFAULT: &[&str] = &[CERT_ROTATION];

/// A `--controllers` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Controllers(Vec<String>);

/// A `--controllers` entry that names no controller of the agent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// Not a controller name of karmada-agent.
    #[error("unknown controller {0:?} in --controllers; the agent's controllers are: {list}", list = ALL.join(", "))]
    Unknown(String),
    /// A karmada-agent controller karmada-rs does not have.
    #[error(
        "controller {0:?} is not available in the karmada-rs agent (multi-cluster services are not supported); it can only be disabled (-{0})"
    )]
    Absent(String),
}

impl Controllers {
    /// Karmada's default, `*`.
    pub fn default_set() -> Controllers {
        Controllers(vec!["*".into()])
    }

    /// Parses the entries of `--controllers` (empty ones are skipped, as pflag's string
    /// slices drop them).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Controllers, SelectionError> {
        let mut kept = Vec::new();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            if entry != "*" {
                let (negated, name) = match entry.strip_prefix('-') {
                    Some(n) => (true, n),
                    None => (false, entry),
                };
                if ABSENT.contains(&name) {
                    if !negated {
                        return Err(SelectionError::Absent(name.to_owned()));
                    }
                } else if !ALL.contains(&name) {
                    return Err(SelectionError::Unknown(entry.to_owned()));
                }
            }
            kept.push(entry.to_owned());
        }
        Ok(Controllers(kept))
    }

    /// Whether `name` runs (`IsControllerEnabled`).
    pub fn enabled(&self, name: &str) -> bool {
        let mut star = false;
        for entry in &self.0 {
            if entry == name {
                return true;
            }
            if entry.strip_prefix('-') == Some(name) {
                return false;
            }
            star |= entry == "*";
        }
        star && !DISABLED_BY_DEFAULT.contains(&name)
    }

    /// This selection with `name` enabled (its negations dropped, so that it wins).
    pub fn with(mut self, name: &str) -> Controllers {
        let negated = format!("-{name}");
        self.0.retain(|e| *e != negated);
        self.0.push(name.to_owned());
        self
    }
}

impl Default for Controllers {
    fn default() -> Controllers {
        Controllers::default_set()
    }
}

impl fmt::Display for Controllers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_enables_the_defaults_only() {
        let c = Controllers::parse(&["*"]).unwrap();
        for name in [CLUSTER_STATUS, EXECUTION, WORK_STATUS] {
            assert!(c.enabled(name), "{name}");
        }
        assert!(!c.enabled(CERT_ROTATION));
    }

    #[test]
    fn explicit_names_and_negations_decide_in_order() {
        let c = Controllers::parse(&["*", "certRotation"]).unwrap();
        assert!(c.enabled(CERT_ROTATION));
        let c = Controllers::parse(&["-execution", "*", "execution"]).unwrap();
        assert!(!c.enabled(EXECUTION), "the first entry naming it decides");
        assert!(c.enabled(WORK_STATUS));
        let c = Controllers::parse(&["execution"]).unwrap();
        assert!(c.enabled(EXECUTION));
        assert!(!c.enabled(WORK_STATUS), "without * only the named ones run");
        let c = Controllers::parse(&["", "*", ""]).unwrap();
        assert_eq!(c.to_string(), "*");
        let c = Controllers::default().with(CERT_ROTATION);
        assert_eq!(c.to_string(), "*,certRotation");
        assert!(c.enabled(CERT_ROTATION));
        let c = Controllers::parse(&["-certRotation", "*"])
            .unwrap()
            .with(CERT_ROTATION);
        assert!(c.enabled(CERT_ROTATION));
    }

    #[test]
    fn unknown_and_absent_controllers_are_refused() {
        assert_eq!(
            Controllers::parse(&["*", "nope"]),
            Err(SelectionError::Unknown("nope".into()))
        );
        assert_eq!(
            Controllers::parse(&["serviceExport"]),
            Err(SelectionError::Absent("serviceExport".into()))
        );
        let c = Controllers::parse(&["*", "-serviceExport", "-endpointsliceCollect"]).unwrap();
        assert!(c.enabled(EXECUTION));
        let msg = Controllers::parse(&["nope"]).unwrap_err().to_string();
        assert!(
            msg.contains("clusterStatus, execution, workStatus, certRotation"),
            "{msg}"
        );
    }
}
