//! Unknown-field detection and pruning for `fieldValidation`, as kube-apiserver's decoders do
//! it: built-in kinds are decoded into Go structs (sigs.k8s.io/json reports unknown fields
//! by path, e.g. `spec.template.spec.containers[0].foo`, and drops them), custom resources
//! are pruned by their CRD's structural schema, and Karmada's kinds (served as CRDs) are
//! checked against the api crate's schemas.
//!
//! The shapes of the built-in kinds come from the same k8s-openapi schemas the OpenAPI
//! documents publish.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde_json::Value;

use crate::openapi::builtin::{self, OBJECT_META, SCHEMA_REF_PREFIX};
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;

/// Removes fields the kind's schema does not know and returns their paths, in the order kube
/// reports them.
pub fn prune_unknown(_state: &ApiState, def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    match &def.source {
        Source::BuiltIn => match shapes().kind(&def.group, &def.version, &def.kind) {
            Some(id) => {
                let mut out = Vec::new();
                shapes().prune(obj, id, "", &mut out);
                out
            }
            None => Vec::new(),
        },
        Source::Karmada => {
            let mut out = match obj.get_mut("metadata") {
                Some(meta) => prune_object_meta(meta, "metadata"),
                None => Vec::new(),
            };
            // Karmada's admission re-encodes the typed object, which prunes; here we only
            // report.
            out.extend(karmada_api::schema::unknown_fields_at(
                &def.version,
                &def.kind,
                obj,
            ));
            out
        }
        Source::Custom(_) => crate::crd::prune_custom_resource(def, obj),
    }
}

/// What kube answers when a non-apply patch leaves unknown fields and `fieldValidation` is
/// `Strict` (handlers/patch.go): 422 with the patched object (JSON and merge patches) or the
/// patch map (strategic merge patches, Go's `%+v`) as the invalid value of field `patch`.
pub fn strict_patch_error(
    strategic: bool,
    patch: &Value,
    patched: &Value,
    unknown: &[String],
) -> crate::error::ApiError {
    let shown = if strategic {
        go_plus_v(patch)
    } else {
        serde_json::to_string(patched).unwrap_or_default()
    };
    let list: Vec<String> = unknown
        .iter()
        .map(|u| format!("unknown field \"{u}\""))
        .collect();
    crate::error::ApiError::invalid(
        "",
        "",
        "",
        vec![crate::error::Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: strict decoding error: {}",
                crate::crd::go_quote(&shown),
                list.join(", ")
            ),
            field: "patch".into(),
        }],
    )
}

/// Go's `%+v` of a decoded JSON value (`map[a:1 b:[x y]]`).
fn go_plus_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n
            .as_i64()
            .map(|i| i.to_string())
            .unwrap_or_else(|| crate::crd::go_float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_plus_v).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_plus_v(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}

/// Prunes unknown fields of an ObjectMeta value; paths are prefixed with `prefix`
/// (`metadata`, `spec.template.metadata`).
pub fn prune_object_meta(meta: &mut Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(id) = shapes().by_name.get(OBJECT_META) {
        shapes().prune(meta, *id, prefix, &mut out);
    }
    out
}

/// How a decoded value is walked.
#[derive(Debug, Clone)]
enum Shape {
    /// Anything goes (raw JSON, free-form objects, int-or-string).
    Any,
    /// A scalar.
    Scalar,
    /// A Go struct: unknown keys are unknown fields.
    Struct(BTreeMap<String, usize>),
    /// A `map[string]T`.
    Map(usize),
    /// A slice.
    List(usize),
    /// A value that is an object of one shape or an array of another.
    Either {
        object: Option<usize>,
        array: Option<usize>,
    },
}

/// The compiled shapes of every built-in component schema.
struct Shapes {
    nodes: Vec<Shape>,
    by_name: HashMap<String, usize>,
    kinds: HashMap<(String, String, String), usize>,
}

fn shapes() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES.get_or_init(Shapes::build)
}

fn ref_target(v: &Value) -> Option<&str> {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return r.strip_prefix(SCHEMA_REF_PREFIX);
    }
    match v.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([only]) => ref_target(only),
        _ => None,
    }
}

impl Shapes {
    fn build() -> Shapes {
        let schemas = builtin::schemas();
        let mut s = Shapes {
            nodes: Vec::new(),
            by_name: HashMap::new(),
            kinds: HashMap::new(),
        };
        let names: Vec<String> = schemas.definitions.keys().cloned().collect();
        for name in names {
            s.named(&name);
        }
        for (key, name) in schemas_kinds() {
            if let Some(id) = s.by_name.get(&name) {
                s.kinds.insert(key, *id);
            }
        }
        s
    }

