//! Moving workloads before reporting on them.
//!
//! After a member fails, one taint makes every binding on it move at once: the taint manager,
//! the scheduler, the binding and execution controllers rewrite bindings and Works and push
//! the new copies to the remaining members. The status controllers (Work status, binding
//! status, graceful eviction) react to the same changes, and on a busy control plane every
//! controller's workers share the same cores. Their writes do not bring a replica up anywhere,
//! yet with as many workers each they took about a third of the CPU while replicas were still
//! waiting to move.
//!
//! So, as kube-apiserver's priority levels let one class of requests go first, the queues of
//! the controllers that place workloads count their waiting keys here, and while any waits, the
//! status controllers hold back: all their workers but one wait until placement has caught up,
//! and that one takes a key at least every half second, so no status queue stops. Changes
//! that arrive meanwhile coalesce in the waiting keys (a Work whose status changed three times
//! is aggregated once). A burst is what this is for: once placement work has been waiting for
//! [`BURST`] without a break, the first worker stops holding back, so status under sustained
//! load lags by one worker's pace, not by half a second per key.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long placement work may keep status controllers' first workers holding back.
pub const BURST: Duration = Duration::from_secs(10);

/// How long a status queue's first worker holds each key back during a burst.
pub const HOLD: Duration = Duration::from_millis(500);

/// The number of placement keys waiting, shared by the control plane's queues.
#[derive(Debug)]
pub struct Precedence {
    waiting: AtomicUsize,
    clear: Notify,
    /// What `since` counts from.
    origin: Instant,
    /// When the waiting count last rose from zero, in milliseconds from `origin`.
    since: AtomicU64,
}

impl Default for Precedence {
    fn default() -> Self {
        Precedence {
            waiting: AtomicUsize::new(0),
            clear: Notify::new(),
            origin: Instant::now(),
            since: AtomicU64::new(0),
        }
    }
}

/// What a queue is to the [`Precedence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Its keys count as placement work.
    Placement,
    /// Its workers wait while placement work waits, the first one for a bounded time.
    Status,
}

impl Precedence {
    /// A key joined a placement queue.
    pub(crate) fn queued(&self) {
        if self.waiting.fetch_add(1, Ordering::AcqRel) == 0 {
            let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.since.store(now, Ordering::Release);
        }
    }

    /// Whether placement work waits, and has not been waiting without a break for [`BURST`].
    pub fn bursting(&self) -> bool {
        if self.waiting() == 0 {
            return false;
        }
        let since = Duration::from_millis(self.since.load(Ordering::Acquire));
        self.origin.elapsed().saturating_sub(since) < BURST
    }

    /// A key left a placement queue (a worker took it).
    pub(crate) fn taken(&self) {
        if self.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.clear.notify_waiters();
        }
    }

    /// Placement keys waiting now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// What a status queue's worker waits for before taking a key: no placement key waiting,
    /// or, for the queue's first worker, at most [`HOLD`] and only during a burst, so status
    /// never stops.
    pub(crate) async fn hold(&self, first_worker: bool) {
        if !first_worker {
            self.cleared().await;
        } else if self.bursting() {
            let _ = tokio::time::timeout(HOLD, self.cleared()).await;
        }
    }

    /// Returns once no placement key waits.
    pub async fn cleared(&self) {
        loop {
            // Registered before the check, so a `taken` between the two is not missed.
            let notified = self.clear.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.waiting() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn cleared_returns_once_the_last_waiting_key_is_taken() {
        let p = Arc::new(Precedence::default());
        p.cleared().await;
        p.queued();
        p.queued();
        let waiter = tokio::spawn({
            let p = p.clone();
            async move { p.cleared().await }
        });
        p.taken();
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one key still waits");
        p.taken();
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("cleared within 10 s")
            .expect("waiter");
        assert_eq!(p.waiting(), 0);
    }
}
