//! Events: the core `v1` Event and `events.k8s.io/v1` Event are one stored object (kube keeps
//! both under `/registry/events/` in the core form), converted as pkg/apis/events/v1's
//! conversion does, and validated as pkg/apis/core/validation/events.go does: legacy rules for
//! every write, strict ones for writes through `events.k8s.io/v1`. Validation sees the stored
//! (core) form, so its field paths are core's (`message`, `involvedObject`), as kube's are.

use serde_json::{Map, Value, json};

use super::field::{self, Bad, Path};
use super::json;
use super::names;
use apimachinery::status::Cause;

/// The API group of the newer Event.
pub const GROUP: &str = "events.k8s.io";

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Field names that are the same in both forms.
const SAME: &[&str] = &[
    "reason",
    "type",
    "action",
    "related",
    "series",
    "reportingInstance",
];

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, src: &str, dst: &str) {
    if let Some(v) = from.get(src).filter(|v| !v.is_null()) {
        to.insert(dst.into(), v.clone());
    }
}

fn non_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_i64() != Some(0),
        Some(_) => true,
    }
}

/// A stored (core `v1`) Event as `events.k8s.io/v1` serves it
/// (Convert_core_Event_To_v1_Event), with Go's zero values where its JSON always has them.
pub fn to_events_v1(core: &Value) -> Value {
    let Some(c) = core.as_object() else {
        return core.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
    copy(c, &mut out, "metadata", "metadata");
    out.insert(
        "eventTime".into(),
        c.get("eventTime").cloned().unwrap_or(Value::Null),
    );
    for f in SAME {
        if non_empty(c.get(*f)) {
            copy(c, &mut out, f, f);
        }
    }
    if non_empty(c.get("reportingComponent")) {
        copy(c, &mut out, "reportingComponent", "reportingController");
    }
    out.insert(
        "regarding".into(),
        c.get("involvedObject").cloned().unwrap_or(json!({})),
    );
    if non_empty(c.get("message")) {
        copy(c, &mut out, "message", "note");
    }
    out.insert(
        "deprecatedSource".into(),
        c.get("source")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!({})),
    );
    for (src, dst) in [
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
    ] {
        out.insert(dst.into(), c.get(src).cloned().unwrap_or(Value::Null));
    }
    if non_empty(c.get("count")) {
        copy(c, &mut out, "count", "deprecatedCount");
    }
    Value::Object(out)
}

/// An `events.k8s.io/v1` Event in its stored (core `v1`) form (Convert_v1_Event_To_core_Event).
pub fn to_core(events: &Value) -> Value {
    let Some(e) = events.as_object() else {
        return events.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!("v1"));
    copy(e, &mut out, "metadata", "metadata");
    out.insert(
        "involvedObject".into(),
        e.get("regarding")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!({})),
    );
    for f in SAME {
        if non_empty(e.get(*f)) {
            copy(e, &mut out, f, f);
        }
    }
    if non_empty(e.get("note")) {
        copy(e, &mut out, "note", "message");
    }
    out.insert(
        "source".into(),
        e.get("deprecatedSource")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!({})),
    );
    for (src, dst) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
    ] {
        out.insert(dst.into(), e.get(src).cloned().unwrap_or(Value::Null));
    }
    if non_empty(e.get("deprecatedCount")) {
        copy(e, &mut out, "deprecatedCount", "count");
    }
    out.insert(
        "eventTime".into(),
        e.get("eventTime").cloned().unwrap_or(Value::Null),
    );
    out.insert(
        "reportingComponent".into(),
        e.get("reportingController").cloned().unwrap_or(json!("")),
    );
    if !out.contains_key("reportingInstance") {
        out.insert("reportingInstance".into(), json!(""));
    }
    Value::Object(out)
}

fn is_set(obj: &Value, key: &str) -> bool {
    non_empty(obj.get(key))
}

fn too_long(key: &str, limit: usize) -> Cause {
    field::invalid(
        &Path::new(key),
        Bad::str(""),
        &format!("can have at most {limit} characters"),
    )
}

