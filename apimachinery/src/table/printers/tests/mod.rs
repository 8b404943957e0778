//! Table-driven tests of the built-in printers: for each kind, realistic objects and the cells
//! kube-apiserver prints for them.

mod core;
mod network;
mod other;
mod pod;
mod storage;
mod workloads;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::*;

/// The reference time of every test.
fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

/// The RFC 3339 timestamp `secs` seconds before [`now`].
fn ago(secs: i64) -> String {
    (now() - SignedDuration::from_secs(secs)).to_string()
}

/// Metadata with a name and a creation time `secs` ago.
fn meta(name: &str, secs: i64) -> Value {
    json!({"name": name, "namespace": "default", "uid": "0f1e", "resourceVersion": "42", "creationTimestamp": ago(secs)})
}

/// A case: what it shows, the object, the expected cells.
type Case = (&'static str, Value, Value);

/// Prints every case with the printer of `group`/`kind` and compares all cells.
fn check(group: &str, kind: &str, cases: Vec<Case>) {
    let printer = builtin_printer(group, kind).unwrap_or_else(|| panic!("no printer for {kind}"));
    for (what, obj, want) in cases {
        let row = printer.row(&obj, now());
        assert_eq!(Value::Array(row.cells.clone()), want, "{kind}: {what}");
        assert_eq!(
            row.cells.len(),
            printer.columns().len(),
            "{kind}: {what}: one cell per column"
        );
    }
}

/// Column name, type and priority.
type Header = (String, String, i32);

/// The column names and priorities of a printer, for comparing with kube's.
fn headers(group: &str, kind: &str) -> Vec<Header> {
    convertor_for(group, kind)
        .columns()
        .iter()
        .map(|c| (c.name.to_string(), c.type_.to_string(), c.priority))
        .collect()
}

fn h(list: &[(&str, &str, i32)]) -> Vec<Header> {
    list.iter()
        .map(|(n, t, p)| (n.to_string(), t.to_string(), *p))
        .collect()
}

#[test]
fn column_sets_match_kube() {
    let s = "string";
    let i = "integer";
    let cases: Vec<(&str, &str, Vec<Header>)> = vec![
        (
            "",
            "Namespace",
            h(&[("Name", s, 0), ("Status", s, 0), ("Age", s, 0)]),
        ),
        (
            "",
            "ConfigMap",
            h(&[("Name", s, 0), ("Data", s, 0), ("Age", s, 0)]),
        ),
        (
            "",
            "Secret",
            h(&[
                ("Name", s, 0),
                ("Type", s, 0),
                ("Data", s, 0),
                ("Age", s, 0),
            ]),
        ),
        (
            "",
            "ServiceAccount",
            h(&[("Name", s, 0), ("Secrets", s, 0), ("Age", s, 0)]),
        ),
        (
            "",
            "Event",
            h(&[
                ("Last Seen", s, 0),
                ("Type", s, 0),
                ("Reason", s, 0),
                ("Object", s, 0),
                ("Subobject", s, 1),
                ("Source", s, 1),
                ("Message", s, 0),
                ("First Seen", s, 1),
                ("Count", s, 1),
                ("Name", s, 1),
            ]),
        ),
        (
            "",
            "Pod",
            h(&[
                ("Name", s, 0),
                ("Ready", s, 0),
                ("Status", s, 0),
                ("Restarts", s, 0),
                ("Age", s, 0),
                ("IP", s, 1),
                ("Node", s, 1),
                ("Nominated Node", s, 1),
                ("Readiness Gates", s, 1),
            ]),
        ),
        (
            "",
            "Service",
            h(&[
                ("Name", s, 0),
                ("Type", s, 0),
                ("Cluster-IP", s, 0),
                ("External-IP", s, 0),
                ("Port(s)", s, 0),
                ("Age", s, 0),
                ("Selector", s, 1),
            ]),
        ),
        (
            "",
            "ResourceQuota",
            h(&[
                ("Name", s, 0),
                ("Age", s, 0),
                ("Request", s, 0),
                ("Limit", s, 0),
            ]),
        ),
        (
            "apps",
            "Deployment",
            h(&[
                ("Name", s, 0),
                ("Ready", s, 0),
                ("Up-to-date", s, 0),
                ("Available", s, 0),
                ("Age", s, 0),
                ("Containers", s, 1),
                ("Images", s, 1),
                ("Selector", s, 1),
            ]),
        ),
        (
            "apps",
            "ReplicaSet",
            h(&[
                ("Name", s, 0),
                ("Desired", i, 0),
                ("Current", i, 0),
                ("Ready", i, 0),
                ("Age", s, 0),
                ("Containers", s, 1),
                ("Images", s, 1),
                ("Selector", s, 1),
            ]),
        ),
        (
            "batch",
            "CronJob",
            h(&[
                ("Name", s, 0),
                ("Schedule", s, 0),
                ("Timezone", s, 0),
                ("Suspend", "boolean", 0),
                ("Active", i, 0),
                ("Last Schedule", s, 0),
                ("Age", s, 0),
                ("Containers", s, 1),
                ("Images", s, 1),
                ("Selector", s, 1),
            ]),
        ),
        (
            "policy",
            "PodDisruptionBudget",
            h(&[
                ("Name", s, 0),
                ("Min Available", s, 0),
                ("Max Unavailable", s, 0),
                ("Allowed Disruptions", i, 0),
                ("Age", s, 0),
            ]),
        ),
        (
            "rbac.authorization.k8s.io",
            "Role",
            h(&[("Name", s, 0), ("Created At", "date", 0)]),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            h(&[("Name", s, 0), ("Created At", "date", 0)]),
        ),
        (
            "",
            "LimitRange",
            h(&[("Name", s, 0), ("Created At", "date", 0)]),
        ),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            h(&[("Name", s, 0), ("Created At", "date", 0)]),
        ),
    ];
    for (group, kind, want) in cases {
        assert_eq!(headers(group, kind), want, "columns of {group}/{kind}");
    }
}

