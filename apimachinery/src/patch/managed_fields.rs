//! `metadata.managedFields`: decoding, encoding and the identity of a field manager
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::fieldpath::Set;
use super::value::write_go_string;

/// The annotation `kubectl apply` (client-side) stores the applied configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The `operation` of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ManagedFieldsOperation {
    /// Fields set by server-side apply.
    Apply,
    /// Fields set by create, update or a non-apply patch.
    Update,
}

impl ManagedFieldsOperation {
    /// The wire form: `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            ManagedFieldsOperation::Apply => "Apply",
            ManagedFieldsOperation::Update => "Update",
        }
    }
}

/// The field manager of a request without `?fieldManager=`: the User-Agent up to its first `/`,
/// printable characters only, at most 128 bytes (`managerOrUserAgent` in
/// `k8s.io/apiserver/pkg/endpoints/handlers/rest.go`). `kubectl/v1.32.4 (linux/amd64) ...`
/// gives `kubectl`.
pub fn default_field_manager(field_manager: Option<&str>, user_agent: &str) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    out
}

/// Who owns a set: entries with the same manager, operation, subresource and (for updates)
/// apiVersion share one set (`BuildManagerIdentifier`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ManagerId {
    pub(crate) manager: String,
    pub(crate) operation: ManagedFieldsOperation,
    /// Empty for `Apply`: appliers are one manager across versions.
    pub(crate) api_version: String,
    pub(crate) subresource: String,
}

impl ManagerId {
    pub(crate) fn new(
        manager: &str,
        operation: ManagedFieldsOperation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> ManagerId {
        ManagerId {
            manager: if manager.is_empty() {
                "unknown".to_string()
            } else {
                manager.to_string()
            },
            operation,
            api_version: match operation {
                ManagedFieldsOperation::Apply => String::new(),
                ManagedFieldsOperation::Update => api_version.to_string(),
            },
            subresource: subresource.unwrap_or_default().to_string(),
        }
    }

    /// The JSON identifier upstream keys managers by, used for its ordering.
    pub(crate) fn identifier(&self) -> String {
        let mut out = String::from("{");
        let mut fields = vec![("manager", self.manager.as_str())];
        fields.push(("operation", self.operation.as_str()));
        if !self.api_version.is_empty() {
            fields.push(("apiVersion", &self.api_version));
        }
        if !self.subresource.is_empty() {
            fields.push(("subresource", &self.subresource));
        }
        for (i, (name, value)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_go_string(&mut out, name);
            out.push(':');
            write_go_string(&mut out, value);
        }
        out.push('}');
        out
    }
}

/// The fields one manager owns, at the version it used.
#[derive(Debug, Clone)]
pub(crate) struct VersionedSet {
    pub(crate) set: Set,
    pub(crate) api_version: String,
}

/// All managers of an object with their sets and last write times.
#[derive(Debug, Clone, Default)]
pub(crate) struct Managed {
    pub(crate) fields: BTreeMap<ManagerId, VersionedSet>,
    pub(crate) times: BTreeMap<ManagerId, Timestamp>,
    /// Entries left encoded by [`Managed::decode_touching`] (a write cannot change them), in
    /// none of the maps above; `encode` writes them back as they are.
    kept: Vec<KeptEntry>,
}

/// A stored entry written back as it is.
#[derive(Debug, Clone)]
struct KeptEntry {
    id: ManagerId,
    api_version: String,
    time: Option<Timestamp>,
    entry: Value,
}

impl Managed {
    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.kept.is_empty()
    }

    /// Decodes `metadata.managedFields` (`DecodeManagedFields`); `None` or `null` is empty.
    pub(crate) fn decode(entries: Option<&Value>) -> Result<Managed, String> {
        Managed::decode_touching(entries, None)
    }

