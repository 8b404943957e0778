//! Prometheus metrics named as kube-apiserver's, so existing dashboards work:
//! `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_longrunning_requests`,
//! `apiserver_storage_objects`, `apiserver_watch_cache_initializations_total`,
//! `apiserver_terminated_watchers_total`; and what other parts add through
//! [`Metrics::add_collector`] (`leader_election_master_status`).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// kube-apiserver's request-duration buckets (seconds).
const BUCKETS: &[f64] = &component_base::metrics::REQUEST_DURATION_BUCKETS;

/// The labels of one request series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`...
    pub verb: &'static str,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// `resource`, `namespace` or `cluster`.
    pub scope: &'static str,
}

/// One watch cache's figures at the time of a scrape.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CacheStats {
    /// The resource (`deployments.apps`, `configmaps`).
    pub resource: String,
    /// Objects held.
    pub objects: usize,
    /// Times the cache listed the store.
    pub initializations: u64,
    /// Watchers cut off for falling behind the event window.
    pub terminated_watchers: u64,
}

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Renders series kept outside the server (leader election's gauge) at each scrape.
pub type Collector = Box<dyn Fn() -> String + Send + Sync>;

/// The server's metrics.
#[derive(Default)]
pub struct Metrics {
    collectors: Mutex<Vec<Collector>>,
    totals: Mutex<HashMap<(RequestLabels, u16), u64>>,
    durations: Mutex<HashMap<RequestLabels, Histogram>>,
    inflight_read: AtomicI64,
    inflight_mutating: AtomicI64,
    watches: AtomicI64,
    rejected: AtomicU64,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Decrements an in-flight gauge when dropped.
pub struct InflightGuard<'a>(&'a AtomicI64);

impl Drop for InflightGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The verb label kube-apiserver records for a request.
pub fn verb_label(method: &http::Method, request_verb: &str, apply: bool) -> &'static str {
    match request_verb {
        "list" => "LIST",
        "watch" => "WATCH",
        "deletecollection" => "DELETECOLLECTION",
        _ => match *method {
            http::Method::GET => "GET",
            http::Method::HEAD => "HEAD",
            http::Method::POST => "POST",
            http::Method::PUT => "PUT",
            http::Method::PATCH if apply => "APPLY",
            http::Method::PATCH => "PATCH",
            http::Method::DELETE => "DELETE",
            http::Method::OPTIONS => "OPTIONS",
            _ => "CONNECT",
        },
    }
}

impl Metrics {
    /// Tries to admit a request under the in-flight limits; `None` means "too many".
    pub fn admit(&self, mutating: bool, limit: i64) -> Option<InflightGuard<'_>> {
        let gauge = if mutating {
            &self.inflight_mutating
        } else {
            &self.inflight_read
        };
        let now = gauge.fetch_add(1, Ordering::Relaxed) + 1;
        let guard = InflightGuard(gauge);
        if limit > 0 && now > limit {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(guard)
    }

