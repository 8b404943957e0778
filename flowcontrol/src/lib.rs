//! API Priority and Fairness (k8s.io/apiserver/pkg/util/flowcontrol), simplified: requests are
//! classified by the FlowSchemas of the running [`Configuration`] (the first match in matching
//! precedence, ties by name) into a priority level and a flow; each level gets its nominal
//! share of the server's concurrency, and levels borrow the seats others can lend as their
//! demand calls for ([`borrowing`]); within a level the flows are shuffle-sharded over
//! the level's queues and free seats go to the queues in turn, so a noisy client fills only its
//! own queues and cannot starve the others. A request beyond its queue's length, at a level
//! that rejects instead of queuing, or waiting longer than the limit, is rejected (the server
//! answers 429 with Retry-After).
//!
//! The configuration comes from FlowSchema and PriorityLevelConfiguration objects; the server
//! reads them and hands them over with [`FlowControl::apply`]. Until then, and for any mandatory
//! object missing, the [`bootstrap`] objects stand in, as kube's controller does.
//!
//! Must not depend on: an HTTP stack, storage, the server crate (only tokio's channels and
//! JSON values of the objects).

pub mod bootstrap;
pub mod borrowing;
pub mod config;
mod demand;
mod dump;
pub mod fairalloc;

pub use borrowing::BORROWING_ADJUSTMENT_PERIOD;
pub use config::{
    Configuration, Distinguisher, FlowSchema, LimitResponse, PriorityLevel, RequestDigest,
    SeatLimits,
};
pub use demand::{DemandStats, SEAT_DEMAND_SMOOTHING};

use demand::{Clock, Integrator};

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;

/// The flow schema a request matched, its level and its flow.
#[derive(Clone)]
pub struct Classification {
    /// The matching flow schema's name.
    pub flow_schema: String,
    /// Its priority level's name.
    pub priority_level: String,
    /// The flow within the schema (the user, the namespace or "", by its distinguisher).
    pub flow: String,
    level: Arc<LevelState>,
}

impl std::fmt::Debug for Classification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classification")
            .field("flow_schema", &self.flow_schema)
            .field("priority_level", &self.priority_level)
            .field("flow", &self.flow)
            .finish()
    }
}

/// Why a request was not admitted (kube's `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Its queue was full.
    QueueFull,
    /// Its level rejects what it has no seat for.
    ConcurrencyLimit,
    /// It waited in its queue longer than allowed.
    TimeOut,
}

impl Rejection {
    /// kube's label value.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimeOut => "time-out",
        }
    }
}

/// Tunables.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The server's concurrency limit (kube: max-requests-inflight +
    /// max-mutating-requests-inflight), shared by the levels by their nominal shares and
    /// lent among them.
    pub server_concurrency_limit: usize,
    /// Longest wait in a queue (kube: a quarter of the request timeout).
    pub max_wait: Duration,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<()>,
    flow_schema: String,
    flow: String,
    arrived: SystemTime,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    executing: usize,
}

/// A level's state under its lock.
#[derive(Default)]
struct Level {
    /// CurrentCL: the seats its requests may take now, as borrowing last set it (an exempt
    /// level's is reported, not enforced).
    limit: usize,
    /// Its nominal seats and the bounds of `limit`.
    seats: SeatLimits,
    /// `None` when exempt.
    response: Option<LimitResponse>,
    executing: usize,
    /// Requests in its queues.
    waiting: usize,
    /// Its seat demand (executing and waiting requests) over the current adjustment period.
    demand: Integrator,
    /// The demand of the last adjustment period.
    stats: DemandStats,
    /// The seats borrowing last aimed at for it.
    target: f64,
    /// Exempt and rejecting levels have none.
    queues: Vec<Queue>,
    /// Queues with waiting requests, in the order they get the next free seats.
    turn: VecDeque<usize>,
    /// Replaced by a level of another shape: it only drains.
    quiescing: bool,
    dispatched: u64,
    rejected: u64,
    timed_out: u64,
    cancelled: u64,
}

impl Level {
    /// A level of these seats; until borrowing first adjusts it, it lends half of what it can
    /// (kube's initial CurrentCL).
    fn new(seats: SeatLimits, response: Option<LimitResponse>, clock: Clock) -> Level {
        let queues = match response {
            Some(LimitResponse::Queue { queues, .. }) => std::iter::repeat_with(Queue::default)
                .take(queues)
                .collect(),
            _ => Vec::new(),
        };
        Level {
            limit: seats.nominal - (seats.nominal - seats.min) / 2,
            seats,
            response,
            queues,
            demand: Integrator::new(clock),
            ..Default::default()
        }
    }

