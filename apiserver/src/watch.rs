//! Watch responses: newline-delimited JSON events over a chunked HTTP body, served from the
//! watch cache (k8s.io/apiserver/pkg/endpoints/handlers/watch.go semantics).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::options::{ListOptions, RvMatch};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{
    CacheError, CacheEvent, CachedObject, EventType, Filter, RecvError, WatchCache, frame,
};

/// Turns each outgoing event into its wire form (JSON, or a one-row Table).
pub trait Encoder: Send + 'static {
    /// Encodes an object-carrying event.
    fn object(&mut self, t: EventType, obj: &CachedObject, shared: Option<&CacheEvent>) -> Bytes;
    /// Encodes a bookmark.
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Bytes;
}

/// Plain JSON events, sharing the cache's pre-built frames.
pub struct JsonEncoder {
    /// `apiVersion` of bookmarks.
    pub api_version: String,
    /// `kind` of bookmarks.
    pub kind: String,
}

impl Encoder for JsonEncoder {
    fn object(&mut self, t: EventType, obj: &CachedObject, shared: Option<&CacheEvent>) -> Bytes {
        match shared {
            Some(ev) => ev.frame(t),
            None => crate::watch_cache::object_frame(t.as_str(), obj),
        }
    }
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Bytes {
        bookmark_frame(&self.api_version, &self.kind, rv, initial_events_end)
    }
}

/// A BOOKMARK event frame.
pub fn bookmark_frame(api_version: &str, kind: &str, rv: i64, initial_events_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_events_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
    frame("BOOKMARK", obj.to_string().as_bytes())
}

/// The ERROR event kube sends when a watch's resourceVersion is too old.
pub fn expired_frame(requested: i64, oldest: i64) -> Bytes {
    let status = ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        .status_json();
    frame("ERROR", status.to_string().as_bytes())
}

fn stream_response(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
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
        None => {
            // "Start at most recent": initial events from a consistent state.
            let current = state.store.current_revision().await?;
            cache
                .wait_for(current, wait)
                .await
                .map_err(|_| ApiError::too_large_resource_version(current, cache.revision()))?;
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
            cache
                .wait_for(rv, wait)
                .await
                .map_err(|_| ApiError::too_large_resource_version(rv, cache.revision()))?;
            if streaming_list && opts.rv_match == RvMatch::NotOlderThan {
                None
            } else {
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
            let _ = tx.try_send(expired_frame(requested, oldest));
            return Ok(stream_response(rx));
        }
        Err(CacheError::NotReady { requested, current }) => {
            return Err(ApiError::too_large_resource_version(requested, current));
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
    tokio::spawn(async move {
        let _open = state2.metrics.watch_started();
        // A timeout past what the clock can add (timeoutSeconds up to 2^63-1) is no deadline.
        let deadline = tokio::time::Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(far_future);
        let schedule = bookmarks.map(|every| BookmarkSchedule { every, deadline });
        let _ = tokio::time::timeout_at(
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
        )
        .await;
    });
    Ok(stream_response(rx))
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
            if tx
                .send(encoder.object(EventType::Added, o, None))
                .await
                .is_err()
            {
                return;
            }
        }
        if streaming_list && tx.send(encoder.bookmark(sub.revision, true)).await.is_err() {
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
            if tx.send(encoder.object(t, &obj, Some(ev))).await.is_err() {
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
                        if tx.send(encoder.object(t, &obj, Some(&ev))).await.is_err() {
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
                if tx.send(encoder.bookmark(last_rv, false)).await.is_err() {
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
    use super::*;
    use crate::watch_cache::CacheOptions;

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
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
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
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
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
