//! `resource.Quantity`: travels as its string form.
//!
//! Go's `Quantity.Unmarshal` parses the string and fails the whole request on a bad one; the JSON
//! form is the canonical string. Go clients marshal `Quantity.String()`, which is already
//! canonical, so the string is passed on unchanged once its syntax is checked. Encoding writes
//! `Quantity.String()` of the JSON value (a string or a number), as `Quantity.Marshal` does.

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, Enc, FromJson, ToJson, mistyped, unencodable};

impl ToJson for Quantity {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        match &self.string {
            // An empty message is Go's zero Quantity, printed as "0".
            None => Ok(Value::String("0".into())),
            Some(s) => {
                check_syntax(s).map_err(|reason| {
                    ProtobufError::Malformed(format!("invalid quantity {s:?}: {reason}"))
                })?;
                Ok(Value::String(s.clone()))
            }
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::String("0".into())))
    }
}

impl FromJson for Quantity {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        let parsed = crate::builtin::quantity::Quantity::from_json(v)
            .ok_or_else(|| mistyped("a quantity string or number", v))?
            .map_err(|e| unencodable(format_args!("invalid quantity {v}: {e}")))?;
        Ok(Quantity {
            string: Some(parsed.canonical()),
        })
    }

    fn zero() -> Option<Self> {
        Some(Quantity {
            string: Some("0".into()),
        })
    }
}

/// Accepts exactly the strings `resource.ParseQuantity` accepts (its scanner
/// `parseQuantityString` and `suffixer.interpret`).
fn check_syntax(s: &str) -> Result<(), &'static str> {
    const FORMAT: &str = "does not match ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(FORMAT);
    }
    let mut pos = 0;
    if matches!(b[0], b'+' | b'-') {
        pos += 1;
    }
    // Numerator (leading zeros included).
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos == b.len() {
        return Ok(());
    }
    // Denominator; Go accepts an empty one ("1." and even ".").
    if b[pos] == b'.' {
        pos += 1;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos == b.len() {
            return Ok(());
        }
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'+' | b'-') {
        pos += 1;
    }
    while pos < b.len() {
        if !b[pos].is_ascii_digit() {
            return Err(FORMAT);
        }
        pos += 1;
    }
    let suffix = &s[suffix_start..];
    match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti"
        | "Pi" | "Ei" => Ok(()),
        _ => {
            // A decimal exponent: e or E followed by an integer that fits in 64 bits.
            let exponent = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .filter(|rest| !rest.is_empty());
            match exponent.map(str::parse::<i64>) {
                Some(Ok(_)) => Ok(()),
                _ => Err("unknown suffix"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_matches_parse_quantity() {
        let valid = [
            "0", "1", "100m", "1.5", "1.", ".", "+1", "-1", "-0", "0.5Gi", "128Mi", "1e3", "1E-3",
            "1e+3", "2Ki", "5n", "7u", "3k", "1M", "1G", "1T", "1P", "1E", "1Ei", "0000",
            "12.34e5",
        ];
        for s in valid {
            assert_eq!(check_syntax(s), Ok(()), "{s}");
        }
        let invalid = [
            "",
            " 1",
            "1 ",
            "a",
            "1x",
            "1kM",
            "1i",
            "1e",
            "1.5.3",
            "1Gi1",
            "--1",
            "1e1.5",
            "1K",
            "1e99999999999999999999",
        ];
        for s in invalid {
            assert!(check_syntax(s).is_err(), "{s}");
        }
    }

    #[test]
    fn json_form() {
        let q = |s: Option<&str>| Quantity {
            string: s.map(str::to_owned),
        };
        assert_eq!(q(None).to_json(Ctx::default()).unwrap(), "0");
        assert_eq!(q(Some("250m")).to_json(Ctx::default()).unwrap(), "250m");
        assert!(matches!(
            q(Some("lots")).to_json(Ctx::default()),
            Err(ProtobufError::Malformed(_))
        ));
    }

    /// Any text: an answer, never a panic; one with a character that is not ASCII is refused.
    #[test]
    fn arbitrary_text() {
        use crate::arbitrary_text::{CASES, TextGen};
        let special: Vec<char> = "0123456789.+-eEinumkKMGTP".chars().collect();
        let mut g = TextGen::new(0x9b);
        for _ in 0..CASES {
            let s = g.text(&special, 30);
            if check_syntax(&s).is_ok() {
                assert!(s.is_ascii(), "{s:?}");
            }
        }
    }
}
