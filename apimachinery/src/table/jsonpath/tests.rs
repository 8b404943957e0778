use super::*;
use serde_json::json;

fn pod() -> Value {
    json!({
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "labels": {"app.kubernetes.io/name": "web", "app": "web", "tier": "fe"},
            "annotations": {}
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
                {"name": "sidecar", "image": "envoy:1.30"}
            ],
            "nodeName": null,
            "priority": 7
        },
        "status": {
            "phase": "Running",
            "ratio": 0.5,
            "big": 1234567.0,
            "ready": true,
            "conditions": [
                {"type": "Initialized", "status": "True", "order": 1},
                {"type": "Ready", "status": "False", "order": 2},
                {"type": "PodScheduled", "status": "True", "order": 3}
            ]
        }
    })
}

/// Evaluates a printer-column style path (missing keys allowed) and prints every result.
fn eval(path: &str, data: &Value) -> Result<Vec<String>, String> {
    let jp = JsonPath::parse_path(path)
        .map_err(|e| format!("parse: {e}"))?
        .allow_missing_keys(true);
    let results = jp.find_results(data).map_err(|e| format!("eval: {e}"))?;
    Ok(results
        .first()
        .map(|r| r.iter().map(|v| print_value(v)).collect())
        .unwrap_or_default())
}

