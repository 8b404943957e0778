//! resource.Quantity as k8s.io/apimachinery/pkg/api/resource parses and prints it: kube stores
//! `cpu: 0.5` as `"500m"` and `memory: 1024Mi` as `"1Gi"`, and never a JSON number.

use std::cmp::Ordering;

/// ErrFormatWrong.
pub const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// ErrSuffix.
const SUFFIX_ERROR: &str = "unable to parse quantity's suffix";
/// ErrNumeric.
const NUMERIC_ERROR: &str = "unable to parse numeric value";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// A parsed quantity: `mantissa * 10^scale`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
    /// The input, kept when kube keeps it (already canonical).
    original: Option<String>,
}

const I64_MAX: i128 = i64::MAX as i128;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// Splits a quantity string like apimachinery's parseQuantityString.
fn split(s: &str) -> Result<(bool, String, String, String), &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok((positive, "0".into(), String::new(), String::new()));
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = s[start..pos].to_string();
    if num.is_empty() {
        num = "0".into();
    }
    let mut denom = String::new();
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let ds = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = s[ds..pos].to_string();
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != end {
        return Err(FORMAT_ERROR);
    }
    Ok((positive, num, denom, s[suffix_start..].to_string()))
}

/// quantitySuffixer.interpret: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = [
        ("", 0),
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    if let Some((_, e)) = dec.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e, Format::DecimalSi));
    }
    let bin = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    if let Some((_, e)) = bin.iter().find(|(s, _)| *s == suffix) {
        return Some((2, *e, Format::BinarySi));
    }
    let rest = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))?;
    if rest.is_empty() {
        return None;
    }
    let e: i64 = rest.parse().ok()?;
    let e = i32::try_from(e).ok()?;
    Some((10, e, Format::DecimalExponent))
}

/// Rounds `m * 10^scale` away from zero to `target` (> scale).
fn round_away(m: i128, scale: i32, target: i32) -> Option<i128> {
    let div = pow10(u32::try_from(target - scale).ok()?)?;
    let q = m / div;
    Some(if m % div != 0 { q + m.signum() } else { q })
}

impl Quantity {
    /// resource.ParseQuantity (after the JSON decoder's whitespace trim).
    pub fn parse(input: &str) -> Result<Quantity, &'static str> {
        let s = input.trim();
        if s.is_empty() {
            return Err(FORMAT_ERROR);
        }
        if s == "0" {
            return Ok(Quantity {
                mantissa: 0,
                scale: 0,
                format: Format::DecimalSi,
                original: Some("0".into()),
            });
        }
        let (positive, num, denom, suffix) = split(s)?;
        let (base, exponent, mut format) = interpret(&suffix).ok_or(SUFFIX_ERROR)?;
        let digits = format!("{num}{denom}");
        let value: i128 = if digits.len() > 36 {
            return Err(NUMERIC_ERROR);
        } else {
            digits.parse().map_err(|_| NUMERIC_ERROR)?
        };
        let denom_len = i32::try_from(denom.len()).map_err(|_| NUMERIC_ERROR)?;
        let sign = if positive { 1 } else { -1 };

        // The int64 fast path keeps an already canonical input string verbatim.
        let precision = match format {
            Format::BinarySi if denom.is_empty() => {
                15 - num.len() as i64 - ((exponent as f32) * 3.0 / 10.0) as i64 - 1
            }
            Format::BinarySi => -1,
            _ => 18 - digits.len() as i64,
        };
        let fast_scale = if format == Format::BinarySi {
            0
        } else {
            exponent - denom_len
        };
        if precision >= 0 && fast_scale >= -9 && value <= I64_MAX {
            let multiplier: i128 = if format == Format::BinarySi {
                1i128 << exponent
            } else {
                1
            };
            if let Some(result) = value.checked_mul(multiplier).filter(|r| *r <= I64_MAX) {
                let keep = match format {
                    Format::BinarySi => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => {
                        fast_scale % 3 == 0 && !digits.ends_with("000") && !digits.starts_with('0')
                    }
                };
                return Ok(Quantity {
                    mantissa: sign * result,
                    scale: fast_scale,
                    format,
                    original: keep.then(|| s.to_string()),
                });
            }
        }

