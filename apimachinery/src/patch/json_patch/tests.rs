use serde_json::{Value, json};

use super::*;

/// The examples of RFC 6902 appendix A that apply (A.13, a duplicate member, cannot be
/// expressed once parsed).
#[test]
fn rfc6902_appendix_examples() {
    let cases: Vec<(&str, Value, Value, Option<Value>)> = vec![
        (
            "A.1 add an object member",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux"}]),
            Some(json!({"baz": "qux", "foo": "bar"})),
        ),
        (
            "A.2 add an array element",
            json!({"foo": ["bar", "baz"]}),
            json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
            Some(json!({"foo": ["bar", "qux", "baz"]})),
        ),
        (
            "A.3 remove an object member",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "remove", "path": "/baz"}]),
            Some(json!({"foo": "bar"})),
        ),
        (
            "A.4 remove an array element",
            json!({"foo": ["bar", "qux", "baz"]}),
            json!([{"op": "remove", "path": "/foo/1"}]),
            Some(json!({"foo": ["bar", "baz"]})),
        ),
        (
            "A.5 replace a value",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
            Some(json!({"baz": "boo", "foo": "bar"})),
        ),
        (
            "A.6 move a value",
            json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
            json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
            Some(json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})),
        ),
        (
            "A.7 move an array element",
            json!({"foo": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
            Some(json!({"foo": ["all", "cows", "eat", "grass"]})),
        ),
        (
            "A.8 test a value: success",
            json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            json!([
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ]),
            Some(json!({"baz": "qux", "foo": ["a", 2, "c"]})),
        ),
        (
            "A.9 test a value: error",
            json!({"baz": "qux"}),
            json!([{"op": "test", "path": "/baz", "value": "bar"}]),
            None,
        ),
        (
            "A.10 add a nested member object",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
            Some(json!({"foo": "bar", "child": {"grandchild": {}}})),
        ),
        (
            "A.11 ignore unrecognized elements",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
            Some(json!({"foo": "bar", "baz": "qux"})),
        ),
        (
            "A.12 add to a nonexistent target",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
            None,
        ),
        (
            "A.14 ~ escape ordering",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": 10}]),
            Some(json!({"/": 9, "~1": 10})),
        ),
        (
            "A.15 comparing strings and numbers",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": "10"}]),
            None,
        ),
        (
            "A.16 adding an array value",
            json!({"foo": ["bar"]}),
            json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
            Some(json!({"foo": ["bar", ["abc", "def"]]})),
        ),
    ];
    for (name, doc, patch, want) in cases {
        match (json_patch(&doc, &patch), want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{name}"),
            (Err(err), None) => assert_eq!(err.http_status(), 422, "{name}: {err}"),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

/// Behaviour of the library kube-apiserver uses where RFC 6902 would differ or is silent.
#[test]
fn library_quirks() {
    let doc = json!({"metadata": {"name": "c1", "labels": {"a": "1"}}, "list": [1, 2, 3]});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "replace of a missing key adds it",
            json!([{"op": "replace", "path": "/metadata/labels/b", "value": "2"}]),
            json!({"metadata": {"name": "c1", "labels": {"a": "1", "b": "2"}}, "list": [1, 2, 3]}),
        ),
        (
            "test of a missing key against null passes",
            json!([{"op": "test", "path": "/metadata/uid", "value": null}]),
            doc.clone(),
        ),
        (
            "negative index counts from the end",
            json!([{"op": "remove", "path": "/list/-1"}, {"op": "add", "path": "/list/-1", "value": 9}]),
            json!({"metadata": {"name": "c1", "labels": {"a": "1"}}, "list": [1, 2, 9]}),
        ),
        (
            "add without a value adds null",
            json!([{"op": "add", "path": "/spec"}]),
            json!({"metadata": {"name": "c1", "labels": {"a": "1"}}, "list": [1, 2, 3], "spec": null}),
        ),
        (
            "copy from a missing key copies null",
            json!([{"op": "copy", "from": "/nothing", "path": "/spec"}]),
            json!({"metadata": {"name": "c1", "labels": {"a": "1"}}, "list": [1, 2, 3], "spec": null}),
        ),
        (
            "escaped keys",
            json!([{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "web"}]),
            json!({"metadata": {"name": "c1", "labels": {"a": "1", "app.kubernetes.io/name": "web"}}, "list": [1, 2, 3]}),
        ),
        ("a null patch changes nothing", json!(null), doc.clone()),
        ("an empty patch changes nothing", json!([]), doc.clone()),
    ];
    for (name, patch, want) in cases {
        assert_eq!(json_patch(&doc, &patch).unwrap(), want, "{name}");
    }
}

#[test]
fn errors_and_their_statuses() {
    let doc = json!({"metadata": {"name": "c1", "resourceVersion": "7"}, "list": [1]});
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"op": "add"}),
            400,
            "cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (json!("x"), 400, "cannot unmarshal string"),
        (
            json!([1]),
            400,
            "cannot unmarshal number into Go value of type handlers.jsonPatchOp",
        ),
        (
            json!([{"op": 1, "path": "/a"}]),
            400,
            "jsonPatchOp.op of type string",
        ),
        (
            json!([{"op": "add", "path": ["a"]}]),
            400,
            "jsonPatchOp.path of type string",
        ),
        (
            json!([{"op": "frobnicate", "path": "/a"}]),
            422,
            "Unexpected kind: frobnicate",
        ),
        (json!([{"path": "/a"}]), 422, "Unexpected kind: unknown"),
        (
            json!([{"op": "add", "value": 1}]),
            422,
            "add operation failed to decode path: missing value",
        ),
        (
            json!([{"op": "move", "path": "/a"}]),
            422,
            "move operation failed to decode from",
        ),
        (
            json!([{"op": "remove", "path": "/spec/replicas"}]),
            422,
            "remove operation does not apply: doc is missing path: \"/spec/replicas\": missing value",
        ),
        (
            json!([{"op": "remove", "path": "/metadata/uid"}]),
            422,
            "error in remove for path: '/metadata/uid': Unable to remove nonexistent key: uid: missing value",
        ),
        (
            json!([{"op": "replace", "path": "/list/5", "value": 1}]),
            422,
            "replace operation does not apply: doc is missing key: /list/5: missing value",
        ),
        (
            json!([{"op": "add", "path": "/list/x", "value": 1}]),
            422,
            "value was not a proper array index: 'x'",
        ),
        (
            json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "6"}]),
            422,
            "testing value /metadata/resourceVersion failed: test failed",
        ),
    ];
    for (patch, status, text) in cases {
        let err = json_patch(&doc, &patch).unwrap_err();
        assert_eq!(err.http_status(), status, "{patch}: {err}");
        assert!(err.to_string().contains(text), "{patch}: {err}");
    }
}

