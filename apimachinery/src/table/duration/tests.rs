use super::*;
use serde_json::json;

fn secs(s: i64) -> SignedDuration {
    SignedDuration::from_secs(s)
}

const MIN: i64 = 60;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;
const YEAR: i64 = 365 * DAY;

#[test]
fn human_duration_boundaries() {
    let cases: &[(SignedDuration, &str)] = &[
        (SignedDuration::from_millis(-2500), "<invalid>"),
        (secs(-2), "<invalid>"),
        (SignedDuration::from_millis(-1999), "0s"),
        (secs(-1), "0s"),
        (SignedDuration::from_millis(-500), "0s"),
        (secs(0), "0s"),
        (SignedDuration::from_millis(999), "0s"),
        (secs(1), "1s"),
        (secs(59), "59s"),
        (secs(60), "60s"),
        (secs(119), "119s"),
        (SignedDuration::from_millis(119_999), "119s"),
        (secs(2 * MIN), "2m"),
        (secs(2 * MIN + 1), "2m1s"),
        (secs(9 * MIN + 59), "9m59s"),
        (secs(10 * MIN), "10m"),
        (secs(10 * MIN + 59), "10m"),
        (secs(179 * MIN + 59), "179m"),
        (secs(3 * HOUR), "3h"),
        (secs(3 * HOUR + 59), "3h"),
        (secs(3 * HOUR + MIN), "3h1m"),
        (secs(7 * HOUR + 59 * MIN), "7h59m"),
        (secs(8 * HOUR), "8h"),
        (secs(8 * HOUR + 30 * MIN), "8h"),
        (secs(47 * HOUR + 59 * MIN), "47h"),
        (secs(48 * HOUR), "2d"),
        (secs(49 * HOUR), "2d1h"),
        (secs(7 * DAY + 23 * HOUR), "7d23h"),
        (secs(8 * DAY), "8d"),
        (secs(8 * DAY + 23 * HOUR), "8d"),
        (secs(2 * YEAR - 1), "729d"),
        (secs(2 * YEAR), "2y"),
        (secs(2 * YEAR + DAY), "2y1d"),
        (secs(8 * YEAR - 1), "7y364d"),
        (secs(8 * YEAR), "8y"),
        (secs(100 * YEAR), "100y"),
        // Go's time.Duration saturates at ~292 years.
        (secs(1000 * YEAR), "292y"),
    ];
    for (d, want) in cases {
        assert_eq!(human_duration(*d), *want, "human_duration({d:?})");
    }
}

#[test]
fn short_human_duration_boundaries() {
    let cases: &[(SignedDuration, &str)] = &[
        (secs(-2), "<invalid>"),
        (secs(-1), "0s"),
        (secs(0), "0s"),
        (secs(59), "59s"),
        (secs(60), "1m"),
        (secs(59 * MIN + 59), "59m"),
        (secs(HOUR), "1h"),
        (secs(23 * HOUR + 59 * MIN), "23h"),
        (secs(DAY), "1d"),
        (secs(YEAR - 1), "364d"),
        (secs(YEAR), "1y"),
        (secs(3 * YEAR + 100 * DAY), "3y"),
    ];
    for (d, want) in cases {
        assert_eq!(
            short_human_duration(*d),
            *want,
            "short_human_duration({d:?})"
        );
    }
}

#[test]
fn parse_time_handles_unset_and_invalid() {
    let cases: &[(Option<Value>, Option<&str>)] = &[
        (None, None),
        (Some(Value::Null), None),
        (Some(json!("")), None),
        (Some(json!("0001-01-01T00:00:00Z")), None),
        (Some(json!("not a time")), None),
        (Some(json!(12)), None),
        (
            Some(json!("2024-05-01T10:00:00Z")),
            Some("2024-05-01T10:00:00Z"),
        ),
        (
            Some(json!("2024-05-01T10:00:00.123456Z")),
            Some("2024-05-01T10:00:00.123456Z"),
        ),
        (
            Some(json!("2024-05-01T12:00:00+02:00")),
            Some("2024-05-01T10:00:00Z"),
        ),
    ];
    for (input, want) in cases {
        let got = parse_time(input.as_ref()).map(|t| t.to_string());
        assert_eq!(got.as_deref(), *want, "parse_time({input:?})");
    }
    assert!(parse_time_str("garbage").is_err());
    assert_eq!(parse_time_str("null").ok(), Some(None));
}

#[test]
fn age_and_rfc3339() {
    let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
    let obj = json!({"metadata": {"creationTimestamp": "2024-05-01T09:55:30Z"}});
    assert_eq!(age(&obj, now), "4m30s");
    assert_eq!(age(&json!({"metadata": {}}), now), "<unknown>");
    assert_eq!(age(&json!({}), now), "<unknown>");
    assert_eq!(
        rfc3339(parse_time(obj.pointer("/metadata/creationTimestamp"))),
        "2024-05-01T09:55:30Z"
    );
    let fractional = parse_time(Some(&json!("2024-05-01T09:55:30.75+01:00")));
    assert_eq!(rfc3339(fractional), "2024-05-01T08:55:30Z");
    assert_eq!(rfc3339(None), "0001-01-01T00:00:00Z");
}
