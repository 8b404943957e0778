//! A work queue with per-key deduplication and per-key exponential back-off, the shape of
//! client-go's rate-limited work queue: a key waiting in the queue is not added twice, a key being
//! processed is re-queued once it is done if it was added meanwhile, and a failing key is retried
//! later and later (5 ms doubling, capped).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use component_base::metrics::{self, workqueue::QueueMetrics};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// First retry delay of a failing key (client-go's ItemExponentialFailureRateLimiter base).
const BASE_DELAY: Duration = Duration::from_millis(5);
/// Longest retry delay. Karmada's default is 1000 s; controllers here also re-queue on the
/// events that end a failure (a cluster becoming ready), so a shorter cap only costs a few
/// cheap retries.
const MAX_DELAY: Duration = Duration::from_secs(30);

/// What a reconciler asks the queue to do with its key after a successful pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Nothing more to do until the key is added again.
    No,
    /// Process the key again after the given delay.
    After(Duration),
}

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    /// Keys waiting for a delayed add; a second delayed add of the same key is dropped.
    delayed: HashSet<K>,
    processing: HashSet<K>,
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    /// When each waiting key (queued, or dirty while processing) was added, for
    /// `workqueue_queue_duration_seconds`.
    added_at: HashMap<K, Instant>,
}

struct Inner<K> {
    name: &'static str,
    state: Mutex<State<K>>,
    notify: Notify,
    /// client-go's `workqueue_*` series of this queue's name.
    metrics: QueueMetrics,
    /// Numbers each pass, for the metrics of the work in progress.
    next_pass: AtomicU64,
}