#[test]
fn every_printer_is_well_formed() {
    for printer in builtin_printers() {
        let columns = printer.columns();
        let name_columns: Vec<_> = columns.iter().filter(|c| c.format == "name").collect();
        assert_eq!(name_columns.len(), 1, "{}: one name column", printer.kind);
        assert_eq!(name_columns[0].name, "Name", "{}", printer.kind);
        if printer.kind != "Event" {
            assert_eq!(
                columns[0].format, "name",
                "{}: Name comes first",
                printer.kind
            );
        }
        let mut names: Vec<_> = columns.iter().map(|c| &c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(
            names.len(),
            columns.len(),
            "{}: unique column names",
            printer.kind
        );
        for c in columns {
            assert!(
                !c.description.is_empty(),
                "{}/{}: description",
                printer.kind,
                c.name
            );
            assert!(
                ["string", "integer", "number", "boolean", "date"].contains(&&*c.type_),
                "{}/{}: type {}",
                printer.kind,
                c.name,
                c.type_
            );
        }
        // Empty and odd objects never panic and always fill every column.
        for odd in [
            json!({}),
            json!({"metadata": null, "spec": [], "status": "x"}),
            json!(null),
        ] {
            let row = printer.row(&odd, now());
            assert_eq!(row.cells.len(), columns.len(), "{}: {odd}", printer.kind);
        }
    }
}

#[test]
fn lookup_by_group_and_kind() {
    assert!(builtin_printer("", "Pod").is_some());
    assert!(builtin_printer("apps", "Pod").is_none());
    assert!(builtin_printer("", "Deployment").is_none());
    assert!(builtin_printer("", "Role").is_none());
    assert!(!convertor_for("", "Pod").always_sends_headers());
    assert!(convertor_for("apiregistration.k8s.io", "APIService").always_sends_headers());
    let default = convertor_for("example.io", "Widget");
    let obj = json!({"metadata": {"name": "w", "creationTimestamp": "2024-05-01T11:00:00.5Z"}});
    assert_eq!(
        default.cells(&obj, now()),
        vec![json!("w"), json!("2024-05-01T11:00:00Z")]
    );
    assert_eq!(
        default.cells(&json!({"metadata": {"name": "w"}}), now()),
        vec![json!("w"), json!("0001-01-01T00:00:00Z")]
    );
}
