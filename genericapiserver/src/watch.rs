//! Watch responses: newline-delimited JSON events, or length-prefixed protobuf `WatchEvent`s,
//! over a chunked HTTP body, served from the watch cache
//! (k8s.io/apiserver/pkg/endpoints/handlers/watch.go semantics).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::negotiation::MediaType;
use crate::options::{ListOptions, RvMatch};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{
    CacheError, CacheEvent, CachedObject, EventType, Filter, FrameFormat, RecvError, WatchCache,
    frame,
};
use apimachinery::protobuf::Codec;
use apimachinery::table::TableVersion;

/// Turns each outgoing event into its wire form (JSON, protobuf, or a one-row Table).
pub trait Encoder: Send + 'static {
    /// The Content-Type of the stream.
    fn content_type(&self) -> &'static str {
        "application/json"
    }
    /// Encodes an object-carrying event; `None` when the object cannot be encoded, which ends
    /// the watch (as kube's `watchEncoder` error does).
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        shared: Option<&CacheEvent>,
    ) -> Option<Bytes>;
    /// Encodes a bookmark.
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Option<Bytes>;
    /// Encodes an ERROR event carrying a Status.
    fn error(&mut self, status: &ApiError) -> Bytes {
        frame("ERROR", &status.status_bytes())
    }
}

/// The object of BOOKMARK events: an empty object of the watched kind carrying the
/// resourceVersion (and, at the end of a streaming list's initial events, its annotations).
#[derive(Clone, Debug)]
pub struct Bookmark {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// `kind` of the object.
    pub kind: String,
    /// For watch-list requests: the empty list in the stream's encoding, base64, which kube
    /// puts on the initial-events-end bookmark (`kubernetes.io/initial-events-list-blueprint`).
    pub blueprint: Option<String>,
}

impl Bookmark {
    /// The bookmark object at `rv`.
    pub fn object(&self, rv: i64, initial_events_end: bool) -> serde_json::Value {
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_events_end {
            let mut annotations = json!({"k8s.io/initial-events-end": "true"});
            if let Some(b) = &self.blueprint {
                annotations["kubernetes.io/initial-events-list-blueprint"] = json!(b);
            }
            meta["annotations"] = annotations;
        }
        json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": meta})
    }
}

/// Plain JSON events, sharing the cache's pre-built frames.
pub struct JsonEncoder {
    /// What bookmarks carry.
    pub bookmark: Bookmark,
}

impl Encoder for JsonEncoder {
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        shared: Option<&CacheEvent>,
    ) -> Option<Bytes> {
        Some(match shared {
            Some(ev) => ev.frame(t),
            None => crate::watch_cache::object_frame(t.as_str(), obj),
        })
    }
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Option<Bytes> {
        Some(frame(
            "BOOKMARK",
            self.bookmark
                .object(rv, initial_events_end)
                .to_string()
                .as_bytes(),
        ))
    }
}

/// Protobuf events of the watched kind, each event's frames built once for every protobuf
/// watcher of the cache.
pub struct ProtobufEncoder {
    /// The kind's message.
    pub codec: Codec,
    /// What bookmarks carry.
    pub bookmark: Bookmark,
}

/// A protobuf watch frame of `object` encoded with `codec`; `None` (logged) when it cannot be.
fn protobuf_frame(codec: &Codec, t: &str, object: &serde_json::Value) -> Option<Bytes> {
    match codec.object(object) {
        Ok(body) => Some(Bytes::from(apimachinery::protobuf::watch_event(t, &body))),
        Err(e) => {
            tracing::warn!(error = %e, kind = codec.kind(), "watch event cannot be encoded as protobuf; watch closed");
            None
        }
    }
}

/// An ERROR event carrying `status` as a protobuf Status.
fn protobuf_error(status: &ApiError) -> Bytes {
    let body = Codec::for_kind("v1", "Status")
        .and_then(|c| c.object(&status.status_json()).ok())
        .unwrap_or_default();
    Bytes::from(apimachinery::protobuf::watch_event("ERROR", &body))
}

