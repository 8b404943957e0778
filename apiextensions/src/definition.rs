//! What a CustomResourceDefinition means to the server: the resources it serves (one
//! [`ResourceDef`] per served version, from its accepted names) and the status kube's naming
//! and establishing controllers give it (`status.acceptedNames`, `NamesAccepted`,
//! `Established`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use kube_registry::resources::{
    CustomSource, ResourceDef, ScaleDef, Source, Storage, storage_prefix,
};

/// The finalizer kube puts on a CRD being deleted until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A condition of a CRD's status, by type.
pub fn condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether a condition is `True`.
pub fn condition_true(crd: &Value, type_: &str) -> bool {
    condition(crd, type_)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

pub use apimachinery::version::compare_versions;

fn scale_of(v: &Value) -> Option<ScaleDef> {
    let scale = v.pointer("/subresources/scale")?;
    Some(ScaleDef {
        spec_replicas_path: str_at(scale, "/specReplicasPath").to_string(),
        status_replicas_path: str_at(scale, "/statusReplicasPath").to_string(),
        label_selector_path: scale
            .get("labelSelectorPath")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    })
}

/// The resources a CRD serves, one per served version in kube's version priority, named by
/// its accepted names. Empty until names are accepted.
pub fn resource_defs(crd: &Value) -> Vec<ResourceDef> {
    let crd_name = str_at(crd, "/metadata/name").to_string();
    let group = str_at(crd, "/spec/group").to_string();
    let plural = str_at(crd, "/status/acceptedNames/plural").to_string();
    let kind = str_at(crd, "/status/acceptedNames/kind").to_string();
    if plural.is_empty() || kind.is_empty() || group.is_empty() {
        return Vec::new();
    }
    let singular = match str_at(crd, "/status/acceptedNames/singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(crd, "/status/acceptedNames/listKind") {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let namespaced = str_at(crd, "/spec/scope") != "Cluster";
    let mut versions: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
                .collect()
        })
        .unwrap_or_default();
    versions.sort_by(|a, b| compare_versions(str_at(a, "/name"), str_at(b, "/name")));
    versions
        .into_iter()
        .map(|v| ResourceDef {
            group: group.clone(),
            version: str_at(v, "/name").to_string(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            short_names: strings_at(crd, "/status/acceptedNames/shortNames"),
            categories: strings_at(crd, "/status/acceptedNames/categories"),
            namespaced,
            status: v.pointer("/subresources/status").is_some(),
            scale: scale_of(v),
            extra_subresources: Vec::new(),
            generation: true,
            strategic_merge: false,
            storage: Storage::Stored {
                prefix: storage_prefix(&group, &plural),
            },
            source: Source::Custom(Box::new(CustomSource {
                crd_name: crd_name.clone(),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                printer_columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                selectable_fields: v
                    .get("selectableFields")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
                scale: scale_of(v),
            })),
        })
        .collect()
}

/// Names already claimed in a group: resource names (plural, singular, short names) and
/// kinds (kind, list kind).
#[derive(Debug, Default, Clone)]
pub struct ClaimedNames {
    /// Plurals, singulars and short names.
    pub resources: BTreeSet<String>,
    /// Kinds and list kinds.
    pub kinds: BTreeSet<String>,
}

impl ClaimedNames {
    /// Adds the accepted names of a CRD.
    pub fn add_crd(&mut self, crd: &Value) {
        for p in [
            "/status/acceptedNames/plural",
            "/status/acceptedNames/singular",
        ] {
            let s = str_at(crd, p);
            if !s.is_empty() {
                self.resources.insert(s.to_string());
            }
        }
        self.resources
            .extend(strings_at(crd, "/status/acceptedNames/shortNames"));
        for p in [
            "/status/acceptedNames/kind",
            "/status/acceptedNames/listKind",
        ] {
            let s = str_at(crd, p);
            if !s.is_empty() {
                self.kinds.insert(s.to_string());
            }
        }
    }

    /// Adds a resource the server serves natively.
    pub fn add_resource(&mut self, def: &ResourceDef) {
        self.resources.insert(def.plural.clone());
        self.resources.insert(def.singular.clone());
        self.resources.extend(def.short_names.iter().cloned());
        self.kinds.insert(def.kind.clone());
        self.kinds.insert(def.list_kind.clone());
    }
}

/// equalToAcceptedOrFresh.
fn fresh(requested: &str, accepted: &str, used: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// Whether the CRD describes exactly a resource the server already serves natively (e.g.
/// one of Karmada's own CRDs): its names are then accepted without being claimed twice.
pub fn mirrors_native(crd: &Value, native: &[Arc<ResourceDef>]) -> bool {
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    let kind = str_at(crd, "/spec/names/kind");
    native
        .iter()
        .any(|r| r.group == group && r.plural == plural && r.kind == kind)
}

/// The status a CRD should have: accepted names and the `NamesAccepted` / `Established`
/// conditions (kube's NamingConditionController followed at once by the
/// EstablishingController), keeping other conditions and fields. `claimed` holds the names
/// other CRDs and native resources of the group own.
pub fn desired_status(crd: &Value, claimed: &ClaimedNames, now: &str) -> Value {
    let requested = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let accepted = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let mut problem: Option<(&str, String)> = None;
    let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();

    let checks: [(&str, &str, &BTreeSet<String>); 2] = [
        ("plural", "PluralConflict", &claimed.resources),
        ("singular", "SingularConflict", &claimed.resources),
    ];
    for (field, reason, used) in checks {
        match fresh(&get(&requested, field), &get(&accepted, field), used) {
            Ok(()) => {
                names.insert(field.into(), json!(get(&requested, field)));
            }
            Err(e) => problem = Some((reason, e)),
        }
    }
    let requested_short = strings_at(&requested, "/shortNames");
    let accepted_short = strings_at(&accepted, "/shortNames");
    if requested_short != accepted_short {
        let errs: Vec<String> = requested_short
            .iter()
            .filter(|s| !accepted_short.contains(s))
            .filter_map(|s| fresh(s, "", &claimed.resources).err())
            .collect();
        if errs.is_empty() {
            if requested_short.is_empty() {
                names.remove("shortNames");
            } else {
                names.insert("shortNames".into(), json!(requested_short));
            }
        } else if errs.len() == 1 {
            problem = Some(("ShortNamesConflict", errs[0].clone()));
        } else {
            problem = Some(("ShortNamesConflict", format!("[{}]", errs.join(", "))));
        }
    }
    let kind_checks: [(&str, &str); 2] =
        [("kind", "KindConflict"), ("listKind", "ListKindConflict")];
    for (field, reason) in kind_checks {
        match fresh(
            &get(&requested, field),
            &get(&accepted, field),
            &claimed.kinds,
        ) {
            Ok(()) => {
                names.insert(field.into(), json!(get(&requested, field)));
            }
            Err(e) => problem = Some((reason, e)),
        }
    }
    match requested.get("categories") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => {
            names.insert("categories".into(), c.clone());
        }
        _ => {
            names.remove("categories");
        }
    }

    let names_accepted = match &problem {
        None => json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                       "message": "no conflicts found"}),
        Some((reason, message)) => json!({"type": "NamesAccepted", "status": "False",
                                          "reason": reason, "message": message}),
    };
    let established = if problem.is_none() {
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
               "message": "the initial names have been accepted"})
    } else {
        match condition(crd, "Established") {
            Some(old) => old.clone(),
            None => json!({"type": "Established", "status": "False", "reason": "NotAccepted",
                           "message": "not all names are accepted"}),
        }
    };
    let mut status = crd
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    status.insert("acceptedNames".into(), Value::Object(names));
    let mut out = Value::Object(status);
    set_condition(&mut out, names_accepted, now);
    set_condition(&mut out, established, now);
    out
}

