//! A webhook's namespaceSelector and objectSelector (k8s.io/apiserver
//! pkg/admission/plugin/webhook/predicates/namespace and .../object).

use std::collections::BTreeMap;

use genericapiserver::auth::rbac::aggregation::selector_matches;
use genericapiserver::error::ApiError;
use genericapiserver::state::ApiState;
use serde_json::Value;

/// Whether a label selector (`{}` or absent: everything) is empty.
pub fn is_empty(selector: &Value) -> bool {
    selector.as_object().is_none_or(|m| {
        m.values().all(|v| match v {
            Value::Null => true,
            Value::Object(o) => o.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => false,
        })
    })
}

fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The objectSelector: the new or the old object's labels match (a missing object never
/// matches a non-empty selector).
pub fn object_matches(selector: &Value, obj: Option<&Value>, old: Option<&Value>) -> bool {
    if is_empty(selector) {
        return true;
    }
    [obj, old]
        .into_iter()
        .flatten()
        .filter(|o| !o.is_null())
        .any(|o| selector_matches(selector, &labels(o)))
}

/// What the namespaceSelector looks at in a request.
pub struct NamespaceTarget<'a> {
    /// The object's namespace (`""`: cluster-scoped, or a Namespace itself).
    pub namespace: &'a str,
    /// Whether the object is a Namespace (main resource).
    pub is_namespace: bool,
    /// The request's operation.
    pub operation: &'a str,
    /// The written object and the stored one.
    pub object: Option<&'a Value>,
    /// The stored object.
    pub old: Option<&'a Value>,
}

/// The namespaceSelector: a cluster-scoped object other than a Namespace is never exempted;
/// a Namespace being created or updated is judged by its own labels, anything else by its
/// namespace's labels as the watch cache holds them.
pub async fn namespace_matches(
    state: &ApiState,
    selector: &Value,
    t: &NamespaceTarget<'_>,
) -> Result<bool, ApiError> {
    if t.namespace.is_empty() && !t.is_namespace {
        return Ok(true);
    }
    if is_empty(selector) {
        return Ok(true);
    }
    if t.is_namespace {
        let own = match t.operation {
            "CREATE" | "UPDATE" => t.object,
            _ => t.old,
        };
        return Ok(selector_matches(
            selector,
            &own.map(labels).unwrap_or_default(),
        ));
    }
    let snapshot = state.catalog.snapshot();
    let def = snapshot
        .get("", "v1", "namespaces")
        .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
    let key = def
        .key("", t.namespace)
        .ok_or_else(|| ApiError::internal("namespaces are not stored"))?;
    let cached = state.cache(def)?.get(&key).map(|o| o.value());
    let namespace = match cached {
        Some(ns) => ns,
        // The cache may not have caught up with a namespace created a moment ago: read
        // storage, as kube's matcher falls back to a live GET.
        None => match state.store.get(&key).await?.0 {
            Some(kv) => {
                genericapiserver::storage_codec::decode_value(def, &kv.value, kv.mod_revision)?
            }
            None => return Err(ApiError::not_found("", "namespaces", t.namespace)),
        },
    };
    Ok(selector_matches(selector, &labels(&namespace)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_selector_takes_either_object() {
        let sel = json!({"matchLabels": {"team": "a"}});
        let a = json!({"metadata": {"labels": {"team": "a"}}});
        let b = json!({"metadata": {"labels": {"team": "b"}}});
        assert!(object_matches(&sel, Some(&a), None));
        assert!(object_matches(&sel, Some(&b), Some(&a)));
        assert!(!object_matches(&sel, Some(&b), None));
        assert!(!object_matches(&sel, None, None));
        assert!(object_matches(&json!({}), None, None));
        let not = json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
        assert!(object_matches(&not, Some(&a), None));
    }
}