    /// Whether one more request may execute: under the current limit, or, with a limit of
    /// none, when nothing executes (kube's queue set lets a request wider than its limit run
    /// alone rather than never).
    fn has_free_seat(&self) -> bool {
        self.executing < self.limit.max(1)
    }

    /// Records the demand after executing or waiting changed.
    fn note_demand(&mut self) {
        let demand = self.executing + self.waiting;
        self.demand.set(demand as f64);
    }

    fn shape(&self) -> (bool, usize) {
        (self.response.is_none(), self.queues.len())
    }

    /// kube's shuffle sharding: the flow's hand of queues, dealt from its hash, and of those
    /// the one with the least work.
    fn pick_queue(&self, flow_key: u64) -> Option<usize> {
        let Some(LimitResponse::Queue { hand_size, .. }) = self.response else {
            return None;
        };
        deal(flow_key, self.queues.len(), hand_size)
            .into_iter()
            .min_by_key(|q| self.queues[*q].waiting.len() + self.queues[*q].executing)
    }
}

/// Deals `hand_size` distinct cards of a deck of `deck` from `hash` (kube's shuffle-sharding
/// dealer): each card is the hash's next digit in the base of the cards left, counted over
/// the cards not dealt yet.
fn deal(mut hash: u64, deck: usize, hand_size: usize) -> Vec<usize> {
    let mut hand: Vec<usize> = Vec::with_capacity(hand_size.min(deck));
    for i in 0..hand_size.min(deck) {
        let remaining = (deck - i) as u64;
        let mut card = usize::try_from(hash % remaining).unwrap_or(0);
        hash /= remaining;
        let mut dealt = hand.clone();
        dealt.sort_unstable();
        for d in dealt {
            if d <= card {
                card += 1;
            }
        }
        hand.push(card);
    }
    hand
}

struct LevelState {
    name: String,
    inner: Mutex<Level>,
}

impl LevelState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Level> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands free seats to the queues in turn (their oldest requests).
    fn dispatch(l: &mut Level) {
        while l.has_free_seat() {
            let Some(q) = l.turn.pop_front() else {
                break;
            };
            let Some(waiter) = l
                .queues
                .get_mut(q)
                .and_then(|queue| queue.waiting.pop_front())
            else {
                continue;
            };
            l.waiting = l.waiting.saturating_sub(1);
            if !l.queues[q].waiting.is_empty() {
                l.turn.push_back(q);
            }
            // A waiter whose request went away no longer takes the seat.
            if waiter.grant.send(()).is_ok() {
                l.executing += 1;
                l.queues[q].executing += 1;
                l.dispatched += 1;
            } else {
                l.cancelled += 1;
            }
        }
        l.note_demand();
    }

    /// Takes the seats of `fresh` when it has the same shape (exempt or not, number of
    /// queues), keeping the queued requests, the current limit (until borrowing adjusts it)
    /// and the demand; else marks this level as draining (false).
    fn reconfigure(&self, fresh: &Level) -> bool {
        let mut l = self.lock();
        if l.shape() != fresh.shape() {
            l.quiescing = true;
            return false;
        }
        l.seats = fresh.seats;
        l.response = fresh.response;
        l.quiescing = false;
        LevelState::dispatch(&mut l);
        true
    }

    /// Frees a seat: the next queue in turn gets it.
    fn release(&self, queue: Option<usize>) {
        let mut l = self.lock();
        l.executing = l.executing.saturating_sub(1);
        if let Some(q) = queue.and_then(|q| l.queues.get_mut(q)) {
            q.executing = q.executing.saturating_sub(1);
        }
        LevelState::dispatch(&mut l);
    }
}

/// The running configuration: schemas in matching order and the levels by name.
struct Running {
    schemas: Vec<FlowSchema>,
    levels: HashMap<String, Arc<LevelState>>,
}

/// Counters kept per (flow schema, level), printed with kube's metric names. A request looks
/// its counters up once and updates them without a lock.
#[derive(Default)]
struct Counts {
    dispatched: AtomicI64,
    rejected_queue_full: AtomicI64,
    rejected_concurrency_limit: AtomicI64,
    rejected_time_out: AtomicI64,
    inqueue: AtomicI64,
    executing: AtomicI64,
}

