//! Just enough of Kubernetes' resource.Quantity to compare quantities exactly.

use std::cmp::Ordering;

/// A parsed quantity, held as a count of nano-units (rounded up below a nano-unit) so that
/// decimal and binary suffixes compare exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ParsedQuantity {
    nanos: i128,
}

/// A string that is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)]
pub struct QuantityError;

const NANOS_PER_UNIT: i128 = 1_000_000_000;

impl ParsedQuantity {
    /// Parses the Kubernetes quantity syntax (e.g. `100m`, `1.5Gi`, `2e3`).
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        let s = s.trim();
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let number_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (number, suffix) = rest.split_at(number_len);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
            return Err(QuantityError);
        }
        let (pow10, pow2) = parse_suffix(suffix)?;

        // mantissa * 10^(pow10 - frac digits) * 2^pow2, in nanos.
        let mut mantissa: i128 = 0;
        for b in int_part.bytes().chain(frac_part.bytes()) {
            mantissa = mantissa
                .saturating_mul(10)
                .saturating_add(i128::from(b - b'0'));
        }
        let exp10 = pow10 - frac_part.len() as i32 + 9;
        let mut nanos = mantissa;
        if exp10 >= 0 {
            for _ in 0..exp10 {
                nanos = nanos.saturating_mul(10);
            }
        } else {
            let mut divisor: i128 = 1;
            for _ in 0..(-exp10).min(38) {
                divisor = divisor.saturating_mul(10);
            }
            let rounded_up = nanos % divisor != 0;
            nanos = nanos / divisor + i128::from(rounded_up);
        }
        for _ in 0..pow2 {
            nanos = nanos.saturating_mul(2);
        }
        Ok(ParsedQuantity {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    /// True when the quantity is zero.
    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// The value rounded up to a whole unit and clamped to i64, like `Quantity.Value()`.
    pub fn value(self) -> i64 {
        let whole = self.nanos.div_euclid(NANOS_PER_UNIT)
            + i128::from(self.nanos.rem_euclid(NANOS_PER_UNIT) != 0);
        whole.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The value rounded up to a whole thousandth and clamped to i64, like
    /// `Quantity.MilliValue()`.
    pub fn milli_value(self) -> i64 {
        const NANOS_PER_MILLI: i128 = 1_000_000;
        let whole = self.nanos.div_euclid(NANOS_PER_MILLI)
            + i128::from(self.nanos.rem_euclid(NANOS_PER_MILLI) != 0);
        whole.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The exact amount in nano-units, for arithmetic between quantities.
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Orders two quantities.
    pub fn cmp_value(self, other: Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

fn parse_suffix(suffix: &str) -> Result<(i32, u32), QuantityError> {
    Ok(match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exp if exp.starts_with(['e', 'E']) => {
            let digits = &exp[1..];
            let value: i32 = digits.parse().map_err(|_| QuantityError)?;
            if digits.is_empty() || !(-64..=64).contains(&value) {
                return Err(QuantityError);
            }
            (value, 0)
        }
        _ => return Err(QuantityError),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any text: an answer, never a panic; a quantity with a character that is not ASCII
    /// (after the decoder's trim) never parses; every quantity written in the grammar parses.
    #[test]
    fn arbitrary_text_quantities() {
        use apimachinery::arbitrary_text::{CASES, TextGen};
        let special: Vec<char> = "0123456789.+-eEinumkKMGTP".chars().collect();
        let mut g = TextGen::new(0x009a_471e);
        for _ in 0..CASES {
            let s = g.text(&special, 30);
            let parsed = ParsedQuantity::parse(&s);
            if !s.trim().is_ascii() {
                assert!(parsed.is_err(), "{s:?}");
            }
        }
        for _ in 0..CASES {
            let s = g.quantity();
            assert!(ParsedQuantity::parse(&s).is_ok(), "{s}");
        }
    }

    fn q(s: &str) -> ParsedQuantity {
        ParsedQuantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn equal_amounts_compare_equal_across_suffixes() {
        for (a, b) in [
            ("1", "1000m"),
            ("1Ki", "1024"),
            ("4Gi", "4096Mi"),
            ("1Ti", "1024Gi"),
            ("1k", "1000"),
            ("1e3", "1k"),
            ("1.5", "1500m"),
            ("0.5Gi", "512Mi"),
            ("+2", "2"),
            (".5", "500m"),
            ("1E6", "1M"),
        ] {
            assert_eq!(q(a), q(b), "{a} == {b}");
        }
    }

    #[test]
    fn ordering_and_values() {
        assert!(q("100m").cmp_value(q("1")).is_lt());
        assert!(q("2Gi").cmp_value(q("2G")).is_gt());
        assert!(q("-1").cmp_value(q("0")).is_lt());
        assert!(q("0").is_zero());
        assert!(q("0Gi").is_zero());
        assert_eq!(q("9223372036854775807").value(), i64::MAX);
        assert_eq!(q("10E").value(), i64::MAX, "clamped");
        assert_eq!(q("100m").value(), 1, "rounded up");
        assert_eq!(q("1500m").value(), 2);
        assert_eq!(q("-1500m").value(), -1);
        assert_eq!(q("4Gi").value(), 4 * 1024 * 1024 * 1024);
        assert_eq!(q("100m").milli_value(), 100);
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("1n").milli_value(), 1, "rounded up");
        assert_eq!(q("2Ki").nanos(), 2048 * 1_000_000_000);
        // Below a nano-unit rounds up, as Kubernetes does.
        assert_eq!(q("1e-12"), q("1n"));
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in [
            "", "abc", "1.2.3", "1x", "Gi", "1e", "1e+", "--1", "1 Gi", "1.5Kib", ".",
        ] {
            assert_eq!(ParsedQuantity::parse(bad), Err(QuantityError), "{bad:?}");
        }
    }
}
