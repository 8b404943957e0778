//! CustomResourceDefinitions in `apiextensions.k8s.io/v1beta1`, the version kube-apiserver
//! stores them in ("the more compact serialization", pkg/controlplane/apiserver/apiextensions.go),
//! converted to and from the `v1` this server serves, through what the internal version would
//! hold (apiextensions' v1 and v1beta1 `conversion.go`, v1beta1 `defaults.go`):
//!
//! - v1 to v1beta1: `spec.version` is the first version's name; a version field that is the
//!   same in every version (schema, subresources, printer columns, selectable fields) moves up
//!   to the spec (`validation`, `subresources`, `additionalPrinterColumns`, `selectableFields`);
//!   the conversion webhook's `clientConfig` and `conversionReviewVersions` move up a level;
//!   `preserveUnknownFields` is always written; printer columns name their path `JSONPath`.
//! - v1beta1 to v1: v1beta1's defaults first (scope, names, versions, conversion,
//!   `preserveUnknownFields: true`), then the spec-level fields copied into every version.

use serde_json::{Map, Value, json};

/// `apiVersion` of a stored CRD.
pub const API_VERSION: &str = "apiextensions.k8s.io/v1beta1";
/// `apiVersion` of a served CRD.
pub const V1: &str = "apiextensions.k8s.io/v1";

/// The per-version fields that v1beta1 may hold once, at the spec level, and their names
/// there.
const HOISTED: [(&str, &str); 4] = [
    ("schema", "validation"),
    ("subresources", "subresources"),
    ("additionalPrinterColumns", "additionalPrinterColumns"),
    ("selectableFields", "selectableFields"),
];

/// Whether a stored CRD is in v1beta1.
pub fn is_v1beta1(crd: &Value) -> bool {
    crd.get("apiVersion").and_then(Value::as_str) == Some(API_VERSION)
}

/// Go's semantic equality of two optional fields as the conversion compares them: an absent
/// or null field equals another, and an empty list equals an absent one (apimachinery's
/// forked `DeepEqual`).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if empty(a) || empty(b) {
        return empty(a) && empty(b);
    }
    a == b
}

/// Renames the path member of each printer column (`jsonPath` in v1, `JSONPath` in v1beta1).
fn rename_column_paths(columns: &mut Value, from: &str, to: &str) {
    if let Value::Array(columns) = columns {
        for c in columns.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(path) = c.remove(from) {
                c.insert(to.into(), path);
            }
        }
    }
}

