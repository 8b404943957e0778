//! kube's IP library (pkg/cel/library/ip.go): `ip`, `isIP`, `ip.isCanonical`, `family` and the
//! address class tests, `string`. As kube, IPv4-mapped IPv6 addresses and zones are refused.

use std::net::IpAddr;

use cel::common::types::{CelBool, CelInt, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError};

use super::{arg, charge_len, err, opaque_val, str_arg, string_val};

pub static IP_TYPE: Type = Type::new_unspecified_type("net.IP");

/// An IP address.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ip(pub IpAddr);
opaque_val!(Ip, &IP_TYPE);

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let t = || IP_TYPE.to_owned();
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![t()], to_string)?;
    env.add_member_overload("family", "ip_family", t(), vec![], family)?;
    env.add_member_overload(
        "isUnspecified",
        "ip_is_unspecified",
        t(),
        vec![],
        is_unspecified,
    )?;
    env.add_member_overload("isLoopback", "ip_is_loopback", t(), vec![], is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        t(),
        vec![],
        is_link_local_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        t(),
        vec![],
        is_link_local_unicast,
    )?;
    env.add_member_overload(
        "isGlobalUnicast",
        "ip_is_global_unicast",
        t(),
        vec![],
        is_global_unicast,
    )?;
    Ok(())
}

/// Parses an address as kube's `ip()` does (Go's netip.ParseAddr, no zone, no 4-in-6).
pub fn parse(s: &str) -> Result<IpAddr, String> {
    if s.contains('%') {
        return Err(format!("IP address with zone value is not allowed: {s}"));
    }
    let addr: IpAddr = s
        .parse()
        .map_err(|_| format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): unable to parse IP"))?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address is not allowed: {s}"));
    }
    Ok(addr)
}

fn ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "ip")?;
    charge_len(s.len())?;
    parse(s).map(|a| CowVal::owned(Ip(a))).map_err(err)
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "isIP")?;
    charge_len(s.len())?;
    Ok(CowVal::owned(CelBool::from(parse(s).is_ok())))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "ip.isCanonical")?;
    charge_len(s.len())?;
    let addr = parse(s).map_err(err)?;
    Ok(CowVal::owned(CelBool::from(addr.to_string() == s)))
}

fn the(args: &[CowVal<'_, '_>], f: &str) -> Result<IpAddr, ExecutionError> {
    Ok(arg::<Ip>(args, 0, f)?.0)
}

fn bool_val<'b, 'v>(b: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelBool::from(b)))
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(the(&args, "string")?.to_string()))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let f = if the(&args, "family")?.is_ipv4() {
        4
    } else {
        6
    };
    Ok(CowVal::owned(CelInt::from(f)))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_val(the(&args, "isUnspecified")?.is_unspecified())
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_val(the(&args, "isLoopback")?.is_loopback())
}

fn link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_val(link_local_multicast(the(&args, "isLinkLocalMulticast")?))
}

fn is_link_local_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    bool_val(link_local_unicast(the(&args, "isLinkLocalUnicast")?))
}

/// Go's `IsGlobalUnicast`: not unspecified, loopback, multicast, link-local nor broadcast.
fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = the(&args, "isGlobalUnicast")?;
    let broadcast = matches!(a, IpAddr::V4(v4) if v4.is_broadcast());
    bool_val(
        !a.is_unspecified()
            && !a.is_loopback()
            && !a.is_multicast()
            && !link_local_unicast(a)
            && !broadcast,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_kube() {
        assert!(parse("192.168.0.1").is_ok());
        assert!(parse("::1").is_ok());
        assert!(parse("::ffff:1.2.3.4").is_err());
        assert!(parse("fe80::1%eth0").is_err());
        assert!(parse("1.2.3").is_err());
        assert!(link_local_multicast(parse("ff02::1").unwrap()));
        assert!(link_local_unicast(parse("fe80::1").unwrap()));
    }
}