#[test]
fn operation_limit() {
    let doc = json!({"a": 1});
    let op = json!({"op": "test", "path": "/a", "value": 1});
    let at_limit = Value::Array(vec![op.clone(); MAX_JSON_PATCH_OPERATIONS]);
    assert_eq!(json_patch(&doc, &at_limit).unwrap(), doc);
    let over = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1]);
    let err = json_patch(&doc, &over).unwrap_err();
    assert_eq!(err.http_status(), 413);
    assert_eq!(err.reason(), "RequestEntityTooLarge");
    assert_eq!(
        err.status_message(),
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

/// The patch kubectl sends after `apply --server-side` to hand client-side-apply ownership over
/// (`csaupgrade.UpgradeManagedFieldsPatch`): a resourceVersion precondition, then the rewrite.
#[test]
fn kubectl_managed_fields_upgrade_patch() {
    let live = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c1", "resourceVersion": "12", "managedFields": [
            {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
             "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
        ]},
        "data": {"a": "1"},
    });
    let upgraded = json!([
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
         "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
    ]);
    let patch = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": "12"},
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
    ]);
    let patched = json_patch(&live, &patch).unwrap();
    assert_eq!(patched["metadata"]["managedFields"], upgraded);

    let stale = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": "11"},
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
    ]);
    assert_eq!(json_patch(&live, &stale).unwrap_err().http_status(), 422);
}
