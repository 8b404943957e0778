//! The OpenAPI v2 (Swagger 2.0) document of `/openapi/v2`, as kube-apiserver serves it: one
//! document with every group-version's paths and `definitions`, built from the same
//! group-version documents as v3 ([`super::document`], built for
//! [`Flavor::V2`](super::document::Flavor::V2)) and
//! converted the way kube-openapi's v2 builder writes them: references point into
//! `#/definitions/`, a described reference is a `$ref` with a sibling description, parameters
//! and bodies carry their types inline, and nothing v2 cannot say (`oneOf`, `anyOf`, `not`,
//! `nullable`) or kube strips (`default`: kube-openapi's `PruneDefaults`) remains.
//!
//! kubectl reads this document to validate objects OpenAPI v3 does not describe (every item
//! of a `kind: List`), for `kubectl explain --output plaintext-openapiv2`, and to compute
//! `kubectl apply` patches of built-in kinds from their `x-kubernetes-patch-*` extensions.

use serde_json::{Map, Value, json};

use apimachinery::openapi::builtin::SCHEMA_REF_PREFIX;

/// Where definitions live in a v2 document.
pub const DEFINITIONS_REF_PREFIX: &str = "#/definitions/";

/// Go types with custom JSON whose v2 schema kube-openapi takes from their
/// `OpenAPISchemaType`/`OpenAPISchemaFormat` methods rather than their v3 one-of types:
/// definition, type, format.
const CUSTOM_TYPES: &[(&str, Option<&str>, Option<&str>)] = &[
    (
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        Some("string"),
        Some("int-or-string"),
    ),
    (
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        Some("string"),
        None,
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        None,
        None,
    ),
];

fn v2_ref(r: &str) -> String {
    match r.strip_prefix(SCHEMA_REF_PREFIX) {
        Some(name) => format!("{DEFINITIONS_REF_PREFIX}{name}"),
        None => r.to_string(),
    }
}

