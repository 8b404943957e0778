use super::*;
use serde_json::json;

fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

fn column(name: &str, type_: &str, json_path: &str) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: type_.into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        json_path: json_path.into(),
    }
}

/// A Karmada Cluster as the cluster controller writes it.
fn cluster() -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "member1", "creationTimestamp": "2024-05-01T11:55:00Z",
                     "labels": {"topology.karmada.io/region": "eu-west"}},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443", "replicas": 3, "weight": 1.5,
                 "taints": []},
        "status": {"kubernetesVersion": "v1.30.0", "ready": true, "nodes": [{"name": "n1"}, {"name": "n2"}],
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T11:58:00Z"},
                                  {"type": "CompleteAPIEnablements", "status": "False"}],
                   "resourceSummary": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}
    })
}

#[test]
fn cells_by_type() {
    let obj = cluster();
    let cases: Vec<(PrinterColumn, Value)> = vec![
        (
            column("Version", "string", ".status.kubernetesVersion"),
            json!("v1.30.0"),
        ),
        (column("Mode", "string", ".spec.syncMode"), json!("Push")),
        (
            column(
                "Ready",
                "string",
                r#".status.conditions[?(@.type=="Ready")].status"#,
            ),
            json!("True"),
        ),
        (column("Missing", "string", ".status.nothing"), Value::Null),
        (
            column(
                "Missing cond",
                "string",
                r#".status.conditions[?(@.type=="Nope")].status"#,
            ),
            Value::Null,
        ),
        // Only the first result is printed.
        (
            column("Node", "string", ".status.nodes[*].name"),
            json!("n1"),
        ),
        (
            column("Alloc", "string", ".status.resourceSummary.allocatable"),
            json!(r#"{"cpu":"8","memory":"32Gi"}"#),
        ),
        (column("Empty list", "string", ".spec.taints"), json!("[]")),
        (
            column("Number as text", "string", ".spec.weight"),
            json!("1.5"),
        ),
        (
            column("Bool as text", "string", ".status.ready"),
            json!("true"),
        ),
        (column("Replicas", "integer", ".spec.replicas"), json!(3)),
        (
            column("Weight truncated", "integer", ".spec.weight"),
            json!(1),
        ),
        (column("Weight", "number", ".spec.weight"), json!(1.5)),
        (
            column("Replicas as number", "number", ".spec.replicas"),
            json!(3.0),
        ),
        (
            column("Int of text", "integer", ".spec.syncMode"),
            Value::Null,
        ),
        (column("IsReady", "boolean", ".status.ready"), json!(true)),
        (
            column("Bool of text", "boolean", ".spec.syncMode"),
            Value::Null,
        ),
        (
            column("Age", "date", ".metadata.creationTimestamp"),
            json!("5m"),
        ),
        (
            column(
                "Transition",
                "date",
                ".status.conditions[0].lastTransitionTime",
            ),
            json!("2m"),
        ),
        (
            column("Bad date", "date", ".spec.syncMode"),
            json!("<invalid>"),
        ),
        (
            column("Date of number", "date", ".spec.replicas"),
            Value::Null,
        ),
        (
            column("Unknown type", "widget", ".spec.replicas"),
            Value::Null,
        ),
        (
            column("Out of range", "string", ".status.nodes[5].name"),
            Value::Null,
        ),
        (
            column(
                "Escaped key",
                "string",
                r".metadata.labels.topology\.karmada\.io/region",
            ),
            json!("eu-west"),
        ),
    ];
    for (col, want) in cases {
        let name = col.name.clone();
        let convertor = CustomColumnsConvertor::try_new(&[col]).unwrap();
        let cells = convertor.cells(&obj, now());
        assert_eq!(cells, vec![json!("member1"), want], "column {name}");
    }
}

#[test]
fn column_definitions() {
    let mut described = column("Version", "string", ".status.kubernetesVersion");
    described.description = "KubernetesVersion of the member cluster.".into();
    let mut wide_col = column("APIEndpoint", "string", ".spec.apiEndpoint");
    wide_col.priority = 1;
    let mut int_col = column("Replicas", "integer", ".spec.replicas");
    int_col.format = "int32".into();
    let convertor = CustomColumnsConvertor::try_new(&[described, int_col, wide_col]).unwrap();
    let got: Vec<_> = convertor
        .columns()
        .iter()
        .map(|c| {
            (
                c.name.as_ref(),
                c.type_.as_ref(),
                c.format.as_ref(),
                c.priority,
                c.description.as_ref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "Name",
                "string",
                "name",
                0,
                crate::table::column::NAME_DESCRIPTION
            ),
            (
                "Version",
                "string",
                "",
                0,
                "KubernetesVersion of the member cluster."
            ),
            (
                "Replicas",
                "integer",
                "int32",
                0,
                "Value of the JSONPath .spec.replicas in the object."
            ),
            (
                "APIEndpoint",
                "string",
                "",
                1,
                "Value of the JSONPath .spec.apiEndpoint in the object."
            ),
        ]
    );
    assert_eq!(
        convertor.cells(&cluster(), now()),
        vec![
            json!("member1"),
            json!("v1.30.0"),
            json!(3),
            json!("https://10.0.0.1:6443")
        ]
    );
}

#[test]
fn no_columns_means_name_and_age() {
    let convertor = CustomColumnsConvertor::new(&[]);
    let names: Vec<_> = convertor
        .columns()
        .iter()
        .map(|c| (c.name.as_ref(), c.type_.as_ref()))
        .collect();
    assert_eq!(names, vec![("Name", "string"), ("Age", "date")]);
    assert_eq!(
        convertor.cells(&cluster(), now()),
        vec![json!("member1"), json!("5m")]
    );
    let unnamed = json!({"metadata": {}});
    // A missing timestamp has no JSONPath result, so the cell is null.
    assert_eq!(
        convertor.cells(&unnamed, now()),
        vec![json!(""), Value::Null]
    );
}

#[test]
fn invalid_path_keeps_the_columns_before_it() {
    let cols = [
        column("Mode", "string", ".spec.syncMode"),
        column("Broken", "string", ".spec.containers[x]"),
        column("Version", "string", ".status.kubernetesVersion"),
    ];
    assert_eq!(
        CustomColumnsConvertor::try_new(&cols).unwrap_err(),
        TableError::InvalidColumn {
            json_path: ".spec.containers[x]".into(),
            reason: "invalid array index x".into()
        }
    );
    assert_eq!(
        CustomColumnsConvertor::try_new(&cols)
            .unwrap_err()
            .to_string(),
        r#"unrecognized column definition ".spec.containers[x]""#
    );
    let convertor = CustomColumnsConvertor::new(&cols);
    let names: Vec<_> = convertor
        .columns()
        .iter()
        .map(|c| c.name.as_ref())
        .collect();
    assert_eq!(names, vec!["Name", "Mode"]);
    assert_eq!(
        convertor.cells(&cluster(), now()),
        vec![json!("member1"), json!("Push")]
    );
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "Widget size"},
                     {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                 ]},
                {"name": "v1beta1", "served": true, "storage": false}
            ]
        }
    })
}

