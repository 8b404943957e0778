//! The election's state machine against a fake lock store: acquire, renew, expiry, conflicts,
//! release, transitions, and the run loop's stop-before-expiry.

use std::sync::Mutex;

use super::*;

/// A hook run inside the store just before an update is checked: another writer.
type Interference = Box<dyn FnOnce(&mut Store) + Send>;

/// One lock object with a resourceVersion, shared by every participant's [`FakeLock`].
#[derive(Default)]
struct Store {
    object: Option<(LeaderElectionRecord, u64)>,
    next_rv: u64,
    down: bool,
    events: Vec<String>,
    before_update: Option<Interference>,
    /// Set for a watchable lock: every write is sent here as it happens.
    changes: Option<watch::Sender<Option<LeaderElectionRecord>>>,
    /// Every write's holder and time.
    writes: Vec<(String, Instant)>,
}

impl Store {
    fn write(&mut self, record: LeaderElectionRecord) -> u64 {
        self.next_rv += 1;
        self.writes
            .push((record.holder_identity.clone(), Instant::now()));
        if let Some(tx) = &self.changes {
            tx.send_replace(Some(record.clone()));
        }
        self.object = Some((record, self.next_rv));
        self.next_rv
    }

    /// When the last write happened.
    fn last_write(&self) -> Option<Instant> {
        self.writes.last().map(|(_, t)| *t)
    }
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Store>>);

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        f(&mut self.0.lock().expect("store lock"))
    }

    fn record(&self) -> LeaderElectionRecord {
        self.with(|s| s.object.clone().expect("a lease").0)
    }

    fn lock(&self, identity: &str) -> FakeLock {
        FakeLock {
            store: self.clone(),
            identity: identity.into(),
            seen_rv: None,
        }
    }
}

struct FakeLock {
    store: Shared,
    identity: String,
    seen_rv: Option<u64>,
}

#[async_trait::async_trait]
impl Interface for FakeLock {
    async fn get(&mut self) -> Result<LeaderElectionRecord, LockError> {
        let (record, rv) = self.store.with(|s| {
            if s.down {
                return Err(LockError::Other("connection refused".into()));
            }
            s.object.clone().ok_or(LockError::NotFound)
        })?;
        self.seen_rv = Some(rv);
        Ok(record)
    }

    async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let rv = self.store.with(|s| {
            if s.down {
                return Err(LockError::Other("connection refused".into()));
            }
            if s.object.is_some() {
                return Err(LockError::Other("already exists".into()));
            }
            Ok(s.write(record.clone()))
        })?;
        self.seen_rv = Some(rv);
        Ok(())
    }

    async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let seen = self
            .seen_rv
            .ok_or_else(|| LockError::Other("lease not initialized".into()))?;
        let rv = self.store.with(|s| {
            if let Some(hook) = s.before_update.take() {
                hook(s);
            }
            if s.down {
                return Err(LockError::Other("connection refused".into()));
            }
            match &s.object {
                None => Err(LockError::NotFound),
                Some((_, rv)) if *rv != seen => Err(LockError::Conflict),
                Some(_) => Ok(s.write(record.clone())),
            }
        })?;
        self.seen_rv = Some(rv);
        Ok(())
    }

    async fn record_event(&self, message: &str) {
        let line = format!("{} {message}", self.identity);
        self.store.with(|s| s.events.push(line));
    }

    fn describe(&self) -> String {
        "karmada-system/test".into()
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn changes(&self) -> Option<watch::Receiver<Option<LeaderElectionRecord>>> {
        self.store
            .with(|s| s.changes.as_ref().map(watch::Sender::subscribe))
    }
}

/// A clock moved by hand.
struct FakeClock(Mutex<Instant>);

impl FakeClock {
    fn advance(&self, d: Duration) {
        *self.0.lock().expect("clock") += d;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *self.0.lock().expect("clock")
    }
}

fn config() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        release_on_cancel: true,
        name: "karmada-controller-manager".into(),
    }
}

fn elector(store: &Shared, identity: &str, clock: &Arc<FakeClock>) -> LeaderElector<FakeLock> {
    LeaderElector::with_clock(config(), store.lock(identity), clock.clone()).expect("valid")
}

fn fake_clock() -> Arc<FakeClock> {
    Arc::new(FakeClock(Mutex::new(Instant::now())))
}

#[tokio::test]
async fn acquires_an_absent_lease_by_creating_it() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    assert!(!a.is_leader());
    assert!(a.try_acquire_or_renew().await);
    assert!(a.is_leader());
    let r = store.record();
    assert_eq!(r.holder_identity, "a");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.leader_transitions, 0);
    assert!(r.acquire_time.is_some() && r.renew_time.is_some());
}