/// One schema of a v3 document as v2 writes it.
pub fn schema(v: &Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    // A described reference: v3 wraps it in `allOf`, v2 keeps the description beside `$ref`.
    if let Some(Value::Array(all_of)) = m.get("allOf")
        && let [only] = all_of.as_slice()
        && let Some(r) = only.get("$ref").and_then(Value::as_str)
        && !m.contains_key("$ref")
    {
        out.insert("$ref".into(), json!(v2_ref(r)));
    }
    for (k, x) in m {
        match k.as_str() {
            "$ref" => {
                out.insert(k.clone(), json!(v2_ref(x.as_str().unwrap_or_default())));
            }
            "properties" => {
                let props = x
                    .as_object()
                    .map(|p| p.iter().map(|(n, s)| (n.clone(), schema(s))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(k.clone(), schema(x));
            }
            "allOf" | "oneOf" | "anyOf" | "not" | "nullable" | "default" | "writeOnly"
            | "deprecated" => {}
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    if !out.contains_key("items") && out.get("type").and_then(Value::as_str) == Some("array") {
        out.remove("type");
    }
    Value::Object(out)
}

/// A named definition: [`schema`], plus the v2 types of Go types with custom JSON.
fn definition(name: &str, v: &Value) -> Value {
    let mut out = schema(v);
    if let Some((_, type_, format)) = CUSTOM_TYPES.iter().find(|(n, _, _)| *n == name)
        && let Value::Object(m) = &mut out
    {
        m.remove("x-kubernetes-int-or-string");
        for (key, value) in [("type", type_), ("format", format)] {
            match value {
                Some(s) => m.insert(key.into(), json!(s)),
                None => m.remove(key),
            };
        }
    }
    out
}

/// A v3 parameter (`schema` holding its type) as a v2 one (type inline).
fn parameter(p: &Value) -> Value {
    let Value::Object(m) = p else {
        return p.clone();
    };
    let mut out = Map::new();
    for (k, x) in m {
        if k == "schema" {
            if let Value::Object(s) = x {
                for (sk, sv) in s {
                    out.insert(sk.clone(), sv.clone());
                }
            }
        } else {
            out.insert(k.clone(), x.clone());
        }
    }
    Value::Object(out)
}

fn parameters(v: &Value) -> Vec<Value> {
    v.as_array()
        .map(|a| a.iter().map(parameter).collect())
        .unwrap_or_default()
}

/// A v3 operation as v2 writes it: the request body becomes the `body` parameter, media
/// types become `consumes` and `produces`, responses name their schema directly.
fn operation(op: &Value) -> Value {
    let Value::Object(m) = op else {
        return op.clone();
    };
    let mut out = Map::new();
    let mut params = m.get("parameters").map(parameters).unwrap_or_default();
    let mut consumes: Vec<String> = Vec::new();
    if let Some(body) = m.get("requestBody") {
        let content = body.get("content").and_then(Value::as_object);
        consumes.extend(content.into_iter().flat_map(|c| c.keys().cloned()));
        let body_schema = content
            .and_then(|c| c.values().find_map(|t| t.get("schema")))
            .map(schema)
            .unwrap_or_else(|| json!({}));
        params.insert(
            0,
            json!({
                "name": "body",
                "in": "body",
                "required": body.get("required").and_then(Value::as_bool).unwrap_or(false),
                "schema": body_schema,
            }),
        );
    }
    if consumes.is_empty() {
        consumes.push("*/*".into());
    }
    let mut produces: Vec<String> = Vec::new();
    let mut responses = Map::new();
    if let Some(Value::Object(rs)) = m.get("responses") {
        for (code, r) in rs {
            let mut resp = Map::new();
            if let Some(d) = r.get("description") {
                resp.insert("description".into(), d.clone());
            }
            if let Some(Value::Object(content)) = r.get("content") {
                for (media, t) in content {
                    if !produces.contains(media) {
                        produces.push(media.clone());
                    }
                    if let Some(s) = t.get("schema")
                        && !resp.contains_key("schema")
                    {
                        resp.insert("schema".into(), schema(s));
                    }
                }
            }
            responses.insert(code.clone(), Value::Object(resp));
        }
    }
    for (k, x) in m {
        match k.as_str() {
            "parameters" | "requestBody" | "responses" => {}
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    out.insert("consumes".into(), json!(consumes));
    out.insert("produces".into(), json!(produces));
    out.insert("schemes".into(), json!(["https"]));
    out.insert("parameters".into(), json!(params));
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

fn path_item(item: &Value) -> Value {
    let Value::Object(m) = item else {
        return item.clone();
    };
    let out = m
        .iter()
        .map(|(k, x)| {
            let v = match k.as_str() {
                "parameters" => Value::Array(parameters(x)),
                "get" | "put" | "post" | "delete" | "options" | "head" | "patch" => operation(x),
                _ => x.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(out)
}

/// The document being assembled from group-version documents built for
/// [`Flavor::V2`](super::document::Flavor::V2); the first of equally named paths or
/// definitions is kept, as kube's merge keeps the first spec's (the shared built-in
/// definitions are the same in every group-version).
#[derive(Debug, Default)]
pub struct Swagger {
    paths: Map<String, Value>,
    definitions: Map<String, Value>,
    parameters: Map<String, Value>,
}

impl Swagger {
    /// Adds a group-version's paths and definitions.
    pub fn add(&mut self, v3: &Value) {
        for (k, x) in v3
            .get("paths")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !self.paths.contains_key(k) {
                self.paths.insert(k.clone(), path_item(x));
            }
        }
        let schemas = v3.pointer("/components/schemas").and_then(Value::as_object);
        for (k, x) in schemas.into_iter().flatten() {
            if !self.definitions.contains_key(k) {
                self.definitions.insert(k.clone(), definition(k, x));
            }
        }
    }

    /// Merges an aggregated API server's v2 document as kube-aggregator does: only its
    /// `/apis/` paths and what they refer to (`FilterSpecByPathsWithoutSideEffects`), a path
    /// already present is kept, and a definition or shared parameter whose name is taken by a
    /// different one is renamed `NAME_v2` (`_v3`, ...) with the references to it
    /// (`MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`).
    pub fn merge(&mut self, spec: &Value) {
        let paths: Vec<(&String, &Value)> = spec
            .get("paths")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("/apis/"))
            .collect();
        let empty = Map::new();
        let their_defs = spec
            .get("definitions")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let their_params = spec
            .get("parameters")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut wanted = std::collections::BTreeSet::new();
        let mut pending: Vec<String> = Vec::new();
        for (_, item) in &paths {
            references(item, &mut pending);
        }
        while let Some(r) = pending.pop() {
            if !wanted.insert(r.clone()) {
                continue;
            }
            if let Some(d) = r
                .strip_prefix(DEFINITIONS_REF_PREFIX)
                .and_then(|n| their_defs.get(n))
            {
                references(d, &mut pending);
            }
            if let Some(p) = r
                .strip_prefix(PARAMETERS_REF_PREFIX)
                .and_then(|n| their_params.get(n))
            {
                references(p, &mut pending);
            }
        }
        let mut renames: std::collections::HashMap<String, String> = Default::default();
        let mut added: Vec<(bool, String, &Value)> = Vec::new();
        for r in &wanted {
            let (prefix, theirs, ours, is_definition) = match r.strip_prefix(DEFINITIONS_REF_PREFIX)
            {
                Some(_) => (DEFINITIONS_REF_PREFIX, their_defs, &self.definitions, true),
                None => (PARAMETERS_REF_PREFIX, their_params, &self.parameters, false),
            };
            let Some(name) = r.strip_prefix(prefix) else {
                continue;
            };
            let Some(value) = theirs.get(name) else {
                continue;
            };
            let mut new_name = name.to_string();
            let mut n = 2;
            while ours.get(&new_name).is_some_and(|v| v != value) {
                new_name = format!("{name}_v{n}");
                n += 1;
            }
            if new_name != name {
                renames.insert(r.clone(), format!("{prefix}{new_name}"));
            }
            if !ours.contains_key(&new_name) {
                added.push((is_definition, new_name, value));
            }
        }
        for (is_definition, name, value) in added {
            let mut value = value.clone();
            rename_references(&mut value, &renames);
            let into = if is_definition {
                &mut self.definitions
            } else {
                &mut self.parameters
            };
            into.insert(name, value);
        }
        for (k, item) in paths {
            if !self.paths.contains_key(k) {
                let mut item = item.clone();
                rename_references(&mut item, &renames);
                self.paths.insert(k.clone(), item);
            }
        }
    }

    /// The whole document.
    pub fn finish(self) -> Value {
        let mut doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": super::document::INFO_VERSION},
            "paths": self.paths,
            "definitions": self.definitions,
            "securityDefinitions": {
                "BearerToken": {"type": "apiKey", "description": "Bearer Token authentication",
                                "name": "authorization", "in": "header"}
            },
            "security": [{"BearerToken": []}],
        });
        if !self.parameters.is_empty() {
            doc["parameters"] = Value::Object(self.parameters);
        }
        doc
    }
}

/// Where shared parameters live in a v2 document.
const PARAMETERS_REF_PREFIX: &str = "#/parameters/";

/// Adds every `$ref` under `v` to `out`.
fn references(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => references(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| references(x, out)),
        _ => {}
    }
}

/// Rewrites the `$ref`s under `v` that `renames` maps.
fn rename_references(v: &mut Value, renames: &std::collections::HashMap<String, String>) {
    if renames.is_empty() {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    Value::String(r) if k == "$ref" => {
                        if let Some(new) = renames.get(r.as_str()) {
                            *r = new.clone();
                        }
                    }
                    _ => rename_references(x, renames),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename_references(x, renames)),
        _ => {}
    }
}

/// The v2 document's tests, and the check kubectl's reader runs (test support the server's
/// document tests share; not used at run time).
#[doc(hidden)]
pub mod tests {
    use super::*;

    /// The rules kube-openapi's v2 reader (`proto.NewOpenAPIData`, which kubectl runs on the
    /// whole document before validating or explaining anything) enforces on each schema: a
    /// reference resolves into the definitions and has no type or properties beside it, one
    /// type at most, an array has exactly one item schema, a primitive type is known.
    pub fn kubectl_parse_errors(definitions: &Map<String, Value>) -> Vec<String> {
        fn check(defs: &Map<String, Value>, s: &Value, path: &str, errs: &mut Vec<String>) {
            let Some(m) = s.as_object() else {
                errs.push(format!("{path}: not an object"));
                return;
            };
            if let Some(r) = m.get("$ref") {
                let name = r
                    .as_str()
                    .and_then(|r| r.strip_prefix(DEFINITIONS_REF_PREFIX));
                if !name.is_some_and(|n| defs.contains_key(n)) {
                    errs.push(format!("{path}: unknown model in reference {r}"));
                }
                if m.contains_key("type") {
                    errs.push(format!("{path}: definition reference can't have a type"));
                }
                if m.get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| !p.is_empty())
                {
                    errs.push(format!("{path}: unallowed embedded type definition"));
                }
                return;
            }
            let types: Vec<&str> = match m.get("type") {
                None => vec![],
                Some(Value::String(t)) => vec![t.as_str()],
                Some(other) => {
                    errs.push(format!("{path}: type {other}"));
                    return;
                }
            };
            let props = |errs: &mut Vec<String>| {
                for (k, p) in m
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    check(defs, p, &format!("{path}.{k}"), errs);
                }
            };
            match types.as_slice() {
                [] | ["object"] if m.contains_key("properties") => props(errs),
                [] => {}
                ["object"] => {
                    if let Some(a @ Value::Object(_)) = m.get("additionalProperties") {
                        check(defs, a, path, errs);
                    }
                }
                ["array"] => match m.get("items") {
                    Some(items @ Value::Object(_)) => check(defs, items, path, errs),
                    _ => errs.push(format!("{path}: array should have exactly one sub-item")),
                },
                ["string" | "number" | "integer" | "boolean"] => {}
                [other] => errs.push(format!("{path}: Unknown primitive type: {other:?}")),
                _ => unreachable!(),
            }
        }
        let mut errs = Vec::new();
        for (name, s) in definitions {
            check(definitions, s, name, &mut errs);
        }
        errs
    }

    #[test]
    fn the_parse_check_finds_what_kubectl_refuses() {
        let defs = json!({
            "a.Ok": {"type": "object", "properties": {"b": {"$ref": "#/definitions/a.B"},
                     "m": {"type": "object", "additionalProperties": {"type": "string"}},
                     "any": {}, "l": {"type": "array", "items": {"type": "integer"}}}},
            "a.B": {"type": "string"},
            "a.Dangling": {"properties": {"x": {"$ref": "#/definitions/a.Nope"}}},
            "a.TypedRef": {"properties": {"x": {"$ref": "#/definitions/a.B", "type": "string"}}},
            "a.NoItems": {"type": "array"},
            "a.Types": {"type": ["string", "null"]},
            "a.Null": {"type": "null"},
        });
        let errors = kubectl_parse_errors(defs.as_object().unwrap_or(&Map::new()));
        assert_eq!(errors.len(), 5, "{errors:#?}");
        for name in ["a.Dangling", "a.TypedRef", "a.NoItems", "a.Types", "a.Null"] {
            assert!(
                errors.iter().any(|e| e.starts_with(name)),
                "{name}: {errors:#?}"
            );
        }
    }

    #[test]
    fn aggregated_documents_merge_as_kube_aggregator_merges_them() {
        let mut swagger = Swagger::default();
        swagger.add(&json!({
            "paths": {"/api/v1/pods": {"get": {"operationId": "ours"}}},
            "components": {"schemas": {
                "meta.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
                "meta.Status": {"type": "object", "description": "Ours."},
            }},
        }));
        swagger.merge(&json!({
            "swagger": "2.0",
            "paths": {
                "/apis/metrics.k8s.io/v1beta1/nodes": {"get": {
                    "parameters": [{"$ref": "#/parameters/pretty"}],
                    "responses": {"200": {"schema": {"$ref": "#/definitions/metrics.NodeMetricsList"}},
                                  "401": {"schema": {"$ref": "#/definitions/meta.Status"}}}}},
                "/api/v1/pods": {"get": {"operationId": "theirs"}},
                "/version/": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/version.Info"}}}}},
            },
            "definitions": {
                "metrics.NodeMetricsList": {"type": "object", "properties": {
                    "metadata": {"$ref": "#/definitions/meta.ObjectMeta"},
                    "items": {"type": "array", "items": {"$ref": "#/definitions/metrics.NodeMetrics"}}}},
                "metrics.NodeMetrics": {"type": "object", "properties": {
                    "status": {"$ref": "#/definitions/meta.Status"}}},
                "meta.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
                "meta.Status": {"type": "object", "description": "Theirs."},
                "version.Info": {"type": "object"},
                "unused.Thing": {"type": "object"},
            },
            "parameters": {"pretty": {"name": "pretty", "in": "query", "type": "string"}},
        }));
        let doc = swagger.finish();
        // Only /apis/ paths, and ours wins a conflict.
        assert_eq!(doc["paths"]["/api/v1/pods"]["get"]["operationId"], "ours");
        assert!(doc["paths"].get("/version/").is_none());
        let nodes = &doc["paths"]["/apis/metrics.k8s.io/v1beta1/nodes"]["get"];
        assert_eq!(nodes["parameters"][0]["$ref"], "#/parameters/pretty");
        assert_eq!(doc["parameters"]["pretty"]["in"], "query");
        // Only what the kept paths refer to; the same definition once; a different one
        // under another name, with the references to it.
        let defs = doc["definitions"].as_object().cloned().unwrap_or_default();
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "meta.ObjectMeta",
                "meta.Status",
                "meta.Status_v2",
                "metrics.NodeMetrics",
                "metrics.NodeMetricsList"
            ]
        );
        assert_eq!(defs["meta.Status"]["description"], "Ours.");
        assert_eq!(defs["meta.Status_v2"]["description"], "Theirs.");
        assert_eq!(
            defs["metrics.NodeMetrics"]["properties"]["status"]["$ref"],
            "#/definitions/meta.Status_v2"
        );
        assert_eq!(
            nodes["responses"]["401"]["schema"]["$ref"],
            "#/definitions/meta.Status_v2"
        );
        assert_eq!(
            defs["metrics.NodeMetricsList"]["properties"]["metadata"]["$ref"],
            "#/definitions/meta.ObjectMeta"
        );
        assert!(kubectl_parse_errors(&defs).is_empty());
    }

    #[test]
    fn schemas_use_v2_references_and_keywords() {
        let v3 = json!({
            "type": "object",
            "nullable": true,
            "default": {},
            "properties": {
                "spec": {"allOf": [{"$ref": "#/components/schemas/a.B"}], "description": "D.",
                         "default": {}, "x-kubernetes-patch-strategy": "retainKeys"},
                "one": {"oneOf": [{"type": "string"}, {"type": "number"}], "description": "E."},
                "list": {"type": "array", "items": {"$ref": "#/components/schemas/a.C"}},
                "bare": {"type": "array"},
                "map": {"type": "object", "additionalProperties": {"allOf": [{"$ref": "#/components/schemas/a.C"}]}},
                "flag": {"type": "object", "additionalProperties": true},
            },
        });
        assert_eq!(
            schema(&v3),
            json!({
                "type": "object",
                "properties": {
                    "spec": {"$ref": "#/definitions/a.B", "description": "D.",
                             "x-kubernetes-patch-strategy": "retainKeys"},
                    "one": {"description": "E."},
                    "list": {"type": "array", "items": {"$ref": "#/definitions/a.C"}},
                    "bare": {},
                    "map": {"type": "object", "additionalProperties": {"$ref": "#/definitions/a.C"}},
                    "flag": {"type": "object", "additionalProperties": true},
                },
            })
        );
    }

    #[test]
    fn go_types_with_custom_json_keep_their_v2_types() {
        let ios = json!({"description": "An int or a string.", "x-kubernetes-int-or-string": true});
        assert_eq!(
            definition("io.k8s.apimachinery.pkg.util.intstr.IntOrString", &ios),
            json!({"description": "An int or a string.", "type": "string", "format": "int-or-string"})
        );
        assert_eq!(
            definition("io.k8s.apimachinery.pkg.api.resource.Quantity", &ios),
            json!({"description": "An int or a string.", "type": "string"})
        );
        let any = json!({"description": "Any JSON.", "type": "object"});
        assert_eq!(
            definition(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
                &any
            ),
            json!({"description": "Any JSON."})
        );
        assert_eq!(definition("other.Type", &any), any);
    }

    #[test]
    fn operations_carry_bodies_and_media_types_inline() {
        let v3 = json!({
            "/apis/g/v1/things/{name}": {
                "parameters": [{"name": "name", "in": "path", "required": true,
                                "schema": {"type": "string", "uniqueItems": true}}],
                "patch": {
                    "operationId": "patchGV1Thing",
                    "parameters": [{"name": "fieldValidation", "in": "query", "description": "How.",
                                    "schema": {"type": "string", "uniqueItems": true}}],
                    "requestBody": {"required": true, "content": {
                        "application/merge-patch+json": {"schema": {"$ref": "#/components/schemas/meta.Patch"}}}},
                    "responses": {
                        "200": {"description": "OK", "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/g.v1.Thing"}},
                            "application/yaml": {"schema": {"$ref": "#/components/schemas/g.v1.Thing"}}}},
                        "401": {"description": "Unauthorized"},
                    },
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "g", "kind": "Thing", "version": "v1"},
                },
            },
        });
        let mut swagger = Swagger::default();
        swagger.add(&json!({"paths": v3}));
        assert_eq!(
            swagger.finish()["paths"]["/apis/g/v1/things/{name}"],
            json!({
                "parameters": [{"name": "name", "in": "path", "required": true,
                                "type": "string", "uniqueItems": true}],
                "patch": {
                    "operationId": "patchGV1Thing",
                    "consumes": ["application/merge-patch+json"],
                    "produces": ["application/json", "application/yaml"],
                    "schemes": ["https"],
                    "parameters": [
                        {"name": "body", "in": "body", "required": true,
                         "schema": {"$ref": "#/definitions/meta.Patch"}},
                        {"name": "fieldValidation", "in": "query", "description": "How.",
                         "type": "string", "uniqueItems": true},
                    ],
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": "#/definitions/g.v1.Thing"}},
                        "401": {"description": "Unauthorized"},
                    },
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "g", "kind": "Thing", "version": "v1"},
                },
            })
        );
    }
}
