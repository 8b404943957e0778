//! A deduplicating work queue with per-item exponential back-off (client-go's rate-limited
//! workqueue, reduced to what one worker needs).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Items ready now, items delayed until an instant, and the failure count of each item.
pub struct WorkQueue<T> {
    ready: VecDeque<T>,
    queued: HashSet<T>,
    delayed: BTreeMap<(Instant, u64), T>,
    delayed_at: HashMap<T, (Instant, u64)>,
    seq: u64,
    failures: HashMap<T, u32>,
    base: Duration,
    max: Duration,
}

impl<T: Clone + Eq + Hash> WorkQueue<T> {
    /// A queue whose retries wait `base`, doubling per failure up to `max`.
    pub fn new(base: Duration, max: Duration) -> WorkQueue<T> {
        WorkQueue {
            ready: VecDeque::new(),
            queued: HashSet::new(),
            delayed: BTreeMap::new(),
            delayed_at: HashMap::new(),
            seq: 0,
            failures: HashMap::new(),
            base,
            max,
        }
    }

    /// Queues an item now, unless it is already waiting to run.
    pub fn add(&mut self, item: T) {
        if self.queued.insert(item.clone()) {
            self.ready.push_back(item);
        }
    }

    /// Queues an item after `delay` (an item already ready stays ready; an item already
    /// delayed keeps the earlier of its two instants).
    pub fn add_after(&mut self, item: T, delay: Duration) {
        self.add_after_at(item, delay, Instant::now());
    }

    fn add_after_at(&mut self, item: T, delay: Duration, now: Instant) {
        if self.queued.contains(&item) {
            return;
        }
        let due = now + delay;
        if let Some(&(at, seq)) = self.delayed_at.get(&item) {
            if at <= due {
                return;
            }
            self.delayed.remove(&(at, seq));
        }
        self.seq += 1;
        self.delayed.insert((due, self.seq), item.clone());
        self.delayed_at.insert(item, (due, self.seq));
    }

    /// Queues an item again after its back-off, and counts the failure.
    pub fn retry(&mut self, item: T) {
        self.retry_at(item, Instant::now());
    }

    fn retry_at(&mut self, item: T, now: Instant) {
        let n = self.failures.entry(item.clone()).or_insert(0);
        let delay = self
            .base
            .saturating_mul(1u32.checked_shl((*n).min(20)).unwrap_or(u32::MAX))
            .min(self.max);
        *n = n.saturating_add(1);
        self.add_after_at(item, delay, now);
    }

    /// Forgets an item's failures (it succeeded).
    pub fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    /// Moves due delayed items to the ready queue.
    fn promote(&mut self, now: Instant) {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.delayed_at.remove(&item);
            self.add(item);
        }
    }

    /// The next ready item, if any.
    pub fn pop(&mut self) -> Option<T> {
        self.pop_at(Instant::now())
    }

    fn pop_at(&mut self, now: Instant) -> Option<T> {
        self.promote(now);
        let item = self.ready.pop_front()?;
        self.queued.remove(&item);
        Some(item)
    }

    /// When the next delayed item becomes due (None: nothing is delayed).
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.keys().next().map(|(t, _)| *t)
    }

    /// True when nothing is ready (delayed items may exist).
    pub fn is_idle(&self) -> bool {
        self.ready.is_empty() && self.next_due().is_none_or(|due| due > Instant::now())
    }
}

/// Sleeps until `due`, or forever when there is nothing to wait for.
pub async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_and_backoff() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut q = WorkQueue::new(ms(100), Duration::from_secs(1));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.pop_at(t0), Some("a"));
        assert_eq!(q.pop_at(t0), Some("b"));
        assert_eq!(q.pop_at(t0), None);

        // Back-off doubles per failure.
        q.retry_at("a", t0);
        assert_eq!(q.next_due(), Some(t0 + ms(100)));
        assert_eq!(q.pop_at(t0 + ms(99)), None);
        assert_eq!(q.pop_at(t0 + ms(100)), Some("a"));
        q.retry_at("a", t0);
        assert_eq!(q.next_due(), Some(t0 + ms(200)));

        // A sooner retry replaces the later one; the item runs once.
        q.forget(&"a");
        q.retry_at("a", t0);
        assert_eq!(q.next_due(), Some(t0 + ms(100)));
        assert_eq!(q.pop_at(t0 + ms(300)), Some("a"));
        assert_eq!(q.pop_at(t0 + ms(300)), None);
        assert_eq!(q.next_due(), None);

        // A later delay does not postpone an earlier one.
        q.add_after_at("d", ms(50), t0);
        q.add_after_at("d", ms(500), t0);
        assert_eq!(q.next_due(), Some(t0 + ms(50)));

        assert_eq!(q.pop_at(t0 + ms(50)), Some("d"));

        // The back-off is capped.
        for _ in 0..10 {
            q.retry_at("z", t0);
            assert_eq!(q.pop_at(t0 + Duration::from_secs(5)), Some("z"));
        }
        q.retry_at("z", t0);
        assert_eq!(q.next_due(), Some(t0 + Duration::from_secs(1)));

        // An item ready now is not also delayed.
        q.add("c");
        q.add_after_at("c", ms(5), t0);
        assert_eq!(q.pop_at(t0), Some("c"));
        assert_eq!(q.pop_at(t0 + ms(10)), None);
    }
}
