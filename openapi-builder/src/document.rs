//! One group-version's OpenAPI v3 document, shaped like kube-apiserver's: a path per
//! collection, item and subresource with its operations (each tagged
//! `x-kubernetes-group-version-kind` and `x-kubernetes-action`, parameters inline), and
//! `components.schemas` with every kind, its list and what they refer to. The same builder
//! makes the group-version's part of the v2 document ([`Flavor::V2`], converted by
//! [`super::v2`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use apimachinery::openapi::builtin::{
    self, DELETE_OPTIONS, LIST_META, OBJECT_META, PATCH, SCALE, SCHEMA_REF_PREFIX, STATUS,
};
use kube_registry::resources::{ResourceDef, Source, Storage};

/// Which OpenAPI document a group-version's schemas are built for: custom and registered kinds
/// differ (kube's CRD builder filters their schemas for kubectl's v2 validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `/openapi/v3/<group-version>`.
    V3,
    /// `/openapi/v2` (converted by [`super::v2`]).
    V2,
}

/// The `info.version` of every document: the Kubernetes release whose API is served.
pub const INFO_VERSION: &str = "v1.32.0";

/// `apis/apps/v1` or `api/v1`: the key of a group-version in the `/openapi/v3` root.
pub fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// kube-openapi's ToRESTFriendlyName of `group/version/kind`: the group's DNS labels
/// reversed (`com.example.stable.v1.CronTab`).
pub fn rest_friendly_name(group: &str, version: &str, kind: &str) -> String {
    let mut labels: Vec<&str> = group.split('.').collect();
    labels.reverse();
    format!("{}.{version}.{kind}", labels.join("."))
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMA_REF_PREFIX}{name}")})
}

fn described_ref(name: &str, description: &str) -> Value {
    json!({"allOf": [schema_ref(name)], "description": description})
}

/// How kube describes an object's `metadata` (a ConfigMap's, in k8s-openapi's copy of kube's
/// documentation; kube's CRD builder uses the same words).
fn metadata_description() -> &'static str {
    builtin_description("io.k8s.api.core.v1.ConfigMap", "metadata")
}

/// How kube describes a list's `metadata` (`Status` carries the same ListMeta words).
fn list_metadata_description() -> &'static str {
    builtin_description(STATUS, "metadata")
}

fn builtin_description(component: &str, property: &str) -> &'static str {
    builtin::schemas()
        .definitions
        .get(component)
        .and_then(|s| s.pointer(&format!("/properties/{property}/description")))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `apiVersion` and `kind` as the built-in kinds document them.
fn type_meta_property(name: &str) -> Value {
    builtin::schemas()
        .definitions
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.Status")
        .and_then(|s| s.pointer(&format!("/properties/{name}")))
        .cloned()
        .unwrap_or_else(|| json!({"type": "string"}))
}

/// The OpenAPI v3 schema of a registered kind ([`Source::Registered`]) at a served version, as
/// the layer that registers it knows it (genericapiserver asks the kind's installed strategy).
pub type RegisteredSchema<'a> = &'a dyn Fn(&ResourceDef) -> Option<&'static Value>;

fn gvk(def: &ResourceDef, kind: &str) -> Value {
    json!({"group": def.group, "kind": kind, "version": def.version})
}

/// A kind's component name and schema (plus the built-in components it refers to).
fn kind_schema(
    def: &ResourceDef,
    components: &mut BTreeMap<String, Value>,
    flavor: Flavor,
    registered: RegisteredSchema<'_>,
) -> String {
    match &def.source {
        Source::BuiltIn => {
            if let Some(name) = builtin::schemas().kind_name(&def.group, &def.version, &def.kind) {
                components.extend(builtin::closure([name.to_string()]));
                return name.to_string();
            }
            let name = rest_friendly_name(&def.group, &def.version, &def.kind);
            components.insert(
                name.clone(),
                json!({"type": "object", "x-kubernetes-group-version-kind": [gvk(def, &def.kind)]}),
            );
            name
        }
        Source::Registered { .. } => {
            let name = rest_friendly_name(&def.group, &def.version, &def.kind);
            let schema = registered(def).cloned();
            let schema = resource_schema(def, schema, components, flavor);
            components.insert(name.clone(), schema);
            name
        }
        Source::Custom(custom) => {
            let name = rest_friendly_name(&def.group, &def.version, &def.kind);
            let schema = custom
                .schema
                .clone()
                .filter(|s| apiextensions::structural::validate_schema(s, "").is_empty());
            let schema = resource_schema(def, schema, components, flavor);
            components.insert(name.clone(), schema);
            name
        }
    }
}