    /// Counts an open watch until the guard drops.
    pub fn watch_started(&self) -> InflightGuard<'_> {
        self.watches.fetch_add(1, Ordering::Relaxed);
        InflightGuard(&self.watches)
    }

    /// Number of open watches.
    pub fn open_watches(&self) -> i64 {
        self.watches.load(Ordering::Relaxed)
    }

    /// Adds series rendered by `collector` to every scrape.
    pub fn add_collector(&self, collector: Collector) {
        if let Ok(mut c) = self.collectors.lock() {
            c.push(collector);
        }
    }

    /// Records a finished request.
    pub fn observe(&self, labels: RequestLabels, code: u16, seconds: f64) {
        if let Ok(mut t) = self.totals.lock() {
            *t.entry((labels.clone(), code)).or_insert(0) += 1;
        }
        // Long-running requests are not in the latency histogram (as in kube).
        if labels.verb == "WATCH" {
            return;
        }
        if let Ok(mut d) = self.durations.lock() {
            let h = d.entry(labels).or_default();
            if h.counts.is_empty() {
                h.counts = vec![0; BUCKETS.len()];
            }
            for (i, b) in BUCKETS.iter().enumerate() {
                if seconds <= *b {
                    h.counts[i] += 1;
                }
            }
            h.sum += seconds;
            h.count += 1;
        }
    }

    /// Renders the Prometheus text exposition.
    pub fn render(&self, caches: &[CacheStats]) -> String {
        let mut out = String::new();
        let fmt_labels = |l: &RequestLabels| {
            format!(
                "component=\"apiserver\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                l.group, l.resource, l.scope, l.subresource, l.verb, l.version
            )
        };
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        if let Ok(t) = self.totals.lock() {
            let mut rows: Vec<_> = t.iter().collect();
            rows.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
            for ((l, code), n) in rows {
                let _ = writeln!(
                    out,
                    "apiserver_request_total{{code=\"{code}\",{},dry_run=\"\"}} {n}",
                    fmt_labels(l)
                );
            }
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        if let Ok(d) = self.durations.lock() {
            let mut rows: Vec<_> = d.iter().collect();
            rows.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
            for (l, h) in rows {
                let ls = fmt_labels(l);
                for (i, b) in BUCKETS.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "apiserver_request_duration_seconds_bucket{{{ls},dry_run=\"\",le=\"{b}\"}} {}",
                        h.counts[i]
                    );
                }
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{ls},dry_run=\"\",le=\"+Inf\"}} {}",
                    h.count
                );
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_sum{{{ls},dry_run=\"\"}} {}",
                    h.sum
                );
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_count{{{ls},dry_run=\"\"}} {}",
                    h.count
                );
            }
        }
        let _ = write!(
            out,
            "# HELP apiserver_current_inflight_requests Maximal number of currently used inflight request limit of this apiserver per request kind in last second.\n# TYPE apiserver_current_inflight_requests gauge\napiserver_current_inflight_requests{{request_kind=\"mutating\"}} {}\napiserver_current_inflight_requests{{request_kind=\"readOnly\"}} {}\n",
            self.inflight_mutating.load(Ordering::Relaxed),
            self.inflight_read.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP apiserver_longrunning_requests Gauge of all active long-running apiserver requests.\n# TYPE apiserver_longrunning_requests gauge\napiserver_longrunning_requests{{component=\"apiserver\",verb=\"WATCH\"}} {}\n",
            self.watches.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP apiserver_dropped_requests_total Number of requests rejected because of the in-flight limits.\n# TYPE apiserver_dropped_requests_total counter\napiserver_dropped_requests_total {}\n",
            self.rejected.load(Ordering::Relaxed)
        );
        let mut caches = caches.to_vec();
        caches.sort();
        let mut series =
            |name: &str, help: &str, kind: &str, value: &dyn Fn(&CacheStats) -> u64| {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                for c in &caches {
                    let _ = writeln!(out, "{name}{{resource=\"{}\"}} {}", c.resource, value(c));
                }
            };
        series(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            "gauge",
            &|c| c.objects as u64,
        );
        series(
            "apiserver_watch_cache_initializations_total",
            "Counter of watch cache initializations broken by resource type.",
            "counter",
            &|c| c.initializations,
        );
        series(
            "apiserver_terminated_watchers_total",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            "counter",
            &|c| c.terminated_watchers,
        );
        if let Ok(collectors) = self.collectors.lock() {
            for c in collectors.iter() {
                out.push_str(&c());
            }
        }
        out
    }
}

/// kube's `apiserver_storage_size_bytes`, for the one storage cluster (`etcd-0`, as kube
/// numbers its storage backends); `None` (the store did not answer) renders no sample, as
/// kube's collector skips a monitor that fails.
pub fn render_storage_size(out: &mut String, size: Option<u64>) {
    let _ = writeln!(
        out,
        "# HELP apiserver_storage_size_bytes [STABLE] Size of the storage database file physically allocated in bytes.\n# TYPE apiserver_storage_size_bytes gauge"
    );
    if let Some(size) = size {
        let _ = writeln!(
            out,
            "apiserver_storage_size_bytes{{storage_cluster_id=\"etcd-0\"}} {size}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_size_is_kubes_stable_gauge() {
        let mut out = String::new();
        render_storage_size(&mut out, Some(1_000_000_000));
        assert!(
            out.contains("# TYPE apiserver_storage_size_bytes gauge\n"),
            "{out}"
        );
        assert!(
            out.ends_with(
                "apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} 1000000000\n"
            ),
            "{out}"
        );
        let mut out = String::new();
        render_storage_size(&mut out, None);
        assert!(!out.contains("storage_cluster_id"), "{out}");
    }

    #[test]
    fn renders_kube_names() {
        let m = Metrics::default();
        let l = RequestLabels {
            verb: "LIST",
            group: "".into(),
            version: "v1".into(),
            resource: "configmaps".into(),
            subresource: "".into(),
            scope: "namespace",
        };
        m.observe(l, 200, 0.01);
        let g = m.admit(true, 1).expect("first admitted");
        assert!(m.admit(true, 1).is_none(), "second over the limit");
        drop(g);
        let text = m.render(&[CacheStats {
            resource: "configmaps".into(),
            objects: 3,
            initializations: 1,
            terminated_watchers: 2,
        }]);
        assert!(text.contains("apiserver_request_total{code=\"200\""));
        assert!(text.contains("apiserver_request_duration_seconds_bucket{"));
        assert!(text.contains("le=\"0.025\"} 1"));
        assert!(text.contains("apiserver_storage_objects{resource=\"configmaps\"} 3"));
        assert!(
            text.contains("apiserver_watch_cache_initializations_total{resource=\"configmaps\"} 1")
        );
        assert!(text.contains("apiserver_terminated_watchers_total{resource=\"configmaps\"} 2"));
        assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 0"));
        m.add_collector(Box::new(|| "# TYPE extra gauge\nextra 1\n".into()));
        assert!(m.render(&[]).ends_with("# TYPE extra gauge\nextra 1\n"));
    }
}
