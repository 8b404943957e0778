//! The `resource.Quantity` arithmetic the kube library offers scripts: parsing, exact sums and
//! Kubernetes' canonical text (`Quantity.Add`, `Quantity.String`, `AsApproximateFloat64`).
//!
//! Amounts are kept as a count of nano-units: Kubernetes rounds every parsed quantity up to a
//! nano-unit, so nothing finer exists.

use std::fmt;

/// The notation a quantity was written in; its canonical text keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `1e3`, `5E-2`.
    DecimalExponent,
    /// `1Ki`, `2Gi`.
    BinarySI,
    /// `100m`, `2`, `3k`.
    DecimalSI,
}

/// A quantity: an exact amount and the notation it came in. The zero value (`Quantity{}` in
/// Go) has no notation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quantity {
    nanos: i128,
    format: Option<Format>,
}

/// Text that is not a quantity, worded as `resource.ParseQuantity` words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityError(String);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QuantityError {}

const NANO: i128 = 1_000_000_000;

fn format_error() -> QuantityError {
    QuantityError(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            .into(),
    )
}

/// The base-10 and base-2 exponents and the notation of a suffix (`suffixHandler.interpret`).
fn suffix(s: &str) -> Option<(i32, u32, Format)> {
    let decimal = |e| Some((e, 0, Format::DecimalSI));
    match s {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some((0, 10, Format::BinarySI)),
        "Mi" => Some((0, 20, Format::BinarySI)),
        "Gi" => Some((0, 30, Format::BinarySI)),
        "Ti" => Some((0, 40, Format::BinarySI)),
        "Pi" => Some((0, 50, Format::BinarySI)),
        "Ei" => Some((0, 60, Format::BinarySI)),
        _ => {
            let digits = s.strip_prefix(['e', 'E'])?;
            let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let e: i32 = digits.parse().ok()?;
            Some((e, 0, Format::DecimalExponent))
        }
    }
}

impl Quantity {
    /// Parses Kubernetes' quantity syntax (`ParseQuantity`), rounding up to a nano-unit.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        if text.is_empty() {
            return Err(format_error());
        }
        let (negative, rest) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let digits_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix_text) = rest.split_at(digits_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(format_error());
        }
        let (exp10, exp2, format) = suffix(suffix_text).ok_or_else(format_error)?;
        let too_large = || QuantityError(format!("quantity {text} is too large"));
        // The digits as an integer scaled to nano-units: digits × 10^(exp10 - |fraction| + 9).
        let mut scale = exp10 - fraction.len() as i32 + 9;
        let mut mantissa: i128 = 0;
        let mut round_up = false;
        for b in whole.bytes().chain(fraction.bytes()) {
            if mantissa > i128::MAX / 100 {
                return Err(too_large());
            }
            mantissa = mantissa * 10 + i128::from(b - b'0');
        }
        let mut nanos = mantissa;
        while scale > 0 {
            nanos = nanos.checked_mul(10).ok_or_else(too_large)?;
            scale -= 1;
        }
        while scale < 0 {
            round_up |= nanos % 10 != 0;
            nanos /= 10;
            scale += 1;
            if nanos == 0 {
                break;
            }
        }
        if round_up {
            nanos += 1;
        }
        for _ in 0..exp2 {
            nanos = nanos.checked_mul(2).ok_or_else(too_large)?;
        }
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format: Some(format),
        })
    }

    /// Adds `other` (`Quantity.Add`): a sum that is still zero takes the notation of what is
    /// added to it.
    pub fn add(&mut self, other: &Quantity) -> Result<(), QuantityError> {
        if self.nanos == 0 {
            self.format = other.format;
        }
        self.nanos = self
            .nanos
            .checked_add(other.nanos)
            .ok_or_else(|| QuantityError("quantity sum is too large".into()))?;
        Ok(())
    }

    /// The value as a float (`AsApproximateFloat64`).
    pub fn approximate_f64(&self) -> f64 {
        self.nanos as f64 / NANO as f64
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

/// Strips factors of `base` from a value (`removeInt64Factors`).
fn remove_factors(mut value: i128, base: i128) -> (i128, i32) {
    let mut times = 0;
    while value != 0 && value % base == 0 {
        value /= base;
        times += 1;
    }
    (value, times)
}

fn decimal_suffix(exponent: i32) -> Option<&'static str> {
    Some(match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

/// The canonical text (`Quantity.String` / `CanonicalizeBytes`): binary quantities of whole
/// units at least 1024 in size in binary suffixes, everything else in decimal ones, the
/// exponent a multiple of three.
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let mut format = self.format.unwrap_or(Format::DecimalExponent);
        if format == Format::BinarySI && (self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0)
        {
            // Small or fractional binary amounts are shown in decimal, without rounding.
            format = Format::DecimalSI;
        }
        if format == Format::BinarySI {
            let (amount, times) = remove_factors(self.nanos / NANO, 1024);
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .get(times as usize)
                .copied()
                .unwrap_or("Ei");
            let amount = if times > 6 {
                amount * 1024i128.pow((times - 6) as u32)
            } else {
                amount
            };
            return write!(f, "{amount}{suffix}");
        }
        let (mut amount, times) = remove_factors(self.nanos, 10);
        let mut exponent = times - 9;
        match exponent.rem_euclid(3) {
            1 => {
                amount *= 10;
                exponent -= 1;
            }
            2 => {
                amount *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        match format {
            Format::DecimalExponent if exponent == 0 => write!(f, "{amount}"),
            Format::DecimalExponent => write!(f, "{amount}e{exponent}"),
            _ => match decimal_suffix(exponent) {
                Some(s) => write!(f, "{amount}{s}"),
                None => write!(f, "{amount}e{exponent}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(s: &str) -> String {
        Quantity::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .to_string()
    }

    #[test]
    fn canonical_text_keeps_the_notation() {
        for (input, want) in [
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("2048Ki", "2Mi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("1Ki", "1Ki"),
            ("100Mi", "100Mi"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1.5e3", "1500"),
            ("12e-1", "1200e-3"),
            ("1k", "1k"),
            ("10000", "10k"),
            ("1n", "1n"),
            ("1e-12", "1e-9"),
            ("-1500m", "-1500m"),
            ("+2", "2"),
            ("0Gi", "0"),
            (".5", "500m"),
        ] {
            assert_eq!(canonical(input), want, "{input}");
        }
    }

    #[test]
    fn sums_take_the_first_notation_and_are_exact() {
        let sum = |items: &[&str]| {
            let mut q = Quantity::default();
            for i in items {
                q.add(&Quantity::parse(i).expect("quantity")).expect("add");
            }
            q.to_string()
        };
        assert_eq!(sum(&["1", "500m"]), "1500m");
        assert_eq!(sum(&["1Gi", "1Gi"]), "2Gi");
        assert_eq!(sum(&["1Gi", "512Mi"]), "1536Mi");
        assert_eq!(sum(&["100m", "1Gi"]), "1073741824100m");
        assert_eq!(sum(&["1Gi", "-1Gi", "250m"]), "250m");
        assert_eq!(sum(&[]), "0");
        assert_eq!(sum(&["0.1", "0.2"]), "300m");
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in [
            "", "abc", "1.2.3", "1x", "Gi", "1e", "1e+", "--1", "1 Gi", ".",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Quantity::parse("1x").expect_err("bad").to_string(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }

    #[test]
    fn approximate_values() {
        assert_eq!(Quantity::parse("1500m").expect("q").approximate_f64(), 1.5);
        assert_eq!(Quantity::parse("2Ki").expect("q").approximate_f64(), 2048.0);
    }
}
