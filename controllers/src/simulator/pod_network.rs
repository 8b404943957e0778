//! The pod network of a simulated member: each member has its own pod CIDR (as a cluster's
//! `--cluster-cidr`), so addresses collected from several members never collide. The lower
//! half of the range addresses Pods users create (stable per pod name); the upper half is
//! handed out one address at a time to the virtual pods of simulated workloads, which have no
//! Pod objects (see the simulator's module documentation).

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::str::FromStr;

/// The size of the pod CIDR `up` gives each member: /20, 4,096 addresses, so that 4,096
/// members fit in 10.0.0.0/8.
const MEMBER_PREFIX: u8 = 20;

/// An IPv4 CIDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodCidr {
    base: u32,
    prefix: u8,
}

impl PodCidr {
    /// The CIDR of a member: `10.0.0.0/8` split into /20s, the `index`-th one (modulo 4,096).
    pub fn for_member(index: u32) -> PodCidr {
        PodCidr {
            base: u32::from(Ipv4Addr::new(10, 0, 0, 0)) + ((index % 4096) << (32 - MEMBER_PREFIX)),
            prefix: MEMBER_PREFIX,
        }
    }

    /// The CIDR of a cluster by name: `memberN` and `pullN` (as `up` names them) get distinct
    /// ranges by their number; any other name one picked by its hash.
    pub fn for_cluster(name: &str) -> PodCidr {
        let numbered = |prefix: &str| {
            name.strip_prefix(prefix)
                .and_then(|n| n.parse::<u32>().ok())
        };
        if let Some(n) = numbered("member") {
            PodCidr::for_member(n)
        } else if let Some(n) = numbered("pull") {
            PodCidr::for_member(2048 + n)
        } else {
            PodCidr::for_member(karmada_api::names::fnv32a(name.as_bytes()))
        }
    }

    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }

    /// The address of a Pod a user created: a stable pick in the lower half by its name
    /// (never the network address).
    pub fn pod_ip(&self, pod: &str) -> String {
        let half = (self.size() / 2).max(2);
        let h = karmada_api::names::fnv32a(pod.as_bytes());
        Ipv4Addr::from(self.base + 1 + h % (half - 1)).to_string()
    }

    /// The `n`-th address of the upper half, for virtual pods; `None` past its end.
    fn virtual_ip(&self, n: u32) -> Option<Ipv4Addr> {
        let half = self.size() / 2;
        // The last address is the broadcast address.
        (n < half.saturating_sub(1)).then(|| Ipv4Addr::from(self.base + half + n))
    }
}

impl Default for PodCidr {
    /// kubeadm's and kind's default pod subnet.
    fn default() -> PodCidr {
        PodCidr {
            base: u32::from(Ipv4Addr::new(10, 244, 0, 0)),
            prefix: 16,
        }
    }
}

impl FromStr for PodCidr {
    type Err = String;

    fn from_str(s: &str) -> Result<PodCidr, String> {
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (ADDRESS/PREFIX)"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|e| format!("{s:?} is not an IPv4 CIDR: {e}"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (8..=28).contains(p))
            .ok_or_else(|| format!("the prefix of {s:?} must be between 8 and 28"))?;
        let mask = u32::MAX << (32 - prefix);
        Ok(PodCidr {
            base: u32::from(addr) & mask,
            prefix,
        })
    }
}

impl std::fmt::Display for PodCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

/// Hands out the upper half's addresses to virtual pods and takes them back: an address stays
/// with its pod for as long as the pod exists, and is reused only after it is released.
#[derive(Debug)]
pub struct Allocator {
    cidr: PodCidr,
    given: HashMap<String, u32>,
    free: BTreeSet<u32>,
    next: u32,
}

impl Allocator {
    /// An allocator over `cidr`'s upper half.
    pub fn new(cidr: PodCidr) -> Allocator {
        Allocator {
            cidr,
            given: HashMap::new(),
            free: BTreeSet::new(),
            next: 0,
        }
    }

    /// The address of the virtual pod `key`, allocating one if it has none; `None` once the
    /// range is exhausted.
    pub fn ip(&mut self, key: &str) -> Option<Ipv4Addr> {
        if let Some(n) = self.given.get(key) {
            return self.cidr.virtual_ip(*n);
        }
        let n = match self.free.pop_first() {
            Some(n) => n,
            None => {
                self.cidr.virtual_ip(self.next)?;
                self.next += 1;
                self.next - 1
            }
        };
        self.given.insert(key.to_owned(), n);
        self.cidr.virtual_ip(n)
    }

    /// Takes back the address of `key`.
    pub fn release(&mut self, key: &str) {
        if let Some(n) = self.given.remove(key) {
            self.free.insert(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_get_disjoint_ranges() {
        assert_eq!(PodCidr::for_cluster("member1").to_string(), "10.0.16.0/20");
        assert_eq!(PodCidr::for_cluster("member2").to_string(), "10.0.32.0/20");
        assert_eq!(PodCidr::for_cluster("pull1").to_string(), "10.128.16.0/20");
        let c = PodCidr::for_cluster("member1");
        let ip: Ipv4Addr = c.pod_ip("web-0").parse().unwrap();
        assert!((u32::from(ip) >> 12) == (u32::from(Ipv4Addr::new(10, 0, 16, 0)) >> 12));
        assert!(
            u32::from(ip) < u32::from(Ipv4Addr::new(10, 0, 24, 0)),
            "{ip}"
        );
    }

    #[test]
    fn cidrs_parse_and_refuse() {
        assert_eq!(
            "10.1.2.3/16".parse::<PodCidr>().unwrap().to_string(),
            "10.1.0.0/16"
        );
        assert!("10.1.0.0".parse::<PodCidr>().is_err());
        assert!("10.1.0.0/30".parse::<PodCidr>().is_err());
        assert!("nope/16".parse::<PodCidr>().is_err());
    }

    #[test]
    fn the_allocator_keeps_and_reuses_addresses() {
        let mut a = Allocator::new("10.9.0.0/28".parse().unwrap());
        // Upper half of a /28: .8 to .14 (.15 is the broadcast address).
        assert_eq!(a.ip("a"), Some(Ipv4Addr::new(10, 9, 0, 8)));
        assert_eq!(a.ip("b"), Some(Ipv4Addr::new(10, 9, 0, 9)));
        assert_eq!(a.ip("a"), Some(Ipv4Addr::new(10, 9, 0, 8)));
        a.release("a");
        assert_eq!(a.ip("c"), Some(Ipv4Addr::new(10, 9, 0, 8)));
        for k in ["d", "e", "f", "g", "h"] {
            assert!(a.ip(k).is_some(), "{k}");
        }
        assert_eq!(a.ip("i"), None, "the range is exhausted");
    }
}
