//! Go's float formatting (`strconv.FormatFloat` shortest digits, `fmt`'s `%v` and
//! `encoding/json`'s `floatEncoder`), shared by the serializer and the table printers.

use std::fmt::Write as _;

/// The shortest decimal digits of `|f|` and the position of the decimal point
/// (value = 0.DIGITS × 10^point), as Go's `strconv` computes them.
fn shortest_digits(f: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest round-tripping digits, like Go's shortest mode.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

fn fixed_notation(digits: &str, point: i32) -> String {
    let nd = digits.len() as i32;
    if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if point >= nd {
        format!("{}{}", digits, "0".repeat((point - nd) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    }
}

fn exponent_notation(digits: &str, point: i32, min_exp_digits: usize) -> String {
    let exp = point - 1;
    let (first, rest) = digits.split_at(1);
    let mut out = first.to_string();
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(
        out,
        "{:0width$}",
        exp.unsigned_abs(),
        width = min_exp_digits
    );
    out
}

fn non_finite(f: f64) -> Option<String> {
    if f.is_nan() {
        Some("NaN".into())
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" }.into())
    } else {
        None
    }
}

/// Formats a float as Go's `fmt.Print` (`%v`, i.e. `strconv.FormatFloat(f, 'g', -1, 64)`):
/// `1`, `0.5`, `123456`, `1.234567e+06`, `1e-05`.
pub fn go_float_v(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s;
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    // strconv's 'g' with shortest precision switches to %e at exponent < -4 or >= 6... (eprec 6).
    let body = if !(-4..6).contains(&exp) {
        exponent_notation(&digits, point, 2)
    } else {
        fixed_notation(&digits, point)
    };
    format!("{sign}{body}")
}

/// Formats a float as Go's `encoding/json` does (`floatEncoder`): fixed notation between 1e-6
/// and 1e21, otherwise exponent notation with `e-7` rather than `e-07`.
pub fn go_json_float(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s;
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = shortest_digits(f);
    let abs = f.abs();
    let body = if !(1e-6..1e21).contains(&abs) {
        let s = exponent_notation(&digits, point, 2);
        let n = s.len();
        // floatEncoder cleans "e-09" up to "e-9".
        if n >= 4 && &s[n - 4..n - 1] == "e-0" {
            format!("{}{}", &s[..n - 2], &s[n - 1..])
        } else {
            s
        }
    } else {
        fixed_notation(&digits, point)
    };
    format!("{sign}{body}")
}
