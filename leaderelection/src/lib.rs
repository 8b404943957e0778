//! Leader election among the control plane's replicas, as client-go's
//! tools/leaderelection runs it (`LeaderElector`): the replicas contend for a lock (a
//! `coordination.k8s.io/v1` Lease, [`resourcelock::LeaseLock`]); the holder renews it every
//! retry period and runs the controllers while it leads; the others poll it and take it once
//! it is free (released) or expired, expiry being judged on each observer's own clock from
//! when it last saw the record change. A leader that cannot renew within the renew deadline
//! stops leading — before the lease can expire for the others, since the renew deadline is
//! shorter than the lease duration. Writes are conditional on the resourceVersion read, so of
//! two replicas racing for a free lease one wins and the other sees a conflict.

pub mod resourcelock;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

pub use resourcelock::{Interface, LeaderElectionRecord, LeaseLock, LockError};

/// client-go's `JitterFactor`: an acquiring participant waits between one and 2.2 retry
/// periods between attempts, so that waiting replicas do not all call at once.
pub const JITTER_FACTOR: f64 = 1.2;

/// How an election is run (client-go's `LeaderElectionConfig`).
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// How long non-leaders wait after the last change they saw before taking the lock.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How long participants wait between attempts.
    pub retry_period: Duration,
    /// Release the lock when the election is cancelled (shutdown), so that another
    /// participant takes over at once instead of after the lease duration.
    pub release_on_cancel: bool,
    /// The election's name (the metric's `name` label).
    pub name: String,
}

/// Invalid election settings, worded as client-go's `NewLeaderElector` words them.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl LeaderElectionConfig {
    /// client-go's checks in `NewLeaderElector`, in its order and words.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: &str| Err(ConfigError(m.to_owned()));
        if self.lease_duration <= self.renew_deadline {
            return err("leaseDuration must be greater than renewDeadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return err("renewDeadline must be greater than retryPeriod*JitterFactor");
        }
        if self.lease_duration.is_zero() {
            return err("leaseDuration must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return err("renewDeadline must be greater than zero");
        }
        if self.retry_period.is_zero() {
            return err("retryPeriod must be greater than zero");
        }
        Ok(())
    }
}

/// What [`LeaderCallbacks::on_started_leading`] started; dropping it must stop that work.
pub type Leading = Box<dyn Send>;

/// What happens as leadership comes and goes (client-go's `LeaderCallbacks`).
pub struct LeaderCallbacks {
    /// Starts the leader's work; the returned handle is dropped when leading ends (client-go
    /// cancels the context it passed instead).
    pub on_started_leading: Box<dyn FnMut() -> Leading + Send>,
    /// Called after the leader's work was stopped.
    pub on_stopped_leading: Box<dyn FnMut() + Send>,
    /// Called when the observed holder changes (this participant included).
    pub on_new_leader: Box<dyn FnMut(&str) + Send>,
}

/// How [`LeaderElector::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The shutdown signal fired.
    Shutdown,
    /// This participant led and could not renew within the renew deadline.
    Lost,
}

/// client-go's `leader_election_master_status` gauge for one election: 1 while this
/// participant leads, 0 otherwise.
#[derive(Clone, Debug)]
pub struct MasterStatus {
    name: Arc<str>,
    leading: Arc<AtomicBool>,
}

impl MasterStatus {
    fn new(name: &str) -> MasterStatus {
        MasterStatus {
            name: name.into(),
            leading: Arc::default(),
        }
    }

    /// Whether this participant leads.
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::Relaxed)
    }

    fn set(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    /// The gauge in the Prometheus text format.
    pub fn render(&self) -> String {
        format!(
            "# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.\n# TYPE leader_election_master_status gauge\nleader_election_master_status{{name=\"{}\"}} {}\n",
            self.name,
            u8::from(self.is_leading())
        )
    }
}