impl Encoder for ProtobufEncoder {
    fn content_type(&self) -> &'static str {
        MediaType::Protobuf.watch_content_type()
    }
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        shared: Option<&CacheEvent>,
    ) -> Option<Bytes> {
        let codec = self.codec;
        let build = move |t: EventType, obj: &CachedObject| {
            protobuf_frame(&codec, t.as_str(), &obj.value())
        };
        match shared {
            Some(ev) => ev.shared_frame(FrameFormat::Protobuf, t, build),
            None => build(t, obj),
        }
    }
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Option<Bytes> {
        protobuf_frame(
            &self.codec,
            "BOOKMARK",
            &self.bookmark.object(rv, initial_events_end),
        )
    }
    fn error(&mut self, status: &ApiError) -> Bytes {
        protobuf_error(status)
    }
}

/// Events whose objects are PartialObjectMetadata (`as=PartialObjectMetadata`), in JSON or
/// protobuf; built for each watcher, as kube transforms each event for its watcher.
pub struct MetadataEncoder {
    /// JSON or protobuf.
    pub media: MediaType,
    /// The `meta.k8s.io` version.
    pub version: TableVersion,
    /// What bookmarks carry (before their conversion).
    pub bookmark: Bookmark,
}

impl MetadataEncoder {
    fn encode(&self, t: &str, object: &serde_json::Value) -> Option<Bytes> {
        let partial = crate::output::partial_object_metadata(object, self.version);
        match self.media {
            MediaType::Protobuf => {
                let codec = Codec::for_kind(self.version.api_version(), "PartialObjectMetadata")?;
                protobuf_frame(&codec, t, &partial)
            }
            _ => Some(frame(t, partial.to_string().as_bytes())),
        }
    }
}

impl Encoder for MetadataEncoder {
    fn content_type(&self) -> &'static str {
        self.media.watch_content_type()
    }
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        _shared: Option<&CacheEvent>,
    ) -> Option<Bytes> {
        self.encode(t.as_str(), &obj.value())
    }
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Option<Bytes> {
        let object = self.bookmark.object(rv, initial_events_end);
        self.encode("BOOKMARK", &object)
    }
    fn error(&mut self, status: &ApiError) -> Bytes {
        match self.media {
            MediaType::Protobuf => protobuf_error(status),
            _ => frame("ERROR", &status.status_bytes()),
        }
    }
}

/// A BOOKMARK event frame.
pub fn bookmark_frame(api_version: &str, kind: &str, rv: i64, initial_events_end: bool) -> Bytes {
    let bookmark = Bookmark {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        blueprint: None,
    };
    frame(
        "BOOKMARK",
        bookmark
            .object(rv, initial_events_end)
            .to_string()
            .as_bytes(),
    )
}

/// The error kube sends (as an ERROR event) when a watch's resourceVersion is too old.
pub fn expired(requested: i64, oldest: i64) -> ApiError {
    ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
}

fn stream_response(rx: mpsc::Receiver<Bytes>, content_type: &'static str) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    resp.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache, private"),
    );
    resp
}

