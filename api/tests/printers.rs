//! Printer columns, table rows, the kind catalog and the published OpenAPI schemas.

mod common;

use std::time::Duration;

use api::printers::{cluster_row_at, human_duration, printer_columns, table_row};
use api::{ServedBy, kind_info, kinds};
use common::fixture;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

fn at(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn column_summary(kind: &str) -> Vec<(&'static str, &'static str, i32, Option<&'static str>)> {
    printer_columns(kind)
        .iter()
        .map(|c| (c.name, c.type_, c.priority, c.json_path))
        .collect()
}

#[test]
fn crd_printer_columns() {
    let age = ("AGE", "date", 0, Some(".metadata.creationTimestamp"));
    let name = ("Name", "string", 0, Some(".metadata.name"));
    let cases = vec![
        (
            "ResourceInterpreterCustomization",
            vec![
                name,
                (
                    "TARGET-API-VERSION",
                    "string",
                    0,
                    Some(".spec.target.apiVersion"),
                ),
                ("TARGET-KIND", "string", 0, Some(".spec.target.kind")),
                age,
            ],
        ),
        (
            "PropagationPolicy",
            vec![
                name,
                (
                    "CONFLICT-RESOLUTION",
                    "string",
                    0,
                    Some(".spec.conflictResolution"),
                ),
                ("PRIORITY", "string", 0, Some(".spec.priority")),
                age,
            ],
        ),
        (
            "ClusterPropagationPolicy",
            vec![
                name,
                (
                    "CONFLICT-RESOLUTION",
                    "string",
                    0,
                    Some(".spec.conflictResolution"),
                ),
                ("PRIORITY", "string", 0, Some(".spec.priority")),
                age,
            ],
        ),
        (
            "OverridePolicy",
            vec![
                name,
                ("Age", "date", 0, Some(".metadata.creationTimestamp")),
            ],
        ),
        (
            "ClusterOverridePolicy",
            vec![
                name,
                ("Age", "date", 0, Some(".metadata.creationTimestamp")),
            ],
        ),
        (
            "Work",
            vec![
                name,
                (
                    "WORKLOAD-KIND",
                    "string",
                    0,
                    Some(".spec.workload.manifests[*].kind"),
                ),
                (
                    "APPLIED",
                    "string",
                    0,
                    Some(".status.conditions[?(@.type==\"Applied\")].status"),
                ),
                age,
            ],
        ),
        (
            "ResourceBinding",
            vec![
                name,
                (
                    "SCHEDULED",
                    "string",
                    0,
                    Some(".status.conditions[?(@.type==\"Scheduled\")].status"),
                ),
                (
                    "FULLYAPPLIED",
                    "string",
                    0,
                    Some(".status.conditions[?(@.type==\"FullyApplied\")].status"),
                ),
                age,
                (
                    "EVICTING-FROM",
                    "string",
                    1,
                    Some(".spec.gracefulEvictionTasks[*].fromCluster"),
                ),
            ],
        ),
        (
            "ClusterResourceBinding",
            vec![
                name,
                (
                    "SCHEDULED",
                    "string",
                    0,
                    Some(".status.conditions[?(@.type==\"Scheduled\")].status"),
                ),
                (
                    "FULLYAPPLIED",
                    "string",
                    0,
                    Some(".status.conditions[?(@.type==\"FullyApplied\")].status"),
                ),
                age,
                (
                    "EVICTING-FROM",
                    "string",
                    1,
                    Some(".spec.gracefulEvictionTasks[*].fromCluster"),
                ),
            ],
        ),
    ];
    for (kind, expected) in cases {
        assert_eq!(column_summary(kind), expected, "{kind}");
    }
    assert!(printer_columns("ConfigMap").is_empty());

    let pp = printer_columns("PropagationPolicy");
    assert_eq!(pp[0].format, "name");
    assert!(
        pp[0]
            .description
            .starts_with("Name must be unique within a namespace"),
        "{}",
        pp[0].description
    );
    assert_eq!(
        pp[1].description,
        "Custom resource definition column (in JSONPath format): .spec.conflictResolution"
    );
    assert!(
        printer_columns("OverridePolicy")[1]
            .description
            .starts_with("CreationTimestamp is a timestamp")
    );
}

#[test]
fn cluster_printer_columns() {
    let columns: Vec<(&str, &str, i32)> = printer_columns("Cluster")
        .iter()
        .map(|c| (c.name, c.type_, c.priority))
        .collect();
    assert_eq!(
        columns,
        vec![
            ("Name", "string", 0),
            ("Version", "string", 0),
            ("Mode", "string", 0),
            ("Ready", "string", 0),
            ("Age", "string", 0),
            ("Zones", "string", 1),
            ("Region", "string", 1),
            ("Provider", "string", 1),
            ("API-Endpoint", "string", 1),
            ("Proxy-URL", "string", 1),
        ]
    );
    assert!(
        printer_columns("Cluster")
            .iter()
            .skip(1)
            .all(|c| c.json_path.is_none())
    );
}

#[test]
fn cluster_rows() {
    let mut cluster = fixture("karmada-cluster.yaml");
    cluster["metadata"]["creationTimestamp"] = json!("2026-07-01T10:00:00Z");
    assert_eq!(
        cluster_row_at(&cluster, at("2026-07-01T10:03:20Z")),
        vec![
            json!("member1"),
            json!("v1.32.2"),
            json!("Push"),
            json!("True"),
            json!("3m20s"),
            json!("eu-west-1a,eu-west-1b"),
            json!("eu-west-1"),
            json!("aws"),
            json!("https://172.18.0.3:6443"),
            json!("socks5://proxy.example.com:1080"),
        ]
    );
    let bare = json!({"metadata": {"name": "m2"}, "spec": {"syncMode": "Pull"}});
    assert_eq!(
        cluster_row_at(&bare, at("2026-07-01T10:00:00Z")),
        vec![
            json!("m2"),
            json!(""),
            json!("Pull"),
            json!("Unknown"),
            json!("<unknown>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!(""),
            json!("<none>"),
        ]
    );
    let mut not_ready = bare.clone();
    not_ready["status"] = json!({"conditions": [{"type": "CompleteAPIEnablements", "status": "True"}, {"type": "Ready", "status": "False"}]});
    assert_eq!(
        cluster_row_at(&not_ready, at("2026-07-01T10:00:00Z"))[3],
        json!("False")
    );
    assert_eq!(
        api::cluster_row(&bare).len(),
        printer_columns("Cluster").len()
    );
}

#[test]
fn crd_rows() {
    let now = at("2026-07-03T10:00:00Z");
    let mut work = fixture("karmada-work.yaml");
    work["metadata"]["creationTimestamp"] = json!("2026-07-01T10:00:00Z");
    // A second manifest: only the first kind is shown, as kube-apiserver does.
    work["spec"]["workload"]["manifests"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    assert_eq!(
        table_row("Work", &work, now),
        Some(vec![
            json!("nginx-687f7fb96f"),
            json!("Deployment"),
            json!("True"),
            json!("2d")
        ])
    );

    let rb = fixture("karmada-resourcebinding.yaml");
    assert_eq!(
        table_row("ResourceBinding", &rb, now),
        Some(vec![
            json!("nginx-deployment"),
            json!("True"),
            json!("True"),
            Value::Null,
            // EVICTING-FROM (-o wide): the fixture's eviction task.
            json!("member3")
        ])
    );

    let mut pp = fixture("karmada-propagationpolicy-full.yaml");
    assert_eq!(
        table_row("PropagationPolicy", &pp, now),
        Some(vec![
            json!("web"),
            json!("Overwrite"),
            json!("10"),
            json!("2d")
        ])
    );
    pp["metadata"]["creationTimestamp"] = json!("yesterday");
    pp["spec"].as_object_mut().unwrap().remove("priority");
    assert_eq!(
        table_row("PropagationPolicy", &pp, now),
        Some(vec![
            json!("web"),
            json!("Overwrite"),
            Value::Null,
            json!("<invalid>")
        ])
    );

    let op = json!({"metadata": {"name": "o", "creationTimestamp": "2026-07-03T09:59:30Z"}});
    assert_eq!(
        table_row("OverridePolicy", &op, now),
        Some(vec![json!("o"), json!("30s")])
    );
    assert_eq!(table_row("Cluster", &op, now).map(|r| r.len()), Some(10));
    assert_eq!(table_row("ConfigMap", &op, now), None);
}

#[test]
fn human_durations() {
    let cases = [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (9 * 60 + 59, "9m59s"),
        (10 * 60 + 30, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 30 * 60, "7h30m"),
        (8 * 3600 + 30 * 60, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 24 * 3600, "8d"),
        (729 * 24 * 3600, "729d"),
        (730 * 24 * 3600, "2y"),
        (731 * 24 * 3600, "2y1d"),
        (8 * 365 * 24 * 3600, "8y"),
    ];
    for (secs, expected) in cases {
        assert_eq!(
            human_duration(Duration::from_secs(secs)),
            expected,
            "{secs}s"
        );
    }
    // Ages in the future: up to a second of clock skew reads as 0s, beyond that as invalid.
    let created = json!({"metadata": {"name": "o", "creationTimestamp": "2026-07-03T10:00:01Z"}});
    assert_eq!(
        table_row("OverridePolicy", &created, at("2026-07-03T10:00:00Z")).unwrap()[1],
        json!("0s")
    );
    let created = json!({"metadata": {"name": "o", "creationTimestamp": "2026-07-03T10:00:05Z"}});
    assert_eq!(
        table_row("OverridePolicy", &created, at("2026-07-03T10:00:00Z")).unwrap()[1],
        json!("<invalid>")
    );
}

/// kind, apiVersion, plural, short names, namespaced, status, proxy, strategic merge.
type CatalogRow = (
    &'static str,
    String,
    &'static str,
    &'static [&'static str],
    bool,
    bool,
    bool,
    bool,
);

fn row(
    kind: &'static str,
    api_version: &str,
    plural: &'static str,
    short: &'static [&'static str],
    flags: [bool; 4],
) -> CatalogRow {
    (
        kind,
        api_version.to_owned(),
        plural,
        short,
        flags[0],
        flags[1],
        flags[2],
        flags[3],
    )
}

#[test]
fn kind_catalog() {
    let summary: Vec<CatalogRow> = kinds()
        .iter()
        .map(|k| {
            (
                k.kind,
                k.api_version(),
                k.plural,
                k.short_names,
                k.namespaced,
                k.status_subresource,
                k.proxy_subresource,
                k.strategic_merge,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            row(
                "PropagationPolicy",
                "policy.karmada.io/v1alpha1",
                "propagationpolicies",
                &["pp"],
                [true, false, false, false]
            ),
            row(
                "ClusterPropagationPolicy",
                "policy.karmada.io/v1alpha1",
                "clusterpropagationpolicies",
                &["cpp"],
                [false, false, false, false]
            ),
            row(
                "OverridePolicy",
                "policy.karmada.io/v1alpha1",
                "overridepolicies",
                &["op"],
                [true, false, false, false]
            ),
            row(
                "ClusterOverridePolicy",
                "policy.karmada.io/v1alpha1",
                "clusteroverridepolicies",
                &["cop"],
                [false, false, false, false]
            ),
            row(
                "ClusterTaintPolicy",
                "policy.karmada.io/v1alpha1",
                "clustertaintpolicies",
                &[],
                [false, false, false, false]
            ),
            row(
                "FederatedResourceQuota",
                "policy.karmada.io/v1alpha1",
                "federatedresourcequotas",
                &[],
                [true, true, false, false]
            ),
            row(
                "Remedy",
                "remedy.karmada.io/v1alpha1",
                "remedies",
                &[],
                [false, false, false, false]
            ),
            row(
                "WorkloadRebalancer",
                "apps.karmada.io/v1alpha1",
                "workloadrebalancers",
                &[],
                [false, true, false, false]
            ),
            row(
                "MultiClusterService",
                "networking.karmada.io/v1alpha1",
                "multiclusterservices",
                &["mcs"],
                [true, true, false, false]
            ),
            row(
                "MultiClusterIngress",
                "networking.karmada.io/v1alpha1",
                "multiclusteringresses",
                &["mci"],
                [true, true, false, false]
            ),
            row(
                "Work",
                "work.karmada.io/v1alpha1",
                "works",
                &["wk"],
                [true, true, false, false]
            ),
            row(
                "ResourceBinding",
                "work.karmada.io/v1alpha2",
                "resourcebindings",
                &["rb"],
                [true, true, false, false]
            ),
            row(
                "ClusterResourceBinding",
                "work.karmada.io/v1alpha2",
                "clusterresourcebindings",
                &["crb"],
                [false, true, false, false]
            ),
            row(
                "ResourceInterpreterCustomization",
                "config.karmada.io/v1alpha1",
                "resourceinterpretercustomizations",
                &["ric"],
                [false, false, false, false]
            ),
            row(
                "ResourceInterpreterWebhookConfiguration",
                "config.karmada.io/v1alpha1",
                "resourceinterpreterwebhookconfigurations",
                &[],
                [false, false, false, false]
            ),
            row(
                "Cluster",
                "cluster.karmada.io/v1alpha1",
                "clusters",
                &[],
                [false, true, true, true]
            ),
        ]
    );
    for k in kinds() {
        assert_eq!(k.list_kind, format!("{}List", k.kind));
        assert_eq!(k.singular, k.kind.to_lowercase());
        // Karmada's ClusterTaintPolicy and WorkloadRebalancer CRDs declare no category either.
        let expected_categories: &[&str] = if matches!(
            k.kind,
            "Cluster" | "ClusterTaintPolicy" | "WorkloadRebalancer"
        ) {
            &[]
        } else {
            &["karmada-io"]
        };
        assert_eq!(k.categories, expected_categories, "{}", k.kind);
        assert_eq!(api::catalog::kind_by_resource(k.group, k.plural), Some(k));
        // Every kind has a schema and table columns.
        assert!(api::schema::openapi_schema(k.kind).is_some(), "{}", k.kind);
        assert!(!printer_columns(k.kind).is_empty(), "{}", k.kind);
    }
    assert_eq!(
        kind_info("Cluster").map(|k| k.served_by),
        Some(ServedBy::AggregatedApiServer)
    );
    assert_eq!(
        kind_info("Work").map(|k| k.served_by),
        Some(ServedBy::CustomResourceDefinition)
    );
    assert_eq!(kind_info("Deployment"), None);
    assert_eq!(
        api::catalog::kind_by_resource("work.karmada.io", "clusters"),
        None
    );
}

#[test]
fn kind_specific_name_rules() {
    let work = kind_info("Work").unwrap();
    let cluster = kind_info("Cluster").unwrap();
    assert!(work.validate_name("nginx-687f7fb96f", false).is_empty());
    assert!(
        work.validate_name("system.controller.tom-role", false)
            .is_empty()
    );
    assert!(!work.validate_name("Upper", false).is_empty());
    // A generateName prefix may end in '-'.
    assert!(work.validate_name("nginx-", true).is_empty());
    assert!(!work.validate_name("nginx-", false).is_empty());
    assert!(cluster.validate_name("member1", false).is_empty());
    assert_eq!(
        cluster.validate_name("member.1", false),
        vec!["must not contain dots"]
    );
    assert_eq!(
        cluster.validate_name(&"m".repeat(49), false),
        vec!["must be no more than 48 characters"]
    );
}

#[test]
fn openapi_schemas_are_structural_and_documented() {
    let pp = api::schema::openapi_schema("PropagationPolicy").unwrap();
    assert_eq!(pp["type"], "object");
    assert_eq!(pp["required"], json!(["spec"]));
    assert_eq!(pp["properties"]["apiVersion"]["type"], "string");
    assert_eq!(pp["properties"]["kind"]["type"], "string");
    let spec = &pp["properties"]["spec"];
    assert_eq!(spec["description"], "What to propagate and where.");
    assert_eq!(spec["required"], json!(["resourceSelectors"]));
    assert_eq!(spec["properties"]["resourceSelectors"]["minItems"], 1);
    assert_eq!(
        spec["properties"]["conflictResolution"],
        json!({
            "description": spec["properties"]["conflictResolution"]["description"],
            "type": "string", "enum": ["Abort", "Overwrite"], "default": "Abort"
        })
    );
    assert_eq!(spec["properties"]["priority"]["default"], 0);
    assert_eq!(spec["properties"]["priority"]["format"], "int32");
    assert_eq!(
        spec["properties"]["placement"]["properties"]["clusterAffinities"]["items"]["properties"]["affinityName"]
            ["maxLength"],
        32
    );

    // No JSON Schema constructs Kubernetes' structural schemas forbid, anywhere.
    fn check(node: &Value, path: &str) {
        if let Value::Object(map) = node {
            for forbidden in [
                "$ref", "$schema", "$defs", "oneOf", "allOf", "const", "title",
            ] {
                assert!(!map.contains_key(forbidden), "{path} has {forbidden}");
            }
            if let Some(t) = map.get("type") {
                assert!(t.is_string(), "{path} has type {t}");
            }
            let has_type = map.contains_key("type")
                || map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
                || map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            assert!(has_type, "{path} has no type");
            for (k, v) in map {
                match k.as_str() {
                    "properties" => {
                        for (name, child) in v.as_object().unwrap() {
                            check(child, &format!("{path}.{name}"));
                        }
                    }
                    "items" => check(v, &format!("{path}[]")),
                    "additionalProperties" => check(v, &format!("{path}{{}}")),
                    _ => {}
                }
            }
        }
    }
    for kind in kinds() {
        check(api::schema::openapi_schema(kind.kind).unwrap(), kind.kind);
    }

    let work = api::schema::openapi_schema("Work").unwrap();
    assert_eq!(
        work["properties"]["spec"]["properties"]["workload"]["properties"]["manifests"]["items"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    let cluster = api::schema::openapi_schema("Cluster").unwrap();
    assert_eq!(
        cluster["properties"]["spec"]["properties"]["secretRef"]["required"],
        json!(["name", "namespace"])
    );
    assert_eq!(api::schema::openapi_schema("ConfigMap"), None);
}

#[test]
fn older_served_versions_have_their_own_schema_and_columns() {
    use api::printers::{printer_columns_at, table_row_at};
    use api::schema::{openapi_schema, openapi_schema_at};
    let names = |cols: &[api::PrinterColumn]| cols.iter().map(|c| c.name).collect::<Vec<_>>();
    for kind in ["ResourceBinding", "ClusterResourceBinding"] {
        // Karmada's v1alpha1 binding CRD versions declare no columns: Name and Age.
        assert_eq!(names(printer_columns_at("v1alpha1", kind)), ["Name", "Age"]);
        assert_eq!(
            printer_columns_at("v1alpha2", kind),
            printer_columns(kind),
            "{kind}"
        );
        let v1 = openapi_schema_at("v1alpha1", kind).unwrap();
        let resource = &v1["properties"]["spec"]["properties"]["resource"];
        assert!(resource["properties"].get("resourcePerReplicas").is_some());
        assert!(resource["properties"].get("uid").is_none());
        assert!(
            v1["properties"]["spec"]["properties"]
                .get("placement")
                .is_none()
        );
        assert_eq!(resource["required"], json!(["apiVersion", "kind", "name"]));
        assert_eq!(openapi_schema_at("v1alpha2", kind), openapi_schema(kind));
        assert_eq!(openapi_schema_at("v1beta1", kind), None);
    }
    assert_eq!(
        printer_columns_at("v1alpha1", "Work"),
        printer_columns("Work")
    );
    assert_eq!(
        openapi_schema_at("v1alpha1", "Work"),
        openapi_schema("Work")
    );
    let now = at("2026-01-01T01:00:00Z");
    let rb = json!({"metadata": {"name": "b", "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "status": {"conditions": [{"type": "Scheduled", "status": "True"}]}});
    assert_eq!(
        table_row_at("v1alpha1", "ResourceBinding", &rb, now).unwrap(),
        vec![json!("b"), json!("60m")]
    );
    assert_eq!(
        table_row_at("v1alpha2", "ResourceBinding", &rb, now).unwrap(),
        vec![
            json!("b"),
            json!("True"),
            Value::Null,
            json!("60m"),
            Value::Null
        ]
    );
    assert_eq!(
        api::schema::unknown_fields_at(
            "v1alpha1",
            "ResourceBinding",
            &json!({"spec": {"resource": {"replicas": 1, "uid": "x"}, "placement": {}}})
        ),
        ["spec.placement", "spec.resource.uid"]
    );
}