    fn push(&mut self, shape: Shape) -> usize {
        self.nodes.push(shape);
        self.nodes.len() - 1
    }

    fn named(&mut self, name: &str) -> usize {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let id = self.push(Shape::Any);
        self.by_name.insert(name.to_string(), id);
        if let Some(def) = builtin::schemas().definitions.get(name) {
            let shape = self.shape(def);
            self.nodes[id] = shape;
        }
        id
    }

    fn node(&mut self, v: &Value) -> usize {
        match ref_target(v) {
            Some(name) => self.named(name),
            None => {
                let shape = self.shape(v);
                self.push(shape)
            }
        }
    }

    fn shape(&mut self, v: &Value) -> Shape {
        if let Some(name) = ref_target(v) {
            let id = self.named(name);
            return self.nodes[id].clone();
        }
        if v.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Shape::Any;
        }
        if let Some(alternatives) = v.get("oneOf").and_then(Value::as_array) {
            let mut object = None;
            let mut array = None;
            for alt in alternatives {
                match alt.get("type").and_then(Value::as_str) {
                    Some("array") => array = Some(self.node(alt)),
                    Some("object") | None
                        if ref_target(alt).is_some() || alt.get("properties").is_some() =>
                    {
                        object = Some(self.node(alt))
                    }
                    _ => {}
                }
            }
            return Shape::Either { object, array };
        }
        match v.get("type").and_then(Value::as_str) {
            Some("object") => {
                if let Some(props) = v.get("properties").and_then(Value::as_object) {
                    let props: Vec<(String, Value)> =
                        props.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    let fields = props.into_iter().map(|(k, p)| (k, self.node(&p))).collect();
                    Shape::Struct(fields)
                } else if let Some(ap) = v.get("additionalProperties").filter(|a| a.is_object()) {
                    let ap = ap.clone();
                    Shape::Map(self.node(&ap))
                } else {
                    Shape::Any
                }
            }
            Some("array") => match v.get("items") {
                Some(items) => {
                    let items = items.clone();
                    Shape::List(self.node(&items))
                }
                None => Shape::Any,
            },
            Some(_) => Shape::Scalar,
            None => Shape::Any,
        }
    }

    fn kind(&self, group: &str, version: &str, kind: &str) -> Option<usize> {
        self.kinds
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
            .copied()
    }

    fn prune(&self, v: &mut Value, id: usize, path: &str, out: &mut Vec<String>) {
        let Some(shape) = self.nodes.get(id) else {
            return;
        };
        let key_path = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match (shape, v) {
            (Shape::Struct(fields), Value::Object(m)) => {
                let mut unknown = Vec::new();
                for (k, x) in m.iter_mut() {
                    match fields.get(k) {
                        Some(f) => self.prune(x, *f, &key_path(k), out),
                        None => {
                            out.push(key_path(k));
                            unknown.push(k.clone());
                        }
                    }
                }
                for k in unknown {
                    m.remove(&k);
                }
            }
            (Shape::Map(elem), Value::Object(m)) => {
                for (k, x) in m.iter_mut() {
                    self.prune(x, *elem, &key_path(k), out);
                }
            }
            (Shape::List(elem), Value::Array(items)) => {
                for (i, x) in items.iter_mut().enumerate() {
                    self.prune(x, *elem, &format!("{path}[{i}]"), out);
                }
            }
            (
                Shape::Either {
                    object: Some(o), ..
                },
                v @ Value::Object(_),
            ) => self.prune(v, *o, path, out),
            (Shape::Either { array: Some(a), .. }, v @ Value::Array(_)) => {
                self.prune(v, *a, path, out)
            }
            _ => {}
        }
    }
}

