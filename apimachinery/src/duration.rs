//! Durations as Go's `time.ParseDuration` writes them, for flags and query parameters that
//! kube and Karmada read with it.

use std::time::Duration;

/// Parses a duration flag as Go's time.ParseDuration writes them (`1h0m0s`, `90s`, `500ms`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = s
        .trim()
        .parse()
        .map_err(|e| format!("invalid duration {s:?}: {e}"))?;
    Duration::try_from(d).map_err(|_| format!("invalid duration {s:?}: must not be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("1h0m0s", 3_600_000),
            ("1h", 3_600_000),
            ("90s", 90_000),
            ("2m30s", 150_000),
            ("500ms", 500),
            ("0s", 0),
        ];
        for (s, ms) in ok {
            assert_eq!(parse_duration(s), Ok(Duration::from_millis(ms)), "{s}");
        }
        for bad in ["", "abc", "-1s", "1x"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