/// A CRD-style kind's schema as kube's CRD OpenAPI builder publishes it (`buildKubeNative`):
/// the structural schema with `metadata` pointing at ObjectMeta, `apiVersion`/`kind`
/// documented, embedded resources given their type meta, and the GVK extension. For v2 the
/// schema is first filtered for kubectl (`ToStructuralOpenAPIV2`), and a root that keeps
/// unknown fields is published as a bare object, which kubectl validates as a map.
fn resource_schema(
    def: &ResourceDef,
    schema: Option<Value>,
    components: &mut BTreeMap<String, Value>,
    flavor: Flavor,
) -> Value {
    let schema = match flavor {
        Flavor::V3 => schema,
        Flavor::V2 => schema
            .filter(|s| s.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true)))
            .map(|mut s| {
                apiextensions::openapi_v2::to_structural_v2(&mut s);
                s
            }),
    };
    let mut out = match schema {
        Some(Value::Object(mut m)) => {
            let props = m
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(props) = props {
                props.insert(
                    "metadata".into(),
                    described_ref(OBJECT_META, metadata_description()),
                );
                props.insert("apiVersion".into(), type_meta_property("apiVersion"));
                props.insert("kind".into(), type_meta_property("kind"));
            }
            let mut v = Value::Object(m);
            add_embedded_properties(&mut v, flavor);
            components.extend(builtin::closure([OBJECT_META.to_string()]));
            v
        }
        _ => json!({"type": "object"}),
    };
    if let Value::Object(m) = &mut out {
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([gvk(def, &def.kind)]),
        );
    }
    out
}

/// addEmbeddedProperties: embedded resources document apiVersion, kind and metadata (in
/// v2 not where unknown fields are kept: kubectl would then refuse every other field).
fn add_embedded_properties(v: &mut Value, flavor: Flavor) {
    let Value::Object(m) = v else {
        return;
    };
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            add_embedded_properties(sub, flavor);
        }
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for sub in props.values_mut() {
            add_embedded_properties(sub, flavor);
        }
    }
    if flavor == Flavor::V2
        && m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
    {
        return;
    }
    if m.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(props) = props {
            props.insert("apiVersion".into(), type_meta_property("apiVersion"));
            props.insert("kind".into(), type_meta_property("kind"));
            props.insert(
                "metadata".into(),
                described_ref(OBJECT_META, metadata_description()),
            );
        }
        let required = m.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = required {
            for k in ["kind", "apiVersion"] {
                if !r.iter().any(|x| x == k) {
                    r.push(json!(k));
                }
            }
        }
    }
}

fn list_schema(def: &ResourceDef, item_name: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}", def.list_kind, def.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta_property("apiVersion"),
            "kind": type_meta_property("kind"),
            "items": {
                "description": format!("The {} in the list.", def.plural),
                "type": "array",
                "items": schema_ref(item_name),
            },
            "metadata": described_ref(LIST_META, list_metadata_description()),
        },
        "x-kubernetes-group-version-kind": [gvk(def, &def.list_kind)],
    })
}

/// `CoreV1`, `AppsV1`, `RbacAuthorizationV1`, `PolicyKarmadaIoV1alpha1`: how kube's
/// operation ids name a group-version.
fn gv_camel(group: &str, version: &str) -> String {
    fn title(s: &str) -> String {
        let mut c = s.chars();
        match c.next() {
            Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
            None => String::new(),
        }
    }
    let g = if group.is_empty() {
        "Core".to_string()
    } else {
        group
            .trim_end_matches(".k8s.io")
            .split(['.', '-'])
            .map(title)
            .collect()
    };
    format!("{g}{}", title(version))
}

fn query(name: &str, type_: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description,
           "schema": {"type": type_, "uniqueItems": true}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "description": description, "required": true,
           "schema": {"type": "string", "uniqueItems": true}})
}

fn pretty() -> Value {
    query("pretty", "string", "If 'true', the output is indented.")
}