    /// [`Managed::decode`], leaving encoded the entries from which removing the paths of
    /// `touched` surely takes nothing (see `Set::may_take_from_fields_v1`), except `writer`'s:
    /// a status write decodes its own small entry, not the big one of whoever wrote the spec.
    /// `None` decodes every entry.
    pub(crate) fn decode_touching(
        entries: Option<&Value>,
        touched: Option<(&Set, &ManagerId)>,
    ) -> Result<Managed, String> {
        let mut managed = Managed::default();
        let entries = match entries {
            None | Some(Value::Null) => return Ok(managed),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err("managedFields must be a list".to_string()),
        };
        for (i, entry) in entries.iter().enumerate() {
            let raw = entry;
            let entry = entry
                .as_object()
                .ok_or_else(|| format!("managed fields entry {i} is not an object"))?;
            let text = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or_default();
            let operation = match text("operation") {
                "Apply" => ManagedFieldsOperation::Apply,
                "Update" => ManagedFieldsOperation::Update,
                _ => return Err("operation must be `Apply` or `Update`".to_string()),
            };
            let api_version = text("apiVersion");
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".to_string());
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ));
                }
            }
            let subresource = Some(text("subresource")).filter(|s| !s.is_empty());
            let id = ManagerId {
                manager: text("manager").to_string(),
                ..ManagerId::new("x", operation, api_version, subresource)
            };
            let time = match entry.get("time").and_then(Value::as_str) {
                Some(time) => Some(
                    time.parse::<Timestamp>()
                        .map_err(|e| format!("invalid time in managed fields entry {i}: {e}"))?,
                ),
                None => None,
            };
            // Only a non-empty set is kept encoded: an emptied one is dropped when decoded.
            let fields = entry
                .get("fieldsV1")
                .filter(|f| f.as_object().is_some_and(|f| !f.is_empty()));
            let keep = touched.is_some_and(|(touched, writer)| {
                *writer != id && fields.is_some_and(|f| !touched.may_take_from_fields_v1(f))
            });
            // A later entry of the same manager replaces an earlier one, as in the maps.
            managed.kept.retain(|k| k.id != id);
            if keep {
                managed.fields.remove(&id);
                managed.times.remove(&id);
                managed.kept.push(KeptEntry {
                    id,
                    api_version: api_version.to_string(),
                    time,
                    entry: raw.clone(),
                });
                continue;
            }
            let set = match entry.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(fields) => {
                    Set::from_fields_v1(fields).map_err(|e| format!("error decoding set: {e}"))?
                }
            };
            match time {
                Some(time) => {
                    managed.times.insert(id.clone(), time);
                }
                None => {
                    managed.times.remove(&id);
                }
            }
            managed.fields.insert(
                id,
                VersionedSet {
                    set,
                    api_version: api_version.to_string(),
                },
            );
        }
        Ok(managed)
    }

    /// Encodes the entries sorted as upstream does (`sortEncodedManagedFields`): operation,
    /// time, manager, apiVersion, subresource. `None` when there are none.
    pub(crate) fn encode(&self) -> Option<Value> {
        self.encode_with(|i| self.kept[i].entry.clone())
    }

    /// [`Managed::encode`], moving the kept entries instead of copying them.
    pub(crate) fn into_encoded(mut self) -> Option<Value> {
        let mut kept: Vec<Value> = self
            .kept
            .iter_mut()
            .map(|k| std::mem::take(&mut k.entry))
            .collect();
        self.encode_with(|i| std::mem::take(&mut kept[i]))
    }

    /// Encodes the entries, the `i`th kept one as `kept_entry(i)` gives it.
    fn encode_with(&self, mut kept_entry: impl FnMut(usize) -> Value) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut entries: Vec<Sortable<'_>> = self
            .fields
            .iter()
            .map(|(id, vs)| (id, vs.api_version.as_str(), self.times.get(id), Ok(&vs.set)))
            .chain(
                self.kept
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (&k.id, k.api_version.as_str(), k.time.as_ref(), Err(i))),
            )
            .collect();
        entries.sort_by(|a, b| {
            a.0.operation
                .cmp(&b.0.operation)
                .then_with(|| seconds(a.2).cmp(&seconds(b.2)))
                .then_with(|| a.0.manager.cmp(&b.0.manager))
                .then_with(|| a.1.cmp(b.1))
                .then_with(|| a.0.subresource.cmp(&b.0.subresource))
        });
        let encoded = entries
            .into_iter()
            .map(|(id, api_version, time, set)| {
                let set = match set {
                    Ok(set) => set,
                    Err(i) => return kept_entry(i),
                };
                let mut entry = Map::new();
                entry.insert("manager".into(), json!(id.manager));
                entry.insert("operation".into(), json!(id.operation.as_str()));
                entry.insert("apiVersion".into(), json!(api_version));
                if let Some(time) = time {
                    entry.insert("time".into(), json!(format_time(*time)));
                }
                entry.insert("fieldsType".into(), json!("FieldsV1"));
                entry.insert("fieldsV1".into(), set.to_fields_v1());
                if !id.subresource.is_empty() {
                    entry.insert("subresource".into(), json!(id.subresource));
                }
                Value::Object(entry)
            })
            .collect();
        Some(Value::Array(encoded))
    }
}

