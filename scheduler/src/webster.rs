//! Dividing replicas by weight with the Webster (Sainte-Laguë) method, as Karmada's
//! `helper.Dispenser` / `helper.AllocateWebsterSeats` do, including the UID-derived tie-breaker.

use karmada_api::work::v1alpha2::TargetCluster;

/// A cluster competing for replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Party {
    name: String,
    votes: i64,
    seats: i32,
}

/// How parties with the same Webster priority are ordered (Karmada `tieBreakerByUID`): fewer seats
/// first, then by name ascending, or descending when the FNV-1a hash of the UID is odd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreaker {
    /// Lexicographically smaller names win ties.
    NameAscending,
    /// Lexicographically larger names win ties.
    NameDescending,
}

impl TieBreaker {
    /// The tie-breaker Karmada derives from a resource UID.
    pub fn from_uid(uid: &str) -> Self {
        if uid.is_empty() {
            return TieBreaker::NameAscending;
        }
        if fnv1a32(uid.as_bytes()) & 1 == 1 {
            TieBreaker::NameDescending
        } else {
            TieBreaker::NameAscending
        }
    }

    /// True when `a` wins the tie against `b`.
    fn prefers(self, a: &Party, b: &Party) -> bool {
        if a.seats != b.seats {
            return a.seats < b.seats;
        }
        match self {
            TieBreaker::NameAscending => a.name < b.name,
            TieBreaker::NameDescending => a.name > b.name,
        }
    }
}

fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// True when `a` gets the next seat before `b` (Karmada `WebsterPriorityQueue.Less`). The
/// priority is computed in floating point, exactly as upstream, so ties match.
fn before(a: &Party, b: &Party, tie: TieBreaker) -> bool {
    // Go's int is 64 bits: 2*seats+1 cannot overflow there, nor here in i64.
    let pa = a.votes as f64 / (2 * i64::from(a.seats) + 1) as f64;
    let pb = b.votes as f64 / (2 * i64::from(b.seats) + 1) as f64;
    if pa == pb {
        return tie.prefers(a, b);
    }
    pa > pb
}

/// Hands out `new_seats` one at a time to the party with the highest Webster priority, starting
/// from `initial`; returns every party sorted by name (`AllocateWebsterSeats`).
fn allocate_webster_seats(
    new_seats: i32,
    votes: &[(String, i64)],
    initial: &[TargetCluster],
    tie: TieBreaker,
) -> Vec<Party> {
    let mut parties: Vec<Party> = Vec::with_capacity(votes.len() + initial.len());
    for t in initial {
        match parties.iter_mut().find(|p| p.name == t.name) {
            Some(p) => p.seats = t.replicas,
            None => parties.push(Party {
                name: t.name.clone(),
                votes: 0,
                seats: t.replicas,
            }),
        }
    }
    for (name, v) in votes {
        match parties.iter_mut().find(|p| &p.name == name) {
            Some(p) => p.votes = *v,
            None => parties.push(Party {
                name: name.clone(),
                votes: *v,
                seats: 0,
            }),
        }
    }
    if parties.is_empty() {
        return parties;
    }
    for _ in 0..new_seats.max(0) {
        let mut best = 0;
        for i in 1..parties.len() {
            if before(&parties[i], &parties[best], tie) {
                best = i;
            }
        }
        parties[best].seats += 1;
    }
    parties.sort_by(|a, b| a.name.cmp(&b.name));
    parties
}

/// The sum of user-set or member-reported numbers (weights are int64), saturating where Go's
/// int64 would wrap instead of overflowing.
pub(crate) fn saturating_sum(values: impl Iterator<Item = i64>) -> i64 {
    values.fold(0, i64::saturating_add)
}

/// Divides `replicas` among weighted clusters, on top of an initial assignment
/// (Karmada `Dispenser.AllocateByWeight`). Clusters with no seat are kept with 0 replicas; the
/// result is sorted by name. With a zero weight sum the initial assignment is returned.
pub fn allocate_by_weight(
    replicas: i32,
    weights: &[(String, i64)],
    initial: &[TargetCluster],
    tie: TieBreaker,
) -> Vec<TargetCluster> {
    if replicas == 0 && !initial.is_empty() {
        return initial.to_vec();
    }
    if saturating_sum(weights.iter().map(|(_, w)| *w)) == 0 {
        return initial.to_vec();
    }
    allocate_webster_seats(replicas, weights, initial, tie)
        .into_iter()
        .map(|p| TargetCluster {
            name: p.name,
            replicas: p.seats,
        })
        .collect()
}

/// Divides `replicas` using the replicas of `weights` as weights
/// (Karmada `helper.SpreadReplicasByTargetClusters`); `uid` picks the tie-breaker. Also used to
/// divide a Job's completions over its target clusters.
pub fn spread_replicas_by_target_clusters(
    replicas: i32,
    weights: &[TargetCluster],
    initial: &[TargetCluster],
    uid: &str,
) -> Vec<TargetCluster> {
    let weights: Vec<(String, i64)> = weights
        .iter()
        .map(|t| (t.name.clone(), i64::from(t.replicas)))
        .collect();
    allocate_by_weight(replicas, &weights, initial, TieBreaker::from_uid(uid))
}

