//! The time-to-live of Events. kube-apiserver stores each core/v1 Event with an etcd lease of
//! `--event-ttl` (1 h) renewed by every write, so an Event disappears that long after it was
//! last recorded. Here a sweeper deletes Events whose last recorded time is older than the TTL,
//! waking only when the next one is due. Like a lease expiry, the delete happens in storage,
//! whatever the Event's finalizers.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;

use apimachinery::meta as object;

use crate::api_server::{ApiError, ApiServer, Resource};

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// The shortest sleep between sweeps, whatever the TTL.
const MIN_SLEEP: Duration = Duration::from_millis(200);

/// The shortest sleep between sweeps under `ttl`: a sixtieth of it, up to a minute. Events due
/// in quick succession are then deleted in batches, each at most that late (kube-apiserver
/// shares one lease among the Events of a minute, with the same effect).
pub fn sweep_interval(ttl: Duration) -> Duration {
    (ttl / 60).clamp(MIN_SLEEP, Duration::from_secs(60))
}

/// The last time an Event was recorded: the latest of its creation, `lastTimestamp`,
/// `eventTime`, `series.lastObservedTime` and the times of its managedFields entries (every
/// write refreshes one, as every write renews kube's lease).
pub fn last_recorded(event: &Value) -> Option<Timestamp> {
    let mut times = Vec::new();
    let meta = object::meta(event);
    let at = |v: Option<&Value>| v.and_then(Value::as_str).and_then(object::parse_time);
    times.push(at(meta.and_then(|m| m.get("creationTimestamp"))));
    times.push(at(event.get("lastTimestamp")));
    times.push(at(event.get("eventTime")));
    times.push(at(event.pointer("/series/lastObservedTime")));
    if let Some(mf) = meta
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
    {
        times.extend(mf.iter().map(|e| at(e.get("time"))));
    }
    times.into_iter().flatten().max()
}

/// When an Event expires under `ttl` (None: it has no usable time and never expires).
pub fn expiry(event: &Value, ttl: Duration) -> Option<Timestamp> {
    let ttl = jiff::SignedDuration::try_from(ttl).ok()?;
    last_recorded(event)?.checked_add(ttl).ok()
}

/// Deletes expired Events until the task is aborted.
pub async fn run(state: Arc<dyn ApiServer>, ttl: Duration) {
    let Some(def) = state.resource("", "v1", "events") else {
        // Nothing to expire on a server without Events.
        return std::future::pending().await;
    };
    let min_sleep = sweep_interval(ttl);
    loop {
        let sleep = match sweep(&state, &def, ttl).await {
            Ok(next) => next
                .map(|t| {
                    let d = t.duration_since(Timestamp::now());
                    Duration::try_from(d).unwrap_or(Duration::ZERO)
                })
                .unwrap_or(ttl)
                .clamp(min_sleep, ttl.max(min_sleep)),
            Err(e) => {
                tracing::warn!(error = %e, "event TTL sweep failed; retrying");
                Duration::from_secs(5).max(min_sleep)
            }
        };
        tokio::time::sleep(sleep).await;
    }
}

/// One pass: deletes every expired Event; returns when the next one expires. An Event written
/// after the pass expires no sooner than one TTL from now.
async fn sweep(
    state: &Arc<dyn ApiServer>,
    def: &Arc<dyn Resource>,
    ttl: Duration,
) -> Result<Option<Timestamp>, ApiError> {
    let cached = state.cached(def)?;
    let now = Timestamp::now();
    let mut next: Option<Timestamp> = None;
    let mut deleted = 0usize;
    for ev in cached {
        let Some(at) = expiry(&ev.value(), ttl) else {
            continue;
        };
        if at > now {
            next = Some(next.map_or(at, |n| n.min(at)));
            continue;
        }
        match state.expire(ev.key(), ev.rv()).await {
            Ok(()) => deleted += 1,
            // Written again since the cache saw it (its TTL restarted) or already gone: the
            // next pass sees its new state.
            Err(e) if e.code == 409 || e.code == 404 => {
                next = Some(now);
            }
            Err(e) => return Err(e),
        }
    }
    if deleted > 0 {
        tracing::debug!(deleted, "expired events deleted");
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_recorded_is_the_latest_time() {
        let cases = [
            (
                json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}}),
                Some("2024-01-01T00:00:00Z"),
            ),
            (
                json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "lastTimestamp": "2024-01-01T00:10:00Z"}),
                Some("2024-01-01T00:10:00Z"),
            ),
            (
                json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "lastTimestamp": "2023-12-31T00:00:00Z", "eventTime": "2024-01-01T00:00:05.123456Z"}),
                Some("2024-01-01T00:00:05.123456Z"),
            ),
            (
                json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}, "series": {"count": 2, "lastObservedTime": "2024-01-01T01:00:00.000000Z"}}),
                Some("2024-01-01T01:00:00Z"),
            ),
            (
                json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z", "managedFields": [{"manager": "a", "time": "2024-01-01T02:00:00Z"}, {"manager": "b"}]}, "lastTimestamp": null}),
                Some("2024-01-01T02:00:00Z"),
            ),
            (json!({"metadata": {}, "lastTimestamp": "not a time"}), None),
        ];
        for (ev, want) in cases {
            let want = want.map(|s| s.parse::<Timestamp>().unwrap());
            assert_eq!(last_recorded(&ev), want, "{ev}");
        }
    }

    #[test]
    fn sweep_intervals() {
        for (ttl, want) in [
            (DEFAULT_EVENT_TTL, Duration::from_secs(60)),
            (Duration::from_secs(24 * 3600), Duration::from_secs(60)),
            (Duration::from_secs(600), Duration::from_secs(10)),
            (Duration::from_secs(2), MIN_SLEEP),
        ] {
            assert_eq!(sweep_interval(ttl), want, "{ttl:?}");
        }
    }

    #[test]
    fn expiry_adds_the_ttl() {
        let ev = json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}});
        assert_eq!(
            expiry(&ev, DEFAULT_EVENT_TTL),
            Some("2024-01-01T01:00:00Z".parse().unwrap())
        );
        assert_eq!(
            expiry(&ev, Duration::from_secs(2)),
            Some("2024-01-01T00:00:02Z".parse().unwrap())
        );
        assert_eq!(expiry(&json!({}), DEFAULT_EVENT_TTL), None);
    }
}