/// A deduplicating, rate-limited queue of keys shared by a controller's workers.
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: self.inner.clone(),
        }
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Debug + Send + Sync + 'static,
{
    /// An empty queue; `name` appears in logs and labels its `workqueue_*` metrics.
    pub fn new(name: &'static str) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                name,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    queued: HashSet::new(),
                    delayed: HashSet::new(),
                    processing: HashSet::new(),
                    dirty: HashSet::new(),
                    failures: HashMap::new(),
                    added_at: HashMap::new(),
                }),
                notify: Notify::new(),
                metrics: QueueMetrics::new(metrics::global(), name),
                next_pass: AtomicU64::new(0),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A worker never panics while holding the lock, so poisoning cannot leave the state
        // half-updated; recover the guard rather than propagate a panic.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a key unless it is already waiting; a key being processed is processed again once
    /// its current pass ends.
    pub fn add(&self, key: K) {
        let mut st = self.lock();
        if st.queued.contains(&key) {
            return;
        }
        if st.processing.contains(&key) {
            if st.dirty.insert(key.clone()) {
                st.added_at.insert(key, Instant::now());
                self.inner.metrics.added();
            }
            return;
        }
        st.queued.insert(key.clone());
        st.added_at.insert(key.clone(), Instant::now());
        st.queue.push_back(key);
        drop(st);
        self.inner.metrics.added();
        self.inner.notify.notify_one();
    }

    /// Adds many keys at once.
    pub fn add_all(&self, keys: impl IntoIterator<Item = K>) {
        for k in keys {
            self.add(k);
        }
    }

    /// Adds a key after a delay, unless it is already waiting for one: many changes in a short
    /// time then make one pass.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        if !self.lock().delayed.insert(key.clone()) {
            return;
        }
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.lock().delayed.remove(&key);
            q.add(key);
        });
    }

    /// Adds a key after its next back-off delay.
    pub fn add_rate_limited(&self, key: K) {
        let delay = {
            let mut st = self.lock();
            let n = st.failures.entry(key.clone()).or_insert(0);
            let exp = (*n).min(20);
            *n = n.saturating_add(1);
            BASE_DELAY.saturating_mul(1u32 << exp).min(MAX_DELAY)
        };
        self.inner.metrics.retried();
        self.add_after(key, delay);
    }

    /// Clears a key's back-off after a success.
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// How many times the key has failed in a row.
    pub fn failures(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Keys waiting to be processed.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next key and the number of its pass.
    async fn get(&self) -> (K, u64) {
        loop {
            {
                let mut st = self.lock();
                if let Some(k) = st.queue.pop_front() {
                    st.queued.remove(&k);
                    st.processing.insert(k.clone());
                    let waited = st.added_at.remove(&k).map(|t| t.elapsed());
                    drop(st);
                    let pass = self.inner.next_pass.fetch_add(1, Ordering::Relaxed);
                    self.inner.metrics.taken(pass, waited.unwrap_or_default());
                    return (k, pass);
                }
            }
            self.inner.notify.notified().await;
        }
    }

    fn done(&self, key: &K, pass: u64) {
        self.inner.metrics.done(pass);
        let mut st = self.lock();
        st.processing.remove(key);
        if st.dirty.remove(key) && st.queued.insert(key.clone()) {
            st.queue.push_back(key.clone());
            drop(st);
            self.inner.notify.notify_one();
        }
    }

    /// Starts `workers` tasks that take keys and run `reconcile` on them. An error retries the
    /// key with back-off; success clears its back-off and follows the returned [`Requeue`].
    pub fn run<F, Fut, E>(&self, workers: usize, reconcile: F) -> Vec<JoinHandle<()>>
    where
        F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Requeue, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        (0..workers.max(1))
            .map(|_| {
                let q = self.clone();
                let f = reconcile.clone();
                tokio::spawn(async move {
                    loop {
                        let (key, pass) = q.get().await;
                        match f(key.clone()).await {
                            Ok(Requeue::No) => q.forget(&key),
                            Ok(Requeue::After(d)) => {
                                q.forget(&key);
                                q.add_after(key.clone(), d);
                            }
                            Err(e) => {
                                let n = q.failures(&key);
                                if n < 3 {
                                    tracing::debug!(queue = q.inner.name, ?key, error = %e, "reconcile failed; retrying");
                                } else {
                                    tracing::warn!(queue = q.inner.name, ?key, error = %e, failures = n, "reconcile failed; retrying");
                                }
                                q.add_rate_limited(key.clone());
                            }
                        }
                        q.done(&key, pass);
                    }
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn dedups_waiting_keys() {
        let q = WorkQueue::new("t");
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
    }

    #[tokio::test]
    async fn delayed_adds_of_one_key_coalesce() {
        let q: WorkQueue<&str> = WorkQueue::new("t");
        q.add_after("a", Duration::from_millis(20));
        q.add_after("a", Duration::from_millis(20));
        q.add_after("b", Duration::from_millis(20));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while q.len() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "delayed keys never arrived"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(q.len(), 2);
    }

    #[tokio::test]
    async fn key_added_while_processing_runs_again() {
        let q: WorkQueue<&str> = WorkQueue::new("t");
        q.add("a");
        let (k, pass) = q.get().await;
        q.add("a");
        assert_eq!(q.len(), 0, "a key being processed is not queued twice");
        q.done(&k, pass);
        assert_eq!(q.len(), 1);
    }

    #[tokio::test]
    async fn keys_are_counted_in_the_workqueue_metrics() {
        use component_base::metrics::workqueue::{ADDS, DEPTH, RETRIES, WORK_DURATION};
        let name = "queue-metrics-test";
        let r = metrics::global();
        let q: WorkQueue<&str> = WorkQueue::new(name);
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(
            r.value(&ADDS, &[name]),
            Some(2.0),
            "a waiting key is added once"
        );
        assert_eq!(r.value(&DEPTH, &[name]), Some(2.0));
        let (k, pass) = q.get().await;
        q.add(k);
        assert_eq!(
            r.value(&ADDS, &[name]),
            Some(3.0),
            "added again while processed"
        );
        q.done(&k, pass);
        q.add_rate_limited("c");
        assert_eq!(r.value(&RETRIES, &[name]), Some(1.0));
        assert_eq!(r.value(&WORK_DURATION, &[name]), Some(1.0));
        assert_eq!(r.value(&DEPTH, &[name]), Some(2.0), "b and a wait");
    }

    #[tokio::test]
    async fn failing_key_is_retried_until_it_succeeds() {
        let q: WorkQueue<u32> = WorkQueue::new("t");
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let handles = q.run(2, move |_k| {
            let c = c.clone();
            async move {
                if c.fetch_add(1, Ordering::SeqCst) < 3 {
                    Err("not yet")
                } else {
                    Ok(Requeue::No)
                }
            }
        });
        q.add(7);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while calls.load(Ordering::SeqCst) < 4 || q.failures(&7) != 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "retries did not happen or the back-off was not cleared"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for h in handles {
            h.abort();
        }
    }
}
