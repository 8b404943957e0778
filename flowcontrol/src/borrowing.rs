//! Seat borrowing between priority levels (k8s.io/apiserver pkg/util/flowcontrol
//! apf_controller.go's `updateBorrowing`): every [`BORROWING_ADJUSTMENT_PERIOD`], and on every
//! new configuration, each level's seat demand over the period past is summed up, and the
//! nominal seats of all levels are divided afresh ([`crate::fairalloc`]). A level gets at least
//! its nominal seats less those it lends (and, when it had the demand, up to its nominal seats),
//! at most its nominal seats plus those it may borrow, and otherwise a fair share of its
//! smoothed demand. Exempt levels take part as kube's do: their demand counts and they lend
//! what their `lendablePercent` lets, though their own requests are never held back.

use std::fmt::Write as _;
use std::time::Duration;

use crate::fairalloc::{Item, allocate};
use crate::{FlowControl, Level, LevelState};

/// How often the current limits are adjusted (kube's borrowingAdjustmentPeriod).
pub const BORROWING_ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// A gauge of each level: its name (after `apiserver_flowcontrol_`), help and value.
type LevelGauge = (&'static str, &'static str, fn(&Level) -> f64);

/// kube's gauges of each level's seats and demand.
const LEVEL_GAUGES: [LevelGauge; 9] = [
    (
        "nominal_limit_seats",
        "Nominal number of execution seats configured for each priority level",
        |l| l.seats.nominal as f64,
    ),
    (
        "lower_limit_seats",
        "Configured lower bound on number of execution seats available to each priority level",
        |l| l.seats.min as f64,
    ),
    (
        "upper_limit_seats",
        "Configured upper bound on number of execution seats available to each priority level",
        |l| l.seats.max as f64,
    ),
    (
        "current_limit_seats",
        "current derived number of execution seats available to each priority level",
        |l| l.limit as f64,
    ),
    (
        "demand_seats_high_watermark",
        "High watermark, over last adjustment period, of demand_seats",
        |l| l.stats.high_watermark,
    ),
    (
        "demand_seats_average",
        "Time-weighted average, over last adjustment period, of demand_seats",
        |l| l.stats.average,
    ),
    (
        "demand_seats_stdev",
        "Time-weighted standard deviation, over last adjustment period, of demand_seats",
        |l| l.stats.std_dev,
    ),
    ("demand_seats_smoothed", "Smoothed seat demands", |l| {
        l.stats.smoothed
    }),
    ("target_seats", "Seat allocation targets", |l| l.target),
];

impl FlowControl {
    /// Adjusts every level's current limit to the demand seen since the last adjustment, and
    /// hands out the seats a higher limit frees.
    pub fn update_borrowing(&self) {
        let mut fair_frac = self.borrowing.lock().unwrap_or_else(|e| e.into_inner());
        let levels = self.sorted_levels();
        let mut items = Vec::with_capacity(levels.len());
        let mut nominal_sum = 0usize;
        for s in &levels {
            let mut l = s.lock();
            let observed = l.demand.reset();
            l.stats.update(observed);
            // Never below what it does not lend, nor below the demand it just had as far as
            // its nominal seats cover it.
            let lower =
                (l.seats.min as f64).max((l.seats.nominal as f64).min(l.stats.high_watermark));
            let item = Item {
                lower,
                upper: l.seats.max as f64,
                target: lower.max(l.stats.smoothed),
            };
            l.target = item.target;
            items.push(item);
            nominal_sum = nominal_sum.saturating_add(l.seats.nominal);
        }
        let allocs = match allocate(nominal_sum, &items) {
            Ok((allocs, p)) => {
                *fair_frac = p;
                allocs
            }
            Err(e) => {
                // Cannot happen with bounds derived from the seats themselves; the levels keep
                // their limits rather than lose them.
                tracing::error!(error = %e, "cannot divide the seats among the priority levels");
                return;
            }
        };
        for (s, alloc) in levels.iter().zip(allocs) {
            let mut l = s.lock();
            let limit = alloc.round() as usize;
            if limit != l.limit {
                tracing::debug!(
                    priority_level = %s.name,
                    from = l.limit,
                    to = limit,
                    demand_high_watermark = l.stats.high_watermark,
                    demand_smoothed = l.stats.smoothed,
                    fair_frac = *fair_frac,
                    "current concurrency limit adjusted"
                );
            }
            l.limit = limit;
            LevelState::dispatch(&mut l);
        }
    }

    /// kube's gauges of the levels' seats and demand, and of the last fair fraction.
    pub(crate) fn render_level_gauges(&self, out: &mut String) {
        let levels = self.sorted_levels();
        let rows: Vec<(&str, [f64; LEVEL_GAUGES.len()])> = levels
            .iter()
            .map(|s| {
                let l = s.lock();
                (s.name.as_str(), LEVEL_GAUGES.map(|(_, _, value)| value(&l)))
            })
            .collect();
        for (i, (name, help, _)) in LEVEL_GAUGES.iter().enumerate() {
            let _ = writeln!(
                out,
                "# HELP apiserver_flowcontrol_{name} {help}\n# TYPE apiserver_flowcontrol_{name} gauge"
            );
            for (level, values) in &rows {
                let _ = writeln!(
                    out,
                    "apiserver_flowcontrol_{name}{{priority_level=\"{level}\"}} {}",
                    values[i]
                );
            }
        }
        let fair_frac = *self.borrowing.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_seat_fair_frac Fair fraction of server's concurrency to allocate to each priority level that can use it\n# TYPE apiserver_flowcontrol_seat_fair_frac gauge\napiserver_flowcontrol_seat_fair_frac {fair_frac}"
        );
    }
}
