//! `metav1.Time` and `metav1.MicroTime`.
//!
//! Both travel as a `Timestamp {seconds, nanos}`; an empty message is Go's zero time, which the
//! JSON encoding prints as `null` (`Time.MarshalJSON` in apimachinery's meta/v1/time.go).
//! Encoding follows `Time.ProtoTime` / `MicroTime.ProtoMicroTime` (meta/v1/time_proto.go and
//! micro_time_proto.go): the zero time writes an empty message, a `Time` writes whole seconds
//! only, a `MicroTime` keeps its fraction.

use k8s_pb::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, Enc, FromJson, ToJson, mistyped, unencodable};

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z).
const GO_ZERO_UNIX: i64 = -62_135_596_800;

impl ToJson for Time {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        // Time.Unmarshal in meta/v1/time_proto.go drops the nanoseconds: JSON keeps seconds only.
        match (self.seconds, self.nanos) {
            (None, None) => Ok(Value::Null),
            (seconds, _) => format_utc(seconds.unwrap_or(0), 0, false),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

impl ToJson for MicroTime {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        match (self.seconds, self.nanos) {
            (None, None) => Ok(Value::Null),
            (seconds, nanos) => {
                // MicroTime.Unmarshal truncates to microseconds before normalising the instant.
                let nanos = i64::from(nanos.unwrap_or(0));
                let nanos = nanos - nanos % 1_000;
                let total = i128::from(seconds.unwrap_or(0)) * 1_000_000_000 + i128::from(nanos);
                let secs = total.div_euclid(1_000_000_000);
                let subsec = total.rem_euclid(1_000_000_000);
                let secs = i64::try_from(secs).map_err(|_| out_of_range())?;
                // rem_euclid of a positive modulus is below 1e9.
                let subsec = i32::try_from(subsec).map_err(|_| out_of_range())?;
                format_utc(secs, subsec, true)
            }
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

/// Seconds and nanoseconds of an RFC 3339 time as Go's `time.Parse(time.RFC3339, ..)` reads
/// it; `None` for Go's zero time, which protobuf writes as an empty message.
fn parse_rfc3339(v: &Value) -> Result<Option<(i64, i32)>, ProtobufError> {
    let s = v.as_str().ok_or_else(|| mistyped("an RFC 3339 time", v))?;
    let t = s
        .parse::<jiff::Timestamp>()
        .map_err(|e| unencodable(format_args!("invalid time {s:?}: {e}")))?;
    let seconds = t.as_second();
    let nanos = t.subsec_nanosecond();
    if seconds == GO_ZERO_UNIX && nanos == 0 {
        return Ok(None);
    }
    Ok(Some((seconds, nanos)))
}

impl FromJson for Time {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        Ok(match parse_rfc3339(v)? {
            None => Time::default(),
            Some((seconds, _)) => Time {
                seconds: Some(seconds),
                nanos: Some(0),
            },
        })
    }

    fn zero() -> Option<Self> {
        Some(Time::default())
    }
}

impl FromJson for MicroTime {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        Ok(match parse_rfc3339(v)? {
            None => MicroTime::default(),
            Some((seconds, nanos)) => MicroTime {
                seconds: Some(seconds),
                nanos: Some(nanos),
            },
        })
    }

    fn zero() -> Option<Self> {
        Some(MicroTime::default())
    }
}

fn out_of_range() -> ProtobufError {
    ProtobufError::Malformed("timestamp out of range".into())
}

/// Unix seconds of 9999-12-31T23:59:59Z, the last instant a Kubernetes timestamp may hold.
const MAX_UNIX: i64 = 253_402_300_799;

/// RFC 3339 in UTC as Go's `time.RFC3339` (or the microsecond layout) prints it; Go's zero time
/// is `null`. Instants outside years 1 to 9999, which Go cannot print as RFC 3339, are refused.
fn format_utc(seconds: i64, nanos: i32, micros: bool) -> Result<Value, ProtobufError> {
    if seconds == GO_ZERO_UNIX && nanos == 0 {
        return Ok(Value::Null);
    }
    if !(GO_ZERO_UNIX..=MAX_UNIX).contains(&seconds) {
        return Err(out_of_range());
    }
    let days = seconds.div_euclid(86_400);
    let secs_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs_of_day / 3_600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    );
    if micros {
        out.push_str(&format!(".{:06}", nanos / 1_000));
    }
    out.push('Z');
    Ok(Value::String(out))
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_json() {
        let cases: &[(Option<i64>, Option<i32>, Value)] = &[
            (None, None, Value::Null),
            (Some(0), None, "1970-01-01T00:00:00Z".into()),
            (Some(1_704_164_645), None, "2024-01-02T03:04:05Z".into()),
            // Nanoseconds never reach the JSON of a Time.
            (
                Some(1_704_164_645),
                Some(999_999_999),
                "2024-01-02T03:04:05Z".into(),
            ),
            (None, Some(5), "1970-01-01T00:00:00Z".into()),
            (Some(GO_ZERO_UNIX), None, Value::Null),
            (Some(GO_ZERO_UNIX + 1), None, "0001-01-01T00:00:01Z".into()),
            (Some(MAX_UNIX), None, "9999-12-31T23:59:59Z".into()),
            (Some(951_782_400), None, "2000-02-29T00:00:00Z".into()),
            (Some(-1), None, "1969-12-31T23:59:59Z".into()),
            (Some(-11_644_473_600), None, "1601-01-01T00:00:00Z".into()),
        ];
        for (seconds, nanos, want) in cases {
            let t = Time {
                seconds: *seconds,
                nanos: *nanos,
            };
            assert_eq!(&t.to_json(Ctx::default()).unwrap(), want, "{t:?}");
        }
    }

    #[test]
    fn micro_time_json() {
        let cases: &[(Option<i64>, Option<i32>, Value)] = &[
            (None, None, Value::Null),
            (
                Some(1_704_164_645),
                None,
                "2024-01-02T03:04:05.000000Z".into(),
            ),
            (
                Some(1_704_164_645),
                Some(123_456_789),
                "2024-01-02T03:04:05.123456Z".into(),
            ),
            // Nanoseconds outside [0, 1e9) are normalised like Go's time.Unix.
            (
                Some(1_704_164_645),
                Some(1_500_000_000),
                "2024-01-02T03:04:06.500000Z".into(),
            ),
            (
                Some(1_704_164_645),
                Some(-1_500),
                "2024-01-02T03:04:04.999999Z".into(),
            ),
            (Some(GO_ZERO_UNIX), Some(0), Value::Null),
        ];
        for (seconds, nanos, want) in cases {
            let t = MicroTime {
                seconds: *seconds,
                nanos: *nanos,
            };
            assert_eq!(&t.to_json(Ctx::default()).unwrap(), want, "{t:?}");
        }
    }

    #[test]
    fn out_of_range_is_an_error() {
        for seconds in [i64::MAX, i64::MIN, MAX_UNIX + 1, GO_ZERO_UNIX - 1] {
            let t = Time {
                seconds: Some(seconds),
                nanos: None,
            };
            assert!(matches!(
                t.to_json(Ctx::default()),
                Err(ProtobufError::Malformed(_))
            ));
            let t = MicroTime {
                seconds: Some(seconds),
                nanos: Some(999_000),
            };
            assert!(matches!(
                t.to_json(Ctx::default()),
                Err(ProtobufError::Malformed(_))
            ));
        }
    }
}
