//! Resource arithmetic for cluster summaries: Karmada's `util.Resource` (milli-CPU, bytes,
//! pod counts, scalar resources) and the canonical quantity spellings Kubernetes prints.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NANOS: i128 = 1_000_000_000;

/// A quantity parsed to nano-units (rounded up below a nano-unit), with the suffix family it
/// was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The value in nano-units.
    pub nanos: i128,
    /// Written with a binary suffix (Ki, Mi, ...).
    pub binary: bool,
}

impl Parsed {
    /// Parses the Kubernetes quantity syntax (`100m`, `1.5Gi`, `2e3`).
    pub fn parse(s: &str) -> Option<Parsed> {
        let q = karmada_api::quantity::ParsedQuantity::parse(s).ok()?;
        Some(Parsed {
            nanos: q.nanos(),
            binary: s.trim_end().ends_with('i'),
        })
    }

    /// Whole units, rounded up (`Quantity.Value()`).
    pub fn value(self) -> i64 {
        clamp(self.nanos.div_euclid(NANOS) + i128::from(self.nanos.rem_euclid(NANOS) != 0))
    }

    /// Thousandths, rounded up (`Quantity.MilliValue()`).
    pub fn milli_value(self) -> i64 {
        let per_milli = NANOS / 1000;
        clamp(self.nanos.div_euclid(per_milli) + i128::from(self.nanos.rem_euclid(per_milli) != 0))
    }
}

fn clamp(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The milli-value of a quantity string (`Quantity.MilliValue()`), if it parses.
pub fn milli_value(q: &Quantity) -> Option<i64> {
    Parsed::parse(&q.0).map(Parsed::milli_value)
}

/// The value of a quantity string (`Quantity.Value()`), if it parses.
pub fn value(q: &Quantity) -> Option<i64> {
    Parsed::parse(&q.0).map(Parsed::value)
}

/// Prints nano-units canonically: binary suffixes when `binary` and the value is a whole
/// number of at least 1024, else decimal suffixes with exponents in multiples of three
/// (`Quantity.String()` after `CanonicalizeBytes`).
pub fn format_nanos(nanos: i128, binary: bool) -> String {
    if nanos == 0 {
        return "0".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let abs = nanos.unsigned_abs();
    let whole = abs.is_multiple_of(NANOS as u128);
    if binary && whole && abs / (NANOS as u128) >= 1024 {
        let mut units = abs / (NANOS as u128);
        let mut exp = 0;
        while exp < 6 && units.is_multiple_of(1024) {
            units /= 1024;
            exp += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp];
        return format!("{sign}{units}{suffix}");
    }
    // Decimal: find the largest power of 1000 (from nano up to exa) dividing the value.
    let mut mantissa = abs;
    let mut exp3: i32 = -3; // in units of 10^3, starting at nano
    while exp3 < 6 && mantissa.is_multiple_of(1000) {
        mantissa /= 1000;
        exp3 += 1;
    }
    let suffix = match exp3 {
        -3 => "n",
        -2 => "u",
        -1 => "m",
        0 => "",
        1 => "k",
        2 => "M",
        3 => "G",
        4 => "T",
        5 => "P",
        _ => "E",
    };
    format!("{sign}{mantissa}{suffix}")
}

/// Sums quantities per resource name, keeping the suffix family of the first addend as
/// `Quantity.Add` does (used for node allocatable).
#[derive(Clone, Debug, Default)]
pub struct QuantitySum {
    sums: BTreeMap<String, Parsed>,
}

impl QuantitySum {
    /// Adds a resource list.
    pub fn add(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            let Some(p) = Parsed::parse(&q.0) else {
                continue;
            };
            self.sums
                .entry(name.clone())
                .and_modify(|s| s.nanos = s.nanos.saturating_add(p.nanos))
                .or_insert(p);
        }
    }

    /// The sums as a resource list.
    pub fn into_list(self) -> BTreeMap<String, Quantity> {
        self.sums
            .into_iter()
            .map(|(k, p)| (k, Quantity(format_nanos(p.nanos, p.binary))))
            .collect()
    }
}

/// Karmada's `util.Resource`: requested resources of a set of pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    /// CPU in thousandths of a core.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Number of pods.
    pub pods: i64,
    /// Extended, hugepages and other scalar resources.
    pub scalars: BTreeMap<String, i64>,
}

