//! Watches of the embedded store. A watcher pulls events from the shared history at its
//! own pace, a bounded batch at a time: writers never wait for it and nothing is buffered
//! per watcher. One that falls behind the retained history ends with `Compacted`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::Error;
use crate::store::{Revision, WatchItem, WatchStream};

use super::Shared;
use super::mvcc::ScanLimits;

/// What one watch read copies out at most.
const LIMITS: ScanLimits = ScanLimits {
    max_scan: 4096,
    max_events: 1000,
    max_bytes: 8 << 20,
};

/// One watcher's position.
struct Watcher {
    shared: Arc<Shared>,
    prefix: String,
    /// The next revision to examine.
    next: Revision,
    /// The highest revision the consumer knows to be complete (last event or progress).
    reported: Revision,
    rx: watch::Receiver<Revision>,
    last_emit: Instant,
    interval: Duration,
    /// Progress asked for by the consumer ([`crate::ProgressRequester`]).
    requested: Arc<Notify>,
    done: bool,
}

impl Watcher {
    async fn next_item(&mut self) -> Option<Result<WatchItem, Error>> {
        if self.done {
            return None;
        }
        loop {
            // Mark the published revision seen before reading, so a later publish wakes us.
            self.rx.borrow_and_update();
            let scan = {
                let st = self.shared.read();
                st.scan(&self.prefix, self.next, LIMITS)
            };
            let scan = match scan {
                Ok(scan) => scan,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            self.next = self.next.max(scan.scanned_to + 1);
            if let Some(last) = scan.events.last() {
                self.reported = last.kv.mod_revision;
                self.last_emit = Instant::now();
                return Some(Ok(WatchItem::Events(scan.events)));
            }
            if self.next <= scan.current {
                // A long run of other prefixes' events: keep scanning, but let others run.
                tokio::task::yield_now().await;
                continue;
            }
            let complete = self.next - 1;
            let changed = if complete > self.reported {
                // Caught up and the store moved on: a bookmark is due after the interval, or
                // at once when the consumer asks for one.
                let deadline = self.last_emit + self.interval;
                tokio::select! {
                    changed = self.rx.changed() => changed,
                    () = tokio::time::sleep_until(deadline) => return Some(Ok(self.progress(complete))),
                    () = self.requested.notified() => return Some(Ok(self.progress(complete))),
                }
            } else {
                // Nothing to report: a request now is answered by the next progress or event.
                self.rx.changed().await
            };
            if changed.is_err() {
                self.done = true;
                return Some(Err(Error::Unavailable(
                    "the embedded store is closed".into(),
                )));
            }
        }
    }
}

impl Watcher {
    /// Reports that every change up to `complete` was delivered.
    fn progress(&mut self, complete: Revision) -> WatchItem {
        self.reported = complete;
        self.last_emit = Instant::now();
        WatchItem::Progress(complete)
    }
}

/// A stream of the changes under `prefix` from revision `next` on.
pub(crate) fn watch_stream(
    shared: Arc<Shared>,
    prefix: String,
    next: Revision,
    interval: Duration,
    requested: Arc<Notify>,
) -> WatchStream {
    let rx = shared.rev_rx.clone();
    let w = Watcher {
        shared,
        prefix,
        next,
        reported: next - 1,
        rx,
        last_emit: Instant::now(),
        interval,
        requested,
        done: false,
    };
    Box::pin(futures::stream::unfold(w, |mut w| async move {
        w.next_item().await.map(|item| (item, w))
    }))
}
