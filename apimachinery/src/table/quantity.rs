//! `resource.Quantity` canonical form, as printed in the capacity and quota columns.
//!
//! kube-apiserver decodes quantities and re-encodes them canonically ("1000m" → "1",
//! "2048Ki" → "2Mi"), so its printers always show the canonical form. Objects stored here keep
//! the client's spelling, so printers canonicalize on the way out.

use serde_json::Value;

const NANO: i128 = 1_000_000_000;

/// The notation a quantity was written in, which its canonical form keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// A parsed quantity: its value in units of 10⁻⁹ (rounded away from zero, like
/// `ParseQuantity`) and its notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quantity {
    nanos: i128,
    format: Format,
}

fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exp) = decimal {
        return Some((10, exp, Format::DecimalSI));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exp) = binary {
        return Some((2, exp, Format::BinarySI));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    if rest.is_empty() {
        return None;
    }
    let exp: i32 = rest.parse().ok()?;
    Some((10, exp, Format::DecimalExponent))
}

/// Splits a quantity into sign, integer digits, fraction digits and suffix, as apimachinery's
/// `parseQuantityString` scans it.
fn split(s: &str) -> Option<(bool, &str, &str, &str)> {
    let b = s.as_bytes();
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
    let int_start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let int = &s[int_start..pos];
    let mut frac = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let frac_start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        frac = &s[frac_start..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != b.len() {
        return None;
    }
    Some((positive, int, frac, &s[suffix_start..]))
}

fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

fn parse(s: &str) -> Option<Quantity> {
    if s.is_empty() {
        return None;
    }
    let (positive, int, frac, suffix) = split(s)?;
    let (base, exponent, mut format) = interpret_suffix(suffix)?;
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    // value = mantissa × base^exponent × 10^-len(frac); expressed in nano units.
    let mut scale10 = 9 - frac.len() as i64;
    let mut numerator = mantissa;
    if base == 10 {
        scale10 += i64::from(exponent);
    } else {
        numerator = numerator.checked_mul(1i128.checked_shl(exponent as u32)?)?;
    }
    let nanos = if scale10 >= 0 {
        numerator.checked_mul(pow10(u32::try_from(scale10).ok()?)?)?
    } else {
        match u32::try_from(scale10.unsigned_abs()).ok().and_then(pow10) {
            // Rounds up to the next nano, as ParseQuantity does (inf.RoundUp).
            Some(div) => numerator / div + i128::from(numerator % div != 0),
            None => i128::from(numerator != 0),
        }
    };
    if format == Format::BinarySI && nanos > 0 && nanos < NANO {
        format = Format::DecimalSI;
    }
    Some(Quantity {
        nanos: if positive { nanos } else { -nanos },
        format,
    })
}

fn remove_factors(mut value: i128, base: i128) -> (i128, i32) {
    let negative = value < 0;
    value = value.abs();
    let mut times = 0;
    while value >= base && value % base == 0 {
        value /= base;
        times += 1;
    }
    (if negative { -value } else { value }, times)
}

impl Quantity {
    /// `Quantity.String()` / `CanonicalizeBytes`; `None` if a value beyond the range handled
    /// here would overflow.
    fn canonical(self) -> Option<String> {
        if self.nanos == 0 {
            return Some("0".to_string());
        }
        let mut format = self.format;
        if format == Format::BinarySI
            && ((-1024 * NANO < self.nanos && self.nanos < 1024 * NANO) || self.nanos % NANO != 0)
        {
            format = Format::DecimalSI;
        }
        if format == Format::BinarySI {
            let (mut amount, mut exp) = remove_factors(self.nanos / NANO, 1024);
            while exp > 6 {
                amount = amount.checked_mul(1024)?;
                exp -= 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp as usize];
            return Some(format!("{amount}{suffix}"));
        }
        let (mut amount, times) = remove_factors(self.nanos, 10);
        let mut exp = times - 9;
        while exp.rem_euclid(3) != 0 {
            amount = amount.checked_mul(10)?;
            exp -= 1;
        }
        if format == Format::DecimalExponent {
            return Some(if exp == 0 {
                amount.to_string()
            } else {
                format!("{amount}e{exp}")
            });
        }
        while exp > 18 {
            amount = amount.checked_mul(1000)?;
            exp -= 3;
        }
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        };
        Some(format!("{amount}{suffix}"))
    }
}

/// The canonical spelling of a quantity string (`"1000m"` → `"1"`, `"1536Mi"` → `"1536Mi"`,
/// `"1.5Gi"` → `"1536Mi"`), or `None` when it is not a quantity.
pub fn canonical_quantity(s: &str) -> Option<String> {
    parse(s).and_then(Quantity::canonical)
}

/// Prints a quantity field as kube's `Quantity.String()` would: canonical form, `"0"` when the
/// field is absent, the raw text when it cannot be parsed.
pub fn quantity_string(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "0".to_string(),
        Some(Value::String(s)) => canonical_quantity(s).unwrap_or_else(|| s.clone()),
        Some(Value::Number(n)) => {
            let text = n.to_string();
            canonical_quantity(&text).unwrap_or(text)
        }
        Some(other) => other.to_string(),
    }
}

/// Like [`quantity_string`] for an optional `*Quantity`: `<nil>` when absent, as Go prints a nil
/// quantity pointer.
pub fn quantity_ptr_string(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "<nil>".to_string(),
        some => quantity_string(some),
    }
}

#[cfg(test)]
mod tests;