#[tokio::test]
async fn renewal_keeps_the_acquire_time_and_the_transitions() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    assert!(a.try_acquire_or_renew().await);
    let first = store.record();
    clock.advance(Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(2));
    assert!(a.try_acquire_or_renew().await);
    let renewed = store.record();
    assert_eq!(renewed.acquire_time, first.acquire_time);
    assert_eq!(renewed.leader_transitions, first.leader_transitions);
    assert!(renewed.renew_time > first.renew_time, "renewTime moves on");
    assert_eq!(store.with(|s| s.next_rv), 2, "one create, one update");
}

#[tokio::test]
async fn a_held_lease_is_taken_only_after_it_expired_on_the_observers_clock() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    let mut b = elector(&store, "b", &clock);
    assert!(a.try_acquire_or_renew().await);
    assert!(!b.try_acquire_or_renew().await, "held and fresh");
    assert_eq!(b.get_leader(), "a");
    // a renews at +10 s; b sees the change at +14 s, so its clock restarts there.
    clock.advance(Duration::from_secs(10));
    assert!(a.try_acquire_or_renew().await);
    clock.advance(Duration::from_secs(4));
    assert!(!b.try_acquire_or_renew().await);
    // a falls silent: 14 s after b saw the last change the lease is still valid...
    clock.advance(Duration::from_secs(14));
    assert!(!b.try_acquire_or_renew().await);
    assert_eq!(store.record().holder_identity, "a");
    // ...and past 15 s it is expired: b takes it, one transition more.
    clock.advance(Duration::from_secs(2));
    assert!(b.try_acquire_or_renew().await);
    let r = store.record();
    assert_eq!(r.holder_identity, "b");
    assert_eq!(r.leader_transitions, 1);
    assert!(b.is_leader());
    // a wakes up: its optimistic renewal conflicts, and the read shows b's fresh hold.
    assert!(!a.try_acquire_or_renew().await);
    assert!(!a.is_leader());
    assert_eq!(a.get_leader(), "b");
    assert_eq!(store.record().holder_identity, "b");
}

#[tokio::test]
async fn a_lost_race_is_a_conflict_not_a_second_leader() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    let mut b = elector(&store, "b", &clock);
    assert!(a.try_acquire_or_renew().await);
    assert!(a.release().await);
    // b reads the free lease; c writes it before b's conditional update lands.
    store.with(|s| {
        s.before_update = Some(Box::new(|s: &mut Store| {
            let mut r = s.object.clone().expect("lease").0;
            r.holder_identity = "c".into();
            s.write(r);
        }))
    });
    assert!(!b.try_acquire_or_renew().await, "b lost the race");
    assert!(!b.is_leader());
    assert_eq!(store.record().holder_identity, "c");
}

#[tokio::test]
async fn release_frees_the_lease_for_an_immediate_takeover() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    let mut b = elector(&store, "b", &clock);
    assert!(a.try_acquire_or_renew().await);
    assert!(!b.try_acquire_or_renew().await);
    assert!(a.release().await);
    let r = store.record();
    assert_eq!(r.holder_identity, "");
    assert_eq!(r.lease_duration_seconds, 1);
    assert_eq!(r.leader_transitions, 0, "kept by the release");
    assert!(!a.is_leader());
    // No waiting for the lease duration: an empty holder is free at once.
    assert!(b.try_acquire_or_renew().await);
    let r = store.record();
    assert_eq!((r.holder_identity.as_str(), r.leader_transitions), ("b", 1));
    // a campaigns again: b holds it.
    assert!(!a.try_acquire_or_renew().await);
}

#[tokio::test]
async fn release_never_clears_another_holders_lease() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    let mut b = elector(&store, "b", &clock);
    assert!(a.try_acquire_or_renew().await);
    assert!(!b.try_acquire_or_renew().await);
    clock.advance(Duration::from_secs(16));
    assert!(b.try_acquire_or_renew().await);
    // a still believes it leads (it saw nothing since); its release must leave b's hold.
    assert!(a.is_leader());
    assert!(a.release().await);
    assert_eq!(store.record().holder_identity, "b");
}

#[tokio::test]
async fn an_unreachable_store_fails_attempts_without_changing_the_holder() {
    let (store, clock) = (Shared::default(), fake_clock());
    let mut a = elector(&store, "a", &clock);
    assert!(a.try_acquire_or_renew().await);
    store.with(|s| s.down = true);
    assert!(!a.try_acquire_or_renew().await);
    store.with(|s| s.down = false);
    assert!(a.try_acquire_or_renew().await);
    assert_eq!(store.record().holder_identity, "a");
}

