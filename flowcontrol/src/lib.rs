//! API Priority and Fairness, simplified (k8s.io/apiserver/pkg/util/flowcontrol): requests are
//! classified by who sends them into priority levels with kube's names and nominal shares of
//! the server's concurrency; within a level each flow (a user) has its own queue and free
//! seats go to the flows in turn, so a noisy client fills only its own queue and cannot starve
//! the others. A request beyond its queue's length, or waiting longer than the limit, is
//! rejected (the server answers 429 with Retry-After). The configuration is kube's bootstrap
//! one, fixed (no FlowSchema or PriorityLevelConfiguration objects).
//!
//! Must not depend on: an HTTP stack, storage, the server crate (only tokio's channels).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// A priority level of kube's bootstrap configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PriorityLevel {
    /// Never limited nor queued (system:masters, health probes).
    Exempt,
    /// The control plane's own machinery (pull-mode agents, as kube's nodes).
    System,
    /// Leader election's Leases.
    LeaderElection,
    /// Interactive users.
    WorkloadHigh,
    /// Service accounts.
    WorkloadLow,
    /// Other authenticated requests.
    GlobalDefault,
    /// Everything else (unauthenticated).
    CatchAll,
}

const LEVELS: [PriorityLevel; 7] = [
    PriorityLevel::Exempt,
    PriorityLevel::System,
    PriorityLevel::LeaderElection,
    PriorityLevel::WorkloadHigh,
    PriorityLevel::WorkloadLow,
    PriorityLevel::GlobalDefault,
    PriorityLevel::CatchAll,
];

impl PriorityLevel {
    /// kube's name of the level.
    pub fn name(self) -> &'static str {
        match self {
            PriorityLevel::Exempt => "exempt",
            PriorityLevel::System => "system",
            PriorityLevel::LeaderElection => "leader-election",
            PriorityLevel::WorkloadHigh => "workload-high",
            PriorityLevel::WorkloadLow => "workload-low",
            PriorityLevel::GlobalDefault => "global-default",
            PriorityLevel::CatchAll => "catch-all",
        }
    }

    /// kube's nominal concurrency shares of the level (exempt: none, it is not limited).
    fn shares(self) -> usize {
        match self {
            PriorityLevel::Exempt => 0,
            PriorityLevel::System => 30,
            PriorityLevel::LeaderElection => 10,
            PriorityLevel::WorkloadHigh => 40,
            PriorityLevel::WorkloadLow => 100,
            PriorityLevel::GlobalDefault => 20,
            PriorityLevel::CatchAll => 5,
        }
    }

    fn index(self) -> usize {
        LEVELS.iter().position(|l| *l == self).unwrap_or(0)
    }
}

/// What the classifier needs of a request.
#[derive(Clone, Copy, Debug)]
pub struct RequestDigest<'a> {
    /// The authenticated user's name ("" when unauthenticated).
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
    /// The request's verb (get, list, create...).
    pub verb: &'a str,
    /// API group and resource of a resource request ("" otherwise).
    pub api_group: &'a str,
    /// The resource.
    pub resource: &'a str,
    /// The URL path (for non-resource requests).
    pub path: &'a str,
    /// Whether it is a resource request.
    pub is_resource_request: bool,
}

/// The flow schema a request matched, its level and its flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The matching flow schema's name.
    pub flow_schema: &'static str,
    /// Its priority level.
    pub priority_level: PriorityLevel,
    /// The flow within the level: the user (kube's ByUser distinguisher).
    pub flow: String,
}

/// The group of pull-mode agents, which stand where kube has its nodes.
const AGENTS_GROUP: &str = "system:karmada:agents";