/// apiextensions' SetCRDCondition on a status object: replaces the condition of the same
/// type (keeping its transition time when the status did not change) or appends it.
pub fn set_condition(status: &mut Value, mut cond: Value, now: &str) {
    let Value::Object(status) = status else {
        return;
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(list) = conditions else {
        return;
    };
    let type_ = cond.get("type").cloned();
    let existing = list.iter_mut().find(|c| c.get("type") == type_.as_ref());
    match existing {
        Some(old) => {
            let same_status = old.get("status") == cond.get("status");
            let time = match (same_status, old.get("lastTransitionTime")) {
                (true, Some(t)) => t.clone(),
                _ => json!(now),
            };
            if let Value::Object(c) = &mut cond {
                c.insert("lastTransitionTime".into(), time);
            }
            *old = cond;
        }
        None => {
            if let Value::Object(c) = &mut cond {
                c.insert("lastTransitionTime".into(), json!(now));
            }
            list.push(cond);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({
            "metadata": {"name": name},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                          "listKind": format!("{kind}List"), "shortNames": short, "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "string", "jsonPath": ".spec.size"}],
                     "selectableFields": [{"jsonPath": ".spec.size"}]},
                    {"name": "v0", "served": false, "storage": false}
                ]
            }
        })
    }

    #[test]
    fn accepted_names_and_defs() {
        let mut c = crd("widgets.example.com", "widgets", "Widget", &["wd"]);
        assert!(resource_defs(&c).is_empty(), "no accepted names yet");
        let status = desired_status(&c, &ClaimedNames::default(), "2024-01-01T00:00:00Z");
        assert_eq!(status["acceptedNames"]["plural"], "widgets");
        assert_eq!(status["acceptedNames"]["shortNames"], json!(["wd"]));
        assert!(
            status["conditions"]
                .as_array()
                .is_some_and(|c| c.len() == 2)
        );
        c["status"] = status;
        assert!(condition_true(&c, "NamesAccepted") && condition_true(&c, "Established"));

        let defs = resource_defs(&c);
        let versions: Vec<&str> = defs.iter().map(|d| d.version.as_str()).collect();
        assert_eq!(versions, vec!["v1", "v1beta1"]);
        let v1 = &defs[0];
        assert_eq!(v1.kind, "Widget");
        assert_eq!(v1.list_kind, "WidgetList");
        assert_eq!(v1.singular, "widget");
        assert!(v1.namespaced && v1.status && v1.generation && !v1.strategic_merge);
        assert_eq!(v1.prefix(), Some("/registry/example.com/widgets/"));
        assert_eq!(v1.categories, vec!["all"]);
        assert_eq!(
            v1.scale.as_ref().map(|s| s.spec_replicas_path.as_str()),
            Some(".spec.replicas")
        );
        let Source::Custom(custom) = &v1.source else {
            panic!("custom source expected");
        };
        assert_eq!(custom.crd_name, "widgets.example.com");
        assert_eq!(custom.printer_columns.len(), 1);
        assert_eq!(custom.selectable_fields, vec![".spec.size"]);
        assert!(!defs[1].status && defs[1].scale.is_none());

        // Recomputing gives the same status (no transition-time churn).
        let again = desired_status(&c, &ClaimedNames::default(), "2030-01-01T00:00:00Z");
        assert_eq!(again, c["status"]);
    }

    trait TapSingular {
        fn tap_singular(self, s: &str) -> Value;
    }

    impl TapSingular for Value {
        fn tap_singular(mut self, s: &str) -> Value {
            self["spec"]["names"]["singular"] = json!(s);
            self
        }
    }

    #[test]
    fn conflicts() {
        let mut first = crd("widgets.example.com", "widgets", "Widget", &["wd"]);
        first["status"] = desired_status(&first, &ClaimedNames::default(), "t");
        let mut claimed = ClaimedNames::default();
        claimed.add_crd(&first);

        let cases = vec![
            // Plural and singular both clash: as in kube, the last check's reason stays.
            (
                crd("w2.example.com", "widgets", "Gadget", &[]),
                "SingularConflict",
                "\"widget\" is already in use",
            ),
            (
                crd("w3.example.com", "widgets", "Gizmo", &[]).tap_singular("gizmo"),
                "PluralConflict",
                "\"widgets\" is already in use",
            ),
            (
                // Kind and list kind both clash; the list kind is checked last.
                crd("g.example.com", "gadgets", "Widget", &[]),
                "ListKindConflict",
                "\"WidgetList\" is already in use",
            ),
            (
                crd("h.example.com", "hats", "Hat", &["wd"]),
                "ShortNamesConflict",
                "\"wd\" is already in use",
            ),
        ];
        for (c, reason, message) in cases {
            let status = desired_status(&c, &claimed, "t");
            let mut with = c.clone();
            with["status"] = status;
            let cond = condition(&with, "NamesAccepted")
                .cloned()
                .unwrap_or_default();
            assert_eq!(cond["status"], "False");
            assert_eq!(cond["reason"], reason);
            assert_eq!(cond["message"], message);
            let est = condition(&with, "Established").cloned().unwrap_or_default();
            assert_eq!(est["status"], "False");
            assert_eq!(est["reason"], "NotAccepted");
        }
    }
}
