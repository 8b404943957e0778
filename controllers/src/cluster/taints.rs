//! The scheduling taints the cluster controller keeps in line with the Ready condition
//! (taintClusterByCondition in pkg/controllers/cluster/cluster_controller.go,
//! SetCurrentClusterTaints in pkg/util/helper/taint.go).

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::well_known::taints::{NOT_READY, UNREACHABLE};

fn template(key: &str) -> Taint {
    Taint {
        key: key.to_owned(),
        effect: "NoSchedule".to_owned(),
        ..Default::default()
    }
}

/// Taint.MatchTaint: same key and effect.
fn matches(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

/// The taints to add and to remove for a Ready condition status (None: never reported).
pub fn for_ready_status(status: Option<&str>) -> (Vec<Taint>, Vec<Taint>) {
    let not_ready = template(NOT_READY);
    let unreachable = template(UNREACHABLE);
    match status {
        Some("True") => (vec![], vec![not_ready, unreachable]),
        Some("False") => (vec![not_ready], vec![unreachable]),
        Some(_) => (vec![unreachable], vec![not_ready]),
        None => (vec![not_ready], vec![]),
    }
}

/// The cluster's taints after adding and removing some; added taints get `time_added = now`.
/// Returns the current list unchanged (same order) when nothing needs to change.
pub fn apply(current: &[Taint], add: &[Taint], remove: &[Taint], now: &Time) -> Vec<Taint> {
    let to_add: Vec<&Taint> = add
        .iter()
        .filter(|t| !current.iter().any(|c| matches(c, t)))
        .collect();
    let to_remove: Vec<&Taint> = remove
        .iter()
        .filter(|t| current.iter().any(|c| matches(c, t)))
        .collect();
    if to_add.is_empty() && to_remove.is_empty() {
        return current.to_vec();
    }
    let mut out: Vec<Taint> = current
        .iter()
        .filter(|c| !to_remove.iter().any(|r| matches(c, r)))
        .cloned()
        .collect();
    out.extend(to_add.into_iter().map(|t| Taint {
        time_added: Some(now.clone()),
        ..t.clone()
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(key: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn keys(ts: &[Taint]) -> Vec<String> {
        ts.iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect()
    }

    #[test]
    fn taints_follow_the_ready_condition() {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let user = t("dedicated", "NoSchedule");
        let nr = t(NOT_READY, "NoSchedule");
        let un = t(UNREACHABLE, "NoSchedule");
        let nr_exec = t(NOT_READY, "NoExecute");
        let cases: Vec<(Option<&str>, Vec<Taint>, Vec<String>)> = vec![
            (None, vec![], vec![format!("{NOT_READY}:NoSchedule")]),
            (Some("True"), vec![nr.clone()], vec![]),
            (
                Some("True"),
                vec![user.clone(), nr.clone(), un.clone()],
                vec!["dedicated:NoSchedule".into()],
            ),
            (
                Some("False"),
                vec![un.clone(), user.clone()],
                vec![
                    "dedicated:NoSchedule".into(),
                    format!("{NOT_READY}:NoSchedule"),
                ],
            ),
            (
                Some("Unknown"),
                vec![nr.clone()],
                vec![format!("{UNREACHABLE}:NoSchedule")],
            ),
            // A NoExecute taint with the same key is someone else's.
            (
                Some("True"),
                vec![nr_exec.clone()],
                vec![format!("{NOT_READY}:NoExecute")],
            ),
        ];
        for (status, current, want) in cases {
            let (add, remove) = for_ready_status(status);
            let got = apply(&current, &add, &remove, &now);
            assert_eq!(keys(&got), want, "{status:?} {:?}", keys(&current));
        }
    }

    #[test]
    fn unchanged_lists_keep_their_timestamps() {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let earlier = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let existing = Taint {
            time_added: Some(earlier.clone()),
            ..t(NOT_READY, "NoSchedule")
        };
        let (add, remove) = for_ready_status(Some("False"));
        let got = apply(std::slice::from_ref(&existing), &add, &remove, &now);
        assert_eq!(got, vec![existing]);
        let got = apply(&[], &add, &remove, &now);
        assert_eq!(got[0].time_added, Some(now));
    }
}
