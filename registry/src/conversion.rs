//! Built-in kinds served in one group but stored in another group's form: kube keeps
//! `events.k8s.io/v1` Events as core `v1` Events (one storage for both APIs) and converts on
//! every read and write.

use serde_json::Value;

use super::events;

/// Whether objects of `group`/`kind` are stored in another group's form.
pub fn converts(group: &str, kind: &str) -> bool {
    group == events::GROUP && kind == "Event"
}

/// The group whose form is stored, which kube also names in validation errors (`Event "e" is
/// invalid`, not `Event.events.k8s.io`): the internal kind's.
pub fn storage_group<'a>(group: &'a str, kind: &str) -> &'a str {
    if converts(group, kind) { "" } else { group }
}

/// A stored object as `group`/`kind` serves it; `None` when served as stored.
pub fn from_storage(group: &str, kind: &str, stored: &Value) -> Option<Value> {
    converts(group, kind).then(|| events::to_events_v1(stored))
}

/// A written object of `group`/`kind` in its stored form.
pub fn to_storage(group: &str, kind: &str, obj: &mut Value) {
    if converts(group, kind) {
        *obj = events::to_core(obj);
    }
}