fn dry_run() -> Value {
    query(
        "dryRun",
        "string",
        "When present (only `All` is accepted), the request is processed in full but nothing is persisted.",
    )
}

fn field_manager() -> Value {
    query(
        "fieldManager",
        "string",
        "The name of the actor making the change, recorded in managedFields; at most 128 printable characters.",
    )
}

/// The parameter `kubectl` looks for before asking the server to validate fields.
fn field_validation() -> Value {
    query(
        "fieldValidation",
        "string",
        "What the server does with unknown or duplicate fields in the body: `Ignore` drops them, `Warn` (the default) drops them and answers with a Warning header per field, `Strict` refuses the request.",
    )
}

fn list_params() -> Vec<Value> {
    vec![
        query(
            "allowWatchBookmarks",
            "boolean",
            "Asks a watch for BOOKMARK events.",
        ),
        query(
            "continue",
            "string",
            "The continue token of the previous page of a paged list.",
        ),
        query(
            "fieldSelector",
            "string",
            "Restricts the objects returned by their fields.",
        ),
        query(
            "labelSelector",
            "string",
            "Restricts the objects returned by their labels.",
        ),
        query(
            "limit",
            "integer",
            "The most objects to return in one page.",
        ),
        query(
            "resourceVersion",
            "string",
            "Which state of the collection to return or watch from.",
        ),
        query(
            "resourceVersionMatch",
            "string",
            "How `resourceVersion` applies to a list: `Exact` or `NotOlderThan`.",
        ),
        query(
            "sendInitialEvents",
            "boolean",
            "Starts a watch with the current objects as ADDED events.",
        ),
        query(
            "timeoutSeconds",
            "integer",
            "How long a list or watch may take.",
        ),
        query(
            "watch",
            "boolean",
            "Streams changes instead of returning a list.",
        ),
    ]
}

fn delete_params() -> Vec<Value> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            "integer",
            "Seconds before the object is deleted; zero means at once.",
        ),
        query(
            "orphanDependents",
            "boolean",
            "Deprecated: use propagationPolicy.",
        ),
        query(
            "propagationPolicy",
            "string",
            "What happens to dependents: `Orphan`, `Background` or `Foreground`.",
        ),
    ]
}

fn content(name: &str) -> Value {
    json!({
        "application/json": {"schema": schema_ref(name)},
        "application/yaml": {"schema": schema_ref(name)},
    })
}

fn responses(codes: &[(&str, &str)], name: &str) -> Value {
    let mut m = Map::new();
    for (code, description) in codes {
        m.insert(
            code.to_string(),
            json!({"description": description, "content": content(name)}),
        );
    }
    m.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(m)
}

struct Names<'a> {
    def: &'a ResourceDef,
    flavor: Flavor,
    kind: String,
    list: String,
    camel: String,
    tag: String,
}

impl Names<'_> {
    #[allow(clippy::too_many_arguments)]
    fn op(
        &self,
        action: &str,
        operation: String,
        description: String,
        parameters: Vec<Value>,
        body: Option<Value>,
        responses: Value,
        kind: &Value,
    ) -> Value {
        let mut op = json!({
            "tags": [self.tag],
            "description": description,
            "operationId": operation,
            "parameters": parameters,
            "responses": responses,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": kind,
        });
        if let (Some(body), Value::Object(m)) = (body, &mut op) {
            m.insert("requestBody".into(), body);
        }
        op
    }
}

fn body(name: &str) -> Value {
    json!({"content": content(name), "required": true})
}

/// The PATCH body. kube also lists `application/strategic-merge-patch+json` for built-in
/// kinds; v3 leaves it out, because kubectl then computes apply patches from the v3
/// document instead of from v2 or its compiled-in types (v2 carries the same merge
/// extensions, which kubectl reads with its v2 reader).
fn patch_body(flavor: Flavor, strategic: bool) -> Value {
    let patch = json!({"schema": schema_ref(PATCH)});
    let mut content = json!({
        "application/json-patch+json": patch,
        "application/merge-patch+json": patch,
        "application/apply-patch+yaml": patch,
    });
    if flavor == Flavor::V2
        && strategic
        && let Value::Object(c) = &mut content
    {
        c.insert("application/strategic-merge-patch+json".into(), patch);
    }
    json!({"content": content, "required": true})
}