/// A served (v1) CRD in v1beta1, as kube-apiserver stores it.
pub fn from_v1(crd: &Value) -> Value {
    let mut out = crd.clone();
    out["apiVersion"] = json!(API_VERSION);
    let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) else {
        return out;
    };
    let mut versions: Vec<Map<String, Value>> = match spec.remove("versions") {
        Some(Value::Array(vs)) => vs
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if let Some(name) = versions.first().map(|v| v.get("name").cloned()) {
        spec.insert("version".into(), name.unwrap_or(json!("")));
        for (field, top) in HOISTED {
            let first_value = versions[0].get(field).cloned();
            if versions
                .iter()
                .all(|v| same(v.get(field), first_value.as_ref()))
            {
                for v in &mut versions {
                    v.remove(field);
                }
                match first_value {
                    Some(value) if !same(Some(&value), None) => {
                        spec.insert(top.into(), value);
                    }
                    _ => {}
                }
            }
        }
    }
    for v in &mut versions {
        if let Some(columns) = v.get_mut("additionalPrinterColumns") {
            rename_column_paths(columns, "jsonPath", "JSONPath");
        }
    }
    if let Some(columns) = spec.get_mut("additionalPrinterColumns") {
        rename_column_paths(columns, "jsonPath", "JSONPath");
    }
    if !versions.is_empty() {
        spec.insert(
            "versions".into(),
            Value::Array(versions.into_iter().map(Value::Object).collect()),
        );
    }
    // v1's `preserveUnknownFields` is a bool left out when false; v1beta1's is a pointer, set
    // from it.
    let preserve = spec
        .get("preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    spec.insert("preserveUnknownFields".into(), json!(preserve));
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion")
        && let Some(webhook) = conversion.remove("webhook")
    {
        if let Some(client) = webhook.get("clientConfig") {
            conversion.insert("webhookClientConfig".into(), client.clone());
        }
        if let Some(review) = webhook.get("conversionReviewVersions") {
            conversion.insert("conversionReviewVersions".into(), review.clone());
        }
    }
    out
}

/// A stored v1beta1 CRD as v1 serves it (v1beta1's defaults applied first, as decoding does).
pub fn to_v1(crd: &Value) -> Value {
    let mut out = crd.clone();
    out["apiVersion"] = json!(V1);
    let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) else {
        return out;
    };
    // v1beta1's SetDefaults_CustomResourceDefinitionSpec.
    if spec
        .get("scope")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        spec.insert("scope".into(), json!("Namespaced"));
    }
    let version = spec.remove("version");
    let mut versions: Vec<Map<String, Value>> = match spec.remove("versions") {
        Some(Value::Array(vs)) => vs
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if versions.is_empty()
        && let Some(name) = version
            .as_ref()
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
    {
        let mut v = Map::new();
        v.insert("name".into(), json!(name));
        v.insert("served".into(), json!(true));
        v.insert("storage".into(), json!(true));
        versions.push(v);
    }
    match spec.get_mut("conversion") {
        None | Some(Value::Null) => {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        Some(Value::Object(conversion)) => {
            let webhook_strategy =
                conversion.get("strategy").and_then(Value::as_str) == Some("Webhook");
            let review = conversion.remove("conversionReviewVersions");
            let review = match review {
                Some(Value::Array(a)) if !a.is_empty() => Some(Value::Array(a)),
                _ if webhook_strategy => Some(json!(["v1beta1"])),
                other => other,
            };
            let client = conversion.remove("webhookClientConfig");
            if client.is_some() || review.is_some() {
                let mut webhook = Map::new();
                if let Some(review) = review {
                    webhook.insert("conversionReviewVersions".into(), review);
                }
                if let Some(client) = client {
                    webhook.insert("clientConfig".into(), client);
                }
                conversion.insert("webhook".into(), Value::Object(webhook));
            }
        }
        Some(_) => {}
    }
    // A pointer defaulted to true in v1beta1; v1 leaves it out when false.
    let preserve = spec
        .remove("preserveUnknownFields")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    if preserve {
        spec.insert("preserveUnknownFields".into(), json!(true));
    }
    for (field, top) in HOISTED {
        if let Some(mut value) = spec.remove(top) {
            if value.is_null() {
                continue;
            }
            if field == "additionalPrinterColumns" {
                rename_column_paths(&mut value, "JSONPath", "jsonPath");
            }
            for v in &mut versions {
                v.insert(field.into(), value.clone());
            }
        }
    }
    for v in &mut versions {
        if let Some(columns) = v.get_mut("additionalPrinterColumns") {
            rename_column_paths(columns, "JSONPath", "jsonPath");
        }
    }
    spec.insert(
        "versions".into(),
        Value::Array(versions.into_iter().map(Value::Object).collect()),
    );
    set_name_defaults(spec);
    set_stored_versions(&mut out);
    out
}

/// `names.singular` and `names.listKind` from the kind, as both versions default them.
fn set_name_defaults(spec: &mut Map<String, Value>) {
    let Some(Value::Object(names)) = spec.get_mut("names") else {
        return;
    };
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if names
        .get("singular")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        names.insert("singular".into(), json!(kind.to_lowercase()));
    }
    if !kind.is_empty()
        && names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        names.insert("listKind".into(), json!(format!("{kind}List")));
    }
}