/// kube's bootstrap flow schemas in matching precedence, with Karmada's components where kube
/// has its own: the in-process controllers are exempt (Karmada's controller-manager and
/// scheduler reach their API server as system:masters, which kube exempts), the pull-mode agents
/// at the system level as kube's nodes, and interactive users (not service accounts) at
/// workload-high.
pub fn classify(d: &RequestDigest<'_>) -> Classification {
    let in_group = |g: &str| d.groups.iter().any(|x| x == g);
    let (flow_schema, priority_level) = if in_group("system:masters") {
        ("exempt", PriorityLevel::Exempt)
    } else if in_group("system:karmada:controllers") {
        ("karmada-controllers", PriorityLevel::Exempt)
    } else if !d.is_resource_request
        && ["/healthz", "/readyz", "/livez"]
            .iter()
            .any(|p| d.path == *p || d.path.starts_with(&format!("{p}/")))
    {
        ("probes", PriorityLevel::Exempt)
    } else if d.is_resource_request
        && d.api_group == "coordination.k8s.io"
        && d.resource == "leases"
        && matches!(d.verb, "get" | "create" | "update")
        && (in_group(AGENTS_GROUP) || in_group("system:nodes"))
    {
        ("system-leader-election", PriorityLevel::LeaderElection)
    } else if in_group(AGENTS_GROUP) || in_group("system:nodes") {
        ("system-nodes", PriorityLevel::System)
    } else if in_group("system:serviceaccounts") {
        ("service-accounts", PriorityLevel::WorkloadLow)
    } else if in_group("system:authenticated") {
        ("workload-users", PriorityLevel::WorkloadHigh)
    } else {
        ("catch-all", PriorityLevel::CatchAll)
    };
    Classification {
        flow_schema,
        priority_level,
        flow: d.user.to_string(),
    }
}

/// Why a request was not admitted (kube's `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Its flow's queue was full.
    QueueFull,
    /// It waited in its queue longer than allowed.
    TimeOut,
}

impl Rejection {
    /// kube's label value.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::TimeOut => "time-out",
        }
    }
}

/// Tunables (kube's defaults).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The server's concurrency limit (kube: max-requests-inflight +
    /// max-mutating-requests-inflight), shared by the levels by their nominal shares.
    pub server_concurrency_limit: usize,
    /// Requests one flow may have waiting (kube's queueLengthLimit, 50).
    pub queue_length_limit: usize,
    /// Longest wait in a queue (kube: a quarter of the request timeout).
    pub max_wait: Duration,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<()>,
}

#[derive(Default)]
struct Level {
    limit: usize,
    executing: usize,
    queues: HashMap<String, VecDeque<Waiter>>,
    /// Flows with waiting requests, in the order they get the next free seats.
    turn: VecDeque<String>,
}

/// Counters kept per (flow schema, level), printed with kube's metric names. A request looks
/// its counters up once and updates them without a lock.
#[derive(Default)]
struct Counts {
    dispatched: AtomicI64,
    rejected_queue_full: AtomicI64,
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

type CountsTable = std::sync::RwLock<HashMap<(&'static str, PriorityLevel), Arc<Counts>>>;

/// The admission controller of API Priority and Fairness.
pub struct FlowControl {
    config: Config,
    levels: Vec<Mutex<Level>>,
    counts: CountsTable,
    next_id: AtomicU64,
}

/// A request waiting in its flow's queue. Dropped before it settles (the request went away),
/// it leaves the queue, or gives back the seat it was granted meanwhile.
struct Queued<'a> {
    control: &'a FlowControl,
    level: PriorityLevel,
    flow: &'a str,
    counts: Arc<Counts>,
    id: u64,
    rx: oneshot::Receiver<()>,
    settled: bool,
}

impl Queued<'_> {
    /// Removes this request from its queue; false when it is no longer there (a seat was
    /// granted: `release` sends under the level's lock, so the grant is already made).
    fn leave_queue(&mut self) -> bool {
        let mut l = self.control.lock(self.level);
        let Some(queue) = l.queues.get_mut(self.flow) else {
            return false;
        };
        let Some(i) = queue.iter().position(|w| w.id == self.id) else {
            return false;
        };
        queue.remove(i);
        if queue.is_empty() {
            l.queues.remove(self.flow);
            l.turn.retain(|f| f != self.flow);
        }
        true
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        Counts::add(&self.counts.inqueue, -1);
        if !self.leave_queue() && self.rx.try_recv().is_ok() {
            // Granted, but nobody is left to use it: the next flow gets it.
            self.control.release(self.level);
        }
    }
}

/// A seat held while a request executes; freed (and given to the next flow) when dropped.
pub struct Seat<'a> {
    control: &'a FlowControl,
    level: PriorityLevel,
    counts: Arc<Counts>,
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        Counts::add(&self.counts.executing, -1);
        if self.level != PriorityLevel::Exempt {
            self.control.release(self.level);
        }
    }
}