#[test]
fn settings_are_checked_with_client_gos_words() {
    let secs = Duration::from_secs;
    let with = |lease, renew, retry| LeaderElectionConfig {
        lease_duration: lease,
        renew_deadline: renew,
        retry_period: retry,
        ..config()
    };
    assert!(config().validate().is_ok());
    let cases = [
        (
            with(secs(10), secs(10), secs(2)),
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            with(secs(15), secs(10), secs(9)),
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            with(secs(15), secs(10), Duration::ZERO),
            "retryPeriod must be greater than zero",
        ),
    ];
    for (c, message) in cases {
        assert_eq!(c.validate().expect_err(message).to_string(), message);
    }
    let nameless = LeaderElector::new(config(), Shared::default().lock(""));
    assert_eq!(
        nameless.err().map(|e| e.to_string()).as_deref(),
        Some("Lock identity is empty")
    );
}

/// Quick settings for the run loop's tests (whole seconds: the record counts seconds).
fn quick() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
        ..config()
    }
}

/// Callbacks that log what happened into `log`; the work's handle logs its drop.
fn callbacks(log: &Arc<Mutex<Vec<(String, Instant)>>>) -> LeaderCallbacks {
    struct Work(Arc<Mutex<Vec<(String, Instant)>>>);
    impl Drop for Work {
        fn drop(&mut self) {
            push(&self.0, "work stopped");
        }
    }
    fn push(log: &Arc<Mutex<Vec<(String, Instant)>>>, what: &str) {
        log.lock()
            .expect("log")
            .push((what.to_owned(), Instant::now()));
    }
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    LeaderCallbacks {
        on_started_leading: Box::new(move || {
            push(&l1, "started");
            Box::new(Work(l1.clone()))
        }),
        on_stopped_leading: Box::new(move || push(&l2, "stopped")),
        on_new_leader: Box::new(move |id| push(&l3, &format!("leader {id}"))),
    }
}

fn entries(log: &Arc<Mutex<Vec<(String, Instant)>>>) -> Vec<String> {
    log.lock()
        .expect("log")
        .iter()
        .map(|(s, _)| s.clone())
        .collect()
}

#[tokio::test]
async fn a_leader_that_cannot_renew_stops_its_work_before_the_lease_expires() {
    let store = Shared::default();
    let mut a = LeaderElector::new(quick(), store.lock("a")).expect("valid");
    let status = a.master_status();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut cbs = callbacks(&log);
    let (_tx, mut rx) = watch::channel(false);
    let run = tokio::spawn(async move {
        let ended = a.run(&mut cbs, &mut rx).await;
        (ended, a)
    });
    let started = Instant::now();
    while !status.is_leading() {
        assert!(started.elapsed() < Duration::from_secs(5), "never led");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        status
            .render()
            .contains("leader_election_master_status{name=\"karmada-controller-manager\"} 1")
    );
    // Let a renew a few times, then cut it off from the store.
    tokio::time::sleep(Duration::from_millis(700)).await;
    store.with(|s| s.down = true);
    let (ended, a) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("run ends")
        .expect("no panic");
    assert_eq!(ended, Ended::Lost);
    assert!(!status.is_leading());
    assert!(status.render().ends_with("} 0\n"));
    let last_write = store.with(|s| s.last_write()).expect("written");
    let stopped = log
        .lock()
        .expect("log")
        .iter()
        .find(|(s, _)| s == "work stopped")
        .map(|(_, t)| *t)
        .expect("the work was stopped");
    // The others would take over a lease duration after they saw the last renewal.
    assert!(
        stopped.duration_since(last_write) < quick().lease_duration,
        "stopped {:?} after the last renewal",
        stopped.duration_since(last_write)
    );
    assert_eq!(
        entries(&log),
        ["leader a", "started", "work stopped", "stopped"]
    );
    assert_eq!(
        store.record().holder_identity,
        "a",
        "nothing could be written"
    );
    assert!(
        a.is_leader(),
        "its last observation; a new campaign starts from it"
    );
}

