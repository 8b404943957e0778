use super::*;
use crate::table::{CustomColumnsConvertor, PrinterColumn, convertor_for};
use serde_json::json;

fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

fn config_map(name: &str, rv: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": rv,
                     "creationTimestamp": "2024-05-01T11:58:00Z", "labels": {"app": "web"}},
        "data": {"k": "v"}
    })
}

#[test]
fn include_object_values() {
    let ok = [
        ("", IncludeObject::Metadata),
        ("Metadata", IncludeObject::Metadata),
        ("Object", IncludeObject::Object),
        ("None", IncludeObject::None),
    ];
    for (input, want) in ok {
        assert_eq!(parse_include_object(input), Ok(want), "{input:?}");
    }
    for bad in ["metadata", "All", "None ", "\"x\""] {
        let err = parse_include_object(bad).unwrap_err();
        assert_eq!(err, TableError::InvalidIncludeObject(bad.to_string()));
        assert_eq!(err.code(), 400);
        assert_eq!(err.reason(), "BadRequest");
    }
    assert_eq!(
        parse_include_object("metadata").unwrap_err().to_string(),
        r#"Unable to convert to Table as requested: includeObject: Invalid value: "metadata": must be 'Metadata', 'Object', 'None', or empty"#
    );
    assert_eq!(
        parse_include_object("\"x\"").unwrap_err().to_string(),
        r#"Unable to convert to Table as requested: includeObject: Invalid value: "\"x\"": must be 'Metadata', 'Object', 'None', or empty"#
    );
}

#[test]
fn list_table_bytes_match_kube() {
    let items = [config_map("a", "101"), config_map("b", "102")];
    let list_meta = ListMeta {
        resource_version: "123".into(),
        continue_: "next-page".into(),
        remaining_item_count: Some(5),
    };
    let table = build_table(
        convertor_for("", "ConfigMap"),
        &items,
        list_meta,
        &TableOptions::default(),
        now(),
    );
    let text = String::from_utf8(table.to_vec()).unwrap();
    let columns = r#"[{"name":"Name","type":"string","format":"name","description":"Name of the object, unique among objects of its kind in its namespace.","priority":0},{"name":"Data","type":"string","format":"","description":"Number of keys in data and binaryData.","priority":0},{"name":"Age","type":"string","format":"","description":"Time elapsed since the object was created.","priority":0}]"#;
    let row = |name: &str, rv: &str| {
        format!(
            r#"{{"cells":["{name}",1,"2m"],"object":{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{"name":"{name}","namespace":"default","uid":"uid-{name}","resourceVersion":"{rv}","creationTimestamp":"2024-05-01T11:58:00Z","labels":{{"app":"web"}}}}}}}}"#
        )
    };
    let want = format!(
        r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"123","continue":"next-page","remainingItemCount":5}},"columnDefinitions":{columns},"rows":[{},{}]}}"#,
        row("a", "101"),
        row("b", "102")
    );
    assert_eq!(text, want);
}

#[test]
fn include_object_variants() {
    let obj = config_map("a", "7");
    let items = [obj.clone()];
    let convertor = convertor_for("", "ConfigMap");
    let object_of = |include_object| {
        let options = TableOptions {
            include_object,
            ..TableOptions::default()
        };
        let table = build_table(
            convertor,
            &items,
            ListMeta::from_object(&obj),
            &options,
            now(),
        );
        let value = table.to_value();
        assert_eq!(value["metadata"], json!({"resourceVersion": "7"}));
        let row = value["rows"][0].as_object().unwrap().clone();
        assert!(row.contains_key("object"), "object is always serialized");
        row["object"].clone()
    };
    assert_eq!(object_of(IncludeObject::Object), obj);
    assert_eq!(object_of(IncludeObject::None), Value::Null);
    assert_eq!(
        object_of(IncludeObject::Metadata),
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
    );
}