/// Where the elector reads the time (client-go's `clock.Clock`); tests move it by hand.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The monotonic system clock.
#[derive(Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// One participant of an election (client-go's `LeaderElector`).
pub struct LeaderElector<L> {
    config: LeaderElectionConfig,
    lock: L,
    clock: Arc<dyn Clock>,
    /// The record as last read or written, and when (on the local clock) it last changed.
    observed_record: LeaderElectionRecord,
    observed_time: Instant,
    /// When the latest call of `try_acquire_or_renew` began.
    attempt_started: Instant,
    reported_leader: String,
    status: MasterStatus,
}

impl<L: Interface> LeaderElector<L> {
    /// An elector contending for `lock`; fails on settings client-go refuses.
    pub fn new(config: LeaderElectionConfig, lock: L) -> Result<LeaderElector<L>, ConfigError> {
        LeaderElector::with_clock(config, lock, Arc::new(RealClock))
    }

    /// An elector reading the time from `clock`.
    pub fn with_clock(
        config: LeaderElectionConfig,
        lock: L,
        clock: Arc<dyn Clock>,
    ) -> Result<LeaderElector<L>, ConfigError> {
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(ConfigError("Lock identity is empty".into()));
        }
        let status = MasterStatus::new(&config.name);
        Ok(LeaderElector {
            observed_time: clock.now(),
            attempt_started: clock.now(),
            config,
            lock,
            clock,
            observed_record: LeaderElectionRecord::default(),
            reported_leader: String::new(),
            status,
        })
    }

    /// The gauge of this participant's leadership.
    pub fn master_status(&self) -> MasterStatus {
        self.status.clone()
    }

    /// The holder as last observed.
    pub fn get_leader(&self) -> &str {
        &self.observed_record.holder_identity
    }

    /// Whether the last observed record names this participant.
    pub fn is_leader(&self) -> bool {
        self.observed_record.holder_identity == self.lock.identity()
    }

    /// The lock, for inspection.
    pub fn lock(&self) -> &L {
        &self.lock
    }

    /// Campaigns until this participant leads, leads until it cannot renew in time or
    /// `shutdown` turns true, then stops the leader's work (before anything else, so that it
    /// never runs past the lease) and, as configured, releases the lock (client-go's `Run`).
    /// Can be called again after [`Ended::Lost`] to campaign anew.
    pub async fn run(
        &mut self,
        callbacks: &mut LeaderCallbacks,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Ended {
        tokio::select! {
            () = self.acquire(callbacks) => {}
            () = signalled(shutdown) => return Ended::Shutdown,
        }
        let work = (callbacks.on_started_leading)();
        let ended = tokio::select! {
            () = self.renew(callbacks) => Ended::Lost,
            () = signalled(shutdown) => Ended::Shutdown,
        };
        self.status.set(false);
        drop(work);
        (callbacks.on_stopped_leading)();
        self.lock.record_event("stopped leading").await;
        if self.config.release_on_cancel {
            self.release().await;
        }
        ended
    }

    /// client-go's `acquire`: tries at once, then every jittered retry period — and, where
    /// client-go would sleep through it, also at the moment the observed lease expires, and as
    /// soon as a watched lock is seen released.
    async fn acquire(&mut self, callbacks: &mut LeaderCallbacks) {
        let desc = self.lock.describe();
        tracing::info!(lock = %desc, "attempting to acquire leader lease...");
        let mut changes = self.lock.changes();
        loop {
            // A call that hangs must not stall the campaign (client-go bounds it through the
            // request's context).
            let acquired =
                tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew())
                    .await
                    .unwrap_or(false);
            self.maybe_report_transition(callbacks);
            if acquired {
                self.lock.record_event("became leader").await;
                self.status.set(true);
                tracing::info!(lock = %desc, "successfully acquired lease");
                return;
            }
            tracing::debug!(lock = %desc, "failed to acquire lease");
            let poll = tokio::time::Instant::now() + jittered(self.config.retry_period);
            self.wait_for_turn(poll, &mut changes).await;
        }
    }

    /// Waits until the next attempt is due: the next poll at `poll`, or earlier when the
    /// lease held by another expires on this participant's clock or is released. client-go
    /// only polls, so a survivor takes a dead leader's lease up to two jittered retry periods
    /// late (one before it sees the last renewal, one after expiry); watching the lock removes
    /// the first, waking at expiry the second. Safety is unchanged: the lease clock still
    /// starts when this participant saw the record change, never before the write.
    async fn wait_for_turn(
        &mut self,
        poll: tokio::time::Instant,
        changes: &mut Option<watch::Receiver<Option<LeaderElectionRecord>>>,
    ) {
        loop {
            // Released, never seen held, or held by this participant: the next poll finds out.
            let wake = if self.observed_record.holder_identity.is_empty() || self.is_leader() {
                poll
            } else {
                // Already expired means an attempt at expiry failed (an error, or a lost
                // race): back to polling, never a busy loop.
                let expiry = self.observed_time + self.lease_duration_observed();
                match expiry.checked_duration_since(self.clock.now()) {
                    Some(remaining) if !remaining.is_zero() => {
                        poll.min(tokio::time::Instant::now() + remaining)
                    }
                    _ => poll,
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until(wake) => return,
                record = next_change(changes) => {
                    let Some(record) = record else { continue };
                    if record != self.observed_record {
                        let released = record.holder_identity.is_empty();
                        self.set_observed_record(record);
                        if released {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The lease duration of the observed record.
    fn lease_duration_observed(&self) -> Duration {
        Duration::from_secs(u64::try_from(self.observed_record.lease_duration_seconds).unwrap_or(0))
    }

    /// client-go's `renew`: renews every retry period; returns when a renewal did not
    /// succeed in time.
    async fn renew(&mut self, callbacks: &mut LeaderCallbacks) {
        let desc = self.lock.describe();
        let retry = self.config.retry_period;
        loop {
            tokio::time::sleep(retry).await;
            // client-go gives up `renewDeadline` after the renewal attempts began, one retry
            // period after the last success ended; here after its start, which is earlier
            // when the answer was slow: the write may have landed, and started the others'
            // lease clocks, long before the answer came back.
            let deadline = tokio::time::Instant::from_std(self.attempt_started)
                + retry
                + self.config.renew_deadline;
            let renewed = tokio::time::timeout_at(deadline, async {
                loop {
                    if self.try_acquire_or_renew().await {
                        return;
                    }
                    tokio::time::sleep(retry).await;
                }
            })
            .await
            .is_ok();
            self.maybe_report_transition(callbacks);
            if !renewed {
                tracing::info!(lock = %desc, "failed to renew lease: timed out waiting for the condition");
                return;
            }
            tracing::trace!(lock = %desc, "successfully renewed lease");
        }
    }

    /// Gives the lock up, bounded by the renew deadline (client-go's `release`); nothing
    /// happens unless the last observed record names this participant. For electors run
    /// without `release_on_cancel` that give the lock up only on some of their ends.
    pub async fn release(&mut self) -> bool {
        tokio::time::timeout(self.config.renew_deadline, self.try_release())
            .await
            .unwrap_or(false)
    }

    /// client-go's `tryRelease`: an empty holder with a one-second lease, so the others
    /// take the lock at their next attempt; retried on a conflict.
    async fn try_release(&mut self) -> bool {
        let desc = self.lock.describe();
        loop {
            let current = match self.lock.get().await {
                Ok(r) => r,
                Err(LockError::NotFound) => {
                    tracing::info!(lock = %desc, "lease lock not found");
                    return false;
                }
                Err(e) => {
                    tracing::error!(lock = %desc, error = %e, "error retrieving resource lock");
                    return false;
                }
            };
            // client-go looks only at the record it observed last; the one just read must
            // name this participant too, or a replica that lost the lease would clear the
            // new leader's hold.
            if !self.is_leader() || current.holder_identity != self.lock.identity() {
                return true;
            }
            let now = jiff::Timestamp::now();
            let record = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                leader_transitions: current.leader_transitions,
            };
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.set_observed_record(record);
                    tracing::info!(lock = %desc, "released leader lease");
                    return true;
                }
                Err(LockError::Conflict) => {
                    tracing::debug!(lock = %desc, "conflict when releasing lease, retrying");
                }
                Err(e) => {
                    tracing::error!(lock = %desc, error = %e, "failed to release lease");
                    return false;
                }
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`: takes the lock when it is absent, free or expired,
    /// or renews it when this participant holds it; false when someone else holds it or a
    /// call failed (a conflict is a lost race).
    pub async fn try_acquire_or_renew(&mut self) -> bool {
        let desc = self.lock.describe();
        let now = self.clock.now();
        self.attempt_started = now;
        let wall = jiff::Timestamp::now();
        let mut record = LeaderElectionRecord {
            holder_identity: self.lock.identity().to_owned(),
            lease_duration_seconds: i32::try_from(self.config.lease_duration.as_secs())
                .unwrap_or(i32::MAX),
            acquire_time: Some(wall),
            renew_time: Some(wall),
            leader_transitions: 0,
        };

        // The fast path: the leader renews what it wrote last, without reading first.
        if self.is_leader() && self.is_lease_valid(now) {
            record.acquire_time = self.observed_record.acquire_time;
            record.leader_transitions = self.observed_record.leader_transitions;
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.set_observed_record(record);
                    return true;
                }
                Err(e) => {
                    tracing::debug!(lock = %desc, error = %e, "failed to update lease optimistically, falling back to slow path");
                }
            }
        }

        let old = match self.lock.get().await {
            Ok(r) => r,
            Err(LockError::NotFound) => {
                if let Err(e) = self.lock.create(&record).await {
                    tracing::error!(lock = %desc, error = %e, "error initially creating lease lock");
                    return false;
                }
                self.set_observed_record(record);
                return true;
            }
            Err(e) => {
                tracing::error!(lock = %desc, error = %e, "error retrieving lease lock");
                return false;
            }
        };
        if old != self.observed_record {
            self.set_observed_record(old.clone());
        }
        if !old.holder_identity.is_empty() && self.is_lease_valid(now) && !self.is_leader() {
            tracing::trace!(lock = %desc, holder = %old.holder_identity, "lease is held and has not yet expired");
            return false;
        }
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        if let Err(e) = self.lock.update(&record).await {
            tracing::info!(lock = %desc, error = %e, "failed to update lease");
            return false;
        }
        self.set_observed_record(record);
        true
    }

    fn is_lease_valid(&self, now: Instant) -> bool {
        self.observed_time + self.lease_duration_observed() > now
    }

    fn set_observed_record(&mut self, record: LeaderElectionRecord) {
        self.observed_record = record;
        self.observed_time = self.clock.now();
    }

    fn maybe_report_transition(&mut self, callbacks: &mut LeaderCallbacks) {
        if self.observed_record.holder_identity == self.reported_leader {
            return;
        }
        self.reported_leader = self.observed_record.holder_identity.clone();
        (callbacks.on_new_leader)(&self.reported_leader);
    }
}

/// The next record from a lock's change stream; pending forever without one (or once its
/// task ended, after which the elector only polls).
async fn next_change(
    changes: &mut Option<watch::Receiver<Option<LeaderElectionRecord>>>,
) -> Option<LeaderElectionRecord> {
    let Some(rx) = changes else {
        return std::future::pending().await;
    };
    if rx.changed().await.is_err() {
        *changes = None;
        return std::future::pending().await;
    }
    rx.borrow_and_update().clone()
}

/// Resolves once `shutdown` is true (or its sender is gone).
async fn signalled(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}

/// client-go's `wait.Jitter`: `d` plus up to `JITTER_FACTOR` times `d`.
fn jittered(d: Duration) -> Duration {
    d + d.mul_f64(JITTER_FACTOR * rand::random::<f64>())
}

#[cfg(test)]
mod tests;
