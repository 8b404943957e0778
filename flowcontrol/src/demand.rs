//! A level's seat demand (the seats its executing and waiting requests take) over time, and
//! the statistics borrowing reads of it each adjustment period (k8s.io/apiserver
//! pkg/util/flowcontrol/fairqueuing/integrator.go, and apf_controller.go's `seatDemandStats`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where the controller reads the time: the monotonic clock, or one a test moves by hand.
#[derive(Clone, Default)]
pub(crate) struct Clock(Option<Arc<Mutex<Instant>>>);

impl Clock {
    pub(crate) fn now(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(t) => *t.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// A clock standing still until [`Clock::advance`] moves it.
    #[cfg(test)]
    pub(crate) fn manual() -> Clock {
        Clock(Some(Arc::new(Mutex::new(Instant::now()))))
    }

    #[cfg(test)]
    pub(crate) fn advance(&self, by: std::time::Duration) {
        if let Some(t) = &self.0 {
            *t.lock().unwrap_or_else(|e| e.into_inner()) += by;
        }
    }
}

/// What an [`Integrator`] saw since it was last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Observation {
    /// Seconds observed.
    pub duration: f64,
    /// Time-weighted mean (0 over no time).
    pub average: f64,
    /// Time-weighted standard deviation (0 over no time).
    pub deviation: f64,
    /// Highest value.
    pub max: f64,
}

/// Integrates a value that changes in steps: the integrals over time of 1, x and x².
pub(crate) struct Integrator {
    clock: Clock,
    since: Instant,
    x: f64,
    integrals: [f64; 3],
    max: f64,
}

impl Default for Integrator {
    fn default() -> Integrator {
        Integrator::new(Clock::default())
    }
}

impl Integrator {
    pub(crate) fn new(clock: Clock) -> Integrator {
        Integrator {
            since: clock.now(),
            clock,
            x: 0.0,
            integrals: [0.0; 3],
            max: 0.0,
        }
    }

    /// The value from now on.
    pub(crate) fn set(&mut self, x: f64) {
        self.accumulate();
        self.x = x;
        self.max = self.max.max(x);
    }

    fn accumulate(&mut self) {
        let now = self.clock.now();
        let dt = now.saturating_duration_since(self.since).as_secs_f64();
        self.since = now;
        self.integrals[0] += dt;
        self.integrals[1] += dt * self.x;
        self.integrals[2] += dt * self.x * self.x;
    }

    /// What was seen since the last reset; the next period starts now, at the current value.
    pub(crate) fn reset(&mut self) -> Observation {
        self.accumulate();
        let [t, sx, sxx] = self.integrals;
        let mut obs = Observation {
            duration: t,
            max: self.max,
            ..Observation::default()
        };
        if t > 0.0 {
            obs.average = sx / t;
            let variance = sxx / t - obs.average * obs.average;
            // Rounding can make a constant's variance a hair below zero.
            obs.deviation = if variance > 0.0 { variance.sqrt() } else { 0.0 };
        }
        self.integrals = [0.0; 3];
        self.max = self.x;
        obs
    }
}

/// How much each period's demand envelope (mean + standard deviation) still weighs a period
/// later: kube's seatDemandSmoothingCoefficient, a half-life of five minutes of 10 s periods.
pub const SEAT_DEMAND_SMOOTHING: f64 = 0.977;

/// The demand statistics of the last adjustment period, and the smoothed demand that is a
/// level's target (kube's seatDemandStats).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemandStats {
    /// Time-weighted mean.
    pub average: f64,
    /// Time-weighted standard deviation.
    pub std_dev: f64,
    /// Highest demand.
    pub high_watermark: f64,
    /// The envelope when it rises, decaying towards it by [`SEAT_DEMAND_SMOOTHING`] per
    /// period when it falls.
    pub smoothed: f64,
}

impl DemandStats {
    /// Takes in one period's observation; a period of no time changes only the watermark.
    pub(crate) fn update(&mut self, obs: Observation) {
        self.high_watermark = obs.max;
        if obs.duration <= 0.0 {
            return;
        }
        self.average = obs.average;
        self.std_dev = obs.deviation;
        let envelope = obs.average + obs.deviation;
        self.smoothed = envelope
            .max(SEAT_DEMAND_SMOOTHING * self.smoothed + (1.0 - SEAT_DEMAND_SMOOTHING) * envelope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_integrator_weighs_values_by_their_time() {
        let clock = Clock::manual();
        let mut i = Integrator::new(clock.clone());
        // 2 for 1 s, 6 for 3 s: mean 5, variance (4 + 108) / 4 - 25 = 3.
        i.set(2.0);
        clock.advance(Duration::from_secs(1));
        i.set(6.0);
        clock.advance(Duration::from_secs(3));
        let obs = i.reset();
        assert_eq!(obs.duration, 4.0);
        assert_eq!(obs.average, 5.0);
        assert!((obs.deviation - 3f64.sqrt()).abs() < 1e-12, "{obs:?}");
        assert_eq!(obs.max, 6.0);
        // The next period starts at the current value: its watermark is that, not the old one.
        i.set(1.0);
        clock.advance(Duration::from_secs(2));
        let obs = i.reset();
        assert_eq!((obs.average, obs.deviation, obs.max), (1.0, 0.0, 6.0));
        clock.advance(Duration::from_secs(2));
        assert_eq!(i.reset().max, 1.0);
        // No time, no mean.
        let obs = i.reset();
        assert_eq!((obs.duration, obs.average, obs.max), (0.0, 0.0, 1.0));
    }

    #[test]
    fn smoothed_demand_rises_at_once_and_decays_slowly() {
        let obs = |average, deviation| Observation {
            duration: 10.0,
            average,
            deviation,
            max: average + deviation,
        };
        let mut s = DemandStats::default();
        s.update(obs(8.0, 2.0));
        assert_eq!(s.smoothed, 10.0);
        // The envelope drops to 0: the smoothed demand keeps 97.7% of itself each period.
        s.update(obs(0.0, 0.0));
        assert!((s.smoothed - 9.77).abs() < 1e-12, "{s:?}");
        s.update(obs(0.0, 0.0));
        assert!((s.smoothed - 9.77 * 0.977).abs() < 1e-12, "{s:?}");
        assert_eq!((s.average, s.std_dev, s.high_watermark), (0.0, 0.0, 0.0));
        // After 30 periods (five minutes) about half is left.
        for _ in 0..28 {
            s.update(obs(0.0, 0.0));
        }
        assert!((s.smoothed / 10.0 - 0.977f64.powi(30)).abs() < 1e-12);
        assert!((0.49..0.51).contains(&(s.smoothed / 10.0)), "{s:?}");
        // A rise above it is taken at once.
        s.update(obs(12.0, 1.0));
        assert_eq!(s.smoothed, 13.0);
        // A period of no time changes only the watermark.
        s.update(Observation {
            max: 3.0,
            ..Observation::default()
        });
        assert_eq!((s.smoothed, s.average, s.high_watermark), (13.0, 12.0, 3.0));
    }
}