/// `status.storedVersions` defaults to the storage version.
fn set_stored_versions(crd: &mut Value) {
    let has = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has {
        return;
    }
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .cloned();
    if let (Some(name), Some(Value::Object(root))) = (storage, Some(&mut *crd)) {
        let status = root.entry("status").or_insert_with(|| json!({}));
        if let Value::Object(status) = status {
            status.insert("storedVersions".into(), json!([name]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_crd(versions: Value) -> Value {
        json!({
            "apiVersion": V1, "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "uid": "u1"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "conversion": {"strategy": "None"},
                "versions": versions,
            },
            "status": {"storedVersions": ["v1"], "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "conditions": []},
        })
    }

    fn schema(t: &str) -> Value {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": t}}}})
    }

    #[test]
    fn identical_version_fields_move_up_and_come_back() {
        let crd = v1_crd(json!([
            {"name": "v1", "served": true, "storage": true, "schema": schema("object"),
             "subresources": {"status": {}},
             "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
            {"name": "v1beta1", "served": true, "storage": false, "schema": schema("object"),
             "subresources": {"status": {}},
             "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
        ]));
        let stored = from_v1(&crd);
        assert_eq!(stored["apiVersion"], API_VERSION);
        assert_eq!(stored["spec"]["version"], "v1");
        assert_eq!(stored["spec"]["validation"], schema("object"));
        assert_eq!(stored["spec"]["subresources"], json!({"status": {}}));
        assert_eq!(
            stored["spec"]["additionalPrinterColumns"],
            json!([{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}])
        );
        assert_eq!(stored["spec"]["preserveUnknownFields"], false);
        assert_eq!(
            stored["spec"]["versions"],
            json!([{"name": "v1", "served": true, "storage": true}, {"name": "v1beta1", "served": true, "storage": false}])
        );
        assert_eq!(to_v1(&stored), crd);
    }

    #[test]
    fn differing_version_fields_stay_per_version() {
        let crd = v1_crd(json!([
            {"name": "v2", "served": true, "storage": true, "schema": schema("object"),
             "selectableFields": [{"jsonPath": ".spec.color"}]},
            {"name": "v1", "served": true, "storage": false, "deprecated": true, "schema": schema("string")},
        ]));
        let stored = from_v1(&crd);
        assert!(stored["spec"].get("validation").is_none());
        assert!(stored["spec"].get("selectableFields").is_none());
        assert_eq!(stored["spec"]["versions"][0]["schema"], schema("object"));
        assert_eq!(stored["spec"]["versions"][1]["schema"], schema("string"));
        assert_eq!(
            stored["spec"]["versions"][0]["selectableFields"],
            json!([{"jsonPath": ".spec.color"}])
        );
        assert_eq!(to_v1(&stored), crd);
    }

    #[test]
    fn conversion_webhooks_and_preserve_unknown_fields_convert_both_ways() {
        let mut crd = v1_crd(json!([{"name": "v1", "served": true, "storage": true}]));
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}, "caBundle": "Q0E="}}});
        crd["spec"]["preserveUnknownFields"] = json!(true);
        let stored = from_v1(&crd);
        assert_eq!(
            stored["spec"]["conversion"],
            json!({"strategy": "Webhook", "conversionReviewVersions": ["v1", "v1beta1"],
                   "webhookClientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}, "caBundle": "Q0E="}})
        );
        assert_eq!(stored["spec"]["preserveUnknownFields"], true);
        assert_eq!(to_v1(&stored), crd);
    }

    #[test]
    fn v1beta1_defaults_apply_to_what_older_writers_stored() {
        // As a v1beta1 client created it: one version, no versions list, nothing defaulted.
        let stored = json!({
            "apiVersion": API_VERSION, "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "version": "v1",
                     "names": {"plural": "crontabs", "kind": "CronTab"},
                     "validation": schema("object"),
                     "additionalPrinterColumns": [{"name": "Spec", "type": "string", "JSONPath": ".spec.cronSpec"}],
                     "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"}}},
        });
        let v1 = to_v1(&stored);
        assert_eq!(
            v1["spec"],
            json!({"group": "stable.example.com", "scope": "Namespaced",
                   "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                   "preserveUnknownFields": true,
                   "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1beta1"], "clientConfig": {"url": "https://x"}}},
                   "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema("object"),
                                 "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]}]})
        );
        assert_eq!(v1["status"]["storedVersions"], json!(["v1"]));
    }
}
