//! How long a work queue holds a key back: Karmada's controller rate limiter
//! (`pkg/sharedcli/ratelimiterflag`, the `--rate-limiter-*` flags every Karmada component
//! takes), which is client-go's `DefaultControllerRateLimiter` with tunable numbers: the larger
//! of a per-key exponential back-off and one token bucket shared by the queue's keys. Karmada's
//! eviction queues add a floor of 1/`--resource-eviction-rate` (its `DynamicRateLimiter`) and
//! use the same limiter to pace their workers between items. Arithmetic and a clock only: the
//! queues that wait on it bring the runtime.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Karmada's `ratelimiterflag.Options`, defaults included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimiterOptions {
    /// `--rate-limiter-base-delay` (5 ms): the first retry delay of a failing key.
    pub base_delay: Duration,
    /// `--rate-limiter-max-delay` (1000 s): the longest retry delay.
    pub max_delay: Duration,
    /// `--rate-limiter-qps` (10): how fast the shared bucket refills.
    pub qps: u32,
    /// `--rate-limiter-bucket-size` (100): how many delays the bucket lets through at once.
    pub bucket_size: u32,
}

impl Default for RateLimiterOptions {
    fn default() -> Self {
        RateLimiterOptions {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10,
            bucket_size: 100,
        }
    }
}

impl RateLimiterOptions {
    /// Karmada's `SetDefaults`: a zero value takes its default instead of disabling anything.
    pub fn with_defaults(self) -> Self {
        fn or<T: Default + PartialEq>(value: T, default: T) -> T {
            if value == T::default() {
                default
            } else {
                value
            }
        }
        let d = RateLimiterOptions::default();
        RateLimiterOptions {
            base_delay: or(self.base_delay, d.base_delay),
            max_delay: or(self.max_delay, d.max_delay),
            qps: or(self.qps, d.qps),
            bucket_size: or(self.bucket_size, d.bucket_size),
        }
    }
}

/// Karmada's `maxEvictionDelay`: the pause between evictions when the rate is 0, which in
/// effect stops them.
const MAX_EVICTION_DELAY: Duration = Duration::from_secs(1800);

/// The pause the `DynamicRateLimiter` puts between two evictions of one worker:
/// 1/`--resource-eviction-rate` seconds, [`MAX_EVICTION_DELAY`] when the rate is 0.
pub fn eviction_interval(rate: f32) -> Duration {
    if rate <= 0.0 {
        return MAX_EVICTION_DELAY;
    }
    Duration::try_from_secs_f64(1.0 / f64::from(rate)).unwrap_or(MAX_EVICTION_DELAY)
}

/// golang.org/x/time/rate's `Limiter` as client-go's bucket limiter uses it: each delay asked
/// for reserves one token, and the delay is how long until that token exists.
#[derive(Debug)]
struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(qps: u32, burst: u32, now: Instant) -> Self {
        TokenBucket {
            qps: f64::from(qps.max(1)),
            burst: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            last: now,
        }
    }

    fn reserve(&mut self, now: Instant) -> Duration {
        if now > self.last {
            let refill = now.duration_since(self.last).as_secs_f64() * self.qps;
            self.tokens = (self.tokens + refill).min(self.burst);
            self.last = now;
        }
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

/// One queue's limiter: the options, the queue's shared bucket and, on the eviction queues,
/// the floor between evictions.
#[derive(Debug)]
pub struct RateLimiter {
    options: RateLimiterOptions,
    bucket: Mutex<TokenBucket>,
    floor: Duration,
}

impl RateLimiter {
    /// Karmada's `DefaultControllerRateLimiter(options)`.
    pub fn new(options: RateLimiterOptions) -> Self {
        let options = options.with_defaults();
        RateLimiter {
            bucket: Mutex::new(TokenBucket::new(
                options.qps,
                options.bucket_size,
                Instant::now(),
            )),
            options,
            floor: Duration::ZERO,
        }
    }

    /// Karmada's `NewGracefulEvictionRateLimiter`: the controller limiter, and never less than
    /// `floor` (see [`eviction_interval`]).
    pub fn with_floor(options: RateLimiterOptions, floor: Duration) -> Self {
        RateLimiter {
            floor,
            ..RateLimiter::new(options)
        }
    }

    /// client-go's `MaxOfRateLimiter.When` for a key that failed `failures` times before: each
    /// part is asked (so the bucket spends a token every time, as client-go's does) and the
    /// longest delay wins.
    pub fn when(&self, failures: u32) -> Duration {
        self.when_at(failures, Instant::now())
    }

    fn when_at(&self, failures: u32, now: Instant) -> Duration {
        let backoff = self
            .options
            .base_delay
            .saturating_mul(2u32.saturating_pow(failures))
            .min(self.options.max_delay);
        let bucket = self
            .bucket
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .reserve(now);
        backoff.max(bucket).max(self.floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_options_take_karmadas_defaults() {
        let zero = RateLimiterOptions {
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            qps: 0,
            bucket_size: 0,
        };
        assert_eq!(zero.with_defaults(), RateLimiterOptions::default());
        let set = RateLimiterOptions {
            qps: 50,
            ..RateLimiterOptions::default()
        };
        assert_eq!(set.with_defaults().qps, 50);
    }

    #[test]
    fn failures_back_off_exponentially_up_to_the_max() {
        let l = RateLimiter::new(RateLimiterOptions::default());
        let t = Instant::now();
        assert_eq!(l.when_at(0, t), Duration::from_millis(5));
        assert_eq!(l.when_at(3, t), Duration::from_millis(40));
        assert_eq!(l.when_at(40, t), Duration::from_secs(1000));
    }

    #[test]
    fn the_bucket_lets_a_burst_through_then_paces_at_qps() {
        let l = RateLimiter::new(RateLimiterOptions {
            base_delay: Duration::from_nanos(1),
            qps: 10,
            bucket_size: 3,
            ..RateLimiterOptions::default()
        });
        let t = Instant::now();
        for _ in 0..3 {
            assert_eq!(l.when_at(0, t), Duration::from_nanos(1));
        }
        // The fourth and fifth wait for tokens 0.1 s and 0.2 s away.
        assert_eq!(l.when_at(0, t), Duration::from_millis(100));
        assert_eq!(l.when_at(0, t), Duration::from_millis(200));
        // A second later ten tokens came back, of which two were already spent.
        let later = t + Duration::from_secs(1);
        assert_eq!(l.when_at(0, later), Duration::from_nanos(1));
    }

    #[test]
    fn eviction_limiter_never_goes_below_its_floor() {
        let floor = eviction_interval(0.5);
        assert_eq!(floor, Duration::from_secs(2));
        let l = RateLimiter::with_floor(RateLimiterOptions::default(), floor);
        assert_eq!(l.when(0), Duration::from_secs(2));
        assert_eq!(
            l.when(30),
            Duration::from_secs(1000),
            "back-off beyond it wins"
        );
        assert_eq!(eviction_interval(0.0), MAX_EVICTION_DELAY);
        assert_eq!(eviction_interval(4.0), Duration::from_millis(250));
        assert_eq!(eviction_interval(f32::INFINITY), Duration::ZERO);
    }
}
