//! Kubernetes Events for `kubectl describe`, recorded as client-go's recorder does: off the
//! reconcile path (a bounded queue that drops when full rather than slowing controllers down),
//! with repeats of the same event on the same object folded into one Event whose count grows.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Pending events beyond this are dropped (client-go's broadcaster queue is 1000 long).
const QUEUE: usize = 4096;
/// Remembered events for aggregation; the memory is cleared when full.
const REMEMBERED: usize = 8192;
/// Events written per second at most, so that a burst of changes spends the API server on the
/// changes rather than on their events (Karmada's controllers share a 40 QPS client limit);
/// events beyond the queue are dropped, as client-go's recorder drops them.
const RATE: f64 = 100.0;
/// Events written back to back before the rate applies.
const BURST: f64 = 200.0;

/// The object an event is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventTarget {
    /// apiVersion.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID (kubectl describe matches events by it).
    pub uid: String,
}

impl EventTarget {
    /// The target for a typed object.
    pub fn of<K: kube::Resource<DynamicType = ()>>(o: &K) -> EventTarget {
        let m = o.meta();
        EventTarget {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
        }
    }
}

struct Pending {
    target: EventTarget,
    type_: &'static str,
    reason: &'static str,
    message: String,
    component: &'static str,
}

/// Records events for one controller (the `source.component` of its events).
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<Pending>,
    component: &'static str,
}

impl Recorder {
    /// A Normal event.
    pub fn normal(&self, target: &EventTarget, reason: &'static str, message: impl Into<String>) {
        self.send(target, "Normal", reason, message.into());
    }

    /// A Warning event.
    pub fn warning(&self, target: &EventTarget, reason: &'static str, message: impl Into<String>) {
        self.send(target, "Warning", reason, message.into());
    }

    fn send(
        &self,
        target: &EventTarget,
        type_: &'static str,
        reason: &'static str,
        message: String,
    ) {
        if target.name.is_empty() || target.uid.is_empty() {
            return;
        }
        let _ = self.tx.try_send(Pending {
            target: target.clone(),
            type_,
            reason,
            message,
            component: self.component,
        });
    }
}

/// Owns the queue of events and the task that writes them.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::Sender<Pending>,
}

impl EventSink {
    /// Starts the writer task.
    pub fn start(client: Client) -> (EventSink, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(write_events(client, rx));
        (EventSink { tx }, task)
    }

    /// A recorder for a component.
    pub fn recorder(&self, component: &'static str) -> Recorder {
        Recorder {
            tx: self.tx.clone(),
            component,
        }
    }
}

#[derive(Hash, PartialEq, Eq)]
struct AggregateKey {
    uid: String,
    type_: &'static str,
    reason: &'static str,
    message: String,
    component: &'static str,
}

struct Seen {
    namespace: String,
    name: String,
    count: i32,
}

async fn write_events(client: Client, mut rx: mpsc::Receiver<Pending>) {
    let mut seen: HashMap<AggregateKey, Seen> = HashMap::new();
    let host = Arc::<str>::from("karmada-rs");
    let mut tokens = BURST;
    let mut last = tokio::time::Instant::now();
    while let Some(p) = rx.recv().await {
        let t = tokio::time::Instant::now();
        tokens = (tokens + t.duration_since(last).as_secs_f64() * RATE).min(BURST);
        last = t;
        if tokens < 1.0 {
            tokio::time::sleep(std::time::Duration::from_secs_f64((1.0 - tokens) / RATE)).await;
            tokens = 1.0;
            last = tokio::time::Instant::now();
        }
        tokens -= 1.0;
        let now = jiff::Timestamp::now();
        let namespace = if p.target.namespace.is_empty() {
            "default".to_owned()
        } else {
            p.target.namespace.clone()
        };
        let key = AggregateKey {
            uid: p.target.uid.clone(),
            type_: p.type_,
            reason: p.reason,
            message: p.message.clone(),
            component: p.component,
        };
        if let Some(s) = seen.get_mut(&key) {
            s.count += 1;
            let api: Api<Event> = Api::namespaced(client.clone(), &s.namespace);
            let patch = json!({"count": s.count, "lastTimestamp": Time(now)});
            if api
                .patch(&s.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_ok()
            {
                continue;
            }
            seen.remove(&key);
        }
        let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
        let name = format!("{}.{:x}", p.target.name, now.as_nanosecond());
        let ev = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some(p.target.api_version.clone()),
                kind: Some(p.target.kind.clone()),
                namespace: (!p.target.namespace.is_empty()).then(|| p.target.namespace.clone()),
                name: Some(p.target.name.clone()),
                uid: Some(p.target.uid.clone()),
                ..Default::default()
            },
            reason: Some(p.reason.to_owned()),
            message: Some(p.message),
            source: Some(EventSource {
                component: Some(p.component.to_owned()),
                host: None,
            }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: None::<MicroTime>,
            count: Some(1),
            type_: Some(p.type_.to_owned()),
            reporting_component: Some(p.component.to_owned()),
            reporting_instance: Some(host.to_string()),
            ..Default::default()
        };
        match super::write::create(api.clone(), &ev).await {
            Ok(_) => {
                if seen.len() >= REMEMBERED {
                    seen.clear();
                }
                seen.insert(
                    key,
                    Seen {
                        namespace,
                        name,
                        count: 1,
                    },
                );
            }
            Err(e) => tracing::debug!(error = %e, "recording an event failed"),
        }
    }
}