#[test]
fn columns_from_a_crd() {
    let crd = crd();
    let v1 = crd_printer_columns(&crd, "v1").unwrap();
    assert_eq!(
        v1,
        vec![
            PrinterColumn {
                name: "Size".into(),
                type_: "integer".into(),
                format: String::new(),
                description: "Widget size".into(),
                priority: 0,
                json_path: ".spec.size".into()
            },
            PrinterColumn {
                name: "Color".into(),
                type_: "string".into(),
                format: String::new(),
                description: String::new(),
                priority: 1,
                json_path: ".spec.color".into()
            },
            PrinterColumn {
                name: "Age".into(),
                type_: "date".into(),
                format: String::new(),
                description: String::new(),
                priority: 0,
                json_path: ".metadata.creationTimestamp".into()
            },
        ]
    );
    assert_eq!(crd_printer_columns(&crd, "v1beta1"), Some(vec![]));
    assert_eq!(crd_printer_columns(&crd, "v2"), None);

    let widget = json!({"metadata": {"name": "w1", "creationTimestamp": "2024-05-01T10:00:00Z"},
                        "spec": {"size": 7, "color": "blue"}});
    let convertor = CustomColumnsConvertor::new(&v1);
    assert_eq!(
        convertor.cells(&widget, now()),
        vec![json!("w1"), json!(7), json!("blue"), json!("120m")]
    );
    let beta = CustomColumnsConvertor::new(&crd_printer_columns(&crd, "v1beta1").unwrap());
    assert_eq!(beta.cells(&widget, now()), vec![json!("w1"), json!("120m")]);

    let scale: Vec<_> = crd_scale_columns(&crd, "v1")
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.json_path))
        .collect();
    assert_eq!(
        scale,
        vec![
            ("Desired".to_string(), ".spec.replicas".to_string()),
            ("Available".to_string(), ".status.replicas".to_string()),
            ("Age".to_string(), ".metadata.creationTimestamp".to_string()),
        ]
    );
    assert_eq!(crd_scale_columns(&crd, "v1beta1").unwrap().len(), 1);
}
