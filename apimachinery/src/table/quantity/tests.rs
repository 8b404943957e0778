use super::*;
use serde_json::json;

#[test]
fn canonical_forms() {
    let cases = [
        ("0", Some("0")),
        ("000", Some("0")),
        ("-0", Some("0")),
        ("0Gi", Some("0")),
        ("1", Some("1")),
        ("1000", Some("1k")),
        ("1500", Some("1500")),
        ("1000m", Some("1")),
        ("1500m", Some("1500m")),
        ("0.5", Some("500m")),
        ("100m", Some("100m")),
        ("0.1", Some("100m")),
        ("1.5", Some("1500m")),
        ("12e3", Some("12e3")),
        ("12000", Some("12k")),
        ("1e3", Some("1e3")),
        ("1e4", Some("10e3")),
        ("1E6", Some("1e6")),
        ("1e0", Some("1")),
        ("5G", Some("5G")),
        ("5000M", Some("5G")),
        ("1Ki", Some("1Ki")),
        ("1024", Some("1024")),
        ("1024Ki", Some("1Mi")),
        ("2048Ki", Some("2Mi")),
        ("1536Mi", Some("1536Mi")),
        ("1.5Gi", Some("1536Mi")),
        ("10Gi", Some("10Gi")),
        ("1536Ki", Some("1536Ki")),
        ("0.5Ki", Some("512")),
        ("1.5Ki", Some("1536")),
        ("-1Gi", Some("-1Gi")),
        ("-1500m", Some("-1500m")),
        ("1n", Some("1n")),
        ("0.1n", Some("1n")),
        ("1u", Some("1u")),
        ("1000n", Some("1u")),
        ("+5", Some("5")),
        ("100E", Some("100E")),
        // Out of range values do not panic; they print as written.
        ("1e2147483647", None),
        ("1e-2147483648", Some("1e-9")),
        ("99999999999999999999999999999999999999999", None),
        ("", None),
        ("abc", None),
        ("1Q", None),
        ("1e", None),
        ("1K", None),
        ("1.2.3", None),
    ];
    for (input, want) in cases {
        assert_eq!(
            canonical_quantity(input).as_deref(),
            want,
            "canonical_quantity({input:?})"
        );
    }
}

#[test]
fn quantity_values() {
    assert_eq!(quantity_string(None), "0");
    assert_eq!(quantity_string(Some(&json!(null))), "0");
    assert_eq!(quantity_string(Some(&json!("2000m"))), "2");
    assert_eq!(quantity_string(Some(&json!(2))), "2");
    assert_eq!(quantity_string(Some(&json!(0.25))), "250m");
    assert_eq!(quantity_string(Some(&json!("bogus"))), "bogus");
    assert_eq!(quantity_ptr_string(None), "<nil>");
    assert_eq!(quantity_ptr_string(Some(&json!("1Gi"))), "1Gi");
}

/// Every string of up to four characters from the quantity syntax is handled without panicking,
/// and whatever parses has a canonical form that is itself canonical.
#[test]
fn short_quantities_never_panic() {
    let alphabet: Vec<char> = "0159.-+eEiKkmMnuGTPe".chars().collect();
    let mut stack = vec![String::new()];
    while let Some(prefix) = stack.pop() {
        if let Some(canonical) = canonical_quantity(&prefix) {
            assert_eq!(
                canonical_quantity(&canonical).as_deref(),
                Some(canonical.as_str()),
                "{prefix}"
            );
        }
        if prefix.len() < 4 {
            for c in &alphabet {
                stack.push(format!("{prefix}{c}"));
            }
        }
    }
}
