//! Watches over etcd that survive a broken connection: the stream remembers the last
//! revision it delivered and, when etcd goes away (restart, network), re-creates the etcd
//! watch from the next revision, so the consumer sees no gap and no duplicate. Progress
//! comes from etcd's progress notifications (`progress_notify`), which etcd sends only to a
//! watcher that is synced (every event up to the notified revision already sent), so they
//! are exact; how often depends on etcd's `--experimental-watch-progress-notify-interval`
//! (10 minutes by default). On etcd that answers them in order (3.4.31, 3.5.13, 3.6 and
//! later: [`super::answers_progress_requests`]) the consumer may also ask for one
//! (`RequestProgress` on the watch's own stream, so the answer covers this watch alone);
//! earlier versions answer at once with the current revision, ahead of events still pending,
//! so no requester is handed out there.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::Error;
use crate::store::{
    Event, EventKind, KeyValue, ProgressRequester, Revision, Store, WatchItem, WatchStream,
};

use super::rpc::{self, EventType, WatchCreateRequest};
use super::{EtcdStore, Failure, convert, prefix_end, revision_probe};

/// The first and the longest pause between reconnection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

struct Watcher {
    store: EtcdStore,
    prefix: String,
    /// The last revision delivered (by an event or a progress notification).
    last: Revision,
    stream: Option<rpc::WatchStream>,
    /// Progress asked for by the consumer; None when etcd cannot answer it in order.
    requested: Option<Arc<Notify>>,
    done: bool,
}

/// Starts a watch of `prefix` after `after` (0: from the current revision).
pub(super) async fn watch(
    store: &EtcdStore,
    prefix: &str,
    after: Revision,
) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
    if after < 0 {
        return Err(Error::InvalidArgument(format!("negative revision {after}")));
    }
    let current = store.current_revision().await?;
    let last = if after == 0 { current } else { after };
    if after > 0 && after < current {
        // Refuse a compacted start right away, as the embedded store does; etcd itself
        // would only cancel the watch asynchronously. A read at `after + 1` fails exactly
        // when a watch from it would.
        if let Err(f) = store
            .call(store.client.range(revision_probe(after + 1)))
            .await
        {
            return Err(store.fail_at(f, after + 1).await);
        }
    }
    let (requester, requested) = if store.progress_requests {
        let (r, signal) = ProgressRequester::new();
        (Some(r), Some(signal))
    } else {
        (None, None)
    };
    let mut w = Watcher {
        store: store.clone(),
        prefix: prefix.to_owned(),
        last,
        stream: None,
        requested,
        done: false,
    };
    w.stream = Some(w.open().await.map_err(|f| match f {
        Failure::Other(e) => e,
        _ => Error::Backend("etcd refused the watch".into()),
    })?);
    let stream: WatchStream = Box::pin(futures::stream::unfold(w, |mut w| async move {
        w.next_item().await.map(|item| (item, w))
    }));
    Ok((stream, requester))
}

fn convert_event(e: rpc::Event) -> Result<Option<Event>, Error> {
    let Some(kv) = e.kv else { return Ok(None) };
    let kv = convert(kv)?;
    let prev = e.prev_kv.map(convert).transpose()?;
    Ok(Some(match EventType::try_from(e.r#type) {
        Ok(EventType::Put) => Event {
            kind: EventKind::Put,
            kv,
            prev,
        },
        Ok(EventType::Delete) => Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                value: Bytes::new(),
                packed: None,
                stale: false,
                create_revision: 0,
                version: 0,
                ..kv
            },
            prev,
        },
        Err(_) => {
            return Err(Error::Backend(format!(
                "etcd sent an event of unknown type {}",
                e.r#type
            )));
        }
    }))
}

impl Watcher {
    /// Creates the etcd watch from the revision after the last delivered one.
    async fn open(&mut self) -> Result<rpc::WatchStream, Failure> {
        let req = WatchCreateRequest {
            key: self.prefix.as_bytes().to_vec(),
            range_end: prefix_end(self.prefix.as_bytes()),
            start_revision: self.last + 1,
            progress_notify: true,
            prev_kv: true,
        };
        self.store.call(self.store.client.watch(req)).await
    }

    /// Re-creates a broken etcd watch, retrying until `watch_retry_timeout`.
    async fn reconnect(&mut self, why: &str) -> Result<(), Error> {
        tracing::warn!(prefix = %self.prefix, last = self.last, reason = why, "etcd watch broken; re-establishing it");
        let deadline = Instant::now() + self.store.opts.watch_retry_timeout;
        let mut backoff = BACKOFF_MIN;
        loop {
            match self.open().await {
                Ok(stream) => {
                    self.stream = Some(stream);
                    return Ok(());
                }
                Err(Failure::Other(Error::Unavailable(e))) => {
                    if Instant::now() + backoff > deadline {
                        return Err(Error::Unavailable(format!(
                            "etcd watch of {:?} could not be re-established: {e}",
                            self.prefix
                        )));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
                Err(Failure::Other(e)) => return Err(e),
                Err(_) => {
                    return Err(Error::Backend(format!(
                        "etcd refused to re-create the watch of {:?}",
                        self.prefix
                    )));
                }
            }
        }
    }

    fn finish(&mut self, e: Error) -> Option<Result<WatchItem, Error>> {
        self.done = true;
        self.stream = None;
        Some(Err(e))
    }

    async fn next_item(&mut self) -> Option<Result<WatchItem, Error>> {
        loop {
            if self.done {
                return None;
            }
            let msg = match self.stream.as_mut() {
                Some(stream) => match &self.requested {
                    Some(requested) => tokio::select! {
                        msg = stream.message() => msg,
                        () = requested.notified() => {
                            stream.request_progress();
                            continue;
                        }
                    },
                    None => stream.message().await,
                },
                None => {
                    if let Err(e) = self.reconnect("connection lost").await {
                        return self.finish(e);
                    }
                    continue;
                }
            };
            let resp = match msg {
                Ok(Some(resp)) => resp,
                Ok(None) => {
                    self.stream = None;
                    if let Err(e) = self.reconnect("stream ended").await {
                        return self.finish(e);
                    }
                    continue;
                }
                Err(e) => {
                    self.stream = None;
                    if let Err(e) = self.reconnect(&e.to_string()).await {
                        return self.finish(e);
                    }
                    continue;
                }
            };
            if resp.canceled {
                if resp.compact_revision > 0 {
                    return self.finish(Error::Compacted {
                        requested: self.last + 1,
                        compacted: resp.compact_revision,
                    });
                }
                return self.finish(Error::Backend(format!(
                    "etcd canceled the watch of {:?}: {}",
                    self.prefix, resp.cancel_reason
                )));
            }
            if resp.created {
                continue;
            }
            let progress = resp.events.is_empty();
            let header_rev = resp.header.as_ref().map_or(0, |h| h.revision);
            let mut events = Vec::with_capacity(resp.events.len());
            for e in resp.events {
                match convert_event(e) {
                    // Never deliver a revision twice, even if a resumed watch overlaps.
                    Ok(Some(ev)) if ev.kv.mod_revision > self.last => events.push(ev),
                    Ok(_) => {}
                    Err(err) => return self.finish(err),
                }
            }
            if let Some(last) = events.last() {
                self.last = last.kv.mod_revision;
                return Some(Ok(WatchItem::Events(events)));
            }
            if progress {
                // A progress notification: every change up to the header revision was sent.
                if header_rev > self.last {
                    self.last = header_rev;
                    return Some(Ok(WatchItem::Progress(header_rev)));
                }
            }
        }
    }
}
