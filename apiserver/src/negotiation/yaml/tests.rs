//! Expected outputs from goyaml.v2's own tests (`encode_test.go` of sigs.k8s.io/yaml v1.4.0,
//! the cases a JSON document can produce) and kube-apiserver's YAML of Kubernetes objects.

use serde_json::json;

use super::*;

fn yaml(v: Value) -> String {
    String::from_utf8(to_yaml(&v)).unwrap()
}

#[test]
fn goyaml_marshal_cases() {
    let cases: Vec<(Value, &str)> = vec![
        (json!(null), "null\n"),
        (json!({}), "{}\n"),
        (json!({"v": "hi"}), "v: hi\n"),
        (json!({"v": "true"}), "v: \"true\"\n"),
        (json!({"v": "false"}), "v: \"false\"\n"),
        (json!({"v": true}), "v: true\n"),
        (json!({"v": false}), "v: false\n"),
        (json!({"v": 10}), "v: 10\n"),
        (json!({"v": -10}), "v: -10\n"),
        (json!({"v": 4294967296u64}), "v: 4294967296\n"),
        (json!({"v": "10"}), "v: \"10\"\n"),
        (json!({"v": 0.1}), "v: 0.1\n"),
        (json!({"v": -0.1}), "v: -0.1\n"),
        (json!({"v": null}), "v: null\n"),
        (json!({"v": ""}), "v: \"\"\n"),
        (json!({"v": ["A", "B"]}), "v:\n- A\n- B\n"),
        (json!({"v": ["A", "B\nC"]}), "v:\n- A\n- |-\n  B\n  C\n"),
        (
            json!({"v": ["A", 1, {"B": [2, 3]}]}),
            "v:\n- A\n- 1\n- B:\n  - 2\n  - 3\n",
        ),
        (json!({"a": {"b": "c"}}), "a:\n  b: c\n"),
        (json!({"a": "-"}), "a: '-'\n"),
        (json!(123), "123\n"),
        (json!({"a": [1, 2]}), "a:\n- 1\n- 2\n"),
        (json!({"a": "<foo>"}), "a: <foo>\n"),
        (json!({"a": "1:1"}), "a: \"1:1\"\n"),
        (json!({"a": "\u{0}"}), "a: \"\\0\"\n"),
        (json!({"a": "你好"}), "a: 你好\n"),
        (
            json!({"a": "2015-02-24T18:19:39Z"}),
            "a: \"2015-02-24T18:19:39Z\"\n",
        ),
        (json!({"a": "b: c"}), "a: 'b: c'\n"),
        (json!({"a": "Hello #comment"}), "a: 'Hello #comment'\n"),
        (json!({"a": "你好 #comment"}), "a: '你好 #comment'\n"),
        (json!({"a": 100.5}), "a: 100.5\n"),
        (json!({"a": "bogus"}), "a: bogus\n"),
    ];
    for (value, want) in cases {
        assert_eq!(yaml(value.clone()), want, "{value}");
    }
}

#[test]
fn goyaml_line_wrapping() {
    let v = json!({"a": "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 "});
    assert_eq!(
        yaml(v),
        "a: 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz\n  ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 '\n"
    );
    // Plain scalars fold the same way.
    let words = "word ".repeat(20);
    let v = json!({"description": words.trim_end()});
    let out = yaml(v);
    assert!(out.starts_with("description: word word"), "{out}");
    assert!(out.lines().count() > 1, "{out}");
    let back: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
    assert_eq!(back["description"].as_str(), Some(words.trim_end()));
}

#[test]
fn goyaml_sorted_keys() {
    // TestSortedOutput's string keys, in the order goyaml writes them.
    let order = [
        "", ".1", ".2", ".a", "1", "2", "a!10", "a/0001", "a/002", "a/3", "a/10", "a/11", "a/0012",
        "a/100", "a~10", "ab/1", "b/1", "b/01", "b/2", "b/02", "b/3", "b/03", "b1", "b01", "b3",
        "c2.10", "c10.2", "d1", "d7", "d7abc", "d12", "d12a",
    ];
    let map: serde_json::Map<String, Value> =
        order.iter().map(|k| (k.to_string(), json!(1))).collect();
    let out = yaml(Value::Object(map));
    let keys: Vec<String> = out
        .lines()
        .map(|l| l.rsplit_once(": ").unwrap().0.trim_matches('"').to_string())
        .collect();
    assert_eq!(keys, order);
}