#[test]
fn printer_column_paths() {
    let data = pod();
    let ok = |v: &[&str]| Ok(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let cases: Vec<(&str, Result<Vec<String>, String>)> = vec![
        (".metadata.name", ok(&["web-0"])),
        ("$.metadata.name", ok(&["web-0"])),
        ("@.metadata.name", ok(&["web-0"])),
        (".status.phase", ok(&["Running"])),
        (".spec.priority", ok(&["7"])),
        (".status.ratio", ok(&["0.5"])),
        (".status.big", ok(&["1.234567e+06"])),
        (".status.ready", ok(&["true"])),
        (".spec.nodeName", ok(&["<no value>"])),
        (".metadata.annotations", ok(&["{}"])),
        (".spec.containers[0].image", ok(&["nginx:1.27"])),
        (".spec.containers[1].name", ok(&["sidecar"])),
        (".spec.containers[-1].name", ok(&["sidecar"])),
        (".spec.containers[*].name", ok(&["app", "sidecar"])),
        (
            ".spec.containers[*].ports[*].containerPort",
            ok(&["80", "443"]),
        ),
        (".spec.containers[0:1].name", ok(&["app"])),
        (".spec.containers[0:2:2].name", ok(&["app"])),
        (".spec.containers[:].name", ok(&["app", "sidecar"])),
        (
            ".spec.containers[0,1].image",
            ok(&["nginx:1.27", "envoy:1.30"]),
        ),
        (".spec.containers[*]['name']", ok(&["app", "sidecar"])),
        (
            ".status.conditions[?(@.type==\"Ready\")].status",
            ok(&["False"]),
        ),
        (
            ".status.conditions[?(@.type=='Ready')].status",
            ok(&["False"]),
        ),
        (
            ".status.conditions[?(@.type == \"Ready\")].status",
            ok(&["False"]),
        ),
        (
            ".status.conditions[?(@.type!=\"Ready\")].type",
            ok(&["Initialized", "PodScheduled"]),
        ),
        (
            ".status.conditions[?(@.order>1)].type",
            ok(&["Ready", "PodScheduled"]),
        ),
        (
            ".status.conditions[?(@.order>=2)].type",
            ok(&["Ready", "PodScheduled"]),
        ),
        (
            ".status.conditions[?(@.order<2)].type",
            ok(&["Initialized"]),
        ),
        (
            ".status.conditions[?(@.order<=2)].type",
            ok(&["Initialized", "Ready"]),
        ),
        (".status.conditions[?(@.type==\"Missing\")].status", ok(&[])),
        (".spec.containers[?(@.ports)].name", ok(&["app"])),
        (
            ".metadata.labels['app\\.kubernetes\\.io/name']",
            ok(&["web"]),
        ),
        (".metadata.labels.app\\.kubernetes\\.io/name", ok(&["web"])),
        (".metadata.labels.tier", ok(&["fe"])),
        // Unescaped dots in a bracketed key split it into fields, as upstream does.
        (".metadata.labels['app.kubernetes.io/name']", ok(&[])),
        (".metadata.missing", ok(&[])),
        (".metadata.missing.deeper", ok(&[])),
        (".spec.containers[0].missing", ok(&[])),
        (".status.phase.length", ok(&[])),
        (".spec.missing[0]", ok(&[])),
        (".metadata.labels.*", ok(&["web", "web", "fe"])),
        ("..containerPort", ok(&["80", "443"])),
        (
            ".spec.containers[0].ports",
            ok(&[r#"[{"containerPort":80},{"containerPort":443}]"#]),
        ),
        ("\"literal\"", ok(&["literal"])),
        (
            ".spec.containers[5].name",
            Err("eval: array index out of bounds: index 5, length 2".into()),
        ),
        (
            ".metadata[0]",
            Err("eval: map[string]interface {} is not array or slice".into()),
        ),
        (
            ".spec.containers[0:1:0].name",
            Err("eval: step must be > 0".into()),
        ),
        (
            ".status.conditions[?(@.order==\"1\")].type",
            Err("eval: incompatible types for comparison".into()),
        ),
        (
            ".status.conditions[?(@.type>true)].type",
            Err("eval: incompatible types for comparison".into()),
        ),
        (
            ".metadata.labels[?(@.x)]",
            Err(
                "eval: map[string]interface {} is not array or slice and cannot be filtered".into(),
            ),
        ),
        (
            "range",
            Err("eval: unsupported identifier range (range/end are not supported here)".into()),
        ),
        (
            ".spec.containers[x]",
            Err("parse: invalid array index x".into()),
        ),
        (
            ".spec.containers[0",
            Err("parse: unterminated array".into()),
        ),
        (
            ".status.conditions[?(@.type==\"Ready\"",
            Err("parse: unterminated filter".into()),
        ),
        (".a\n.b", Err("parse: unclosed action".into())),
        (
            "....a",
            Err("parse: invalid multiple recursive descent".into()),
        ),
        (
            ".a[0]#",
            Err("parse: unrecognized character in action: U+0023 '#'".into()),
        ),
        (
            "'unterminated",
            Err("parse: unterminated quoted string".into()),
        ),
    ];
    for (path, want) in cases {
        assert_eq!(eval(path, &data), want, "path {path}");
    }
}

#[test]
fn missing_keys_are_errors_unless_allowed() {
    let data = pod();
    let jp = JsonPath::parse_path(".metadata.missing").unwrap();
    assert_eq!(
        jp.find_results(&data).unwrap_err(),
        TableError::JsonPath("missing is not found".into())
    );
    let results = jp.allow_missing_keys(true).find_results(&data).unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_empty());
}

#[test]
fn exists_filter_keeps_values_of_failed_steps() {
    // Upstream's evalArray returns its input alongside an out-of-range error, and the
    // existence filter only looks at whether values came back.
    let data = json!({"items": [{"a": [1]}, {"b": 2}]});
    assert_eq!(
        eval(".items[?(@.a[5])].a", &data),
        Ok(vec!["[1]".to_string()])
    );
}

#[test]
fn templates_with_text() {
    let data = pod();
    let jp = JsonPath::parse("name={.metadata.name} phase={.status.phase}").unwrap();
    assert_eq!(jp.execute(&data).unwrap(), "name=web-0 phase=Running");
    let jp = JsonPath::parse("{.spec.containers[*].name}").unwrap();
    assert_eq!(jp.execute(&data).unwrap(), "app sidecar");
}

#[test]
fn first_result() {
    let data = pod();
    let first = |p: &str| {
        JsonPath::parse_path(p)
            .unwrap()
            .allow_missing_keys(true)
            .first(&data)
            .map(|v| v.into_owned())
    };
    assert_eq!(first(".spec.containers[*].name"), Some(json!("app")));
    assert_eq!(first(".status.ready"), Some(json!(true)));
    assert_eq!(first(".spec.nodeName"), Some(Value::Null));
    assert_eq!(first(".nope"), None);
    assert_eq!(first(".spec.containers[9]"), None);
}

#[test]
fn quoted_literals_and_escapes() {
    let data = json!({"items": [{"k": "a'b"}, {"k": "tab\there"}, {"k": "é"}]});
    let cases = [
        (r#".items[?(@.k=="a'b")].k"#, vec!["a'b"]),
        (r#".items[?(@.k=='a\'b')].k"#, vec!["a'b"]),
        (r#".items[?(@.k=="tab\there")].k"#, vec!["tab\there"]),
        (r#".items[?(@.k=="\u00e9")].k"#, vec!["é"]),
        (r#".items[?(@.k=="\303\251")].k"#, vec!["é"]),
        (r#".items[?(@.k=="\xc3\xa9")].k"#, vec!["é"]),
    ];
    for (path, want) in cases {
        let want: Vec<String> = want.into_iter().map(String::from).collect();
        assert_eq!(eval(path, &data), Ok(want), "path {path}");
    }
}

#[test]
fn numeric_literals_compare_by_kind() {
    let data = json!({"items": [{"v": 1}, {"v": 2.5}, {"v": -3}]});
    assert_eq!(
        eval(".items[?(@.v==-3)].v", &data),
        Err("eval: incompatible types for comparison".into())
    );
    let data = json!({"items": [{"v": 1}, {"v": 2}, {"v": -3}]});
    assert_eq!(
        eval(".items[?(@.v==-3)].v", &data),
        Ok(vec!["-3".to_string()])
    );
    assert_eq!(
        eval(".items[?(@.v>+1)].v", &data),
        Ok(vec!["2".to_string()])
    );
    let floats = json!({"items": [{"v": 1.5}, {"v": 2.5}]});
    assert_eq!(
        eval(".items[?(@.v>2.0)].v", &floats),
        Ok(vec!["2.5".to_string()])
    );
}

/// Every string of up to four characters from the path syntax parses or fails cleanly, and
/// evaluates without panicking.
#[test]
fn short_paths_never_panic() {
    let alphabet: Vec<char> = ".[]?()@'\"\\*:,-1a=}$ ".chars().collect();
    let data = pod();
    let mut stack = vec![String::new()];
    let mut parsed = 0;
    while let Some(prefix) = stack.pop() {
        if let Ok(jp) = JsonPath::parse_path(&prefix) {
            parsed += 1;
            let _ = jp.clone().allow_missing_keys(true).find_results(&data);
            let _ = jp.find_results(&json!([1, "a", null, {"a": [1]}]));
        }
        if prefix.chars().count() < 4 {
            for c in &alphabet {
                stack.push(format!("{prefix}{c}"));
            }
        }
    }
    assert!(parsed > 1000, "only {parsed} paths parsed");
}