fn resource_paths(n: &Names<'_>, paths: &mut Map<String, Value>) {
    let def = n.def;
    let base = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    let scoped = if def.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", def.plural)
    } else {
        format!("{base}/{}", def.plural)
    };
    let ns_word = if def.namespaced { "Namespaced" } else { "" };
    let kind_gvk = gvk(def, &def.kind);
    let mut scope_params = vec![];
    if def.namespaced {
        scope_params.push(path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        ));
    }
    scope_params.push(pretty());
    let k = &def.kind;
    let c = &n.camel;

    if def.storage == Storage::Virtual {
        let post = n.op(
            "post",
            format!("create{c}{ns_word}{k}"),
            format!("create a {k}"),
            vec![dry_run(), field_manager(), field_validation()],
            Some(body(&n.kind)),
            responses(
                &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                &n.kind,
            ),
            &kind_gvk,
        );
        paths.insert(scoped, json!({"post": post, "parameters": scope_params}));
        return;
    }

    if def.storage == Storage::Probed {
        // Read-only: list (no watch is served, but kube documents the list parameters) and get.
        let list = n.op(
            "list",
            format!("list{c}{ns_word}{k}"),
            format!("list objects of kind {k}"),
            list_params(),
            None,
            responses(&[("200", "OK")], &n.list),
            &kind_gvk,
        );
        paths.insert(
            scoped.clone(),
            json!({"get": list, "parameters": scope_params.clone()}),
        );
        let get = n.op(
            "get",
            format!("read{c}{ns_word}{k}"),
            format!("read the specified {k}"),
            vec![],
            None,
            responses(&[("200", "OK")], &n.kind),
            &kind_gvk,
        );
        let mut params = vec![path_param("name", &format!("name of the {k}"))];
        params.extend(scope_params);
        paths.insert(
            format!("{scoped}/{{name}}"),
            json!({"get": get, "parameters": params}),
        );
        return;
    }

    // Collection.
    let list = n.op(
        "list",
        format!("list{c}{ns_word}{k}"),
        format!("list or watch objects of kind {k}"),
        list_params(),
        None,
        responses(&[("200", "OK")], &n.list),
        &kind_gvk,
    );
    let create = n.op(
        "post",
        format!("create{c}{ns_word}{k}"),
        format!("create a {k}"),
        vec![dry_run(), field_manager(), field_validation()],
        Some(body(&n.kind)),
        responses(
            &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
            &n.kind,
        ),
        &kind_gvk,
    );
    let mut dc_params = delete_params();
    dc_params.extend(list_params());
    let delete_collection = n.op(
        "deletecollection",
        format!("deleteCollection{c}{ns_word}{k}"),
        format!("delete collection of {k}"),
        dc_params,
        Some(json!({"content": content(DELETE_OPTIONS)})),
        responses(&[("200", "OK")], STATUS),
        &kind_gvk,
    );
    let mut collection = json!({"get": list, "post": create, "parameters": scope_params});
    if def.verbs().contains(&"deletecollection") {
        collection["delete"] = delete_collection;
    }
    paths.insert(scoped.clone(), collection);

    if def.namespaced {
        let all = n.op(
            "list",
            format!("list{c}{k}ForAllNamespaces"),
            format!("list or watch objects of kind {k}"),
            list_params(),
            None,
            responses(&[("200", "OK")], &n.list),
            &kind_gvk,
        );
        paths.insert(
            format!("{base}/{}", def.plural),
            json!({"get": all, "parameters": [pretty()]}),
        );
    }

    // Item.
    let mut item_params = vec![path_param("name", &format!("name of the {k}"))];
    item_params.extend(scope_params.iter().cloned());
    let item = format!("{scoped}/{{name}}");
    let item_ops = |sub: &str, gvk: &Value, schema: &str| -> Map<String, Value> {
        let title = match sub {
            "" => String::new(),
            s => {
                let mut ch = s.chars();
                ch.next()
                    .map(|f| f.to_uppercase().collect::<String>() + ch.as_str())
                    .unwrap_or_default()
            }
        };
        let of = if sub.is_empty() {
            String::new()
        } else {
            format!(" {sub} of")
        };
        let mut m = Map::new();
        m.insert(
            "get".into(),
            n.op(
                "get",
                format!("read{c}{ns_word}{k}{title}"),
                format!("read{of} the specified {k}"),
                vec![],
                None,
                responses(&[("200", "OK")], schema),
                gvk,
            ),
        );
        m.insert(
            "put".into(),
            n.op(
                "put",
                format!("replace{c}{ns_word}{k}{title}"),
                format!("replace{of} the specified {k}"),
                vec![dry_run(), field_manager(), field_validation()],
                Some(body(schema)),
                responses(&[("200", "OK"), ("201", "Created")], schema),
                gvk,
            ),
        );
        m.insert(
            "patch".into(),
            n.op(
                "patch",
                format!("patch{c}{ns_word}{k}{title}"),
                format!("partially update{of} the specified {k}"),
                vec![
                    dry_run(),
                    field_manager(),
                    field_validation(),
                    query(
                        "force",
                        "boolean",
                        "Takes over fields other managers own (server-side apply only).",
                    ),
                ],
                Some(patch_body(n.flavor, def.strategic_merge)),
                responses(&[("200", "OK"), ("201", "Created")], schema),
                gvk,
            ),
        );
        m
    };
    let mut main = item_ops("", &kind_gvk, &n.kind);
    main.insert(
        "delete".into(),
        n.op(
            "delete",
            format!("delete{c}{ns_word}{k}"),
            format!("delete a {k}"),
            delete_params(),
            Some(json!({"content": content(DELETE_OPTIONS)})),
            responses(&[("200", "OK"), ("202", "Accepted")], STATUS),
            &kind_gvk,
        ),
    );
    main.insert("parameters".into(), Value::Array(item_params.clone()));
    paths.insert(item.clone(), Value::Object(main));

    if def.status {
        let mut status = item_ops("status", &kind_gvk, &n.kind);
        status.insert("parameters".into(), Value::Array(item_params.clone()));
        paths.insert(format!("{item}/status"), Value::Object(status));
    }
    if def.scale.is_some() {
        let scale_gvk = json!({"group": "autoscaling", "kind": "Scale", "version": "v1"});
        let mut scale = item_ops("scale", &scale_gvk, SCALE);
        scale.insert("parameters".into(), Value::Array(item_params.clone()));
        paths.insert(format!("{item}/scale"), Value::Object(scale));
    }
    // A pod's create-only subresources: binding (core/v1 Binding), eviction (policy/v1).
    for sub in POD_CREATE_SUBRESOURCES {
        if !def.extra_subresources.iter().any(|s| s == sub.name) {
            continue;
        }
        let post = n.op(
            "post",
            format!("create{c}{ns_word}{k}{}", sub.kind),
            format!("create {} of a {k}", sub.name),
            vec![dry_run(), field_manager(), field_validation()],
            Some(body(sub.component)),
            responses(
                &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                sub.component,
            ),
            &json!({"group": sub.group, "version": "v1", "kind": sub.kind}),
        );
        paths.insert(
            format!("{item}/{}", sub.name),
            json!({"post": post, "parameters": item_params.clone()}),
        );
    }
}