#[test]
fn scalar_styles() {
    let cases: Vec<(&str, &str)> = vec![
        ("yes", "\"yes\""),
        ("On", "\"On\""),
        ("~", "\"~\""),
        ("0x1F", "\"0x1F\""),
        ("1_000", "\"1_000\""),
        ("1e3", "\"1e3\""),
        (".5", "\".5\""),
        ("2024-01-02", "\"2024-01-02\""),
        ("2024-13-02", "2024-13-02"),
        ("12:30", "\"12:30\""),
        ("1.2.3", "1.2.3"),
        ("*", "'*'"),
        ("it's", "it's"),
        ("'quoted'", "'''quoted'''"),
        (" lead", "' lead'"),
        ("tab\there", "\"tab\\there\""),
        ("emoji 😀", "\"emoji \\U0001F600\""),
        ("10.96.0.1", "10.96.0.1"),
        ("nginx:1.25", "nginx:1.25"),
        ("-x", "-x"),
        ("- x", "'- x'"),
        ("a\u{85}b", "\"a\\Nb\""),
    ];
    for (s, want) in cases {
        assert_eq!(yaml(json!({"k": s})), format!("k: {want}\n"), "{s:?}");
    }
    // Multi-line strings: literal blocks with their chomping.
    assert_eq!(yaml(json!({"k": "a\nb\n"})), "k: |\n  a\n  b\n");
    assert_eq!(yaml(json!({"k": "a\n\n"})), "k: |+\n  a\n\n");
    assert_eq!(yaml(json!({"k": " a\nb"})), "k: |2-\n   a\n  b\n");
    // A trailing space rules out a block: double-quoted, newlines escaped.
    assert_eq!(yaml(json!({"k": "a \nb"})), "k: \"a \\nb\"\n");
    // Keys are scalars too.
    assert_eq!(yaml(json!({"true": 1, "a b": 2})), "a b: 2\n\"true\": 1\n");
    // A multi-line key is not a simple key: `? ` and a literal block.
    assert_eq!(yaml(json!({"a\nb": 1})), "? |-\n  a\n  b\n: 1\n");
    // Floats as Go's %g prints them.
    assert_eq!(yaml(json!({"k": 5.0})), "k: 5\n");
    assert_eq!(yaml(json!({"k": 1234567.5})), "k: 1.2345675e+06\n");
    assert_eq!(yaml(json!({"k": 0.00001})), "k: 1e-05\n");
}

#[test]
fn kubernetes_objects() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "default", "uid": "8e3b8c1a-4b1f-4d5e-9c1a-2b3c4d5e6f70",
            "resourceVersion": "12", "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "web"}, "annotations": {"note": "multi\nline"}},
        "data": {"port": "8080", "empty": "", "list": "[a, b]"}});
    assert_eq!(
        yaml(cm),
        "apiVersion: v1
data:
  empty: \"\"
  list: '[a, b]'
  port: \"8080\"
kind: ConfigMap
metadata:
  annotations:
    note: |-
      multi
      line
  creationTimestamp: \"2024-01-02T03:04:05Z\"
  labels:
    app: web
  name: cm
  namespace: default
  resourceVersion: \"12\"
  uid: 8e3b8c1a-4b1f-4d5e-9c1a-2b3c4d5e6f70
"
    );
    let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
        "items": [{"metadata": {"name": "a"}, "data": {}}, {"metadata": {"name": "b", "finalizers": []}}]});
    assert_eq!(
        yaml(list),
        "apiVersion: v1
items:
- data: {}
  metadata:
    name: a
- metadata:
    finalizers: []
    name: b
kind: ConfigMapList
metadata:
  resourceVersion: \"5\"
"
    );
    // Nested sequences indent under their dash.
    assert_eq!(yaml(json!([[1, 2], []])), "- - 1\n  - 2\n- []\n");
}

#[test]
fn output_reads_back_as_the_same_document() {
    let v = json!({"a": ["x: y", "#c", "@at", "%p", "&r", "!t", "|", ">", "`b"],
        "b": {"c": [{"d": "e", "f": ["g", {"h": null}]}]}, "long key ".repeat(20): "v",
        "quote\"back\\slash": "it's \"q\"", "ctrl": "\u{1}\u{7f}\u{9f}", "bom": "\u{feff}x"});
    let out = to_yaml(&v);
    let back: serde_json::Value = serde_yaml::from_slice(&out).unwrap();
    assert_eq!(back, v, "{}", String::from_utf8_lossy(&out));
}
