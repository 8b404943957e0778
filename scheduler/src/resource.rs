//! Resource amounts as Karmada's `util.Resource` keeps them: CPU in millicores, everything else in
//! whole units, names the scheduler does not know ignored.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::quantity::ParsedQuantity;

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;

/// The exact amount of a quantity in nano-units; a malformed quantity (which no API server
/// would have stored) counts as zero.
pub(crate) fn nanos(q: &Quantity) -> i128 {
    ParsedQuantity::parse(&q.0).map(|p| p.nanos()).unwrap_or(0)
}

fn ceil_div(n: i128, d: i128) -> i64 {
    let v = n.div_euclid(d) + i128::from(n.rem_euclid(d) != 0);
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// `Quantity.Value()`: whole units, rounded up.
pub(crate) fn value_of_nanos(n: i128) -> i64 {
    ceil_div(n, NANOS_PER_UNIT)
}

/// `Quantity.MilliValue()`: thousandths, rounded up.
pub(crate) fn milli_of_nanos(n: i128) -> i64 {
    ceil_div(n, NANOS_PER_MILLI)
}

/// `Quantity.Value()` of a quantity.
pub(crate) fn value(q: &Quantity) -> i64 {
    value_of_nanos(nanos(q))
}

/// `Quantity.MilliValue()` of a quantity.
pub(crate) fn milli_value(q: &Quantity) -> i64 {
    milli_of_nanos(nanos(q))
}

/// The resource named `name`, or zero.
pub(crate) fn get_nanos(list: &BTreeMap<String, Quantity>, name: &str) -> i128 {
    list.get(name).map(nanos).unwrap_or(0)
}

const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const PODS: &str = "pods";
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

/// A DNS-1123 subdomain (at most 253 characters).
fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// A Kubernetes qualified name: `[prefix/]name` (`validation.IsQualifiedName`).
fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if prefix.is_some_and(|p| !is_dns1123_subdomain(p)) {
        return false;
    }
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Whether a resource name is tracked as a scalar (`IsScalarResourceName`): extended resources
/// such as `nvidia.com/gpu`, huge pages, prefixed native resources and attachable volumes.
pub(crate) fn is_scalar_resource_name(name: &str) -> bool {
    let extended = !is_native_resource(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}"));
    extended
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// Whether a scalar resource is shown in binary units (huge pages are).
pub fn is_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Amounts of the resources the scheduler tracks (Karmada `util.Resource`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar: BTreeMap<String, i64>,
}

impl Resource {
    /// Adds a resource list (`Resource.Add`).
    pub fn add(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            match name.as_str() {
                CPU => self.milli_cpu += milli_value(q),
                MEMORY => self.memory += value(q),
                PODS => self.allowed_pod_number += value(q),
                EPHEMERAL_STORAGE => self.ephemeral_storage += value(q),
                other if is_scalar_resource_name(other) => {
                    *self.scalar.entry(other.to_string()).or_insert(0) += value(q);
                }
                _ => {}
            }
        }
    }

    /// Raises each resource to at least the amount in `list` (`Resource.SetMaxResource`).
    pub fn set_max(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            match name.as_str() {
                CPU => self.milli_cpu = self.milli_cpu.max(milli_value(q)),
                MEMORY => self.memory = self.memory.max(value(q)),
                EPHEMERAL_STORAGE => self.ephemeral_storage = self.ephemeral_storage.max(value(q)),
                PODS => self.allowed_pod_number = self.allowed_pod_number.max(value(q)),
                other if is_scalar_resource_name(other) => {
                    let v = value(q);
                    let cur = self.scalar.entry(other.to_string()).or_insert(0);
                    if v > *cur {
                        *cur = v;
                    }
                }
                _ => {}
            }
        }
    }

    /// How many times `req` fits, bounded by the pod count (`Resource.MaxDivided`); only positive
    /// requests count.
    pub fn max_divided(&self, req: &Resource) -> i64 {
        let mut res = i64::MAX;
        if req.milli_cpu > 0 {
            res = res.min(self.milli_cpu / req.milli_cpu);
        }
        if req.memory > 0 {
            res = res.min(self.memory / req.memory);
        }
        if req.ephemeral_storage > 0 {
            res = res.min(self.ephemeral_storage / req.ephemeral_storage);
        }
        for (name, want) in &req.scalar {
            if *want > 0 {
                res = res.min(self.scalar.get(name).copied().unwrap_or(0) / want);
            }
        }
        res.min(self.allowed_pod_number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    #[test]
    fn scalar_names() {
        for (name, want) in [
            ("nvidia.com/gpu", true),
            ("hugepages-2Mi", true),
            ("kubernetes.io/foo", true),
            ("attachable-volumes-aws-ebs", true),
            ("storage", false),
            ("cpu", false),
            ("requests.example.com/x", false),
            ("Bad_Prefix/x", false),
        ] {
            assert_eq!(is_scalar_resource_name(name), want, "{name}");
        }
    }

    #[test]
    fn add_and_divide() {
        let mut r = Resource::default();
        r.add(&list(&[
            ("cpu", "1500m"),
            ("memory", "1Gi"),
            ("pods", "110"),
            ("nvidia.com/gpu", "2"),
            ("storage", "10Gi"),
        ]));
        assert_eq!(r.milli_cpu, 1500);
        assert_eq!(r.memory, 1 << 30);
        assert_eq!(r.allowed_pod_number, 110);
        assert_eq!(r.scalar.get("nvidia.com/gpu"), Some(&2));
        assert!(!r.scalar.contains_key("storage"));
        let mut req = Resource::default();
        req.add(&list(&[("cpu", "500m"), ("memory", "256Mi")]));
        assert_eq!(r.max_divided(&req), 3);
        req.add(&list(&[("nvidia.com/gpu", "1")]));
        assert_eq!(r.max_divided(&req), 2);
        r.set_max(&list(&[("cpu", "1"), ("memory", "4Gi")]));
        assert_eq!(r.milli_cpu, 1500, "max keeps the larger");
        assert_eq!(r.memory, 4 << 30);
        assert_eq!(value(&Quantity("100m".into())), 1);
        assert_eq!(milli_value(&Quantity("0.1".into())), 100);
        assert_eq!(nanos(&Quantity("garbage".into())), 0);
    }
}