impl FlowControl {
    /// A controller with each level's limit from its nominal shares of the server's limit
    /// (kube's NominalCL = ceil(limit × shares / total shares)).
    pub fn new(config: Config) -> FlowControl {
        let total: usize = LEVELS.iter().map(|l| l.shares()).sum();
        let levels = LEVELS
            .iter()
            .map(|l| {
                let limit = (config.server_concurrency_limit * l.shares()).div_ceil(total);
                Mutex::new(Level {
                    limit: limit.max(1),
                    ..Default::default()
                })
            })
            .collect();
        FlowControl {
            config,
            levels,
            counts: CountsTable::default(),
            next_id: AtomicU64::new(0),
        }
    }

    /// The concurrency limit of a level.
    pub fn limit(&self, level: PriorityLevel) -> usize {
        self.lock(level).limit
    }

    fn lock(&self, level: PriorityLevel) -> std::sync::MutexGuard<'_, Level> {
        self.levels[level.index()]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The counters of a (flow schema, level), created on first use.
    fn counts(&self, schema: &'static str, level: PriorityLevel) -> Arc<Counts> {
        let found = self
            .counts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(schema, level))
            .cloned();
        found.unwrap_or_else(|| {
            let mut table = self.counts.write().unwrap_or_else(|e| e.into_inner());
            table.entry((schema, level)).or_default().clone()
        })
    }

    /// Admits a request: at once when its level has a free seat and nobody waits, else after
    /// waiting in its flow's queue for its turn; or rejects it.
    pub async fn admit(&self, c: &Classification) -> Result<Seat<'_>, Rejection> {
        let level = c.priority_level;
        let counts = self.counts(c.flow_schema, level);
        let seat = |counts: Arc<Counts>| {
            Counts::add(&counts.dispatched, 1);
            Counts::add(&counts.executing, 1);
            Seat {
                control: self,
                level,
                counts,
            }
        };
        if level == PriorityLevel::Exempt {
            return Ok(seat(counts));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let rx = {
            let mut l = self.lock(level);
            if l.executing < l.limit && l.turn.is_empty() {
                l.executing += 1;
                None
            } else {
                let queue = l.queues.entry(c.flow.clone()).or_default();
                if queue.len() >= self.config.queue_length_limit {
                    drop(l);
                    Counts::add(&counts.rejected_queue_full, 1);
                    return Err(Rejection::QueueFull);
                }
                let (tx, rx) = oneshot::channel();
                let first = queue.is_empty();
                queue.push_back(Waiter { id, grant: tx });
                if first {
                    l.turn.push_back(c.flow.clone());
                }
                Some(rx)
            }
        };
        let Some(rx) = rx else {
            return Ok(seat(counts));
        };
        Counts::add(&counts.inqueue, 1);
        let mut waiting = Queued {
            control: self,
            level,
            flow: &c.flow,
            counts: counts.clone(),
            id,
            rx,
            settled: false,
        };
        let granted = match tokio::time::timeout(self.config.max_wait, &mut waiting.rx).await {
            Ok(Ok(())) => true,
            // Timed out: still queued, unless the seat was granted as the wait ended.
            _ => !waiting.leave_queue(),
        };
        waiting.settled = true;
        Counts::add(&counts.inqueue, -1);
        if granted {
            Ok(seat(counts))
        } else {
            Counts::add(&counts.rejected_time_out, 1);
            Err(Rejection::TimeOut)
        }
    }

    /// Frees a seat of `level`: the next flow in turn gets it (its oldest request).
    fn release(&self, level: PriorityLevel) {
        let mut l = self.lock(level);
        l.executing -= 1;
        while l.executing < l.limit {
            let Some(flow) = l.turn.pop_front() else {
                return;
            };
            let Some(queue) = l.queues.get_mut(&flow) else {
                continue;
            };
            let Some(waiter) = queue.pop_front() else {
                l.queues.remove(&flow);
                continue;
            };
            let more = !queue.is_empty();
            if more {
                l.turn.push_back(flow);
            } else {
                l.queues.remove(&flow);
            }
            // A waiter whose request went away no longer takes the seat.
            if waiter.grant.send(()).is_ok() {
                l.executing += 1;
            }
        }
    }

    /// kube's flow-control metrics, in the Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let counts = self.counts.read().unwrap_or_else(|e| e.into_inner());
        let mut keys: Vec<_> = counts.keys().copied().collect();
        keys.sort_by_key(|(s, l)| (l.index(), *s));
        let series = |out: &mut String,
                      name: &str,
                      help: &str,
                      kind: &str,
                      f: &dyn Fn(&Counts) -> &AtomicI64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for k in &keys {
                if let Some(v) = counts.get(k).map(|c| Counts::get(f(c))) {
                    let _ = writeln!(
                        out,
                        "{name}{{flow_schema=\"{}\",priority_level=\"{}\"}} {v}",
                        k.0,
                        k.1.name()
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
            if let Some(c) = counts.get(k) {
                for (reason, n) in [
                    ("queue-full", Counts::get(&c.rejected_queue_full)),
                    ("time-out", Counts::get(&c.rejected_time_out)),
                ] {
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{}\",priority_level=\"{}\",reason=\"{reason}\"}} {n}",
                            k.0,
                            k.1.name()
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
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_nominal_limit_seats Nominal number of execution seats configured for each priority level\n# TYPE apiserver_flowcontrol_nominal_limit_seats gauge"
        );
        for l in LEVELS.iter().filter(|l| **l != PriorityLevel::Exempt) {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{}\"}} {}",
                l.name(),
                self.limit(*l)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn digest<'a>(user: &'a str, groups: &'a [String], verb: &'a str) -> RequestDigest<'a> {
        RequestDigest {
            user,
            groups,
            verb,
            api_group: "",
            resource: "configmaps",
            path: "/api/v1/namespaces/default/configmaps",
            is_resource_request: true,
        }
    }

    fn groups(g: &[&str]) -> Vec<String> {
        g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requests_are_classified_as_kubes_bootstrap_schemas() {
        let masters = groups(&["system:masters", "system:authenticated"]);
        let users = groups(&["system:authenticated"]);
        let sas = groups(&["system:serviceaccounts", "system:authenticated"]);
        let controllers = groups(&["system:karmada:controllers", "system:authenticated"]);
        let agents = groups(&["system:karmada:agents", "system:authenticated"]);
        let level = |d: RequestDigest<'_>| classify(&d).priority_level;
        assert_eq!(
            level(digest("admin", &masters, "create")),
            PriorityLevel::Exempt
        );
        assert_eq!(
            level(digest("alice", &users, "create")),
            PriorityLevel::WorkloadHigh
        );
        assert_eq!(
            level(digest("sa", &sas, "list")),
            PriorityLevel::WorkloadLow
        );
        assert_eq!(
            level(digest("ctl", &controllers, "update")),
            PriorityLevel::Exempt
        );
        assert_eq!(
            level(digest("agent", &agents, "update")),
            PriorityLevel::System
        );
        assert_eq!(level(digest("", &[], "get")), PriorityLevel::CatchAll);
        let probe = RequestDigest {
            path: "/readyz",
            is_resource_request: false,
            ..digest("", &[], "get")
        };
        assert_eq!(classify(&probe).flow_schema, "probes");
        let lease = RequestDigest {
            api_group: "coordination.k8s.io",
            resource: "leases",
            ..digest("agent", &agents, "update")
        };
        assert_eq!(level(lease), PriorityLevel::LeaderElection);
        assert_eq!(classify(&digest("alice", &users, "get")).flow, "alice");
    }

    #[test]
    fn limits_follow_kubes_nominal_shares() {
        let fc = FlowControl::new(Config {
            server_concurrency_limit: 600,
            queue_length_limit: 50,
            max_wait: Duration::from_secs(15),
        });
        // ceil(600 × shares / 205), as kube's bootstrap configuration gives.
        assert_eq!(fc.limit(PriorityLevel::System), 88);
        assert_eq!(fc.limit(PriorityLevel::LeaderElection), 30);
        assert_eq!(fc.limit(PriorityLevel::WorkloadHigh), 118);
        assert_eq!(fc.limit(PriorityLevel::WorkloadLow), 293);
        assert_eq!(fc.limit(PriorityLevel::GlobalDefault), 59);
        assert_eq!(fc.limit(PriorityLevel::CatchAll), 15);
    }

    fn user(name: &str) -> Classification {
        Classification {
            flow_schema: "workload-users",
            priority_level: PriorityLevel::WorkloadHigh,
            flow: name.into(),
        }
    }

    /// A noisy flow fills its own queue; a quiet flow's request gets the next free seat.
    #[tokio::test]
    async fn a_noisy_flow_cannot_starve_a_quiet_one() {
        let fc = Arc::new(FlowControl::new(Config {
            server_concurrency_limit: 5, // workload-high: ceil(5 × 40 / 205) = 1 seat
            queue_length_limit: 3,
            max_wait: Duration::from_secs(30),
        }));
        assert_eq!(fc.limit(PriorityLevel::WorkloadHigh), 1);
        let noisy = user("noisy");
        let held = fc.admit(&noisy).await.expect("the only seat");
        // Three noisy requests queue, the fourth is rejected: its queue is full.
        let mut queued = Vec::new();
        for _ in 0..3 {
            let (fc, c) = (fc.clone(), noisy.clone());
            queued.push(tokio::spawn(async move { fc.admit(&c).await.is_ok() }));
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while fc
            .lock(PriorityLevel::WorkloadHigh)
            .queues
            .get("noisy")
            .map_or(0, VecDeque::len)
            < 3
        {
            assert!(std::time::Instant::now() < deadline);
            tokio::task::yield_now().await;
        }
        assert_eq!(fc.admit(&noisy).await.err(), Some(Rejection::QueueFull));
        // The quiet flow queues behind one noisy request only: the turns alternate.
        let quiet = {
            let fc = fc.clone();
            tokio::spawn(async move { fc.admit(&user("quiet")).await.is_ok() })
        };
        while !fc
            .lock(PriorityLevel::WorkloadHigh)
            .queues
            .contains_key("quiet")
        {
            assert!(std::time::Instant::now() < deadline);
            tokio::task::yield_now().await;
        }
        let turn: Vec<String> = fc
            .lock(PriorityLevel::WorkloadHigh)
            .turn
            .iter()
            .cloned()
            .collect();
        assert_eq!(turn, ["noisy", "quiet"]);
        drop(held);
        // Seats pass one by one, the flows taking turns; every queued request is admitted.
        for q in queued {
            assert!(q.await.expect("task"));
        }
        assert!(quiet.await.expect("task"));
        let mut text = String::new();
        fc.render_metrics(&mut text);
        assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"workload-users\",priority_level=\"workload-high\",reason=\"queue-full\"} 1"), "{text}");
        assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"workload-users\",priority_level=\"workload-high\"} 5"), "{text}");
        assert!(text.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"workload-users\",priority_level=\"workload-high\"} 0"), "{text}");
    }

    #[tokio::test]
    async fn a_request_waiting_too_long_is_rejected_and_leaves_its_queue() {
        let fc = FlowControl::new(Config {
            server_concurrency_limit: 5,
            queue_length_limit: 10,
            max_wait: Duration::from_millis(50),
        });
        let _held = fc.admit(&user("a")).await.expect("seat");
        assert_eq!(fc.admit(&user("b")).await.err(), Some(Rejection::TimeOut));
        let level = fc.lock(PriorityLevel::WorkloadHigh);
        assert!(level.queues.is_empty() && level.turn.is_empty());
        assert_eq!(level.executing, 1);
    }

    #[tokio::test]
    async fn exempt_requests_are_never_limited() {
        let fc = FlowControl::new(Config {
            server_concurrency_limit: 1,
            queue_length_limit: 0,
            max_wait: Duration::from_millis(1),
        });
        let admin = Classification {
            flow_schema: "exempt",
            priority_level: PriorityLevel::Exempt,
            flow: "admin".into(),
        };
        let mut held = Vec::new();
        for _ in 0..100 {
            held.push(fc.admit(&admin).await.expect("exempt"));
        }
        assert_eq!(held.len(), 100);
    }

    /// A waiting request that goes away leaves its queue; one granted a seat it can no longer
    /// use hands it on.
    #[tokio::test]
    async fn cancelled_waiters_leave_no_trace() {
        let fc = Arc::new(FlowControl::new(Config {
            server_concurrency_limit: 5,
            queue_length_limit: 10,
            max_wait: Duration::from_secs(30),
        }));
        let held = fc.admit(&user("a")).await.expect("seat");
        let waiting = {
            let fc = fc.clone();
            tokio::spawn(async move { fc.admit(&user("b")).await.is_ok() })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !fc
            .lock(PriorityLevel::WorkloadHigh)
            .queues
            .contains_key("b")
        {
            assert!(std::time::Instant::now() < deadline);
            tokio::task::yield_now().await;
        }
        waiting.abort();
        let _ = waiting.await;
        {
            let l = fc.lock(PriorityLevel::WorkloadHigh);
            assert!(l.queues.is_empty() && l.turn.is_empty());
        }
        drop(held);
        assert_eq!(fc.lock(PriorityLevel::WorkloadHigh).executing, 0);
        // The level is usable again at once.
        let _again = fc.admit(&user("c")).await.expect("seat");
    }
}
