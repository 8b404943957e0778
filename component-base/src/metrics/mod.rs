//! A Prometheus registry: families described once by a static [`Desc`], series created on
//! first use with their label values, rendered in the text exposition format as Go's
//! `client_golang` writes it (families sorted by name, series by label values, numbers as Go's
//! `strconv.FormatFloat(v, 'g', -1, 64)`).
//!
//! Series kept elsewhere (a queue's items in progress) are read at each scrape from the
//! [`Collect`] implementations registered with [`Registry::register`], held weakly so a
//! component that goes away stops reporting.

pub mod workqueue;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

/// What a family records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Only ever goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations counted in cumulative buckets (upper bounds, ascending).
    Histogram(&'static [f64]),
}

/// A metric family: name, help text, label names and kind.
#[derive(Debug)]
pub struct Desc {
    /// The full name (`workqueue_depth`, `karmada_scheduler_schedule_attempts_total`).
    pub name: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// The label names, in the order values are given.
    pub labels: &'static [&'static str],
    /// Counter, gauge or histogram.
    pub kind: Kind,
}

/// kube-apiserver's request latency buckets (seconds), shared by
/// `apiserver_request_duration_seconds` and `etcd_request_duration_seconds` for their SLOs.
pub const REQUEST_DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Go client's `prometheus.DefBuckets`, for histograms that set none.
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Prometheus' `ExponentialBuckets(start, factor, count)`.
pub const fn exponential_buckets<const N: usize>(start: f64, factor: f64) -> [f64; N] {
    let mut out = [0.0; N];
    let mut v = start;
    let mut i = 0;
    while i < N {
        out[i] = v;
        v *= factor;
        i += 1;
    }
    out
}

enum Value {
    Scalar(f64),
    Histogram {
        counts: Vec<u64>,
        sum: f64,
        count: u64,
    },
}

struct Family {
    desc: &'static Desc,
    series: BTreeMap<Vec<String>, Value>,
}

