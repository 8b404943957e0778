//! The debugging dumps of k8s.io/apiserver pkg/util/flowcontrol/apf_controller_debug.go:
//! one row per priority level, or per waiting request, as comma-and-tab separated columns
//! aligned the way Go's tabwriter aligns them (minimum width 8, padding 1).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::FlowControl;

/// Rows aligned as `tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)` prints cells joined by ",\t":
/// every cell but a line's last is padded to its column's width.
fn tabwrite(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            let w = cell.chars().count() + 2; // the comma and the padding
            if widths.len() <= i {
                widths.push(8);
            }
            widths[i] = widths[i].max(w);
        }
    }
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                out.push_str(cell);
            } else {
                let text = format!("{cell},");
                out.push_str(&format!("{text:<width$}", width = widths[i]));
            }
        }
        out.push('\n');
    }
    out
}

/// Go's RFC3339Nano in UTC (fraction without trailing zeros).
fn rfc3339_nano(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut s = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    let nanos = d.subsec_nanos();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

impl FlowControl {
    /// `/debug/api_priority_and_fairness/dump_priority_levels`.
    pub fn dump_priority_levels(&self) -> String {
        let mut rows = vec![
            [
                "PriorityLevelName",
                "ActiveQueues",
                "IsIdle",
                "IsQuiescing",
                "WaitingRequests",
                "ExecutingRequests",
                "DispatchedRequests",
                "RejectedRequests",
                "TimedoutRequests",
                "CancelledRequests",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for s in self.sorted_levels() {
            let l = s.lock();
            let active = l.queues.iter().filter(|q| !q.waiting.is_empty()).count();
            let waiting: usize = l.queues.iter().map(|q| q.waiting.len()).sum();
            rows.push(vec![
                s.name.clone(),
                active.to_string(),
                (waiting == 0 && l.executing == 0).to_string(),
                l.quiescing.to_string(),
                waiting.to_string(),
                l.executing.to_string(),
                l.dispatched.to_string(),
                l.rejected.to_string(),
                l.timed_out.to_string(),
                l.cancelled.to_string(),
            ]);
        }
        tabwrite(&rows)
    }

    /// `/debug/api_priority_and_fairness/dump_requests`: the waiting requests (each takes
    /// one seat, with no additional latency).
    pub fn dump_requests(&self) -> String {
        let mut rows = vec![
            [
                "PriorityLevelName",
                "FlowSchemaName",
                "QueueIndex",
                "RequestIndexInQueue",
                "FlowDistingsher",
                "ArriveTime",
                "InitialSeats",
                "FinalSeats",
                "AdditionalLatency",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for s in self.sorted_levels() {
            let l = s.lock();
            for (iq, q) in l.queues.iter().enumerate() {
                for (ir, w) in q.waiting.iter().enumerate() {
                    rows.push(vec![
                        s.name.clone(),
                        w.flow_schema.clone(),
                        iq.to_string(),
                        ir.to_string(),
                        w.flow.clone(),
                        rfc3339_nano(w.arrived),
                        "1".into(),
                        "0".into(),
                        "0s".into(),
                    ]);
                }
            }
        }
        tabwrite(&rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn columns_align_as_gos_tabwriter() {
        let rows = vec![
            vec!["PriorityLevelName".to_string(), "IsIdle".into(), "x".into()],
            vec!["exempt".to_string(), "true".into(), "y".into()],
        ];
        assert_eq!(
            tabwrite(&rows),
            "PriorityLevelName, IsIdle, x\nexempt,            true,   y\n"
        );
    }

    #[test]
    fn times_are_rfc3339_nano() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(120);
        assert_eq!(rfc3339_nano(t), "2023-11-14T22:13:20.12Z");
        assert_eq!(rfc3339_nano(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
