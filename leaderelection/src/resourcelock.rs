//! The lock an election contends for (client-go's tools/leaderelection/resourcelock): the
//! record it holds, the [`Interface`] the elector uses, and [`LeaseLock`], a
//! `coordination.k8s.io/v1` Lease read and written through a `kube::Client`.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, PostParams};

/// What the lock holds (client-go's `LeaderElectionRecord`), as the Lease's spec carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lock; empty: nobody (released), anyone may take it at once.
    pub holder_identity: String,
    /// How long the holder's claim lasts after each renewal, as others observe it.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired it.
    pub acquire_time: Option<jiff::Timestamp>,
    /// When the holder last renewed it (informational: expiry is judged on the observer's
    /// own clock from when it saw the record change).
    pub renew_time: Option<jiff::Timestamp>,
    /// How many times the holder changed.
    pub leader_transitions: i32,
}

/// Why a lock operation failed, as client-go tells them apart (`errors.IsNotFound`,
/// `errors.IsConflict`).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock object does not exist yet.
    #[error("not found")]
    NotFound,
    /// Someone else wrote the lock since it was read (optimistic concurrency: a lost race).
    #[error("conflict: the lock changed since it was read")]
    Conflict,
    /// Any other failure (the API server unreachable, forbidden, ...).
    #[error("{0}")]
    Other(String),
}

/// A lock the elector contends for (client-go's `resourcelock.Interface`).
#[async_trait::async_trait]
pub trait Interface: Send {
    /// Reads the record; remembers the object so that `update` is conditional on it.
    async fn get(&mut self) -> Result<LeaderElectionRecord, LockError>;
    /// Creates the lock holding `record`.
    async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError>;
    /// Replaces the record, conditional on the object last read or written being current.
    async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError>;
    /// Records an event about the lock (`<identity> became leader`).
    async fn record_event(&self, message: &str);
    /// `namespace/name`, for logs.
    fn describe(&self) -> String;
    /// This participant's identity.
    fn identity(&self) -> &str;
    /// The lock's record as others write it, delivered as the writes happen, for locks that
    /// can watch theirs (client-go's locks cannot, and its elector only polls). The stream
    /// runs while the receiver lives. The elector still polls every retry period; what it
    /// sees here only starts its lease clock at the write instead of at its next poll.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<Option<LeaderElectionRecord>>> {
        None
    }
}

/// A Lease as the lock (client-go's `LeaseLock`).
pub struct LeaseLock {
    api: Api<Lease>,
    events: Api<Event>,
    namespace: String,
    name: String,
    identity: String,
    /// The Lease as last read or written: its resourceVersion makes updates conditional.
    lease: Option<Lease>,
}

impl LeaseLock {
    /// The Lease `namespace/name`, contended for as `identity`, through `client`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: &str) -> LeaseLock {
        LeaseLock {
            api: Api::namespaced(client.clone(), namespace),
            events: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease: None,
        }
    }
}

fn lock_error(e: kube::Error) -> LockError {
    match e {
        kube::Error::Api(s) if s.is_not_found() => LockError::NotFound,
        kube::Error::Api(s) if s.is_conflict() => LockError::Conflict,
        e => LockError::Other(e.to_string()),
    }
}

/// client-go's `LeaseSpecToLeaderElectionRecord`.
pub fn record_of(spec: &LeaseSpec) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
        acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
        renew_time: spec.renew_time.as_ref().map(|t| t.0),
        leader_transitions: spec.lease_transitions.unwrap_or_default(),
    }
}

/// client-go's `LeaderElectionRecordToLeaseSpec`: every field is set, an empty holder too.
pub fn spec_of(record: &LeaderElectionRecord) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(record.holder_identity.clone()),
        lease_duration_seconds: Some(record.lease_duration_seconds),
        acquire_time: record.acquire_time.map(MicroTime),
        renew_time: record.renew_time.map(MicroTime),
        lease_transitions: Some(record.leader_transitions),
        ..Default::default()
    }
}

#[async_trait::async_trait]
impl Interface for LeaseLock {
    async fn get(&mut self) -> Result<LeaderElectionRecord, LockError> {
        let lease = self.api.get(&self.name).await.map_err(lock_error)?;
        let record = record_of(&lease.spec.clone().unwrap_or_default());
        self.lease = Some(lease);
        Ok(record)
    }

    async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            spec: Some(spec_of(record)),
        };
        let created = self
            .api
            .create(&PostParams::default(), &lease)
            .await
            .map_err(lock_error)?;
        self.lease = Some(created);
        Ok(())
    }

    async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let Some(mut lease) = self.lease.clone() else {
            return Err(LockError::Other(
                "lease not initialized, call get or create first".into(),
            ));
        };
        lease.spec = Some(spec_of(record));
        let updated = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map_err(lock_error)?;
        self.lease = Some(updated);
        Ok(())
    }

    async fn record_event(&self, message: &str) {
        // client-go's LeaseLock.RecordEvent through a core/v1 EventRecorder: a Normal
        // `LeaderElection` event on the Lease, named as the recorder names events
        // (`<object>.<unix nanoseconds in hex>`); the recorder's component is the identity,
        // as controller-runtime's leader election (Karmada's) creates it.
        let Some(lease) = &self.lease else { return };
        let now = jiff::Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", self.name, now.as_nanosecond())),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("coordination.k8s.io/v1".into()),
                kind: Some("Lease".into()),
                namespace: Some(self.namespace.clone()),
                name: Some(self.name.clone()),
                uid: lease.metadata.uid.clone(),
                resource_version: lease.metadata.resource_version.clone(),
                ..Default::default()
            },
            reason: Some("LeaderElection".into()),
            message: Some(format!("{} {message}", self.identity)),
            type_: Some("Normal".into()),
            source: Some(EventSource {
                component: Some(self.identity.clone()),
                host: None,
            }),
            reporting_component: Some(self.identity.clone()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            ..Default::default()
        };
        if let Err(e) = self.events.create(&PostParams::default(), &event).await {
            tracing::warn!(error = %e, lock = %self.describe(), "could not record the leader election event");
        }
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    /// A watch of this one Lease (field selector on its name) in a task of its own, which
    /// ends once every receiver is gone. The watcher reconnects with back-off after errors.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<Option<LeaderElectionRecord>>> {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};

        let (tx, rx) = tokio::sync::watch::channel(None);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        let stream = watcher(self.api.clone(), config).default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            loop {
                tokio::select! {
                    () = tx.closed() => return,
                    event = stream.next() => match event {
                        Some(Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease))) => {
                            let record = record_of(&lease.spec.unwrap_or_default());
                            tx.send_if_modified(|seen| {
                                let changed = seen.as_ref() != Some(&record);
                                *seen = Some(record);
                                changed
                            });
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => tracing::debug!(error = %e, "watching the leader election lease"),
                        None => return,
                    },
                }
            }
        });
        Some(rx)
    }
}

/// A participant's identity as Karmada's components make it: the host name and a uuid, so
/// that two processes on one host never share one (`<hostname>_<uuid>`).
pub fn default_identity() -> String {
    // Go's os.Hostname on Linux reads this file first.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}