/// Serves a watch request.
pub async fn serve<E: Encoder>(
    state: &Arc<ApiState>,
    def: &Arc<ResourceDef>,
    namespace: &str,
    opts: &ListOptions,
    mut encoder: E,
) -> Result<Response, ApiError> {
    crate::fields::validate(def, &opts.field_selector).map_err(ApiError::bad_request)?;
    let cache = state.cache(def)?;
    let filter = Filter {
        namespace: if def.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        labels: opts.label_selector.clone(),
        fields: opts.field_selector.clone(),
    };
    let wait = state.config.cache_freshness_wait;
    let streaming_list = opts.send_initial_events == Some(true);

    // Where does the watch start?
    let after: Option<i64> = match opts.resource_version.as_deref() {
        None if streaming_list => {
            // A streaming list is a consistent list: its initial events must be the latest
            // state. Without a way to show the cache current, kube answers as here (the
            // client falls back to list and watch).
            if let Err(e) = cache.wait_fresh(state.store.as_ref(), wait).await {
                let requested = match e {
                    CacheError::NotReady { requested, .. } => requested,
                    _ => state.store.current_revision().await?,
                };
                return Err(ApiError::too_large_resource_version(
                    requested,
                    cache.revision(),
                ));
            }
            None
        }
        None => {
            // "Start at most recent": the cache's state once it is shown current; where the
            // store cannot show that, the state the cache has (kube's cacher without
            // WatchFromStorageWithoutResourceVersion serves it without waiting).
            if let Err(CacheError::NotReady { .. }) =
                cache.wait_fresh(state.store.as_ref(), wait).await
            {
                cache
                    .wait_for(0, wait)
                    .await
                    .map_err(|_| ApiError::unavailable("watch cache is not ready"))?;
            }
            None
        }
        Some("0") => {
            cache
                .wait_for(0, wait)
                .await
                .map_err(|_| ApiError::unavailable("watch cache is not ready"))?;
            None
        }
        Some(rv) => {
            let rv = crate::object::parse_resource_version(rv)?;
            if streaming_list && opts.rv_match == RvMatch::NotOlderThan {
                // Initial events at a state not older than `rv`.
                cache
                    .catch_up(rv, wait)
                    .await
                    .map_err(|_| ApiError::too_large_resource_version(rv, cache.revision()))?;
                None
            } else {
                // Events after `rv`, even when the cache has not reached it yet (it was a
                // list read from the store): they come through the cache in order.
                cache
                    .wait_for(0, wait)
                    .await
                    .map_err(|_| ApiError::unavailable("watch cache is not ready"))?;
                Some(rv)
            }
        }
    };
    let send_initial = after.is_none() && opts.send_initial_events != Some(false);

    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let sub = match cache.subscribe(after, &filter) {
        Ok(s) => s,
        Err(CacheError::TooOld { requested, oldest }) => {
            // kube answers 200 and a single ERROR event (410 Expired), then closes.
            let _ = tx.try_send(encoder.error(&expired(requested, oldest)));
            return Ok(stream_response(rx, encoder.content_type()));
        }
        Err(CacheError::NotReady { requested, current }) => {
            return Err(ApiError::too_large_resource_version(requested, current));
        }
        Err(CacheError::Unprovable) => {
            return Err(ApiError::unavailable("watch cache is not ready"));
        }
    };
    let timeout = opts
        .timeout_seconds
        .map(Duration::from_secs)
        .unwrap_or(state.config.default_watch_timeout);
    let bookmarks = opts
        .allow_bookmarks
        .then_some(state.config.bookmark_interval);
    let cache2 = cache.clone();
    let state2 = state.clone();
    let content_type = encoder.content_type();
    let mut lifecycle = state.lifecycle.subscribe();
    tokio::spawn(async move {
        let _open = state2.metrics.watch_started();
        // A timeout past what the clock can add (timeoutSeconds up to 2^63-1) is no deadline.
        let deadline = tokio::time::Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(far_future);
        let schedule = bookmarks.map(|every| BookmarkSchedule { every, deadline });
        let pumping = tokio::time::timeout_at(
            deadline,
            pump(
                cache2,
                sub,
                filter,
                &mut encoder,
                &tx,
                send_initial,
                streaming_list,
                schedule,
            ),
        );
        // At shutdown the stream ends as at its timeout: the client sees a clean end and
        // watches again, on another replica.
        tokio::select! {
            _ = pumping => {}
            _ = lifecycle.wait_for(|l| *l >= crate::state::Lifecycle::NotAcceptingNewRequests) => {}
        }
    });
    Ok(stream_response(rx, content_type))
}

/// Sends a frame; false when the watch must end (no frame, or the client is gone).
async fn send(tx: &mpsc::Sender<Bytes>, frame: Option<Bytes>) -> bool {
    match frame {
        Some(frame) => tx.send(frame).await.is_ok(),
        None => false,
    }
}

/// When a watch that allows bookmarks gets them: kube's cacheWatcher.nextBookmarkTime sends
/// one about every `every` (a minute) and one two seconds before the watch's deadline, so a
/// client resuming after the timeout starts from a recent resourceVersion.
#[derive(Clone, Copy, Debug)]
struct BookmarkSchedule {
    every: Duration,
    deadline: tokio::time::Instant,
}

impl BookmarkSchedule {
    /// How long before the deadline the last bookmark goes out.
    const BEFORE_DEADLINE: Duration = Duration::from_secs(2);