#[test]
fn partial_object_metadata_is_go_object_meta() {
    let obj = json!({
        "kind": "Secret",
        "metadata": {
            "managedFields": [{"manager": "kubectl"}],
            "finalizers": ["example.io/keep"],
            "name": "s",
            "labels": {},
            "annotations": {"a": "b"},
            "generateName": "",
            "generation": 0,
            "deletionTimestamp": "2024-05-01T12:00:00Z",
            "ownerReferences": [{"kind": "Deployment", "name": "d"}],
            "unknownField": "dropped",
            "resourceVersion": "9"
        }
    });
    let table = build_table(
        convertor_for("", "Secret"),
        [&obj],
        ListMeta::default(),
        &TableOptions::default(),
        now(),
    );
    let text = String::from_utf8(table.to_vec()).unwrap();
    let want_meta = r#""metadata":{"name":"s","resourceVersion":"9","creationTimestamp":null,"deletionTimestamp":"2024-05-01T12:00:00Z","annotations":{"a":"b"},"ownerReferences":[{"kind":"Deployment","name":"d"}],"finalizers":["example.io/keep"],"managedFields":[{"manager":"kubectl"}]}"#;
    assert!(text.contains(want_meta), "{text}");
    assert!(
        text.starts_with(r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"#),
        "{text}"
    );
}

#[test]
fn watch_events_after_the_first_have_null_column_definitions() {
    let obj = config_map("a", "8");
    let convertor = convertor_for("", "ConfigMap");
    let mut options = TableOptions::default();
    let first = build_table(
        convertor,
        [&obj],
        ListMeta::from_object(&obj),
        &options,
        now(),
    )
    .to_value();
    assert_eq!(first["columnDefinitions"].as_array().map(Vec::len), Some(3));
    options.no_headers = true;
    let later = build_table(
        convertor,
        [&obj],
        ListMeta::from_object(&obj),
        &options,
        now(),
    )
    .to_value();
    assert!(later.as_object().unwrap().contains_key("columnDefinitions"));
    assert_eq!(later["columnDefinitions"], Value::Null);
    assert_eq!(later["rows"].as_array().map(Vec::len), Some(1));

    // kube-aggregator's APIService convertor ignores NoHeaders.
    let api_service = json!({"metadata": {"name": "v1.apps"}});
    let table = build_table(
        convertor_for("apiregistration.k8s.io", "APIService"),
        [&api_service],
        ListMeta::default(),
        &options,
        now(),
    )
    .to_value();
    assert_eq!(table["columnDefinitions"].as_array().map(Vec::len), Some(4));
}

#[test]
fn row_conditions_are_serialized_only_when_present() {
    let done = json!({"metadata": {"name": "done"}, "spec": {"containers": [{"name": "c"}]},
                      "status": {"phase": "Succeeded"}});
    let running = json!({"metadata": {"name": "run"}, "spec": {"containers": [{"name": "c"}]},
                         "status": {"phase": "Running"}});
    let table = build_table(
        convertor_for("", "Pod"),
        [&done, &running],
        ListMeta::default(),
        &TableOptions::default(),
        now(),
    )
    .to_value();
    assert_eq!(
        table["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                "message": "The pod has completed successfully."}])
    );
    assert!(table["rows"][1].get("conditions").is_none());
}

#[test]
fn empty_list_and_v1beta1() {
    let options = TableOptions {
        version: TableVersion::V1Beta1,
        ..TableOptions::default()
    };
    let convertor = CustomColumnsConvertor::new(&[PrinterColumn::age()]);
    let table = build_table(&convertor, [], ListMeta::default(), &options, now());
    let text = String::from_utf8(table.to_vec()).unwrap();
    assert!(text.starts_with(r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{},"columnDefinitions":[{"name":"Name""#), "{text}");
    assert!(text.ends_with(r#""rows":[]}"#), "{text}");

    let obj = json!({"metadata": {"name": "x"}});
    let table = build_table(&convertor, [&obj], ListMeta::default(), &options, now()).to_value();
    assert_eq!(
        table["rows"][0]["object"]["apiVersion"],
        "meta.k8s.io/v1beta1"
    );
    assert_eq!(TableVersion::from_version("v1"), Some(TableVersion::V1));
    assert_eq!(
        TableVersion::from_version("v1beta1"),
        Some(TableVersion::V1Beta1)
    );
    assert_eq!(TableVersion::from_version("v2"), None);
}

#[test]
fn list_meta_from_list_and_object() {
    let list = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "55", "continue": "c1", "remainingItemCount": 2}});
    assert_eq!(
        ListMeta::from_list(&list),
        ListMeta {
            resource_version: "55".into(),
            continue_: "c1".into(),
            remaining_item_count: Some(2)
        }
    );
    assert_eq!(
        ListMeta::from_list(&json!({"items": []})),
        ListMeta::default()
    );
    assert_eq!(
        serde_json::to_string(&ListMeta::from_list(
            &json!({"metadata": {"resourceVersion": "1", "continue": ""}})
        ))
        .unwrap(),
        r#"{"resourceVersion":"1"}"#
    );
    assert_eq!(
        ListMeta::from_object(&config_map("a", "77")).resource_version,
        "77"
    );
}

#[test]
fn table_json_from_ready_rows() {
    let obj = config_map("a", "3");
    let columns = convertor_for("", "ConfigMap").columns();
    let rows = vec![TableRow {
        cells: vec![json!("a"), json!(1), json!("2m")],
        conditions: Vec::new(),
        object: &obj,
    }];
    let value = table_json(
        columns,
        rows.clone(),
        ListMeta::from_object(&obj),
        IncludeObject::None,
        false,
    );
    assert_eq!(
        value,
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "3"},
               "columnDefinitions": null, "rows": [{"cells": ["a", 1, "2m"], "object": null}]})
    );
    let value = table_json(
        columns,
        rows,
        ListMeta::default(),
        IncludeObject::Object,
        true,
    );
    assert_eq!(value["columnDefinitions"][1]["name"], "Data");
    assert_eq!(value["rows"][0]["object"], obj);
}