/// A create-only subresource of pods: it takes and answers one v1 kind of `group`.
struct CreateSubresource {
    name: &'static str,
    group: &'static str,
    kind: &'static str,
    component: &'static str,
}

const POD_CREATE_SUBRESOURCES: &[CreateSubresource] = &[
    CreateSubresource {
        name: "binding",
        group: "",
        kind: "Binding",
        component: BINDING,
    },
    CreateSubresource {
        name: "eviction",
        group: "policy",
        kind: "Eviction",
        component: EVICTION,
    },
];

/// The component name of core/v1 `Binding` (a pod's `binding` subresource takes one).
const BINDING: &str = "io.k8s.api.core.v1.Binding";
/// The component name of policy/v1 `Eviction`.
const EVICTION: &str = "io.k8s.api.policy.v1.Eviction";

/// Builds the document of one group-version from the resources it serves; `registered` gives
/// the schemas of its registered kinds.
pub fn group_version_document(
    group: &str,
    version: &str,
    defs: &[Arc<ResourceDef>],
    flavor: Flavor,
    registered: RegisteredSchema<'_>,
) -> Value {
    let mut components: BTreeMap<String, Value> = BTreeMap::new();
    components.extend(builtin::closure(
        [STATUS, DELETE_OPTIONS, PATCH, LIST_META]
            .into_iter()
            .map(str::to_string),
    ));
    let mut paths = Map::new();
    let camel = gv_camel(group, version);
    let tag = {
        let mut c = camel.clone();
        c.truncate(c.len().saturating_sub(version.len()));
        let mut chars = c.chars();
        let lower = chars
            .next()
            .map(|f| f.to_lowercase().collect::<String>() + chars.as_str())
            .unwrap_or_default();
        format!("{lower}_{version}")
    };
    for def in defs {
        let kind = kind_schema(def, &mut components, flavor, registered);
        let list = if def.storage == Storage::Virtual {
            kind.clone()
        } else {
            let list = format!("{kind}List");
            components.insert(list.clone(), list_schema(def, &kind));
            list
        };
        if def.scale.is_some() {
            components.extend(builtin::closure([SCALE.to_string()]));
        }
        for sub in POD_CREATE_SUBRESOURCES {
            if def.extra_subresources.iter().any(|s| s == sub.name) {
                components.extend(builtin::closure([sub.component.to_string()]));
            }
        }
        let names = Names {
            def,
            flavor,
            kind,
            list,
            camel: camel.clone(),
            tag: tag.clone(),
        };
        resource_paths(&names, &mut paths);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "description": "Bearer Token authentication",
                                "name": "authorization", "in": "header"}
            }
        },
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_registry::resources::{CustomSource, built_in};

    /// No registered kinds.
    fn none(_: &ResourceDef) -> Option<&'static Value> {
        None
    }

    fn patch_ops<'a>(doc: &'a Value, gvk: &Value) -> Vec<&'a Value> {
        doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
            .filter_map(|p| p.get("patch"))
            .filter(|op| &op["x-kubernetes-group-version-kind"] == gvk)
            .collect()
    }

    fn has_inline_field_validation(op: &Value) -> bool {
        op["parameters"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        })
    }

    #[test]
    fn names() {
        assert_eq!(gv_key("", "v1"), "api/v1");
        assert_eq!(gv_key("apps", "v1"), "apis/apps/v1");
        assert_eq!(
            rest_friendly_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(gv_camel("", "v1"), "CoreV1");
        assert_eq!(
            gv_camel("rbac.authorization.k8s.io", "v1"),
            "RbacAuthorizationV1"
        );
        assert_eq!(
            gv_camel("policy.karmada.io", "v1alpha1"),
            "PolicyKarmadaIoV1alpha1"
        );
    }

    #[test]
    fn pods_take_bindings_and_evictions() {
        let defs: Vec<Arc<ResourceDef>> = built_in()
            .into_iter()
            .filter(|d| d.group.is_empty() && d.version == "v1")
            .map(Arc::new)
            .collect();
        let doc = group_version_document("", "v1", &defs, Flavor::V3, &none);
        let pod = "/api/v1/namespaces/{namespace}/pods/{name}";
        for (sub, op, gvk, component) in [
            (
                "binding",
                "createCoreV1NamespacedPodBinding",
                json!({"group": "", "version": "v1", "kind": "Binding"}),
                BINDING,
            ),
            (
                "eviction",
                "createCoreV1NamespacedPodEviction",
                json!({"group": "policy", "version": "v1", "kind": "Eviction"}),
                EVICTION,
            ),
        ] {
            let post = &doc["paths"][format!("{pod}/{sub}")]["post"];
            assert_eq!(post["operationId"], op, "{sub}");
            assert_eq!(post["x-kubernetes-group-version-kind"], gvk, "{sub}");
            assert!(doc["components"]["schemas"][component].is_object(), "{sub}");
        }
        assert!(doc["paths"][format!("{pod}/exec")].is_null());
    }

    #[test]
    fn builtin_document() {
        let defs: Vec<Arc<ResourceDef>> = built_in()
            .into_iter()
            .filter(|d| d.group == "apps")
            .map(Arc::new)
            .collect();
        let doc = group_version_document("apps", "v1", &defs, Flavor::V3, &none);
        let gvk = json!({"group": "apps", "kind": "Deployment", "version": "v1"});
        let ops = patch_ops(&doc, &gvk);
        assert_eq!(ops.len(), 2, "item and status");
        assert!(ops.iter().all(|op| has_inline_field_validation(op)));
        let item = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        assert_eq!(
            item["patch"]["operationId"],
            "patchAppsV1NamespacedDeployment"
        );
        assert!(
            item["patch"]["requestBody"]["content"]["application/merge-patch+json"].is_object()
        );
        let scale = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
        assert_eq!(
            scale["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "Scale"
        );
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
            json!([gvk])
        );
        assert!(schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"].is_object());
        assert!(schemas[SCALE].is_object());
        assert_eq!(
            schemas["io.k8s.api.apps.v1.DeploymentList"]["x-kubernetes-group-version-kind"][0]["kind"],
            "DeploymentList"
        );
        // Every reference resolves inside the document.
        let mut names = std::collections::BTreeSet::new();
        builtin::refs(&doc, &mut names);
        for n in names {
            assert!(schemas.get(&n).is_some(), "dangling {n}");
        }
    }

    /// A kind registered by a layer above, its schema from the layer's lookup.
    #[test]
    fn registered_document() {
        static SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "placement": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
        });
        let def = ResourceDef {
            group: "policy.example.io".into(),
            version: "v1alpha1".into(),
            plural: "placements".into(),
            singular: "placement".into(),
            kind: "Placement".into(),
            list_kind: "PlacementList".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: true,
            status: true,
            scale: None,
            extra_subresources: vec![],
            generation: true,
            strategic_merge: false,
            storage: Storage::Stored {
                prefix: "/registry/policy.example.io/placements/".into(),
            },
            source: Source::Registered {
                served_as_crd: true,
            },
        };
        let lookup = |d: &ResourceDef| (d.kind == "Placement").then(|| &*SCHEMA);
        let doc = group_version_document(
            "policy.example.io",
            "v1alpha1",
            &[Arc::new(def)],
            Flavor::V3,
            &lookup,
        );
        let name = "io.example.policy.v1alpha1.Placement";
        let placement = &doc["components"]["schemas"][name];
        assert_eq!(
            placement["x-kubernetes-group-version-kind"][0]["kind"],
            "Placement"
        );
        assert!(placement["properties"]["spec"]["properties"]["placement"].is_object());
        assert_eq!(
            placement["properties"]["metadata"]["allOf"][0]["$ref"],
            format!("{SCHEMA_REF_PREFIX}{OBJECT_META}")
        );
        let gvk = json!({"group": "policy.example.io", "kind": "Placement", "version": "v1alpha1"});
        let ops = patch_ops(&doc, &gvk);
        assert!(!ops.is_empty() && ops.iter().all(|op| has_inline_field_validation(op)));
    }

    #[test]
    fn custom_document() {
        let def = ResourceDef {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            singular: "crontab".into(),
            kind: "CronTab".into(),
            list_kind: "CronTabList".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: true,
            status: false,
            scale: None,
            extra_subresources: vec![],
            generation: true,
            strategic_merge: false,
            storage: Storage::Stored {
                prefix: "/registry/stable.example.com/crontabs/".into(),
            },
            source: Source::Custom(Box::new(CustomSource {
                crd_name: "crontabs.stable.example.com".into(),
                schema: Some(json!({"type": "object", "description": "A cron tab.",
                    "properties": {"spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string", "description": "When."},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true}}}}})),
                printer_columns: vec![],
                selectable_fields: vec![],
                scale: None,
            })),
        };
        let doc = group_version_document(
            "stable.example.com",
            "v1",
            &[Arc::new(def)],
            Flavor::V3,
            &none,
        );
        let ct = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(ct["description"], "A cron tab.");
        assert_eq!(
            ct["properties"]["spec"]["properties"]["cronSpec"]["description"],
            "When."
        );
        assert!(ct["properties"]["apiVersion"]["description"].is_string());
        let template = &ct["properties"]["spec"]["properties"]["template"];
        assert!(template["properties"]["metadata"]["allOf"].is_array());
        assert!(doc["components"]["schemas"][OBJECT_META].is_object());
        let item =
            &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        assert_eq!(
            item["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "CronTab"
        );
        assert!(has_inline_field_validation(&item["patch"]));
    }
}