        // The arbitrary-precision path: exact value, rounded up to nano, capped at int64.
        let (mut mantissa, mut scale) = if base == 10 {
            (value, exponent - denom_len)
        } else {
            let factor = 1i128.checked_shl(exponent as u32).ok_or(NUMERIC_ERROR)?;
            (value.checked_mul(factor).ok_or(NUMERIC_ERROR)?, -denom_len)
        };
        if mantissa != 0 && scale < -9 {
            mantissa = round_away(mantissa, scale, -9).ok_or(NUMERIC_ERROR)?;
            scale = -9;
        }
        let q = Quantity {
            mantissa,
            scale,
            format,
            original: None,
        };
        let (mut mantissa, mut scale) = (q.mantissa, q.scale);
        if q.cmp_value(I64_MAX, 0) == Ordering::Greater {
            mantissa = I64_MAX;
            scale = 0;
        }
        let below_one = Quantity {
            mantissa,
            scale,
            format,
            original: None,
        };
        if format == Format::BinarySi && below_one.cmp_value(1, 0) == Ordering::Less && mantissa > 0
        {
            format = Format::DecimalSi;
        }
        Ok(Quantity {
            mantissa: sign * mantissa,
            scale,
            format,
            original: None,
        })
    }

    /// Parses a JSON quantity: a string or a number (whose literal text kube parses).
    pub fn from_json(v: &serde_json::Value) -> Option<Result<Quantity, &'static str>> {
        match v {
            serde_json::Value::String(s) => Some(Quantity::parse(s)),
            serde_json::Value::Number(n) => Some(Quantity::parse(&n.to_string())),
            _ => None,
        }
    }

    /// Quantity.RoundUp(scale): at least `scale` precision, rounding away from zero.
    pub fn round_up(&mut self, scale: i32) {
        if self.scale >= scale {
            return;
        }
        if let Some(m) = round_away(self.mantissa, self.scale, scale) {
            self.mantissa = m;
            self.scale = scale;
            self.original = None;
        }
    }

    /// Compares `self` with `m * 10^s`.
    fn cmp_value(&self, m: i128, s: i32) -> Ordering {
        let (a, b) = (self.mantissa, m);
        let lo = self.scale.min(s);
        let scaled = |x: i128, from: i32| {
            pow10(u32::try_from(from - lo).ok()?).and_then(|p| x.checked_mul(p))
        };
        match (scaled(a, self.scale), scaled(b, s)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let fa = a as f64 * 10f64.powi(self.scale);
                let fb = b as f64 * 10f64.powi(s);
                fa.partial_cmp(&fb).unwrap_or(Ordering::Equal)
            }
        }
    }

    /// Quantity.Cmp.
    // Not `Ord`: `1` and `1000m` compare equal here but differ as representations (`PartialEq`).
    #[allow(clippy::should_implement_trait)]
    pub fn cmp(&self, other: &Quantity) -> Ordering {
        self.cmp_value(other.mantissa, other.scale)
    }

    /// Sign of the value.
    pub fn signum(&self) -> i128 {
        self.mantissa.signum()
    }

    /// Whether the value is a whole number.
    fn is_integer(&self) -> bool {
        self.scale >= 0 || pow10(self.scale.unsigned_abs()).is_some_and(|p| self.mantissa % p == 0)
    }

    /// Quantity.String: the kept input or the canonical form.
    pub fn canonical(&self) -> String {
        if let Some(s) = &self.original {
            return s.clone();
        }
        if self.mantissa == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let small = self.cmp_value(-1024, 0) == Ordering::Greater
                && self.cmp_value(1024, 0) == Ordering::Less;
            if small || !self.is_integer() {
                format = Format::DecimalSi;
            }
        }
        if format == Format::BinarySi {
            if let Some(n) = self.integer_value() {
                let mut n = n;
                let mut times = 0;
                while n != 0 && n % 1024 == 0 && times < 6 {
                    n /= 1024;
                    times += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][times];
                return format!("{n}{suffix}");
            }
            format = Format::DecimalSi;
        }
        let (mut m, mut e) = (self.mantissa, self.scale);
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        match e % 3 {
            1 | -2 => {
                m *= 10;
                e -= 1;
            }
            2 | -1 => {
                m *= 100;
                e -= 2;
            }
            _ => {}
        }
        let suffix = match format {
            Format::DecimalExponent if e == 0 => String::new(),
            Format::DecimalExponent => format!("e{e}"),
            _ => match e {
                -9 => "n".into(),
                -6 => "u".into(),
                -3 => "m".into(),
                0 => String::new(),
                3 => "k".into(),
                6 => "M".into(),
                9 => "G".into(),
                12 => "T".into(),
                15 => "P".into(),
                18 => "E".into(),
                e => format!("e{e}"),
            },
        };
        format!("{m}{suffix}")
    }

    fn integer_value(&self) -> Option<i128> {
        if self.scale >= 0 {
            self.mantissa.checked_mul(pow10(self.scale as u32)?)
        } else {
            Some(self.mantissa / pow10(self.scale.unsigned_abs())?)
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.mantissa < 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_match_apimachinery() {
        let cases = [
            ("1", "1"),
            ("500m", "500m"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1000m", "1"),
            ("1000", "1k"),
            ("128Mi", "128Mi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("1e3", "1e3"),
            ("1Gi", "1Gi"),
            ("2G", "2G"),
            ("100k", "100k"),
            ("  64Mi ", "64Mi"),
            ("0", "0"),
            ("1.5Ki", "1536"),
            ("0.0000000001", "1n"),
            ("-1", "-1"),
        ];
        for (input, want) in cases {
            let q = Quantity::parse(input).unwrap();
            assert_eq!(q.canonical(), want, "{input}");
        }
    }

    #[test]
    fn round_up_to_milli() {
        let mut q = Quantity::parse("0.0001").unwrap();
        q.round_up(-3);
        assert_eq!(q.canonical(), "1m");
        let mut q = Quantity::parse("250m").unwrap();
        q.round_up(-3);
        assert_eq!(q.canonical(), "250m");
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "abc", "1x", "1.2.3", "--1", "1Gb"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Quantity::parse("1 Gi"), Err(FORMAT_ERROR));
    }

    #[test]
    fn compares_values() {
        let a = Quantity::parse("1Gi").unwrap();
        let b = Quantity::parse("1024Mi").unwrap();
        let c = Quantity::parse("1G").unwrap();
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert_eq!(c.cmp(&a), Ordering::Less);
        assert_eq!(
            Quantity::parse("500m")
                .unwrap()
                .cmp(&Quantity::parse("0.5").unwrap()),
            Ordering::Equal
        );
    }

    /// Any text: an answer, never a panic, from this parser and from the table printer's; a
    /// quantity with a character that is not ASCII never parses; a parsed quantity's canonical form is a fixed point; every
    /// quantity written in the grammar parses.
    #[test]
    fn arbitrary_text_quantities() {
        use crate::arbitrary_text::{CASES, TextGen};
        let special: Vec<char> = "0123456789.+-eEinumkKMGTP".chars().collect();
        let mut g = TextGen::new(0x009a_471e);
        for _ in 0..CASES {
            let s = g.text(&special, 30);
            let parsed = Quantity::parse(&s);
            let printed = crate::table::quantity::canonical_quantity(&s);
            // The JSON decoder trims (Unicode) whitespace first, as Go's TrimSpace; the
            // printer does not.
            if !s.trim().is_ascii() {
                assert!(parsed.is_err(), "{s:?}");
            }
            if !s.is_ascii() {
                assert!(printed.is_none(), "{s:?}");
            }
            if let Ok(q) = parsed {
                let canonical = q.canonical();
                let again = Quantity::parse(&canonical)
                    .unwrap_or_else(|e| panic!("{s:?} -> {canonical:?}: {e}"));
                assert_eq!(again.canonical(), canonical, "{s:?}");
            }
        }
        for _ in 0..CASES {
            let s = g.quantity();
            assert!(Quantity::parse(&s).is_ok(), "{s}");
            assert!(
                crate::table::quantity::canonical_quantity(&s).is_some(),
                "{s}"
            );
        }
    }
}
