//! The canonical text of quantities Karmada builds from integers (`resource.NewMilliQuantity`,
//! `resource.NewQuantity` and `Quantity.String`).

/// Strips factors of `base` while the value stays at least `base` (`removeInt64Factors`).
fn remove_factors(mut value: i64, base: i64) -> (i64, i32) {
    let negative = value < 0;
    if negative {
        value = -value;
    }
    let mut times = 0;
    while value >= base && value % base == 0 {
        value /= base;
        times += 1;
    }
    (if negative { -value } else { value }, times)
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

/// A DecimalSI quantity of `value × 10^scale`, e.g. `(1500, -3)` → `1500m`, `(2000, -3)` → `2`.
pub fn format_decimal_si(value: i64, scale: i32) -> String {
    if value == 0 {
        return "0".into();
    }
    let (mut amount, times) = remove_factors(value, 10);
    let mut exponent = scale + times;
    // Exponents are shown in steps of three.
    match exponent.rem_euclid(3) {
        1 => {
            amount = amount.saturating_mul(10);
            exponent -= 1;
        }
        2 => {
            amount = amount.saturating_mul(100);
            exponent -= 2;
        }
        _ => {}
    }
    match decimal_suffix(exponent) {
        Some(suffix) => format!("{amount}{suffix}"),
        None => format!("{amount}e{exponent}"),
    }
}

/// A BinarySI quantity of `value` units, e.g. 1536 MiB → `1536Mi`; values below 1024 are shown
/// in DecimalSI, as Kubernetes does.
pub fn format_binary_si(value: i64) -> String {
    if value > -1024 && value < 1024 {
        return format_decimal_si(value, 0);
    }
    let (amount, times) = remove_factors(value, 1024);
    let suffix = match times {
        0 => "",
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        _ => "Ei",
    };
    format!("{amount}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        for (value, scale, want) in [
            (1500, -3, "1500m"),
            (2000, -3, "2"),
            (100, -3, "100m"),
            (250, -3, "250m"),
            (1, -3, "1m"),
            (0, -3, "0"),
            (3, 0, "3"),
            (1000, 0, "1k"),
            (1500, 0, "1500"),
            (2_000_000, 0, "2M"),
            (10, 0, "10"),
            (20_000, -3, "20"),
        ] {
            assert_eq!(format_decimal_si(value, scale), want, "{value}e{scale}");
        }
        for (value, want) in [
            (128 << 20, "128Mi"),
            (1536 << 20, "1536Mi"),
            (1 << 30, "1Gi"),
            (1024, "1Ki"),
            (1000, "1k"),
            (500, "500"),
            (1_000_000_000, "1000000000"),
            (1536, "1536"),
        ] {
            assert_eq!(format_binary_si(value), want, "{value}");
        }
    }
}