impl Resource {
    /// Resource.Add.
    pub fn add(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            let Some(p) = Parsed::parse(&q.0) else {
                continue;
            };
            match name.as_str() {
                "cpu" => self.milli_cpu = self.milli_cpu.saturating_add(p.milli_value()),
                "memory" => self.memory = self.memory.saturating_add(p.value()),
                "pods" => self.pods = self.pods.saturating_add(p.value()),
                "ephemeral-storage" => {
                    self.ephemeral_storage = self.ephemeral_storage.saturating_add(p.value())
                }
                other if is_scalar_resource_name(other) => {
                    let e = self.scalars.entry(other.to_owned()).or_default();
                    *e = e.saturating_add(p.value());
                }
                _ => {}
            }
        }
    }

    /// Resource.SetMaxResource.
    pub fn set_max(&mut self, list: &BTreeMap<String, Quantity>) {
        for (name, q) in list {
            let Some(p) = Parsed::parse(&q.0) else {
                continue;
            };
            match name.as_str() {
                "cpu" => self.milli_cpu = self.milli_cpu.max(p.milli_value()),
                "memory" => self.memory = self.memory.max(p.value()),
                "pods" => self.pods = self.pods.max(p.value()),
                "ephemeral-storage" => {
                    self.ephemeral_storage = self.ephemeral_storage.max(p.value())
                }
                other if is_scalar_resource_name(other) => {
                    let e = self.scalars.entry(other.to_owned()).or_default();
                    *e = (*e).max(p.value());
                }
                _ => {}
            }
        }
    }

    /// Resource.AddPodRequest: containers add up, init containers raise to their maximum
    /// (compared against the running total, as Karmada does), overhead adds.
    pub fn add_pod_request(&mut self, spec: &PodSpec) {
        for c in &spec.containers {
            if let Some(req) = c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                self.add(req);
            }
        }
        for c in spec.init_containers.iter().flatten() {
            if let Some(req) = c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                self.set_max(req);
            }
        }
        if let Some(overhead) = &spec.overhead {
            self.add(overhead);
        }
    }

    /// Resource.ResourceList: the non-zero amounts, or `None` when all are zero.
    pub fn to_list(&self) -> Option<BTreeMap<String, Quantity>> {
        let mut out = BTreeMap::new();
        let mut put = |name: &str, nanos: i128, binary: bool| {
            out.insert(name.to_owned(), Quantity(format_nanos(nanos, binary)));
        };
        if self.milli_cpu > 0 {
            put("cpu", i128::from(self.milli_cpu) * (NANOS / 1000), false);
        }
        if self.memory > 0 {
            put("memory", i128::from(self.memory) * NANOS, true);
        }
        if self.ephemeral_storage > 0 {
            put(
                "ephemeral-storage",
                i128::from(self.ephemeral_storage) * NANOS,
                true,
            );
        }
        if self.pods > 0 {
            put("pods", i128::from(self.pods) * NANOS, false);
        }
        for (name, v) in &self.scalars {
            if *v > 0 {
                put(name, i128::from(*v) * NANOS, name.starts_with("hugepages-"));
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// IsScalarResourceName (k8s pkg/apis/core/v1/helper): extended, hugepages, prefixed-native
/// and attachable-volume resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    let prefixed_native = name.contains("kubernetes.io/");
    let native = !name.contains('/') || prefixed_native;
    let extended = !native && !name.starts_with("requests.");
    extended
        || name.starts_with("hugepages-")
        || prefixed_native
        || name.starts_with("attachable-volumes-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn parse_and_values() {
        let cases: &[(&str, i64, i64)] = &[
            ("1", 1, 1000),
            ("100m", 1, 100),
            ("1.5", 2, 1500),
            ("2Gi", 2 * 1024 * 1024 * 1024, 2 * 1024 * 1024 * 1024 * 1000),
            ("1k", 1000, 1_000_000),
            ("1e3", 1000, 1_000_000),
            ("0.1m", 1, 1),
            ("0", 0, 0),
        ];
        for (s, v, m) in cases {
            let p = Parsed::parse(s).unwrap();
            assert_eq!(p.value(), *v, "value of {s}");
            assert_eq!(p.milli_value(), *m, "milli of {s}");
        }
        for bad in ["", "x", "1.2.3", "1Zi", "--1"] {
            assert!(Parsed::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn canonical_format() {
        let cases: &[(i128, bool, &str)] = &[
            (0, false, "0"),
            (12 * NANOS, false, "12"),
            (1500 * NANOS, false, "1500"),
            (15000 * NANOS, false, "15k"),
            (1000 * NANOS, false, "1k"),
            (1_500_000_000, false, "1500m"),
            (100_000_000, false, "100m"),
            (48 * (1 << 30) * NANOS, true, "48Gi"),
            (1536 * NANOS, true, "1536"),
            (2048 * NANOS, true, "2Ki"),
            (1000 * NANOS, true, "1k"),
            (1_500_000_000, true, "1500m"),
            (-2 * NANOS, false, "-2"),
        ];
        for (n, b, want) in cases {
            assert_eq!(format_nanos(*n, *b), *want, "{n} binary={b}");
        }
    }

    #[test]
    fn sums_keep_the_first_format() {
        let mut s = QuantitySum::default();
        for _ in 0..3 {
            s.add(&BTreeMap::from([
                ("cpu".into(), q("4")),
                ("memory".into(), q("16Gi")),
                ("pods".into(), q("110")),
            ]));
        }
        s.add(&BTreeMap::from([("cpu".into(), q("500m"))]));
        let list = s.into_list();
        assert_eq!(list["cpu"].0, "12500m");
        assert_eq!(list["memory"].0, "48Gi");
        assert_eq!(list["pods"].0, "330");
    }

    #[test]
    fn pod_requests() {
        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "1"}}},
                {"name": "c"}
            ],
            "initContainers": [
                {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}
            ],
            "overhead": {"memory": "64Mi"}
        }))
        .unwrap();
        let mut r = Resource::default();
        r.add_pod_request(&spec);
        r.add(&BTreeMap::from([("pods".into(), q("1"))]));
        assert_eq!(r.milli_cpu, 2000);
        assert_eq!(r.memory, (128 + 64) * 1024 * 1024);
        let list = r.to_list().unwrap();
        assert_eq!(list["cpu"].0, "2");
        assert_eq!(list["memory"].0, "192Mi");
        assert_eq!(list["pods"].0, "1");
        assert_eq!(list["nvidia.com/gpu"].0, "1");
        assert_eq!(Resource::default().to_list(), None);
    }

    #[test]
    fn scalar_names() {
        let cases = [
            ("cpu", false),
            ("memory", false),
            ("nvidia.com/gpu", true),
            ("hugepages-2Mi", true),
            ("kubernetes.io/foo", true),
            ("attachable-volumes-aws-ebs", true),
            ("requests.example.com/x", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_scalar_resource_name(name), want, "{name}");
        }
    }
}
