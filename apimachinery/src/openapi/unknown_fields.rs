//! Unknown-field detection for the built-in kinds, as kube-apiserver's decoders do it:
//! built-in kinds are decoded into Go structs (sigs.k8s.io/json reports unknown fields by
//! path, e.g. `spec.template.spec.containers[0].foo`, and drops them). The shapes of the
//! built-in kinds come from the same k8s-openapi schemas the OpenAPI documents publish.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde_json::Value;

use super::builtin::{self, OBJECT_META, SCHEMA_REF_PREFIX};

/// Removes the fields the built-in kind's schema does not know from `obj` and returns their
/// paths, in the order kube reports them (`None` when the kind has no schema).
pub fn prune_kind(group: &str, version: &str, kind: &str, obj: &mut Value) -> Option<Vec<String>> {
    let id = shapes().kind(group, version, kind)?;
    let mut out = Vec::new();
    shapes().prune(obj, id, "", &mut out);
    Some(out)
}

/// Whether the built-in kind has a schema to decode it by.
pub fn has_kind(group: &str, version: &str, kind: &str) -> bool {
    shapes().kind(group, version, kind).is_some()
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
        };
        let names: Vec<String> = schemas.definitions.keys().cloned().collect();
        for name in names {
            s.named(&name);
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
        let name = builtin::schemas().kind_name(group, version, kind)?;
        self.by_name.get(name).copied()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    fn prune_kind(group: &str, version: &str, kind: &str, mut obj: Value) -> (Value, Vec<String>) {
        let out =
            super::prune_kind(group, version, kind, &mut obj).unwrap_or_else(|| panic!("{kind}"));
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
}
