//! Built-in kinds served in a form other than the stored one: kube keeps `events.k8s.io/v1`
//! Events as core `v1` Events (one storage for both APIs) and `autoscaling/v1`
//! HorizontalPodAutoscalers as `autoscaling/v2` ones, and converts on every read and write.

use serde_json::Value;

use super::{events, hpa_v1};

fn is_hpa_v1(group: &str, version: &str, kind: &str) -> bool {
    group == "autoscaling" && version == "v1" && kind == "HorizontalPodAutoscaler"
}

/// Whether objects of `group`/`version`/`kind` are stored in another form.
pub fn converts(group: &str, version: &str, kind: &str) -> bool {
    (group == events::GROUP && kind == "Event") || is_hpa_v1(group, version, kind)
}

/// The group whose form is stored, which kube also names in validation errors (`Event "e" is
/// invalid`, not `Event.events.k8s.io`): the internal kind's.
pub fn storage_group<'a>(group: &'a str, kind: &str) -> &'a str {
    if group == events::GROUP && kind == "Event" {
        ""
    } else {
        group
    }
}

/// The `apiVersion` objects of `group`/`version`/`kind` are stored in when it is not their
/// own (what the storage codec encodes them as): core `v1` for `events.k8s.io` Events,
/// `autoscaling/v2` for v1 HorizontalPodAutoscalers.
pub fn stored_api_version(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    if is_hpa_v1(group, version, kind) {
        Some("autoscaling/v2")
    } else if converts(group, version, kind) {
        Some("v1")
    } else {
        None
    }
}

/// A stored object as `group`/`version`/`kind` serves it; `None` when served as stored.
pub fn from_storage(group: &str, version: &str, kind: &str, stored: &Value) -> Option<Value> {
    if is_hpa_v1(group, version, kind) {
        return Some(hpa_v1::to_v1(stored));
    }
    converts(group, version, kind).then(|| events::to_events_v1(stored))
}

/// A written object of `group`/`version`/`kind` in its stored form, with the served version's
/// defaults applied first (the stored version's are not: a v1 HorizontalPodAutoscaler gets no
/// v2 default metric); `Err` says why the object cannot be converted.
pub fn to_storage(group: &str, version: &str, kind: &str, obj: &mut Value) -> Result<(), String> {
    if is_hpa_v1(group, version, kind) {
        *obj = hpa_v1::to_v2(obj)?;
    } else if converts(group, version, kind) {
        *obj = events::to_core(obj);
    }
    Ok(())
}