impl Counts {
    fn add(counter: &AtomicI64, n: i64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn get(counter: &AtomicI64) -> i64 {
        counter.load(Ordering::Relaxed)
    }
}

type CountsTable = RwLock<HashMap<(String, String), Arc<Counts>>>;

/// The admission controller of API Priority and Fairness.
pub struct FlowControl {
    config: Config,
    running: RwLock<Arc<Running>>,
    counts: CountsTable,
    next_id: AtomicU64,
    clock: Clock,
    /// The fair fraction of the last adjustment; held while adjusting, so adjustments do not
    /// interleave.
    borrowing: Mutex<f64>,
}

/// A request waiting in its queue. Dropped before it settles (the request went away), it
/// leaves the queue, or gives back the seat it was granted meanwhile.
struct Queued {
    level: Arc<LevelState>,
    queue: usize,
    counts: Arc<Counts>,
    id: u64,
    rx: oneshot::Receiver<()>,
    settled: bool,
}

impl Queued {
    /// Removes this request from its queue; false when it is no longer there (a seat was
    /// granted: `dispatch` sends under the level's lock, so the grant is already made).
    fn leave_queue(&mut self, cancelled: bool) -> bool {
        let mut l = self.level.lock();
        let Some(queue) = l.queues.get_mut(self.queue) else {
            return false;
        };
        let Some(i) = queue.waiting.iter().position(|w| w.id == self.id) else {
            return false;
        };
        queue.waiting.remove(i);
        if queue.waiting.is_empty() {
            let q = self.queue;
            l.turn.retain(|t| *t != q);
        }
        l.waiting = l.waiting.saturating_sub(1);
        l.note_demand();
        if cancelled {
            l.cancelled += 1;
        } else {
            l.timed_out += 1;
        }
        true
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        Counts::add(&self.counts.inqueue, -1);
        if !self.leave_queue(true) && self.rx.try_recv().is_ok() {
            // Granted, but nobody is left to use it: the next queue gets it.
            self.level.release(Some(self.queue));
        }
    }
}

/// A seat held while a request executes; freed (and given to the next queue) when dropped.
pub struct Seat {
    level: Arc<LevelState>,
    queue: Option<usize>,
    counts: Arc<Counts>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        Counts::add(&self.counts.executing, -1);
        self.level.release(self.queue);
    }
}

fn flow_key(schema: &str, flow: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (schema, flow).hash(&mut h);
    h.finish()
}

/// `cfg` with the mandatory objects it lacks, as kube's controller imagines them.
fn with_mandatory(mut cfg: Configuration) -> Configuration {
    let bootstrap = bootstrap::configuration();
    for name in [bootstrap::EXEMPT, bootstrap::CATCH_ALL] {
        if !cfg.priority_levels.iter().any(|l| l.name == name)
            && let Some(l) = bootstrap.priority_levels.iter().find(|l| l.name == name)
        {
            cfg.priority_levels.push(l.clone());
        }
        if !cfg.flow_schemas.iter().any(|s| s.name == name)
            && let Some(s) = bootstrap.flow_schemas.iter().find(|s| s.name == name)
        {
            cfg.flow_schemas.push(s.clone());
        }
    }
    cfg
}

impl FlowControl {
    /// A controller running on the bootstrap configuration.
    pub fn new(config: Config) -> FlowControl {
        FlowControl::with_clock(config, Clock::default())
    }

    fn with_clock(config: Config, clock: Clock) -> FlowControl {
        let fc = FlowControl {
            config,
            running: RwLock::new(Arc::new(Running {
                schemas: Vec::new(),
                levels: HashMap::new(),
            })),
            counts: CountsTable::default(),
            next_id: AtomicU64::new(0),
            clock,
            borrowing: Mutex::new(0.0),
        };
        fc.apply(bootstrap::configuration());
        fc
    }