fn schemas_kinds() -> Vec<((String, String, String), String)> {
    crate::resources::built_in()
        .into_iter()
        .filter_map(|d| {
            builtin::schemas()
                .kind_name(&d.group, &d.version, &d.kind)
                .map(|n| {
                    (
                        (d.group.clone(), d.version.clone(), d.kind.clone()),
                        n.to_string(),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prune_kind(group: &str, version: &str, kind: &str, mut obj: Value) -> (Value, Vec<String>) {
        let id = shapes()
            .kind(group, version, kind)
            .unwrap_or_else(|| panic!("{kind}"));
        let mut out = Vec::new();
        shapes().prune(&mut obj, id, "", &mut out);
        (obj, out)
    }

    /// Group, version, kind, input, pruned, unknown paths.
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        Value,
        Value,
        Vec<&'static str>,
    );

    #[test]
    fn builtin_unknown_fields() {
        let cases: Vec<Case> = vec![
            (
                "",
                "v1",
                "ConfigMap",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}, "foo": 1}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}),
                vec!["foo"],
            ),
            (
                "apps",
                "v1",
                "Deployment",
                json!({"metadata": {"name": "d", "labels": {"a": "b"}, "bogus": true},
                       "spec": {"replicas": 1, "foo": "x",
                                "selector": {"matchLabels": {"a": "b"}},
                                "template": {"metadata": {"labels": {"a": "b"}},
                                             "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always", "bad": 1,
                                                                      "resources": {"limits": {"cpu": "1"}},
                                                                      "ports": [{"containerPort": 80, "x": 1}]}]}},
                                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}}),
                json!({"metadata": {"name": "d", "labels": {"a": "b"}},
                       "spec": {"replicas": 1,
                                "selector": {"matchLabels": {"a": "b"}},
                                "template": {"metadata": {"labels": {"a": "b"}},
                                             "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always",
                                                                      "resources": {"limits": {"cpu": "1"}},
                                                                      "ports": [{"containerPort": 80}]}]}},
                                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}}),
                vec![
                    "metadata.bogus",
                    "spec.foo",
                    "spec.template.spec.containers[0].bad",
                    "spec.template.spec.containers[0].ports[0].x",
                ],
            ),
            (
                "",
                "v1",
                "Secret",
                json!({"metadata": {"name": "s", "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {".": {}}}}]},
                       "data": {"k": "dg=="}, "stringData": {"x": "y"}, "type": "Opaque"}),
                json!({"metadata": {"name": "s", "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {".": {}}}}]},
                       "data": {"k": "dg=="}, "stringData": {"x": "y"}, "type": "Opaque"}),
                vec![],
            ),
            (
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                json!({"spec": {"group": "g", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced",
                       "versions": [{"name": "v1", "served": true, "storage": true, "x": 1,
                         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                           "properties": {"spec": {"type": "object", "default": {"a": 1}, "items": {"type": "string"}}}}}}]}}),
                json!({"spec": {"group": "g", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced",
                       "versions": [{"name": "v1", "served": true, "storage": true,
                         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                           "properties": {"spec": {"type": "object", "default": {"a": 1}, "items": {"type": "string"}}}}}}]}}),
                vec!["spec.versions[0].x"],
            ),
        ];
        for (g, v, k, input, want, paths) in cases {
            let (got, unknown) = prune_kind(g, v, k, input);
            assert_eq!(got, want, "{k}");
            assert_eq!(unknown, paths, "{k}");
        }
    }

    #[test]
    fn object_meta_of_embedded_objects() {
        let mut meta = json!({"name": "a", "ownerReferences": [{"uid": "u", "name": "n", "kind": "K", "apiVersion": "v1", "nope": 1}], "x": {}});
        let got = prune_object_meta(&mut meta, "spec.template.metadata");
        assert_eq!(
            got,
            vec![
                "spec.template.metadata.ownerReferences[0].nope",
                "spec.template.metadata.x"
            ]
        );
        assert_eq!(
            meta,
            json!({"name": "a", "ownerReferences": [{"uid": "u", "name": "n", "kind": "K", "apiVersion": "v1"}]})
        );
    }

    #[test]
    fn strict_patch_errors() {
        let e = strict_patch_error(
            true,
            &json!({"spec": {"foo": 1, "replicas": 2}}),
            &json!({}),
            &["spec.foo".to_string()],
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[foo:1 replicas:2]]\": strict decoding error: unknown field \"spec.foo\""
        );
        let e = strict_patch_error(
            false,
            &json!({}),
            &json!({"a": {"b": 1}}),
            &["a.b".to_string()],
        );
        assert!(
            e.message
                .contains("Invalid value: \"{\\\"a\\\":{\\\"b\\\":1}}\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn every_served_builtin_kind_has_a_shape() {
        for d in crate::resources::built_in() {
            assert!(
                shapes().kind(&d.group, &d.version, &d.kind).is_some(),
                "{}",
                d.kind
            );
        }
    }
}
