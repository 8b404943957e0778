//! kube's quantity library (pkg/cel/library/quantity.go): `quantity`, `isQuantity`, `sign`,
//! comparisons, `add`/`sub` (of quantities or ints), `asInteger`, `isInteger`,
//! `asApproximateFloat`. Parsing is apimachinery's; the arithmetic is exact decimal.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelDouble, CelInt, INT_TYPE, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::{arg, charge_len, err, int_arg, str_arg};

pub static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// A quantity's exact value, `mantissa * 10^scale`.
#[derive(Clone, Debug)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
}

impl cel::common::value::Val for Quantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        // kube compares quantities by value: `quantity('1') == quantity('1000m')`.
        other
            .as_any()
            .and_then(|o| o.downcast_ref::<Quantity>())
            .is_some_and(|o| self.cmp(o) == Ordering::Equal)
    }
    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl cel::common::value::StaticVal for Quantity {}

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let q = || QUANTITY_TYPE.to_owned();
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], sign)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], less)?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    env.add_member_overload("asInteger", "quantity_as_integer", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_as_approximate_float",
        q(),
        vec![],
        as_approximate_float,
    )?;
    Ok(())
}

impl Quantity {
    /// resource.ParseQuantity's value.
    pub fn parse(s: &str) -> Result<Quantity, String> {
        let parsed = apimachinery::quantity::Quantity::parse(s).map_err(str::to_owned)?;
        Quantity::from_canonical(&parsed.canonical()).ok_or_else(|| "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".to_owned())
    }

    /// The value of a canonical quantity string (digits and one suffix, as `String()` prints).
    fn from_canonical(s: &str) -> Option<Quantity> {
        let digits_end = s
            .char_indices()
            .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
            .map_or(s.len(), |(i, _)| i);
        let mantissa: i128 = s[..digits_end].parse().ok()?;
        let (mantissa, scale) = match &s[digits_end..] {
            "" => (mantissa, 0),
            "n" => (mantissa, -9),
            "u" => (mantissa, -6),
            "m" => (mantissa, -3),
            "k" => (mantissa, 3),
            "M" => (mantissa, 6),
            "G" => (mantissa, 9),
            "T" => (mantissa, 12),
            "P" => (mantissa, 15),
            "E" => (mantissa, 18),
            "Ki" => (mantissa.checked_mul(1 << 10)?, 0),
            "Mi" => (mantissa.checked_mul(1 << 20)?, 0),
            "Gi" => (mantissa.checked_mul(1 << 30)?, 0),
            "Ti" => (mantissa.checked_mul(1 << 40)?, 0),
            "Pi" => (mantissa.checked_mul(1 << 50)?, 0),
            "Ei" => (mantissa.checked_mul(1 << 60)?, 0),
            e => (mantissa, e.strip_prefix(['e', 'E'])?.parse().ok()?),
        };
        Some(Quantity { mantissa, scale })
    }

    fn aligned(&self, other: &Quantity) -> Option<(i128, i128, i32)> {
        let scale = self.scale.min(other.scale);
        let up = |q: &Quantity| {
            q.mantissa
                .checked_mul(10i128.checked_pow((q.scale - scale) as u32)?)
        };
        Some((up(self)?, up(other)?, scale))
    }

    fn as_f64(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.scale)
    }

    fn cmp(&self, other: &Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            None => self
                .as_f64()
                .partial_cmp(&other.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }

    fn plus(&self, other: &Quantity, sign: i128) -> Result<Quantity, ExecutionError> {
        let (a, b, scale) = self
            .aligned(other)
            .ok_or_else(|| err("quantity overflow"))?;
        let mantissa = a
            .checked_add(sign * b)
            .ok_or_else(|| err("quantity overflow"))?;
        Ok(Quantity { mantissa, scale })
    }

    fn integer(&self) -> Option<i128> {
        if self.scale >= 0 {
            self.mantissa
                .checked_mul(10i128.checked_pow(self.scale as u32)?)
        } else {
            let p = 10i128.checked_pow(self.scale.unsigned_abs())?;
            (self.mantissa % p == 0).then(|| self.mantissa / p)
        }
    }
}

fn quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "quantity")?;
    charge_len(s.len())?;
    Quantity::parse(s).map(CowVal::owned).map_err(err)
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "isQuantity")?;
    charge_len(s.len())?;
    Ok(CowVal::owned(CelBool::from(Quantity::parse(s).is_ok())))
}

fn two<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<(&'a Quantity, &'a Quantity), ExecutionError> {
    Ok((arg::<Quantity>(args, 0, f)?, arg::<Quantity>(args, 1, f)?))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<Quantity>(&args, 0, "sign")?;
    Ok(CowVal::owned(CelInt::from(q.mantissa.signum() as i64)))
}

fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(&args, "isGreaterThan")?;
    Ok(CowVal::owned(CelBool::from(a.cmp(b) == Ordering::Greater)))
}

fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(&args, "isLessThan")?;
    Ok(CowVal::owned(CelBool::from(a.cmp(b) == Ordering::Less)))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(&args, "compareTo")?;
    Ok(CowVal::owned(CelInt::from(a.cmp(b) as i64)))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(&args, "add")?;
    a.plus(b, 1).map(CowVal::owned)
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(&args, "sub")?;
    a.plus(b, -1).map(CowVal::owned)
}

fn add_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = arg::<Quantity>(&args, 0, "add")?;
    let b = Quantity {
        mantissa: int_arg(&args, 1, "add")?.into(),
        scale: 0,
    };
    a.plus(&b, 1).map(CowVal::owned)
}

fn sub_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = arg::<Quantity>(&args, 0, "sub")?;
    let b = Quantity {
        mantissa: int_arg(&args, 1, "sub")?.into(),
        scale: 0,
    };
    a.plus(&b, -1).map(CowVal::owned)
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<Quantity>(&args, 0, "asInteger")?;
    q.integer()
        .and_then(|i| i64::try_from(i).ok())
        .map(|i| CowVal::owned(CelInt::from(i)))
        .ok_or_else(|| err("cannot convert value to integer"))
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<Quantity>(&args, 0, "isInteger")?;
    let fits = q.integer().is_some_and(|i| i64::try_from(i).is_ok());
    Ok(CowVal::owned(CelBool::from(fits)))
}

fn as_approximate_float<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<Quantity>(&args, 0, "asApproximateFloat")?;
    Ok(CowVal::owned(CelDouble::from(q.as_f64())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_exact() {
        let q = |s| Quantity::parse(s).unwrap();
        assert_eq!(q("1").cmp(&q("1000m")), Ordering::Equal);
        assert_eq!(q("1Ki").integer(), Some(1024));
        assert_eq!(q("1.5").integer(), None);
        assert_eq!(q("1.5").plus(&q("500m"), 1).unwrap().integer(), Some(2));
        assert_eq!(q("2e3").integer(), Some(2000));
        assert_eq!(q("-3Mi").mantissa.signum(), -1);
        assert!(Quantity::parse("1.5.5").is_err());
        assert!(Quantity::parse("10Zi").is_err());
    }
}