    /// The next bookmark after `now`, if any: the earlier of `now + every` and the
    /// pre-deadline one, none once that has passed.
    fn next(&self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        let heartbeat = now.checked_add(self.every);
        let pre_timeout = self.deadline.checked_sub(Self::BEFORE_DEADLINE);
        let at = match (heartbeat, pre_timeout) {
            (Some(h), Some(p)) => h.min(p),
            (h, p) => h.or(p)?,
        };
        (at >= now).then_some(at)
    }
}

/// About thirty years from now: later than any watch lives, early enough for the clock.
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(30 * 365 * 24 * 3600)
}

#[allow(clippy::too_many_arguments)]
async fn pump<E: Encoder>(
    cache: Arc<WatchCache>,
    sub: crate::watch_cache::Subscription,
    filter: Filter,
    encoder: &mut E,
    tx: &mpsc::Sender<Bytes>,
    send_initial: bool,
    streaming_list: bool,
    bookmarks: Option<BookmarkSchedule>,
) {
    let mut last_rv = sub.revision;
    if send_initial {
        for o in &sub.initial {
            if !send(tx, encoder.object(EventType::Added, o, None)).await {
                return;
            }
        }
        if streaming_list && !send(tx, encoder.bookmark(sub.revision, true)).await {
            return;
        }
    }
    for ev in &sub.backlog {
        if let Some(t) = filter.event_type(ev) {
            let obj = if t == EventType::Deleted && ev.kind != EventType::Deleted {
                ev.prev_stamped()
            } else {
                ev.object.clone()
            };
            if !send(tx, encoder.object(t, &obj, Some(ev))).await {
                return;
            }
        }
        last_rv = last_rv.max(ev.rv);
    }
    let mut rx = sub.rx;
    let mut next_bookmark = bookmarks.and_then(|b| b.next(tokio::time::Instant::now()));
    loop {
        let tick = async {
            match next_bookmark {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            r = rx.recv() => match r {
                Ok(ev) => {
                    if ev.rv <= last_rv {
                        continue;
                    }
                    last_rv = ev.rv;
                    if let Some(t) = filter.event_type(&ev) {
                        let obj = if t == EventType::Deleted && ev.kind != EventType::Deleted {
                            ev.prev_stamped()
                        } else {
                            ev.object.clone()
                        };
                        if !send(tx, encoder.object(t, &obj, Some(&ev))).await {
                            return;
                        }
                    }
                }
                // A slow watcher is cut off (it resumes from its last resourceVersion);
                // a reset cache ends every watch.
                Err(RecvError::Lagged) => {
                    cache.note_terminated_watcher();
                    tracing::debug!(resource = %cache.def().qualified(), "watcher fell behind the event window; closed");
                    return;
                }
                Err(RecvError::Closed) => return,
            },
            _ = tick => {
                // Every event up to the cache's revision has been sent when nothing is queued.
                let rev = cache.revision();
                if rx.is_empty() && rev > last_rv {
                    last_rv = rev;
                }
                if !send(tx, encoder.bookmark(last_rv, false)).await {
                    return;
                }
                // After the pre-deadline bookmark none is left (`next` is then in the past).
                next_bookmark = bookmarks.and_then(|b| {
                    let now = tokio::time::Instant::now();
                    b.next(now).filter(|at| *at > now)
                });
            }
            _ = tx.closed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_pb::api::core::v1::ConfigMap;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{PartialObjectMetadata, Status, WatchEvent};
    use k8s_pb::apimachinery::pkg::runtime::Unknown;
    use prost::Message;

    use super::*;
    use crate::watch_cache::CacheOptions;

    fn bookmark() -> Bookmark {
        Bookmark {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            blueprint: Some("Ymx1ZXByaW50".into()),
        }
    }

    fn cached(name: &str) -> CachedObject {
        let def = crate::resources::built_in()
            .into_iter()
            .find(|d| d.plural == "configmaps")
            .expect("configmaps");
        let value = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {"a": "b"},
                "resourceVersion": "9"},
            "data": {"k": "v"}});
        CachedObject::from_value(
            &def,
            Arc::from(format!("/registry/configmaps/default/{name}")),
            9,
            &value,
        )
    }

    /// The type and enveloped object of one length-prefixed protobuf frame.
    fn protobuf_event(frame: &[u8]) -> (String, String, Vec<u8>) {
        let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(len, frame.len() - 4);
        let ev = WatchEvent::decode(&frame[4..]).expect("WatchEvent");
        let body = ev.object.unwrap().raw.unwrap();
        let unknown = Unknown::decode(body.strip_prefix(b"k8s\0").expect("magic")).unwrap();
        let kind = unknown.type_meta.unwrap().kind.unwrap();
        (ev.r#type.unwrap(), kind, unknown.raw.unwrap())
    }

    #[test]
    fn protobuf_events_bookmarks_and_errors() {
        let mut enc = ProtobufEncoder {
            codec: Codec::for_kind("v1", "ConfigMap").unwrap(),
            bookmark: bookmark(),
        };
        assert_eq!(
            enc.content_type(),
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
        let frame = enc.object(EventType::Modified, &cached("c"), None).unwrap();
        let (t, kind, raw) = protobuf_event(&frame);
        assert_eq!((t.as_str(), kind.as_str()), ("MODIFIED", "ConfigMap"));
        let cm = ConfigMap::decode(&raw[..]).unwrap();
        assert_eq!(cm.data["k"], "v");
        assert_eq!(cm.metadata.unwrap().resource_version.as_deref(), Some("9"));

        let frame = enc.bookmark(12, true).unwrap();
        let (t, _, raw) = protobuf_event(&frame);
        assert_eq!(t, "BOOKMARK");
        let meta = ConfigMap::decode(&raw[..]).unwrap().metadata.unwrap();
        assert_eq!(meta.resource_version.as_deref(), Some("12"));
        assert_eq!(meta.annotations["k8s.io/initial-events-end"], "true");
        assert_eq!(
            meta.annotations["kubernetes.io/initial-events-list-blueprint"],
            "Ymx1ZXByaW50"
        );
        // Periodic bookmarks carry no annotations.
        let (_, _, raw) = protobuf_event(&enc.bookmark(13, false).unwrap());
        assert!(
            ConfigMap::decode(&raw[..])
                .unwrap()
                .metadata
                .unwrap()
                .annotations
                .is_empty()
        );

        let (t, kind, raw) = protobuf_event(&enc.error(&expired(3, 7)));
        assert_eq!((t.as_str(), kind.as_str()), ("ERROR", "Status"));
        let status = Status::decode(&raw[..]).unwrap();
        assert_eq!(status.code, Some(410));
        assert_eq!(status.reason.as_deref(), Some("Expired"));
        assert_eq!(
            status.message.as_deref(),
            Some("too old resource version: 3 (7)")
        );
    }

    #[test]
    fn metadata_events() {
        let mut enc = MetadataEncoder {
            media: MediaType::Json,
            version: TableVersion::V1,
            bookmark: bookmark(),
        };
        let frame = enc.object(EventType::Added, &cached("c"), None).unwrap();
        let line: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(line["type"], "ADDED");
        assert_eq!(line["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(line["object"]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(line["object"]["metadata"]["labels"]["a"], "b");
        assert!(line["object"].get("data").is_none());
        let line: serde_json::Value =
            serde_json::from_slice(&enc.bookmark(5, false).unwrap()).unwrap();
        assert_eq!(line["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(line["object"]["metadata"]["resourceVersion"], "5");

        let mut enc = MetadataEncoder {
            media: MediaType::Protobuf,
            version: TableVersion::V1,
            bookmark: bookmark(),
        };
        let (t, kind, raw) =
            protobuf_event(&enc.object(EventType::Deleted, &cached("c"), None).unwrap());
        assert_eq!(
            (t.as_str(), kind.as_str()),
            ("DELETED", "PartialObjectMetadata")
        );
        let pom = PartialObjectMetadata::decode(&raw[..]).unwrap();
        assert_eq!(pom.metadata.unwrap().name.as_deref(), Some("c"));
        let (t, kind, _) = protobuf_event(&enc.error(&expired(1, 2)));
        assert_eq!((t.as_str(), kind.as_str()), ("ERROR", "Status"));
    }

    #[tokio::test]
    async fn a_watcher_behind_the_window_is_cut_off_and_counted() {
        let (_dir, store, cache) = crate::watch_cache::tests::setup(CacheOptions {
            event_window: 4,
            ..Default::default()
        })
        .await;
        assert_eq!(cache.initializations(), 1);
        let sub = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe");
        // A client that reads nothing: the pump blocks on its one-frame channel while the
        // window moves on.
        let (tx, mut rx) = mpsc::channel(1);
        let pumping = cache.clone();
        let pumped = tokio::spawn(async move {
            let mut encoder = JsonEncoder {
                bookmark: Bookmark {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    blueprint: None,
                },
            };
            pump(
                pumping,
                sub,
                Filter::default(),
                &mut encoder,
                &tx,
                false,
                false,
                None,
            )
            .await
        });
        for i in 0..12 {
            let name = format!("c{i}");
            store
                .create(
                    &format!("/registry/configmaps/default/{name}"),
                    crate::watch_cache::tests::cm(&name, json!({})),
                )
                .await
                .expect("create");
        }
        let last = store.current_revision().await.expect("revision");
        cache
            .wait_for(last, Duration::from_secs(5))
            .await
            .expect("caught up");
        assert_eq!(cache.terminated_watchers(), 0);
        // Reading now: a frame or two, then the stream ends as the watcher is cut off.
        tokio::time::timeout(Duration::from_secs(5), async {
            while rx.recv().await.is_some() {}
        })
        .await
        .expect("the lagging watch ends");
        pumped.await.expect("pump");
        assert_eq!(cache.terminated_watchers(), 1);
        assert_eq!(cache.initializations(), 1, "no relist");
    }

    #[test]
    fn bookmarks_come_every_interval_and_before_the_deadline() {
        let now = tokio::time::Instant::now();
        let s = BookmarkSchedule {
            every: Duration::from_secs(60),
            deadline: now + Duration::from_secs(3),
        };
        // A short watch: one bookmark two seconds before its end, then none.
        assert_eq!(s.next(now), Some(now + Duration::from_secs(1)));
        assert_eq!(s.next(now + Duration::from_millis(1500)), None);
        // A long one: every minute, the last two seconds before the end.
        let long = BookmarkSchedule {
            every: Duration::from_secs(60),
            deadline: now + Duration::from_secs(290),
        };
        assert_eq!(long.next(now), Some(now + Duration::from_secs(60)));
        assert_eq!(
            long.next(now + Duration::from_secs(250)),
            Some(now + Duration::from_secs(288))
        );
        // Too short for any.
        let tiny = BookmarkSchedule {
            every: Duration::from_secs(60),
            deadline: now + Duration::from_secs(1),
        };
        assert_eq!(tiny.next(now), None);
    }

    #[tokio::test]
    async fn a_watch_gets_its_bookmark_before_the_deadline() {
        let (_dir, _store, cache) = crate::watch_cache::tests::setup(CacheOptions::default()).await;
        let sub = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe");
        let (tx, mut rx) = mpsc::channel(8);
        let schedule = BookmarkSchedule {
            every: Duration::from_secs(60),
            deadline: tokio::time::Instant::now() + Duration::from_millis(2300),
        };
        let rev = cache.revision();
        let pumped = tokio::spawn(async move {
            let mut encoder = JsonEncoder {
                bookmark: Bookmark {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    blueprint: None,
                },
            };
            let _ = tokio::time::timeout_at(
                schedule.deadline,
                pump(
                    cache,
                    sub,
                    Filter::default(),
                    &mut encoder,
                    &tx,
                    false,
                    false,
                    Some(schedule),
                ),
            )
            .await;
        });
        let frame = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a bookmark before the deadline")
            .expect("a frame");
        let ev: serde_json::Value = serde_json::from_slice(&frame).expect("JSON event");
        assert_eq!(ev["type"], "BOOKMARK");
        assert_eq!(ev["object"]["metadata"]["resourceVersion"], rev.to_string());
        pumped.await.expect("pump");
        assert!(rx.recv().await.is_none(), "one bookmark, then the end");
    }
}
