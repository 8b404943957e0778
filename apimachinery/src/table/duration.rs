//! Human-readable durations and the timestamp handling around them (`AGE`, `LAST SEEN`...).

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_MINUTE: i128 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i128 = 60 * NANOS_PER_MINUTE;

/// What printers show for a missing (zero) timestamp.
pub const UNKNOWN: &str = "<unknown>";

/// Go's `time.Duration` is an int64 of nanoseconds and `time.Since` saturates at its bounds;
/// clamping here keeps very old or far-future timestamps printing as kube prints them.
fn go_nanos(d: SignedDuration) -> i128 {
    d.as_nanos().clamp(i64::MIN as i128, i64::MAX as i128)
}

/// Formats a duration with ~2-3 significant figures, exactly as apimachinery's
/// `duration.HumanDuration`: `59s`, `119s`, `2m`, `9m59s`, `179m`, `3h`, `7h59m`, `47h`,
/// `2d`, `7d23h`, `729d`, `2y`, `7y364d`, `8y`; `0s` for up to 2s in the future, `<invalid>` beyond.
pub fn human_duration(d: SignedDuration) -> String {
    let nanos = go_nanos(d);
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        format!("{hours}h{m}m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        format!("{}d{}h", hours / 24, h)
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        format!("{}y{}d", hours / 24 / 365, dy)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// Formats a duration with one unit, as apimachinery's `duration.ShortHumanDuration`:
/// `59s`, `59m`, `23h`, `364d`, `1y`.
pub fn short_human_duration(d: SignedDuration) -> String {
    let nanos = go_nanos(d);
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 60 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 24 {
        format!("{hours}h")
    } else if hours < 24 * 365 {
        format!("{}d", hours / 24)
    } else {
        // Go divides the float `d.Hours()` here; the integer quotient is the same.
        format!("{}y", hours / 24 / 365)
    }
}

/// The Go zero time, `0001-01-01T00:00:00Z`, which metav1.Time treats as "unset".
fn is_go_zero(ts: Timestamp) -> bool {
    ts.as_second() == -62_135_596_800 && ts.subsec_nanosecond() == 0
}

/// Parses a metav1.Time / MicroTime JSON value (RFC 3339); `None` for null, absent, empty,
/// unparseable or the Go zero time.
pub fn parse_time(value: Option<&Value>) -> Option<Timestamp> {
    let text = value?.as_str()?;
    parse_time_str(text).ok().flatten()
}

/// Parses an RFC 3339 timestamp string as metav1.Time's `UnmarshalQueryParameter` does:
/// `Ok(None)` for "" / "null" / the zero time, `Err` when the text is not a timestamp.
pub fn parse_time_str(text: &str) -> Result<Option<Timestamp>, jiff::Error> {
    if text.is_empty() || text == "null" {
        return Ok(None);
    }
    let ts: Timestamp = text.parse()?;
    Ok((!is_go_zero(ts)).then_some(ts))
}

/// Time elapsed since `ts`, as kube's `translateTimestampSince`: `<unknown>` when unset.
pub fn since(ts: Option<Timestamp>, now: Timestamp) -> String {
    match ts {
        Some(ts) => human_duration(now.duration_since(ts)),
        None => UNKNOWN.to_string(),
    }
}

/// The `AGE` cell of an object: time since `metadata.creationTimestamp`.
pub fn age(obj: &Value, now: Timestamp) -> String {
    since(parse_time(obj.pointer("/metadata/creationTimestamp")), now)
}

/// Formats a timestamp as Go's `time.RFC3339` in UTC (whole seconds, `Z`), the zero time when
/// unset — the `Created At` cell of the default table.
pub fn rfc3339(ts: Option<Timestamp>) -> String {
    match ts {
        Some(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".to_string(),
    }
}

#[cfg(test)]
mod tests;