    /// Runs on `cfg` from now on (plus the mandatory objects it lacks). FlowSchemas naming a
    /// level that does not exist are ignored, as kube ignores dangling ones. A level keeps its
    /// queues and requests when only its limits change; one whose kind or number of queues
    /// changes starts afresh while the old one drains. The levels' current limits are
    /// adjusted at once, as kube adjusts them on every new configuration.
    pub fn apply(&self, cfg: Configuration) {
        let cfg = with_mandatory(cfg);
        let limits: HashMap<String, SeatLimits> = cfg
            .seat_limits(self.config.server_concurrency_limit)
            .into_iter()
            .collect();
        let old = self.current();
        let mut levels = HashMap::new();
        for pl in &cfg.priority_levels {
            let seats = limits.get(&pl.name).copied().unwrap_or_default();
            let fresh = Level::new(seats, pl.limit_response, self.clock.clone());
            let state = match old.levels.get(&pl.name) {
                Some(s) if s.reconfigure(&fresh) => s.clone(),
                _ => Arc::new(new_level(&pl.name, fresh)),
            };
            levels.insert(pl.name.clone(), state);
        }
        for (name, s) in &old.levels {
            if !levels.contains_key(name) {
                s.lock().quiescing = true;
            }
        }
        let mut schemas: Vec<FlowSchema> = cfg
            .ordered_schemas()
            .into_iter()
            .filter(|s| levels.contains_key(&s.priority_level))
            .cloned()
            .collect();
        schemas.shrink_to_fit();
        *self.running.write().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(Running { schemas, levels });
        self.update_borrowing();
    }