/// What an entry is sorted by (its manager, apiVersion and time), and what it is: a set to
/// encode or the index of a kept entry.
type Sortable<'a> = (
    &'a ManagerId,
    &'a str,
    Option<&'a Timestamp>,
    Result<&'a Set, usize>,
);

fn seconds(time: Option<&Timestamp>) -> i64 {
    time.map_or(0, |t| t.as_second())
}

/// RFC 3339 in UTC with whole seconds, as `metav1.Time` serializes.
pub(crate) fn format_time(time: Timestamp) -> String {
    Timestamp::from_second(time.as_second())
        .unwrap_or(time)
        .to_string()
}

/// `managedFields` the client reset: `[]` or `[{}]` (`isResetManagedFields`).
pub(crate) fn is_reset(entries: Option<&Value>) -> bool {
    match entries {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [only] => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_manager_from_user_agent() {
        let cases = [
            (
                None,
                "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
                "kubectl",
            ),
            (Some(""), "kube-rs/1.0", "kube-rs"),
            (Some("kubectl-edit"), "kubectl/v1.32.4", "kubectl-edit"),
            (None, "", ""),
            (None, "a\u{7}b/c", "ab"),
        ];
        for (param, agent, want) in cases {
            assert_eq!(default_field_manager(param, agent), want, "{agent}");
        }
        assert_eq!(default_field_manager(None, &"x".repeat(300)).len(), 128);
    }

    #[test]
    fn decode_encode_round_trip_sorted() {
        let entries = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:05Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:c": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:x": {}}}, "subresource": "status"},
        ]);
        let managed = Managed::decode(Some(&entries)).unwrap();
        let encoded = managed.encode().unwrap();
        let order: Vec<&str> = encoded
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(order, ["kubectl", "a", "b"]);
        assert_eq!(encoded[1]["subresource"], "status");
        assert_eq!(encoded[2]["time"], "2024-01-01T00:00:02Z");
    }

    #[test]
    fn invalid_entries_are_rejected() {
        let cases = [
            json!([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "a", "operation": "Update", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "v1"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"bad": {}}}]),
            json!({"a": 1}),
        ];
        for case in cases {
            assert!(Managed::decode(Some(&case)).is_err(), "{case}");
        }
        assert!(is_reset(Some(&json!([]))));
        assert!(is_reset(Some(&json!([{}]))));
        assert!(!is_reset(Some(&json!(null))));
        assert!(!is_reset(None));
    }

    #[test]
    fn identifiers() {
        let apply = ManagerId::new("kubectl", ManagedFieldsOperation::Apply, "v1", None);
        assert_eq!(
            apply.identifier(),
            r#"{"manager":"kubectl","operation":"Apply"}"#
        );
        let update = ManagerId::new(
            "",
            ManagedFieldsOperation::Update,
            "apps/v1",
            Some("status"),
        );
        assert_eq!(
            update.identifier(),
            r#"{"manager":"unknown","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
    }

    #[test]
    fn entries_a_write_does_not_touch_stay_encoded() {
        let entries = json!([
            {"manager": "spec-writer", "operation": "Update", "apiVersion": "v1",
             "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "status-writer", "operation": "Update", "apiVersion": "v1",
             "time": "2024-05-01T11:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:ready": {}}}},
        ]);
        let writer = ManagerId::new(
            "status-writer",
            ManagedFieldsOperation::Update,
            "v1",
            Some("status"),
        );
        let mut touched = Set::new();
        touched.insert(&[
            super::super::fieldpath::PathElement::Field("status".into()),
            super::super::fieldpath::PathElement::Field("ready".into()),
        ]);
        let managed = Managed::decode_touching(Some(&entries), Some((&touched, &writer))).unwrap();
        assert_eq!(
            managed.kept.len(),
            1,
            "the spec writer's entry is not decoded"
        );
        assert_eq!(managed.fields.len(), 1);
        assert_eq!(managed.encode(), Some(entries.clone()));
        assert_eq!(managed.clone().into_encoded(), Some(entries.clone()));
        // Another writer of the field: the owner's entry is decoded, to lose it.
        let other = ManagerId::new(
            "other",
            ManagedFieldsOperation::Update,
            "v1",
            Some("status"),
        );
        let managed = Managed::decode_touching(Some(&entries), Some((&touched, &other))).unwrap();
        assert_eq!(managed.kept.len(), 1);
        assert!(managed.fields.contains_key(&writer));
        // Without a touched set, everything is decoded.
        assert!(Managed::decode(Some(&entries)).unwrap().kept.is_empty());
    }
}