/// Orders target clusters by replicas descending, keeping the input order among equals (Go's
/// `sort.Sort` is an insertion sort, hence stable, for the small lists schedulers see).
pub(crate) fn sort_by_replicas_desc(clusters: &mut [TargetCluster]) {
    clusters.sort_by_key(|c| std::cmp::Reverse(c.replicas));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(name: &str, replicas: i32) -> TargetCluster {
        TargetCluster {
            name: name.into(),
            replicas,
        }
    }

    fn w(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
        pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn fnv_matches_reference_values() {
        // Reference values of FNV-1a 32.
        assert_eq!(fnv1a32(b""), 0x811c9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn webster_division_table() {
        let asc = TieBreaker::NameAscending;
        let desc = TieBreaker::NameDescending;
        type Case = (i32, Vec<(String, i64)>, TieBreaker, Vec<TargetCluster>);
        let cases: Vec<Case> = vec![
            (
                4,
                w(&[("member1", 3), ("member2", 1)]),
                asc,
                vec![tc("member1", 3), tc("member2", 1)],
            ),
            (
                4,
                w(&[("member1", 3), ("member2", 1)]),
                desc,
                vec![tc("member1", 3), tc("member2", 1)],
            ),
            (
                5,
                w(&[("member1", 1), ("member2", 1)]),
                asc,
                vec![tc("member1", 3), tc("member2", 2)],
            ),
            (
                5,
                w(&[("member1", 1), ("member2", 1)]),
                desc,
                vec![tc("member1", 2), tc("member2", 3)],
            ),
            (
                9,
                w(&[("a", 1), ("b", 2)]),
                asc,
                vec![tc("a", 3), tc("b", 6)],
            ),
            (
                9,
                w(&[("a", 1), ("b", 3)]),
                asc,
                vec![tc("a", 2), tc("b", 7)],
            ),
            (
                1,
                w(&[("a", 1), ("b", 1), ("c", 1)]),
                asc,
                vec![tc("a", 1), tc("b", 0), tc("c", 0)],
            ),
            (
                1,
                w(&[("a", 1), ("b", 1), ("c", 1)]),
                desc,
                vec![tc("a", 0), tc("b", 0), tc("c", 1)],
            ),
            (
                2,
                w(&[("a", 2), ("b", 1), ("c", 1)]),
                asc,
                vec![tc("a", 1), tc("b", 1), tc("c", 0)],
            ),
            (0, w(&[("a", 1)]), asc, vec![tc("a", 0)]),
            (3, w(&[("a", 0), ("b", 0)]), asc, vec![]),
        ];
        for (i, (n, weights, tie, want)) in cases.into_iter().enumerate() {
            assert_eq!(allocate_by_weight(n, &weights, &[], tie), want, "case {i}");
        }
    }

    #[test]
    fn initial_assignment_is_kept_and_extended() {
        // Parties from the initial assignment with no vote keep their seats but get nothing new;
        // b (1/1) goes first, then a and b tie at 1/3 with one seat each and a wins by name.
        let got = allocate_by_weight(
            2,
            &w(&[("a", 1), ("b", 1)]),
            &[tc("c", 4), tc("a", 1)],
            TieBreaker::NameAscending,
        );
        assert_eq!(got, vec![tc("a", 2), tc("b", 1), tc("c", 4)]);
        // Nothing to hand out with an initial result: unchanged.
        assert_eq!(
            allocate_by_weight(0, &w(&[("a", 1)]), &[tc("x", 2)], TieBreaker::NameAscending),
            vec![tc("x", 2)]
        );
    }

    #[test]
    fn uid_selects_tie_breaker() {
        assert_eq!(TieBreaker::from_uid(""), TieBreaker::NameAscending);
        let odd = (0..100)
            .map(|i| format!("uid-{i}"))
            .find(|u| fnv1a32(u.as_bytes()) & 1 == 1)
            .unwrap();
        let even = (0..100)
            .map(|i| format!("uid-{i}"))
            .find(|u| fnv1a32(u.as_bytes()) & 1 == 0)
            .unwrap();
        assert_eq!(TieBreaker::from_uid(&odd), TieBreaker::NameDescending);
        assert_eq!(TieBreaker::from_uid(&even), TieBreaker::NameAscending);
        let weights = [tc("member1", 1), tc("member2", 1)];
        assert_eq!(
            spread_replicas_by_target_clusters(5, &weights, &[], &odd),
            vec![tc("member1", 2), tc("member2", 3)]
        );
        assert_eq!(
            spread_replicas_by_target_clusters(5, &weights, &[], &even),
            vec![tc("member1", 3), tc("member2", 2)]
        );
    }
}