    fn current(&self) -> Arc<Running> {
        self.running
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The first FlowSchema matching the request (in matching precedence, ties by name), its
    /// level and the request's flow.
    pub fn classify(&self, d: &RequestDigest<'_>) -> Classification {
        let running = self.current();
        let matched = running.schemas.iter().find_map(|s| {
            let level = running.levels.get(&s.priority_level)?;
            s.matches(d).then_some((s, level))
        });
        match matched {
            Some((s, level)) => Classification {
                flow_schema: s.name.clone(),
                priority_level: s.priority_level.clone(),
                flow: s.flow(d),
                level: level.clone(),
            },
            // The mandatory catch-all matches every request that is authenticated or not (every
            // request has one of its groups); a request with neither is still given its level,
            // as kube's controller does ("should never happen").
            None => Classification {
                flow_schema: bootstrap::CATCH_ALL.into(),
                priority_level: bootstrap::CATCH_ALL.into(),
                flow: d.user.to_string(),
                level: running
                    .levels
                    .get(bootstrap::CATCH_ALL)
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(new_level(
                            bootstrap::CATCH_ALL,
                            Level::new(
                                SeatLimits::default(),
                                Some(LimitResponse::Reject),
                                self.clock.clone(),
                            ),
                        ))
                    }),
            },
        }
    }

    /// The nominal concurrency limit of a level, if it exists.
    pub fn nominal_limit(&self, level: &str) -> Option<usize> {
        self.current()
            .levels
            .get(level)
            .map(|s| s.lock().seats.nominal)
    }

    /// The current concurrency limit of a level (its nominal one as borrowing last adjusted
    /// it), if it exists.
    pub fn current_limit(&self, level: &str) -> Option<usize> {
        self.current().levels.get(level).map(|s| s.lock().limit)
    }

    /// The counters of a (flow schema, level), created on first use.
    fn counts(&self, schema: &str, level: &str) -> Arc<Counts> {
        let key = (schema.to_string(), level.to_string());
        let found = self
            .counts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        found.unwrap_or_else(|| {
            let mut table = self.counts.write().unwrap_or_else(|e| e.into_inner());
            table.entry(key).or_default().clone()
        })
    }

    /// Admits a request: at once when its level is exempt, or has a free seat and nobody
    /// waits; else after waiting in its queue for its turn; or rejects it.
    pub async fn admit(&self, c: &Classification) -> Result<Seat, Rejection> {
        let counts = self.counts(&c.flow_schema, &c.priority_level);
        let seat = |counts: Arc<Counts>, queue| {
            Counts::add(&counts.dispatched, 1);
            Counts::add(&counts.executing, 1);
            Seat {
                level: c.level.clone(),
                queue,
                counts,
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (queue, rx) = {
            let mut l = c.level.lock();
            if l.response.is_none() {
                l.executing += 1;
                l.dispatched += 1;
                l.note_demand();
                drop(l);
                return Ok(seat(counts, None));
            }
            let queue = l.pick_queue(flow_key(&c.flow_schema, &c.flow));
            if l.has_free_seat() && l.turn.is_empty() {
                l.executing += 1;
                l.dispatched += 1;
                if let Some(q) = queue {
                    l.queues[q].executing += 1;
                }
                l.note_demand();
                drop(l);
                return Ok(seat(counts, queue));
            }
            let rejected = match (queue, l.response) {
                (
                    Some(q),
                    Some(LimitResponse::Queue {
                        queue_length_limit, ..
                    }),
                ) if l.queues[q].waiting.len() < queue_length_limit => None,
                (Some(_), _) => Some(Rejection::QueueFull),
                (None, _) => Some(Rejection::ConcurrencyLimit),
            };
            if let Some(r) = rejected {
                l.rejected += 1;
                drop(l);
                Counts::add(
                    match r {
                        Rejection::QueueFull => &counts.rejected_queue_full,
                        _ => &counts.rejected_concurrency_limit,
                    },
                    1,
                );
                return Err(r);
            }
            let q = queue.unwrap_or(0);
            let (tx, rx) = oneshot::channel();
            let first = l.queues[q].waiting.is_empty();
            l.queues[q].waiting.push_back(Waiter {
                id,
                grant: tx,
                flow_schema: c.flow_schema.clone(),
                flow: c.flow.clone(),
                arrived: SystemTime::now(),
            });
            if first {
                l.turn.push_back(q);
            }
            l.waiting += 1;
            l.note_demand();
            (q, rx)
        };
        Counts::add(&counts.inqueue, 1);
        let mut waiting = Queued {
            level: c.level.clone(),
            queue,
            counts: counts.clone(),
            id,
            rx,
            settled: false,
        };
        let granted = match tokio::time::timeout(self.config.max_wait, &mut waiting.rx).await {
            Ok(Ok(())) => true,
            // Timed out: still queued, unless the seat was granted as the wait ended.
            _ => !waiting.leave_queue(false),
        };
        waiting.settled = true;
        Counts::add(&counts.inqueue, -1);
        if granted {
            Ok(seat(counts, Some(queue)))
        } else {
            Counts::add(&counts.rejected_time_out, 1);
            Err(Rejection::TimeOut)
        }
    }

    /// kube's flow-control metrics, in the Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let counts = self.counts.read().unwrap_or_else(|e| e.into_inner());
        let mut keys: Vec<&(String, String)> = counts.keys().collect();
        keys.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        let series = |out: &mut String,
                      name: &str,
                      help: &str,
                      kind: &str,
                      f: &dyn Fn(&Counts) -> &AtomicI64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for k in &keys {
                if let Some(v) = counts.get(*k).map(|c| Counts::get(f(c))) {
                    let _ = writeln!(
                        out,
                        "{name}{{flow_schema=\"{}\",priority_level=\"{}\"}} {v}",
                        k.0, k.1
                    );
                }
            }
        };
        series(
            out,
            "apiserver_flowcontrol_dispatched_requests_total",
            "Number of requests executed by API Priority and Fairness subsystem",
            "counter",
            &|c| &c.dispatched,
        );
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_rejected_requests_total Number of requests rejected by API Priority and Fairness subsystem\n# TYPE apiserver_flowcontrol_rejected_requests_total counter"
        );
        for k in &keys {
            if let Some(c) = counts.get(*k) {
                for (reason, n) in [
                    (Rejection::QueueFull, Counts::get(&c.rejected_queue_full)),
                    (
                        Rejection::ConcurrencyLimit,
                        Counts::get(&c.rejected_concurrency_limit),
                    ),
                    (Rejection::TimeOut, Counts::get(&c.rejected_time_out)),
                ] {
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{}\",priority_level=\"{}\",reason=\"{}\"}} {n}",
                            k.0,
                            k.1,
                            reason.reason()
                        );
                    }
                }
            }
        }
        series(
            out,
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            "gauge",
            &|c| &c.inqueue,
        );
        series(
            out,
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            "gauge",
            &|c| &c.executing,
        );
        drop(counts);
        self.render_level_gauges(out);
    }

    /// The levels of the running configuration, by name.
    fn sorted_levels(&self) -> Vec<Arc<LevelState>> {
        let running = self.current();
        let mut levels: Vec<Arc<LevelState>> = running.levels.values().cloned().collect();
        levels.sort_by(|a, b| a.name.cmp(&b.name));
        levels
    }
}

fn new_level(name: &str, level: Level) -> LevelState {
    LevelState {
        name: name.to_string(),
        inner: Mutex::new(level),
    }
}

#[cfg(test)]
mod tests;
