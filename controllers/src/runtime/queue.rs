//! A work queue with per-key deduplication and rate-limited retries, the shape of client-go's
//! rate-limited work queue: a key waiting in the queue is not added twice, a key being processed
//! is re-queued once it is done if it was added meanwhile, and a failing key is retried later and
//! later as the queue's [`RateLimiter`] says (Karmada's `--rate-limiter-*` flags). A paced queue
//! (Karmada's eviction workers) also holds each worker back between two items.

use std::cmp::Ordering as Rank;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use component_base::metrics::{self, workqueue::QueueMetrics};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use component_base::rate_limiter::{RateLimiter, RateLimiterOptions};

use super::precedence::{Class, Precedence};
use super::reconcile_metrics::{self, Outcome};

/// What a reconciler asks the queue to do with its key after a successful pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Nothing more to do until the key is added again.
    No,
    /// Process the key again after the given delay.
    After(Duration),
}

/// A waiting key of a ranked queue: higher priority first, then first come.
struct Ranked<K> {
    priority: i32,
    seq: u64,
    key: K,
}

impl<K> PartialEq for Ranked<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Rank::Equal
    }
}

impl<K> Eq for Ranked<K> {}

impl<K> PartialOrd for Ranked<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Rank> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Ranked<K> {
    // BinaryHeap pops the greatest: the highest priority, then the lowest sequence number.
    fn cmp(&self, other: &Self) -> Rank {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// The waiting keys: first in first out, or by priority on a ranked queue (the scheduler's
/// active queue under Karmada's PriorityBasedScheduling: priority, then arrival).
enum Waiting<K> {
    Fifo(VecDeque<K>),
    Ranked {
        heap: BinaryHeap<Ranked<K>>,
        next_seq: u64,
        priorities: HashMap<K, i32>,
    },
}

impl<K: Eq + Hash> Waiting<K> {
    fn push_back(&mut self, key: K) {
        match self {
            Waiting::Fifo(q) => q.push_back(key),
            Waiting::Ranked {
                heap,
                next_seq,
                priorities,
            } => {
                let priority = priorities.get(&key).copied().unwrap_or(0);
                *next_seq += 1;
                heap.push(Ranked {
                    priority,
                    seq: *next_seq,
                    key,
                });
            }
        }
    }

    fn pop_front(&mut self) -> Option<K> {
        match self {
            Waiting::Fifo(q) => q.pop_front(),
            Waiting::Ranked { heap, .. } => heap.pop().map(|r| r.key),
        }
    }

    fn len(&self) -> usize {
        match self {
            Waiting::Fifo(q) => q.len(),
            Waiting::Ranked { heap, .. } => heap.len(),
        }
    }
}

struct State<K> {
    queue: Waiting<K>,
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
    /// The delay of each retry.
    limiter: RateLimiter,
    /// On a paced queue, the failure count of Karmada's pacer key: the limiter is asked for a
    /// delay after every successful pass and the count reset once it is waited out.
    pacer: Option<AtomicU32>,
    /// Placement work first (see [`Precedence`]): set once, before the workers start.
    precedence: std::sync::OnceLock<(Class, Arc<Precedence>)>,
    /// The controller-runtime controller name a key's reconcile is reported under, for the
    /// queues of controllers Karmada builds on controller-runtime.
    controller: std::sync::OnceLock<fn(&K) -> &'static str>,
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
    /// An empty queue with Karmada's default rate limiter; `name` appears in logs and labels
    /// its `workqueue_*` metrics.
    pub fn new(name: &'static str) -> Self {
        Self::with_rate_limiter(name, RateLimiterOptions::default())
    }

    /// An empty queue whose retries follow `options` (a controller's `--rate-limiter-*`).
    pub fn with_rate_limiter(name: &'static str, options: RateLimiterOptions) -> Self {
        Self::build(name, RateLimiter::new(options), false)
    }

    /// A queue whose workers wait after each successful pass as long as `limiter` says
    /// (Karmada's eviction worker: its pacer is its queue's own limiter), holding the key
    /// meanwhile, and whose retries wait as long too.
    pub fn paced(name: &'static str, limiter: RateLimiter) -> Self {
        Self::build(name, limiter, true)
    }

    fn build(name: &'static str, limiter: RateLimiter, paced: bool) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                name,
                state: Mutex::new(State {
                    queue: Waiting::Fifo(VecDeque::new()),
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
                limiter,
                pacer: paced.then(|| AtomicU32::new(0)),
                precedence: std::sync::OnceLock::new(),
                controller: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Puts the queue in a class of the shared [`Precedence`]: a placement queue's waiting
    /// keys hold back the status queues' extra workers. Called before any key is added.
    pub fn with_precedence(self, class: Class, precedence: Arc<Precedence>) -> Self {
        let _ = self.inner.precedence.set((class, precedence));
        self
    }

    /// Makes the queue hand out waiting keys by priority (see [`WorkQueue::set_priority`]),
    /// then in arrival order. Called before any key is added.
    pub fn ranked(self) -> Self {
        self.lock().queue = Waiting::Ranked {
            heap: BinaryHeap::new(),
            next_seq: 0,
            priorities: HashMap::new(),
        };
        self
    }

    /// The priority the key waits with from its next add on (a ranked queue only; 0 until
    /// set). A key already waiting keeps its place.
    pub fn set_priority(&self, key: &K, priority: i32) {
        if let Waiting::Ranked { priorities, .. } = &mut self.lock().queue {
            if priority == 0 {
                priorities.remove(key);
            } else {
                priorities.insert(key.clone(), priority);
            }
        }
    }

    /// Reports each reconcile in controller-runtime's metrics under the controller name
    /// `controller` gives its key (one of `names`, whose series start at zero), as Karmada's
    /// controller-runtime controllers do. Called before the workers start.
    pub fn reconciled_as(self, names: &[&'static str], controller: fn(&K) -> &'static str) -> Self {
        for name in names {
            reconcile_metrics::init(name);
        }
        let _ = self.inner.controller.set(controller);
        self
    }

    /// The shared precedence, when this is a placement queue.
    fn placement(&self) -> Option<&Precedence> {
        match self.inner.precedence.get() {
            Some((Class::Placement, p)) => Some(p),
            _ => None,
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
        if let Some(p) = self.placement() {
            p.queued();
        }
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
        let failures = {
            let mut st = self.lock();
            let n = st.failures.entry(key.clone()).or_insert(0);
            let before = *n;
            *n = n.saturating_add(1);
            before
        };
        let delay = self.inner.limiter.when(failures);
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

    /// On a paced queue, waits as long as the limiter says before the worker takes its next
    /// key (Karmada's `pacer.When` then `pacer.Forget` on its sentinel key).
    async fn pace(&self) {
        let Some(pacer) = &self.inner.pacer else {
            return;
        };
        let failures = pacer.fetch_add(1, Ordering::Relaxed);
        let delay = self.inner.limiter.when(failures);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        pacer.store(0, Ordering::Relaxed);
    }

    /// The next key and the number of its pass.
    async fn get(&self) -> (K, u64) {
        loop {
            {
                let mut st = self.lock();
                if let Some(k) = st.queue.pop_front() {
                    if let Some(p) = self.placement() {
                        p.taken();
                    }
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
            if let Some(p) = self.placement() {
                p.queued();
            }
            drop(st);
            self.inner.notify.notify_one();
        }
    }

    /// Starts `workers` tasks that take keys and run `reconcile` on them. An error retries the
    /// key with back-off; success clears its back-off, follows the returned [`Requeue`] and,
    /// on a paced queue, holds the worker and the key for the pacing delay.
    pub fn run<F, Fut, E>(&self, workers: usize, reconcile: F) -> Vec<JoinHandle<()>>
    where
        F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Requeue, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        (0..workers.max(1))
            .map(|worker| {
                let q = self.clone();
                let f = reconcile.clone();
                let yields_to = match q.inner.precedence.get() {
                    Some((Class::Status, p)) => Some(p.clone()),
                    _ => None,
                };
                tokio::spawn(async move {
                    loop {
                        if let Some(p) = &yields_to {
                            p.hold(worker == 0).await;
                        }
                        let (key, pass) = q.get().await;
                        let started = Instant::now();
                        let result = f(key.clone()).await;
                        if let Some(controller) = q.inner.controller.get() {
                            let outcome = match &result {
                                Ok(Requeue::No) => Outcome::Success,
                                Ok(Requeue::After(_)) => Outcome::RequeueAfter,
                                Err(_) => Outcome::Error,
                            };
                            reconcile_metrics::observe(controller(&key), started.elapsed(), outcome);
                        }
                        match result {
                            Ok(Requeue::No) => {
                                q.forget(&key);
                                q.pace().await;
                            }
                            Ok(Requeue::After(d)) => {
                                q.forget(&key);
                                q.add_after(key.clone(), d);
                                q.pace().await;
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
    use super::super::precedence::HOLD;
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
    async fn a_ranked_queue_hands_out_the_highest_priority_first_then_the_first_come() {
        let q: WorkQueue<&str> = WorkQueue::new("t").ranked();
        q.set_priority(&"urgent", 100);
        q.set_priority(&"low", -5);
        for k in ["low", "a", "urgent", "b"] {
            q.add(k);
        }
        let mut order = Vec::new();
        for _ in 0..4 {
            let (k, pass) = q.get().await;
            q.done(&k, pass);
            order.push(k);
        }
        assert_eq!(order, ["urgent", "a", "b", "low"]);
        // A FIFO queue ignores priorities.
        let fifo: WorkQueue<&str> = WorkQueue::new("t");
        fifo.set_priority(&"b", 100);
        fifo.add("a");
        fifo.add("b");
        assert_eq!(fifo.get().await.0, "a");
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
    async fn reconciles_are_counted_per_controller_name() {
        use super::super::reconcile_metrics::{RECONCILE_ERRORS, RECONCILE_TIME, RECONCILE_TOTAL};
        let r = metrics::global();
        let (even, odd) = ("reconcile-metrics-test-even", "reconcile-metrics-test-odd");
        let q: WorkQueue<u32> =
            WorkQueue::new("reconcile-metrics-test").reconciled_as(&[even, odd], |k| {
                if k % 2 == 0 {
                    "reconcile-metrics-test-even"
                } else {
                    "reconcile-metrics-test-odd"
                }
            });
        assert_eq!(
            r.value(&RECONCILE_TOTAL, &[odd, "error"]),
            Some(0.0),
            "series start at zero"
        );
        let failed = Arc::new(AtomicUsize::new(0));
        let f = failed.clone();
        let _workers = q.run(1, move |k: u32| {
            let f = f.clone();
            async move {
                match k {
                    // Fails once, then succeeds on its retry.
                    1 if f.fetch_add(1, Ordering::SeqCst) == 0 => Err("boom"),
                    3 => Ok(Requeue::After(Duration::from_secs(3600))),
                    _ => Ok(Requeue::No),
                }
            }
        });
        q.add_all([0, 1, 2, 3]);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while r.value(&RECONCILE_TOTAL, &[odd, "success"]) != Some(1.0) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the retry never ran"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(r.value(&RECONCILE_TOTAL, &[even, "success"]), Some(2.0));
        assert_eq!(r.value(&RECONCILE_TOTAL, &[odd, "error"]), Some(1.0));
        assert_eq!(
            r.value(&RECONCILE_TOTAL, &[odd, "requeue_after"]),
            Some(1.0)
        );
        assert_eq!(r.value(&RECONCILE_ERRORS, &[odd]), Some(1.0));
        assert_eq!(r.value(&RECONCILE_ERRORS, &[even]), Some(0.0));
        assert_eq!(
            r.value(&RECONCILE_TIME, &[even]),
            Some(2.0),
            "one observation a reconcile"
        );
        assert_eq!(r.value(&RECONCILE_TIME, &[odd]), Some(3.0));
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
    async fn a_paced_queue_holds_each_worker_between_items() {
        // One worker, a floor of 150 ms: three keys take at least two pauses, and a key added
        // again while its pass is held waits for the pause to end (client-go's Done comes
        // after Karmada's pacer).
        let floor = Duration::from_millis(150);
        let q: WorkQueue<u32> = WorkQueue::paced(
            "paced-test",
            RateLimiter::with_floor(RateLimiterOptions::default(), floor),
        );
        let seen = Arc::new(Mutex::new(Vec::<(u32, Instant)>::new()));
        let s = seen.clone();
        let handles = q.run(1, move |k| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push((k, Instant::now()));
                Ok::<_, &str>(Requeue::No)
            }
        });
        q.add_all([1, 2, 3]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().len() < 3 {
            assert!(Instant::now() < deadline, "the paced queue stalled");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        q.add(3);
        assert_eq!(q.len(), 0, "key 3 is still held by its pass");
        while seen.lock().unwrap().len() < 4 {
            assert!(Instant::now() < deadline, "the re-added key never ran");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let seen = seen.lock().unwrap().clone();
        let keys: Vec<u32> = seen.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, [1, 2, 3, 3]);
        for pair in seen.windows(2) {
            let gap = pair[1].1.duration_since(pair[0].1);
            assert!(gap >= floor, "only {gap:?} between two paced items");
        }
        for h in handles {
            h.abort();
        }
    }

    #[tokio::test]
    async fn retries_follow_the_rate_limiter_options() {
        let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(
            "retry-options-test",
            RateLimiterOptions {
                base_delay: Duration::from_millis(300),
                ..RateLimiterOptions::default()
            },
        );
        let started = Instant::now();
        q.add_rate_limited("a");
        let deadline = started + Duration::from_secs(10);
        while q.is_empty() {
            assert!(Instant::now() < deadline, "the retry never came");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "retried after {:?}, before the 300 ms base delay",
            started.elapsed()
        );
        assert_eq!(q.failures(&"a"), 1);
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

    #[tokio::test]
    async fn status_queues_wait_while_placement_keys_wait() {
        let precedence = Arc::new(Precedence::default());
        let placement: WorkQueue<u32> =
            WorkQueue::new("placement").with_precedence(Class::Placement, precedence.clone());
        let status: WorkQueue<u32> =
            WorkQueue::new("status").with_precedence(Class::Status, precedence.clone());
        // A placement key waits (no placement worker runs yet).
        placement.add(1);
        placement.add(1);
        assert_eq!(precedence.waiting(), 1, "a key counts once while it waits");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let handles = status.run(4, move |k| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((k, Instant::now()));
                Ok::<_, String>(Requeue::No)
            }
        });
        let started = Instant::now();
        status.add(10);
        status.add(11);
        // Only the first worker takes keys, at most one per HOLD.
        let (_, first) = rx.recv().await.expect("first status key");
        assert!(
            first - started >= HOLD - Duration::from_millis(50),
            "a status key was taken {:?} after it was added, while placement waited",
            first - started
        );
        // Placement catches up: the rest goes at once.
        let placement_handles = placement.run(1, |_| async { Ok::<_, String>(Requeue::No) });
        let (_, second) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("second status key within 10 s")
            .expect("second status key");
        assert!(second >= first);
        assert_eq!(precedence.waiting(), 0);
        for h in handles.into_iter().chain(placement_handles) {
            h.abort();
        }
    }
}
