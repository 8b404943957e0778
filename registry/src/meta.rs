//! ObjectMeta, labels, annotations and label selectors, validated as
//! k8s.io/apimachinery/pkg/api/validation (ValidateObjectMeta, ValidateObjectMetaUpdate) and
//! pkg/apis/meta/v1/validation do.

use std::collections::BTreeMap;

use serde_json::Value;

use super::field::{self, Bad, Path, go_quote, go_string_map, go_string_slice};
use super::json;
use super::names;
use apimachinery::status::Cause;

/// A name format: `(name, is_generate_name_prefix) -> problems`.
pub(crate) type NameFn<'a> = &'a dyn Fn(&str, bool) -> Vec<String>;

/// TotalAnnotationSizeLimitB.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// ValidateLabels.
pub(crate) fn validate_labels(
    labels: Option<&BTreeMap<String, String>>,
    path: &Path,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        for m in names::qualified_name(k) {
            errs.push(field::invalid(path, Bad::str(k), &m));
        }
        for m in names::label_value(v) {
            errs.push(field::invalid(path, Bad::str(v), &m));
        }
    }
    errs
}

/// ValidateAnnotations: keys are qualified names (case-insensitively), total size <= 256 KiB.
pub(crate) fn validate_annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &Path,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations.into_iter().flatten() {
        for m in names::qualified_name(&k.to_lowercase()) {
            errs.push(field::invalid(path, Bad::str(k), &m));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(field::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

fn validate_owner_references(meta: &Value, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in json::list(meta, "ownerReferences") {
        let api_version = json::string(r, "apiVersion");
        let kind = json::string(r, "kind");
        let name = json::string(r, "name");
        let uid = json::string(r, "uid");
        // schema.FromAPIVersionAndKind: "group/version" or "version"; anything else has no version.
        let parts: Vec<&str> = api_version.split('/').collect();
        let (group, version) = match parts.as_slice() {
            [v] => ("", *v),
            [g, v] => (*g, *v),
            _ => ("", ""),
        };
        if version.is_empty() {
            errs.push(field::invalid(
                &path.child("apiVersion"),
                Bad::str(api_version),
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(field::invalid(
                &path.child("kind"),
                Bad::str(kind),
                "kind must not be empty",
            ));
        }
        if name.is_empty() {
            errs.push(field::invalid(
                &path.child("name"),
                Bad::str(name),
                "name must not be empty",
            ));
        }
        if uid.is_empty() {
            errs.push(field::invalid(
                &path.child("uid"),
                Bad::str(uid),
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(field::invalid(
                path,
                Bad::Raw(go_owner_reference(r)),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if json::boolean(r, "controller") == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(field::invalid(
                    path,
                    Bad::Raw(go_owner_references(meta)),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

fn go_bool_ptr(v: Option<bool>) -> String {
    match v {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".to_string(),
    }
}

fn go_owner_reference(r: &Value) -> String {
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        go_quote(json::string(r, "apiVersion")),
        go_quote(json::string(r, "kind")),
        go_quote(json::string(r, "name")),
        go_quote(json::string(r, "uid")),
        go_bool_ptr(json::boolean(r, "controller")),
        go_bool_ptr(json::boolean(r, "blockOwnerDeletion")),
    )
}

fn go_owner_references(meta: &Value) -> String {
    let items: Vec<String> = json::list(meta, "ownerReferences")
        .iter()
        .map(go_owner_reference)
        .collect();
    format!("[]v1.OwnerReference{{{}}}", items.join(", "))
}

/// ValidateFinalizers (apimachinery) plus, for kinds validated by pkg/apis/core/validation,
/// validateKubeFinalizerName.
fn validate_finalizers(meta: &Value, path: &Path, kube_finalizers: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let finalizers = json::string_list(meta, "finalizers").unwrap_or_default();
    for f in &finalizers {
        for m in names::qualified_name(f) {
            errs.push(field::invalid(path, Bad::str(f), &m));
        }
    }
    if finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        errs.push(field::invalid(
            path,
            Bad::Raw(go_string_slice(Some(&finalizers))),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if kube_finalizers {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.contains('/')
                && !matches!(f.as_str(), "kubernetes" | "orphan" | "foregroundDeletion")
            {
                errs.push(field::invalid(
                    &path.index(i),
                    Bad::str(f),
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    errs
}

fn meta_of(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("metadata").unwrap_or(&EMPTY)
}

/// The common checks of ObjectMeta that apply on create and update.
fn validate_meta_common(meta: &Value, path: &Path, kube_finalizers: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(g) = json::int(meta, "generation").filter(|g| *g < 0) {
        errs.push(field::invalid(
            &path.child("generation"),
            Bad::Int(g),
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(
        json::string_map(meta, "labels").as_ref(),
        &path.child("labels"),
    ));
    errs.extend(validate_annotations(
        json::string_map(meta, "annotations").as_ref(),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        meta,
        &path.child("ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        meta,
        &path.child("finalizers"),
        kube_finalizers,
    ));
    errs
}

/// ValidateObjectMeta (the namespace checks are the registry's).
pub(crate) fn validate_object_meta(
    obj: &Value,
    name_fn: NameFn,
    kube_finalizers: bool,
) -> Vec<Cause> {
    let meta = meta_of(obj);
    let path = Path::new("metadata");
    let mut errs = Vec::new();
    let generate_name = json::string(meta, "generateName");
    if !generate_name.is_empty() {
        for m in name_fn(generate_name, true) {
            errs.push(field::invalid(
                &path.child("generateName"),
                Bad::str(generate_name),
                &m,
            ));
        }
    }
    let name = json::string(meta, "name");
    if name.is_empty() {
        errs.push(field::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for m in name_fn(name, false) {
            errs.push(field::invalid(&path.child("name"), Bad::str(name), &m));
        }
    }
    errs.extend(validate_meta_common(meta, &path, kube_finalizers));
    errs
}

/// ValidateObjectMetaUpdate. `creationTimestamp` is not checked: kube-apiserver silently keeps
/// the stored value (rest.BeforeUpdate), as does [`super::prepare_for_update`].
pub(crate) fn validate_object_meta_update(
    new: &Value,
    old: &Value,
    kube_finalizers: bool,
) -> Vec<Cause> {
    let (nm, om) = (meta_of(new), meta_of(old));
    let path = Path::new("metadata");
    let mut errs = Vec::new();
    if json::field(om, "deletionTimestamp").is_some() {
        let old_f = json::string_list(om, "finalizers").unwrap_or_default();
        let mut extra: Vec<String> = json::string_list(nm, "finalizers")
            .unwrap_or_default()
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(field::forbidden(
                &path.child("finalizers"),
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(Some(&extra))
                ),
            ));
        }
    }
    for key in ["name", "namespace"] {
        let (n, o) = (json::string(nm, key), json::string(om, key));
        if n != o {
            errs.push(field::invalid(
                &path.child(key),
                Bad::str(n),
                "field is immutable",
            ));
        }
    }
    let (nu, ou) = (json::string(nm, "uid"), json::string(om, "uid"));
    if !nu.is_empty() && nu != ou {
        errs.push(field::invalid(
            &path.child("uid"),
            Bad::str(nu),
            "field is immutable",
        ));
    }
    errs.extend(validate_meta_common(nm, &path, kube_finalizers));
    errs
}

/// A parsed label selector requirement (labels.Requirement).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

/// The result of metav1.LabelSelectorAsSelector.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// Requirements, all of which must hold (empty = everything).
    Reqs(Vec<(String, Op)>),
}

impl Selector {
    /// labels.Selector.Empty.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Selector::Reqs(r) if r.is_empty())
    }

    /// labels.Selector.Matches.
    pub(crate) fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let Selector::Reqs(reqs) = self else {
            return false;
        };
        reqs.iter().all(|(k, op)| {
            let v = labels.and_then(|l| l.get(k));
            match op {
                Op::In(vals) => v.is_some_and(|v| vals.contains(v)),
                Op::NotIn(vals) => v.is_none_or(|v| !vals.contains(v)),
                Op::Exists => v.is_some(),
                Op::DoesNotExist => v.is_none(),
            }
        })
    }
}

/// metav1.LabelSelectorAsSelector; `Err` when the selector is malformed.
pub(crate) fn selector_as_selector(sel: Option<&Value>) -> Result<Selector, ()> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return Ok(Selector::Nothing);
    };
    let mut reqs = Vec::new();
    for (k, v) in json::string_map(sel, "matchLabels").unwrap_or_default() {
        if !names::qualified_name(&k).is_empty() || !names::label_value(&v).is_empty() {
            return Err(());
        }
        reqs.push((k, Op::In(vec![v])));
    }
    for e in json::list(sel, "matchExpressions") {
        let key = json::string(e, "key").to_string();
        let values = json::string_list(e, "values").unwrap_or_default();
        if !names::qualified_name(&key).is_empty() {
            return Err(());
        }
        let op = match json::string(e, "operator") {
            "In" | "NotIn" if values.is_empty() => return Err(()),
            "In" => Op::In(values),
            "NotIn" => Op::NotIn(values),
            "Exists" | "DoesNotExist" if !values.is_empty() => return Err(()),
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            _ => return Err(()),
        };
        if let Op::In(vals) | Op::NotIn(vals) = &op
            && vals.iter().any(|v| !names::label_value(v).is_empty())
        {
            return Err(());
        }
        reqs.push((key, op));
    }
    Ok(Selector::Reqs(reqs))
}

/// ValidateLabelSelector (strict label values).
pub(crate) fn validate_label_selector(sel: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return errs;
    };
    errs.extend(validate_labels(
        json::string_map(sel, "matchLabels").as_ref(),
        &path.child("matchLabels"),
    ));
    for (i, e) in json::list(sel, "matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = json::string_list(e, "values").unwrap_or_default();
        let op = json::string(e, "operator");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(field::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(field::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => errs.push(field::invalid(
                &p.child("operator"),
                Bad::str(op),
                "not a valid selector operator",
            )),
        }
        let key = json::string(e, "key");
        for m in names::qualified_name(key) {
            errs.push(field::invalid(&p.child("key"), Bad::str(key), &m));
        }
        for (j, v) in values.iter().enumerate() {
            for m in names::label_value(v) {
                errs.push(field::invalid(&p.child("values").index(j), Bad::str(v), &m));
            }
        }
    }
    errs
}

/// Go's `%#v` of a metav1.LabelSelector value (as field errors print a `*LabelSelector`).
pub(crate) fn go_label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return "null".to_string();
    };
    let labels = json::string_map(sel, "matchLabels");
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let rendered: Vec<String> = items
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        go_quote(json::string(e, "key")),
                        go_quote(json::string(e, "operator")),
                        go_string_slice(json::string_list(e, "values").as_deref())
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", rendered.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_string_map(labels.as_ref()),
        exprs
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn subdomain(n: &str, p: bool) -> Vec<String> {
        names::name_is_dns_subdomain(n, p)
    }

    fn fields(errs: &[Cause]) -> Vec<(&str, &str)> {
        errs.iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn object_meta_create() {
        type Case = (serde_json::Value, Vec<(&'static str, &'static str)>);
        let cases: Vec<Case> = vec![
            (
                json!({"metadata": {"name": "ok", "labels": {"app": "x"}}}),
                vec![],
            ),
            (
                json!({"metadata": {}}),
                vec![(
                    "metadata.name",
                    "Required value: name or generateName is required",
                )],
            ),
            (
                json!({"metadata": {"name": "Bad_Name"}}),
                vec![(
                    "metadata.name",
                    "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                )],
            ),
            (
                json!({"metadata": {"name": "a", "labels": {"app": "-bad"}}}),
                vec![(
                    "metadata.labels",
                    "Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )],
            ),
            (
                json!({"metadata": {"name": "a", "finalizers": ["foo"]}}),
                vec![(
                    "metadata.finalizers[0]",
                    "Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified",
                )],
            ),
            (
                json!({"metadata": {"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n"}]}}),
                vec![(
                    "metadata.ownerReferences.uid",
                    "Invalid value: \"\": uid must not be empty",
                )],
            ),
            (
                json!({"metadata": {"name": "a", "annotations": {"big": "x".repeat(300 * 1024)}}}),
                vec![(
                    "metadata.annotations",
                    "Too long: may not be more than 262144 bytes",
                )],
            ),
        ];
        for (obj, want) in cases {
            let errs = validate_object_meta(&obj, &subdomain, true);
            assert_eq!(fields(&errs), want, "{obj}");
        }
    }

    #[test]
    fn object_meta_update() {
        let old = json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}});
        let new = json!({"metadata": {"name": "b", "namespace": "ns", "uid": "u2"}});
        let errs = validate_object_meta_update(&new, &old, true);
        assert_eq!(
            fields(&errs),
            vec![
                ("metadata.name", "Invalid value: \"b\": field is immutable"),
                ("metadata.uid", "Invalid value: \"u2\": field is immutable"),
            ]
        );
        let deleting = json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["a/b"]}});
        let more = json!({"metadata": {"name": "a", "finalizers": ["a/b", "c/d"]}});
        let errs = validate_object_meta_update(&more, &deleting, true);
        assert_eq!(
            fields(&errs),
            vec![(
                "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"c/d\"}"
            )]
        );
    }

    #[test]
    fn selectors() {
        let s = json!({"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]});
        let sel = selector_as_selector(Some(&s)).unwrap();
        let mut labels = BTreeMap::new();
        labels.insert("app".to_string(), "x".to_string());
        assert!(sel.matches(Some(&labels)));
        labels.insert("tier".to_string(), "db".to_string());
        assert!(!sel.matches(Some(&labels)));
        assert_eq!(selector_as_selector(None), Ok(Selector::Nothing));
        assert!(selector_as_selector(Some(&json!({}))).unwrap().is_empty());
        assert!(
            selector_as_selector(Some(
                &json!({"matchExpressions": [{"key": "a", "operator": "In"}]})
            ))
            .is_err()
        );
        assert_eq!(
            go_label_selector(Some(&json!({"matchLabels": {"app": "nginx"}}))),
            "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"nginx\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        let errs = validate_label_selector(
            Some(&json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
            &Path::new("spec").child("selector"),
        );
        assert_eq!(
            fields(&errs),
            vec![(
                "spec.selector.matchExpressions[0].operator",
                "Invalid value: \"Foo\": not a valid selector operator"
            )]
        );
    }
}