/// legacyValidateEvent, on the stored form.
fn validate_legacy(obj: &Value, errs: &mut Vec<Cause>) {
    let ns = json::at(obj, &["metadata", "namespace"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved = json::at(obj, &["involvedObject", "namespace"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let mismatch = || {
        field::invalid(
            &Path::new("involvedObject").child("namespace"),
            Bad::str(involved),
            "does not match event.namespace",
        )
    };
    if !is_set(obj, "eventTime") {
        let ok = if involved.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == involved
        };
        if !ok {
            errs.push(mismatch());
        }
    } else {
        if involved.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller = json::string(obj, "reportingComponent");
        if controller.is_empty() {
            errs.push(field::required(&Path::new("reportingController"), ""));
        }
        for m in names::qualified_name(controller) {
            errs.push(field::invalid(
                &Path::new("reportingController"),
                Bad::str(controller),
                &m,
            ));
        }
        let instance = json::string(obj, "reportingInstance");
        if instance.is_empty() {
            errs.push(field::required(&Path::new("reportingInstance"), ""));
        }
        if instance.len() > REPORTING_INSTANCE_LIMIT {
            errs.push(too_long("reportingInstance", REPORTING_INSTANCE_LIMIT));
        }
        let action = json::string(obj, "action");
        if action.is_empty() {
            errs.push(field::required(&Path::new("action"), ""));
        }
        if action.len() > ACTION_LIMIT {
            errs.push(too_long("action", ACTION_LIMIT));
        }
        let reason = json::string(obj, "reason");
        if reason.is_empty() {
            errs.push(field::required(&Path::new("reason"), ""));
        }
        if reason.len() > REASON_LIMIT {
            errs.push(too_long("reason", REASON_LIMIT));
        }
        if json::string(obj, "message").len() > NOTE_LIMIT {
            errs.push(too_long("message", NOTE_LIMIT));
        }
    }
}

/// validateV1EventSeries.
fn validate_series(obj: &Value, errs: &mut Vec<Cause>) {
    let Some(series) = json::field(obj, "series") else {
        return;
    };
    if json::int(series, "count").unwrap_or(0) < 2 {
        errs.push(field::invalid(
            &Path::new("series.count"),
            Bad::str(""),
            "should be at least 2",
        ));
    }
    if !is_set(series, "lastObservedTime") {
        errs.push(field::required(&Path::new("series.lastObservedTime"), ""));
    }
}

/// Fields the strict rules keep immutable on update, in kube's order.
const IMMUTABLE: &[&str] = &[
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

/// ValidateEventCreate / ValidateEventUpdate for a write through `group` (`""` for the core
/// API, whose writes get the legacy rules only).
pub(crate) fn validate(group: &str, obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    validate_legacy(obj, errs);
    if group != GROUP {
        return;
    }
    match old {
        None => {
            validate_series(obj, errs);
            if !is_set(obj, "eventTime") {
                errs.push(field::required(&Path::new("eventTime"), ""));
            }
            let t = json::string(obj, "type");
            if t != "Normal" && t != "Warning" {
                errs.push(field::invalid(
                    &Path::new("type"),
                    Bad::str(""),
                    &format!("has invalid value: {t}"),
                ));
            }
            for (key, path) in [
                ("firstTimestamp", "firstTimestamp"),
                ("lastTimestamp", "lastTimestamp"),
                ("count", "count"),
            ] {
                if is_set(obj, key) {
                    errs.push(field::invalid(
                        &Path::new(path),
                        Bad::str(""),
                        "needs to be unset",
                    ));
                }
            }
            let source = json::field(obj, "source");
            if source.is_some_and(|s| is_set(s, "component") || is_set(s, "host")) {
                errs.push(field::invalid(
                    &Path::new("source"),
                    Bad::str(""),
                    "needs to be unset",
                ));
            }
        }
        Some(old) => {
            if !json::semantic_eq(json::field(obj, "series"), json::field(old, "series")) {
                validate_series(obj, errs);
            }
            for key in IMMUTABLE {
                if !json::semantic_eq(json::field(obj, key), json::field(old, key)) {
                    let path = if *key == "reportingComponent" {
                        "reportingController"
                    } else {
                        key
                    };
                    errs.push(field::immutable(&Path::new(path), json::field(obj, key)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(errs: &[Cause]) -> Vec<(&str, &str)> {
        errs.iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn the_two_forms_convert_both_ways() {
        let v1 = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "scaled to 3",
            "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"},
        });
        let core = to_core(&v1);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "scaled to 3");
        assert_eq!(core["reportingComponent"], "example.com/ctl");
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["source"], json!({}));
        assert_eq!(core["firstTimestamp"], Value::Null);
        let back = to_events_v1(&core);
        for k in [
            "note",
            "reportingController",
            "regarding",
            "reason",
            "eventTime",
        ] {
            assert_eq!(back[k], v1[k], "{k}");
        }
        assert_eq!(back["deprecatedSource"], json!({}));
        assert!(back.get("deprecatedCount").is_none());
    }

    #[test]
    fn strict_rules_apply_to_events_k8s_io_writes_only() {
        let core = json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started", "message": "m", "count": 2, "type": "Normal",
            "source": {"component": "kubelet"},
        });
        let mut errs = Vec::new();
        validate("", &core, None, &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        validate(GROUP, &core, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [
                ("eventTime", "Required value"),
                ("count", "Invalid value: \"\": needs to be unset"),
                ("source", "Invalid value: \"\": needs to be unset"),
            ]
        );
    }

    #[test]
    fn legacy_rules_check_the_namespace_and_a_new_events_reporter() {
        let mut errs = Vec::new();
        let other_ns = json!({
            "metadata": {"name": "e", "namespace": "team"},
            "involvedObject": {"namespace": "other"},
        });
        validate("", &other_ns, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [(
                "involvedObject.namespace",
                "Invalid value: \"other\": does not match event.namespace"
            )]
        );
        errs.clear();
        let new_style = json!({
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "involvedObject": {}, "type": "Sideways", "reportingComponent": "",
        });
        validate(GROUP, &new_style, None, &mut errs);
        // An empty controller is also not a qualified name, as kube reports it twice more.
        assert_eq!(errs[1].field, "reportingController");
        assert_eq!(
            errs[1].message,
            "Invalid value: \"\": name part must be non-empty"
        );
        errs.remove(2);
        errs.remove(1);
        assert_eq!(
            fields(&errs),
            [
                ("reportingController", "Required value"),
                ("reportingInstance", "Required value"),
                ("action", "Required value"),
                ("reason", "Required value"),
                ("type", "Invalid value: \"\": has invalid value: Sideways"),
            ]
        );
    }
}
