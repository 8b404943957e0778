//! kube's CIDR library (pkg/cel/library/cidr.go): `cidr`, `isCIDR`, `containsIP`,
//! `containsCIDR`, `ip`, `masked`, `prefixLength`, `string`.

use std::net::IpAddr;

use cel::common::types::{CelBool, CelInt, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError};

use super::ip::{IP_TYPE, Ip};
use super::{arg, charge_len, err, opaque_val, str_arg, string_val};

pub static CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");

/// An address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}
opaque_val!(Cidr, &CIDR_TYPE);

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let t = || CIDR_TYPE.to_owned();
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![t()], to_string)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        t(),
        vec![IP_TYPE.to_owned()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        t(),
        vec![STRING_TYPE],
        contains_ip_string,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        t(),
        vec![t()],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        t(),
        vec![STRING_TYPE],
        contains_cidr_string,
    )?;
    env.add_member_overload("ip", "cidr_ip", t(), vec![], ip)?;
    env.add_member_overload("masked", "cidr_masked", t(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        t(),
        vec![],
        prefix_length,
    )?;
    Ok(())
}

pub fn parse(s: &str) -> Result<Cidr, String> {
    let bad = || {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({s:?}): bad bits after slash"
        )
    };
    let (addr, bits) = s.split_once('/').ok_or_else(|| format!("network address parse error during conversion from string: netip.ParsePrefix({s:?}): no '/'"))?;
    let addr = super::ip::parse(addr)?;
    if bits.is_empty()
        || !bits.chars().all(|c| c.is_ascii_digit())
        || (bits.len() > 1 && bits.starts_with('0'))
    {
        return Err(bad());
    }
    let bits: u8 = bits.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(bad());
    }
    Ok(Cidr { addr, bits })
}

fn to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl Cidr {
    fn width(&self) -> u32 {
        if self.addr.is_ipv4() { 32 } else { 128 }
    }

    fn mask(&self) -> u128 {
        let w = self.width();
        let all = if w == 128 {
            u128::MAX
        } else {
            (1u128 << w) - 1
        };
        let host_bits = w - u32::from(self.bits);
        if host_bits >= 128 {
            0
        } else {
            all & !((1u128 << host_bits) - 1)
        }
    }

    fn contains(&self, a: IpAddr) -> bool {
        a.is_ipv4() == self.addr.is_ipv4()
            && to_u128(a) & self.mask() == to_u128(self.addr) & self.mask()
    }

    fn masked(&self) -> Cidr {
        let v = to_u128(self.addr) & self.mask();
        let addr = match self.addr {
            IpAddr::V4(_) => IpAddr::V4((v as u32).into()),
            IpAddr::V6(_) => IpAddr::V6(v.into()),
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }
}

fn the(args: &[CowVal<'_, '_>], f: &str) -> Result<Cidr, ExecutionError> {
    Ok(*arg::<Cidr>(args, 0, f)?)
}

fn cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "cidr")?;
    charge_len(s.len())?;
    parse(s).map(CowVal::owned).map_err(err)
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "isCIDR")?;
    charge_len(s.len())?;
    Ok(CowVal::owned(CelBool::from(parse(s).is_ok())))
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = the(&args, "string")?;
    Ok(string_val(format!("{}/{}", c.addr, c.bits)))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = the(&args, "containsIP")?;
    let ip = arg::<Ip>(&args, 1, "containsIP")?.0;
    Ok(CowVal::owned(CelBool::from(c.contains(ip))))
}

fn contains_ip_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = the(&args, "containsIP")?;
    let ip = super::ip::parse(str_arg(&args, 1, "containsIP")?).map_err(err)?;
    Ok(CowVal::owned(CelBool::from(c.contains(ip))))
}

fn covers(outer: Cidr, inner: Cidr) -> bool {
    inner.bits >= outer.bits && outer.contains(inner.addr)
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = the(&args, "containsCIDR")?;
    let other = *arg::<Cidr>(&args, 1, "containsCIDR")?;
    Ok(CowVal::owned(CelBool::from(covers(c, other))))
}

fn contains_cidr_string<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let c = the(&args, "containsCIDR")?;
    let other = parse(str_arg(&args, 1, "containsCIDR")?).map_err(err)?;
    Ok(CowVal::owned(CelBool::from(covers(c, other))))
}

fn ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(Ip(the(&args, "ip")?.addr)))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(the(&args, "masked")?.masked()))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelInt::from(i64::from(
        the(&args, "prefixLength")?.bits,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment() {
        let net = parse("10.0.0.0/8").unwrap();
        assert!(net.contains(super::super::ip::parse("10.1.2.3").unwrap()));
        assert!(!net.contains(super::super::ip::parse("11.0.0.1").unwrap()));
        assert!(covers(net, parse("10.1.0.0/16").unwrap()));
        assert!(!covers(parse("10.1.0.0/16").unwrap(), net));
        assert_eq!(
            parse("192.168.1.5/24").unwrap().masked(),
            parse("192.168.1.0/24").unwrap()
        );
        assert!(parse("10.0.0.0/33").is_err());
        assert!(parse("10.0.0.0").is_err());
        assert!(parse("::1/128").is_ok());
    }
}