/// Series computed at scrape time by a component (`add` with the family and label values).
pub trait Collect: Send + Sync {
    /// Reports the component's current values.
    fn collect(&self, add: &mut dyn FnMut(&'static Desc, Vec<String>, f64));
}

/// A set of metric families.
#[derive(Default)]
pub struct Registry {
    families: Mutex<BTreeMap<&'static str, Family>>,
    collectors: Mutex<Vec<Weak<dyn Collect>>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Updates are single assignments: a panic elsewhere cannot leave a family half-written.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The process's registry: what `/metrics` serves, as Go components register into
/// `legacyregistry` or controller-runtime's `metrics.Registry`.
pub fn global() -> &'static Registry {
    static GLOBAL: OnceLock<Registry> = OnceLock::new();
    GLOBAL.get_or_init(Registry::default)
}

impl Registry {
    fn update(&self, desc: &'static Desc, labels: &[&str], f: impl FnOnce(&mut Value)) {
        debug_assert_eq!(labels.len(), desc.labels.len(), "{}", desc.name);
        let mut families = lock(&self.families);
        let family = families.entry(desc.name).or_insert_with(|| Family {
            desc,
            series: BTreeMap::new(),
        });
        let key: Vec<String> = labels.iter().map(|s| (*s).to_string()).collect();
        let value = family.series.entry(key).or_insert_with(|| match desc.kind {
            Kind::Histogram(bounds) => Value::Histogram {
                counts: vec![0; bounds.len()],
                sum: 0.0,
                count: 0,
            },
            Kind::Counter | Kind::Gauge => Value::Scalar(0.0),
        });
        f(value);
    }

    /// Adds `v` to a counter or gauge.
    pub fn add(&self, desc: &'static Desc, labels: &[&str], v: f64) {
        self.update(desc, labels, |value| {
            if let Value::Scalar(s) = value {
                *s += v;
            }
        });
    }

    /// Adds one to a counter.
    pub fn inc(&self, desc: &'static Desc, labels: &[&str]) {
        self.add(desc, labels, 1.0);
    }

    /// Sets a gauge.
    pub fn set(&self, desc: &'static Desc, labels: &[&str], v: f64) {
        self.update(desc, labels, |value| {
            if let Value::Scalar(s) = value {
                *s = v;
            }
        });
    }

    /// Records one observation in a histogram.
    pub fn observe(&self, desc: &'static Desc, labels: &[&str], v: f64) {
        let Kind::Histogram(bounds) = desc.kind else {
            return;
        };
        self.update(desc, labels, |value| {
            if let Value::Histogram { counts, sum, count } = value {
                if let Some(i) = bounds.iter().position(|b| v <= *b) {
                    counts[i] += 1;
                }
                *sum += v;
                *count += 1;
            }
        });
    }

    /// Records a duration in seconds in a histogram.
    pub fn observe_duration(&self, desc: &'static Desc, labels: &[&str], d: Duration) {
        self.observe(desc, labels, d.as_secs_f64());
    }

    /// Removes every series of a family whose first label values are `prefix` (a cluster that
    /// was deleted stops being reported).
    pub fn remove(&self, desc: &'static Desc, prefix: &[&str]) {
        if let Some(f) = lock(&self.families).get_mut(desc.name) {
            f.series
                .retain(|k, _| k.len() < prefix.len() || k.iter().zip(prefix).any(|(a, b)| a != b));
        }
    }

    /// Reads `collector` at every scrape while it is alive.
    pub fn register(&self, collector: Weak<dyn Collect>) {
        let mut c = lock(&self.collectors);
        c.retain(|w| w.strong_count() > 0);
        c.push(collector);
    }

    /// The current value of a counter or gauge series (tests and benchmarks read it).
    pub fn value(&self, desc: &'static Desc, labels: &[&str]) -> Option<f64> {
        let families = lock(&self.families);
        let key: Vec<String> = labels.iter().map(|s| (*s).to_string()).collect();
        match families.get(desc.name)?.series.get(&key)? {
            Value::Scalar(v) => Some(*v),
            Value::Histogram { count, .. } => Some(*count as f64),
        }
    }

    /// Every family in the text exposition format.
    pub fn render(&self) -> String {
        // Collected series are summed per label set (two queues of one name report together,
        // as client-go's metrics provider does).
        let live: Vec<Arc<dyn Collect>> = lock(&self.collectors)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let mut collected: BTreeMap<&'static str, (&'static Desc, BTreeMap<Vec<String>, f64>)> =
            BTreeMap::new();
        for c in &live {
            c.collect(&mut |desc, labels, v| {
                let e = collected
                    .entry(desc.name)
                    .or_insert_with(|| (desc, BTreeMap::new()));
                *e.1.entry(labels).or_insert(0.0) += v;
            });
        }
        let families = lock(&self.families);
        let mut names: Vec<&'static str> = families.keys().copied().collect();
        names.extend(collected.keys().copied());
        names.sort_unstable();
        names.dedup();
        let mut out = String::new();
        for name in names {
            let desc = families
                .get(name)
                .map(|f| f.desc)
                .or_else(|| collected.get(name).map(|c| c.0));
            let Some(desc) = desc else { continue };
            let kind = match desc.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", desc.help);
            let mut scalars: BTreeMap<&Vec<String>, f64> = BTreeMap::new();
            if let Some(f) = families.get(name) {
                for (labels, value) in &f.series {
                    match value {
                        Value::Scalar(v) => {
                            scalars.insert(labels, *v);
                        }
                        Value::Histogram { counts, sum, count } => {
                            if let Kind::Histogram(bounds) = desc.kind {
                                histogram(&mut out, desc, labels, bounds, counts, *sum, *count);
                            }
                        }
                    }
                }
            }
            if let Some((_, series)) = collected.get(name) {
                for (labels, v) in series {
                    *scalars.entry(labels).or_insert(0.0) += v;
                }
            }
            for (labels, v) in scalars {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    label_set(desc.labels, labels, None),
                    go_float(v)
                );
            }
        }
        out
    }
}

fn histogram(
    out: &mut String,
    desc: &Desc,
    labels: &[String],
    bounds: &[f64],
    counts: &[u64],
    sum: f64,
    count: u64,
) {
    let name = desc.name;
    let mut cumulative = 0;
    for (b, c) in bounds.iter().zip(counts) {
        cumulative += c;
        let le = go_float(*b);
        let _ = writeln!(
            out,
            "{name}_bucket{} {cumulative}",
            label_set(desc.labels, labels, Some(&le))
        );
    }
    let _ = writeln!(
        out,
        "{name}_bucket{} {count}",
        label_set(desc.labels, labels, Some("+Inf"))
    );
    let plain = label_set(desc.labels, labels, None);
    let _ = writeln!(out, "{name}_sum{plain} {}", go_float(sum));
    let _ = writeln!(out, "{name}_count{plain} {count}");
}

/// `{a="x",b="y"}` (with `le` last for buckets), or nothing without labels.
fn label_set(names: &[&str], values: &[String], le: Option<&str>) -> String {
    if names.is_empty() && le.is_none() {
        return String::new();
    }
    let mut s = String::from("{");
    for (i, (n, v)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{n}=\"{}\"", escape(v));
    }
    if let Some(le) = le {
        if !names.is_empty() {
            s.push(',');
        }
        let _ = write!(s, "le=\"{le}\"");
    }
    s.push('}');
    s
}

/// A label value as the text format escapes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A number as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it: the shortest digits that
/// read back exactly, in exponent form (`1e-08`, `1.5e+06`) when the decimal exponent is below
/// -4 or at least 6, as `'g'` decides for the shortest precision.
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits too: `1.5e6`, `1e-8`.
    let e = format!("{v:e}");
    let Some((mantissa, exp)) = e.split_once('e') else {
        return e;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{v}")
}

#[cfg(test)]
mod tests;
