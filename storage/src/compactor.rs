//! Periodic compaction as kube-apiserver does it (`compactor` and `compact` in
//! `staging/src/k8s.io/apiserver/pkg/storage/etcd3/compact.go`): every interval, compact to
//! the revision recorded one interval earlier, so history is always kept for at least one
//! interval. Several servers sharing one store coordinate through a compare-and-swap on
//! the key `compact_rev_key` (the same key kube-apiserver uses), so only one of them
//! compacts per interval.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinHandle;

use crate::Error;
use crate::store::{Revision, Store};

/// The key whose writes serve as the compaction clock, as kube-apiserver's.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// The compactor's memory between two rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactorState {
    /// The `compact_rev_key` mod_revision this server last saw (0: not yet written).
    pub clock: Revision,
    /// The store revision recorded in the previous round (the next compaction target).
    pub recorded: Revision,
}

/// One round: claims this interval through a compare-and-swap on [`COMPACT_REV_KEY`]; the
/// winner compacts to the revision recorded in the previous round. Returns the state for
/// the next round and the revision compacted to, if this server compacted.
pub async fn compact_once(
    store: &dyn Store,
    state: CompactorState,
) -> Result<(CompactorState, Option<Revision>), Error> {
    let value = Bytes::from(state.recorded.to_string());
    let claimed = if state.clock == 0 {
        store.create(COMPACT_REV_KEY, value).await
    } else {
        store.update(COMPACT_REV_KEY, value, state.clock).await
    };
    match claimed {
        Ok(kv) => {
            let next = CompactorState {
                clock: kv.mod_revision,
                recorded: kv.mod_revision,
            };
            if state.recorded == 0 {
                // Nothing recorded yet (first round): just start the clock.
                return Ok((next, None));
            }
            store.compact(state.recorded).await?;
            Ok((next, Some(state.recorded)))
        }
        // Another server won this interval: follow its clock and record the revision now.
        Err(Error::AlreadyExists { current, .. } | Error::Conflict { current, .. }) => {
            let recorded = store.current_revision().await?;
            Ok((
                CompactorState {
                    clock: current.mod_revision,
                    recorded,
                },
                None,
            ))
        }
        Err(Error::NotFound { .. }) => {
            let recorded = store.current_revision().await?;
            Ok((CompactorState { clock: 0, recorded }, None))
        }
        Err(e) => Err(e),
    }
}

/// A running compactor; it stops when this handle is dropped.
#[derive(Debug)]
pub struct Compactor {
    task: JoinHandle<()>,
}

impl Compactor {
    /// Starts compacting `store` every `interval` (kube-apiserver's default is 5 minutes).
    /// Must be called inside a tokio runtime.
    pub fn spawn(store: Arc<dyn Store>, interval: Duration) -> Compactor {
        let task = tokio::spawn(async move {
            let mut state = CompactorState::default();
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                match compact_once(&*store, state).await {
                    Ok((next, compacted)) => {
                        if let Some(rev) = compacted {
                            tracing::debug!(revision = rev, "compacted storage history");
                        }
                        state = next;
                    }
                    Err(e) => tracing::warn!(error = %e, "storage compaction failed"),
                }
            }
        });
        Compactor { task }
    }

    /// Stops the compactor.
    pub fn stop(self) {}
}

impl Drop for Compactor {
    fn drop(&mut self) {
        self.task.abort();
    }
}