#[tokio::test]
async fn shutdown_stops_the_work_then_releases_and_another_takes_over() {
    let store = Shared::default();
    let mut a = LeaderElector::new(quick(), store.lock("a")).expect("valid");
    let mut b = LeaderElector::new(quick(), store.lock("b")).expect("valid");
    let (a_status, b_status) = (a.master_status(), b.master_status());
    let (a_log, b_log) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let (mut a_cbs, mut b_cbs) = (callbacks(&a_log), callbacks(&b_log));
    let (a_tx, mut a_rx) = watch::channel(false);
    let (_b_tx, mut b_rx) = watch::channel(false);
    let a_run = tokio::spawn(async move { a.run(&mut a_cbs, &mut a_rx).await });
    let t0 = Instant::now();
    while !a_status.is_leading() {
        assert!(t0.elapsed() < Duration::from_secs(5), "a never led");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let b_run = tokio::spawn(async move { b.run(&mut b_cbs, &mut b_rx).await });
    // b campaigns for a while and never leads while a renews.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!b_status.is_leading());
    assert!(entries(&b_log).contains(&"leader a".to_owned()));
    a_tx.send(true).expect("a runs");
    let released = Instant::now();
    assert_eq!(a_run.await.expect("no panic"), Ended::Shutdown);
    assert_eq!(
        entries(&a_log),
        ["leader a", "started", "work stopped", "stopped"]
    );
    assert!(!a_status.is_leading());
    while !b_status.is_leading() {
        assert!(
            released.elapsed() < quick().lease_duration,
            "b waited for expiry instead of taking the released lease"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = store.record();
    assert_eq!((r.holder_identity.as_str(), r.leader_transitions), ("b", 1));
    assert_eq!(
        store.with(|s| s.events.clone()),
        ["a became leader", "a stopped leading", "b became leader"]
    );
    b_run.abort();
}

/// Retry periods long against the lease, so that a poll's lag shows.
fn slow_polls() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(600),
        ..config()
    }
}

/// Runs `a` until it leads and `b` has watched it renew for a while, kills `a` (no release),
/// and returns how long after a's last write b took the lease.
async fn takeover_after_a_dies(store: &Shared) -> Duration {
    let mut a = LeaderElector::new(slow_polls(), store.lock("a")).expect("valid");
    let mut b = LeaderElector::new(slow_polls(), store.lock("b")).expect("valid");
    let a_status = a.master_status();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (mut a_cbs, mut b_cbs) = (callbacks(&log), callbacks(&log));
    let (_a_tx, mut a_rx) = watch::channel(false);
    let (_b_tx, mut b_rx) = watch::channel(false);
    let a_run = tokio::spawn(async move { a.run(&mut a_cbs, &mut a_rx).await });
    let t0 = Instant::now();
    while !a_status.is_leading() {
        assert!(t0.elapsed() < Duration::from_secs(5), "a never led");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let b_status = b.master_status();
    let b_run = tokio::spawn(async move { b.run(&mut b_cbs, &mut b_rx).await });
    tokio::time::sleep(Duration::from_millis(1900)).await;
    assert!(!b_status.is_leading(), "b led while a renewed");
    a_run.abort();
    let _ = a_run.await;
    let died = Instant::now();
    while !b_status.is_leading() {
        assert!(died.elapsed() < Duration::from_secs(10), "b never led");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    b_run.abort();
    let writes = store.with(|s| s.writes.clone());
    let first_b = writes
        .iter()
        .position(|(holder, _)| holder == "b")
        .expect("b wrote");
    assert!(
        writes[first_b..].iter().all(|(h, _)| h == "b"),
        "a wrote after b took the lease: {writes:?}"
    );
    let (holder, last_a) = &writes[first_b - 1];
    assert_eq!(holder, "a");
    writes[first_b].1.duration_since(*last_a)
}

#[tokio::test]
async fn a_watched_lease_is_taken_when_it_expires_after_the_last_renewal() {
    let (tx, _) = watch::channel(None);
    let store = Shared::default();
    store.with(|s| s.changes = Some(tx));
    let took = takeover_after_a_dies(&store).await;
    let lease = slow_polls().lease_duration;
    // Never before the lease ran out since the write b saw, and not a poll later: with
    // polling alone, b would see the renewal up to one jittered retry period (1.32 s) late
    // and take the lease up to another one after that.
    assert!(
        took >= lease,
        "took the lease {took:?} after the last renewal"
    );
    assert!(
        took < lease + Duration::from_millis(400),
        "took the lease {took:?} after the last renewal"
    );
}

#[tokio::test]
async fn a_polled_lease_is_taken_at_its_expiry_on_the_observers_clock() {
    let store = Shared::default();
    let took = takeover_after_a_dies(&store).await;
    let lease = slow_polls().lease_duration;
    let jittered_retry = slow_polls().retry_period.mul_f64(1.0 + JITTER_FACTOR);
    assert!(
        took >= lease,
        "took the lease {took:?} after the last renewal"
    );
    // One jittered retry period before b saw the renewal, none after the expiry.
    assert!(
        took < lease + jittered_retry + Duration::from_millis(400),
        "took the lease {took:?} after the last renewal"
    );
}
