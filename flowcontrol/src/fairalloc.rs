//! The fair division of the server's seats among the priority levels that borrowing makes
//! every adjustment period (k8s.io/apiserver pkg/util/flowcontrol/fairalloc.go's
//! `computeConcurrencyAllocation`): one proportion `p` for all, each level getting `p` times
//! its target, held within its bounds, with `p` chosen so that the allocations add up to the
//! seats there are.

/// One level's part in the problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    /// What it would like (at least `lower`).
    pub target: f64,
    /// It gets no less.
    pub lower: f64,
    /// It gets no more (at least `lower`).
    pub upper: f64,
}

/// Targets below this count as this, so that every proportion is defined.
const MIN_TARGET: f64 = 0.001;
/// Slack allowed when comparing sums of bounds with the seats to divide.
const EPSILON: f64 = 0.000_000_1;

/// Divides `total` among `items`: the allocations, each within its item's bounds, add up to
/// `total`, and each is `p × target` unless a bound holds it; returns them with `p` (kube's
/// fair fraction). An error says why no such division exists.
pub fn allocate(total: usize, items: &[Item]) -> Result<(Vec<f64>, f64), String> {
    let total = total as f64;
    let (mut low_sum, mut high_sum) = (0.0, 0.0);
    let mut targets = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        if it.lower < 0.0 {
            return Err(format!("lower bound {i} is {}, below zero", it.lower));
        }
        if it.target < it.lower {
            return Err(format!(
                "target {i} is {}, below its lower bound {}",
                it.target, it.lower
            ));
        }
        if it.upper < it.lower {
            return Err(format!(
                "upper bound {i} is {}, below its lower bound {}",
                it.upper, it.lower
            ));
        }
        low_sum += it.lower;
        high_sum += it.upper;
        targets.push(it.target.max(MIN_TARGET));
    }
    if low_sum - total > EPSILON {
        return Err(format!(
            "lower bounds sum to {low_sum}, more than the {total} seats"
        ));
    }
    if total - high_sum > EPSILON {
        return Err(format!(
            "upper bounds sum to {high_sum}, less than the {total} seats"
        ));
    }
    let relative = |f: fn(&Item) -> f64| {
        items
            .iter()
            .zip(&targets)
            .map(move |(it, t)| f(it) / t)
            .fold(None, |acc: Option<(f64, f64)>, x| {
                Some(acc.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
            })
            .unwrap_or((0.0, 0.0))
    };
    if total == 0.0 {
        return Ok((vec![0.0; items.len()], 0.0));
    }
    // No room between the bounds: every level at one of them.
    if low_sum - total > -EPSILON {
        return Ok((
            items.iter().map(|it| it.lower).collect(),
            relative(|it| it.lower).0,
        ));
    }
    if total - high_sum > -EPSILON {
        return Ok((
            items.iter().map(|it| it.upper).collect(),
            relative(|it| it.upper).1,
        ));
    }
    // The sum of the allocations grows with `p`, linearly between the proportions where a
    // level leaves its lower bound (it starts to follow `p`) or reaches its upper bound (it
    // stops): walk those in order until the sum reaches the total.
    let mut events: Vec<(f64, f64)> = Vec::with_capacity(2 * items.len());
    for (it, t) in items.iter().zip(&targets) {
        events.push((it.lower / t, *t));
        events.push((it.upper / t, -*t));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut p = events.first().map_or(0.0, |e| e.0);
    let (mut sum, mut slope) = (low_sum, 0.0);
    let mut next = 0;
    loop {
        while next < events.len() && events[next].0 <= p {
            slope += events[next].1;
            next += 1;
        }
        let Some(&(bound, _)) = events.get(next) else {
            return Err("the bounds ran out before the seats were divided".into());
        };
        if slope > 0.0 && sum + slope * (bound - p) >= total {
            p += (total - sum) / slope;
            break;
        }
        sum += slope * (bound - p);
        p = bound;
    }
    let allocs = items
        .iter()
        .zip(&targets)
        .map(|(it, t)| (p * t).clamp(it.lower, it.upper))
        .collect();
    Ok((allocs, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(target: f64, lower: f64, upper: f64) -> Item {
        Item {
            target,
            lower,
            upper,
        }
    }

    fn close(got: &[f64], want: &[f64]) -> bool {
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6)
    }

    #[test]
    fn without_binding_bounds_seats_follow_the_targets() {
        let (a, p) = allocate(30, &[item(10.0, 0.0, 100.0), item(5.0, 0.0, 100.0)]).expect("ok");
        assert!(close(&a, &[20.0, 10.0]), "{a:?}");
        assert!((p - 2.0).abs() < 1e-9);
        // Less than the targets: all shrink alike.
        let (a, p) = allocate(6, &[item(8.0, 0.0, 8.0), item(4.0, 0.0, 4.0)]).expect("ok");
        assert!(close(&a, &[4.0, 2.0]), "{a:?}");
        assert!((p - 0.5).abs() < 1e-9);
    }

    #[test]
    fn bounds_hold_and_the_rest_is_shared_fairly() {
        // The first may not go past 12: the others share the remaining 48 by their targets.
        let items = [
            item(10.0, 0.0, 12.0),
            item(10.0, 0.0, 100.0),
            item(20.0, 0.0, 100.0),
        ];
        let (a, p) = allocate(60, &items).expect("ok");
        assert!(close(&a, &[12.0, 16.0, 32.0]), "{a:?}");
        assert!((p - 1.6).abs() < 1e-9);
        // A lower bound above its share keeps its seats; the others make up the rest.
        let items = [
            item(30.0, 30.0, 40.0),
            item(30.0, 0.0, 40.0),
            item(10.0, 0.0, 40.0),
        ];
        let (a, _) = allocate(50, &items).expect("ok");
        assert!(close(&a, &[30.0, 15.0, 5.0]), "{a:?}");
    }

    #[test]
    fn idle_levels_lend_to_a_busy_one() {
        // Two lenders with nothing to do (targets at their lower bounds, one of them 0) and a
        // borrower wanting 30 of the 40 seats, up to 35.
        let items = [
            item(5.0, 5.0, 20.0),
            item(0.0, 0.0, 20.0),
            item(30.0, 10.0, 35.0),
        ];
        let (a, p) = allocate(40, &items).expect("ok");
        let sum: f64 = a.iter().sum();
        assert!((sum - 40.0).abs() < 1e-6, "{a:?}");
        // p = 40 / 35.001: the borrower gets its share of the target sum, the idle lender
        // with no lower bound next to nothing.
        assert!((p - 40.0 / 35.001).abs() < 1e-9, "{p}");
        assert!(a[2] > 34.0 && a[2] < 35.0 && a[1] < 0.01, "{a:?}");
    }

    #[test]
    fn without_room_every_level_is_at_a_bound() {
        let items = [item(4.0, 2.0, 6.0), item(9.0, 3.0, 9.0)];
        assert_eq!(allocate(5, &items).expect("ok").0, [2.0, 3.0]);
        assert_eq!(allocate(15, &items).expect("ok").0, [6.0, 9.0]);
        assert_eq!(allocate(0, &[item(0.0, 0.0, 3.0)]).expect("ok").0, [0.0]);
    }

    #[test]
    fn impossible_problems_are_errors() {
        let err = |total, items: &[Item]| allocate(total, items).expect_err("impossible");
        assert!(err(3, &[item(4.0, 4.0, 5.0)]).contains("lower bounds sum to 4"));
        assert!(err(9, &[item(4.0, 0.0, 5.0)]).contains("upper bounds sum to 5"));
        assert!(err(4, &[item(1.0, 2.0, 5.0)]).contains("below its lower bound"));
        assert!(err(4, &[item(3.0, 2.0, 1.0)]).contains("upper bound 0 is 1"));
    }
}
