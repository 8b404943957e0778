//! The `meta.k8s.io` Table document (apiserver `pkg/endpoints/handlers/response.go` `asTable`).
//!
//! Serialization follows `metav1.Table`'s Go JSON tags exactly: `columnDefinitions` and `rows`
//! have no `omitempty` (so a watch event after the first carries `"columnDefinitions":null`),
//! `conditions` is omitted when empty, and `object` is always present (`null` for
//! `includeObject=None`, as `runtime.RawExtension` marshals an empty extension).

use jiff::Timestamp;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::column::{ColumnDefinition, RowCondition, TableConvertor};
use super::error::TableError;

/// What each row's `object` carries (`?includeObject=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// A `PartialObjectMetadata` with the object's metadata (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
    /// Nothing (`"object": null`).
    None,
}

/// Parses `?includeObject=`: `Metadata`, `Object`, `None`, or empty for the default.
pub fn parse_include_object(value: &str) -> Result<IncludeObject, TableError> {
    match value {
        "" | "Metadata" => Ok(IncludeObject::Metadata),
        "Object" => Ok(IncludeObject::Object),
        "None" => Ok(IncludeObject::None),
        other => Err(TableError::InvalidIncludeObject(other.to_string())),
    }
}

/// The version of `meta.k8s.io` the client asked the Table in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TableVersion {
    /// `meta.k8s.io/v1` (what kubectl asks for first).
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1Beta1,
}

impl TableVersion {
    /// The `apiVersion` of the Table and of its `PartialObjectMetadata` rows.
    pub fn api_version(self) -> &'static str {
        match self {
            TableVersion::V1 => "meta.k8s.io/v1",
            TableVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }

    /// The version for an Accept parameter `v=` (`v1` or `v1beta1`).
    pub fn from_version(v: &str) -> Option<Self> {
        match v {
            "v1" => Some(TableVersion::V1),
            "v1beta1" => Some(TableVersion::V1Beta1),
            _ => None,
        }
    }
}

/// Options of one Table conversion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// What rows carry in `object`.
    pub include_object: IncludeObject,
    /// Leave `columnDefinitions` out (null): set for every watch event after the first.
    pub no_headers: bool,
    /// The requested `meta.k8s.io` version.
    pub version: TableVersion,
}

/// The Table's `metadata` (`metav1.ListMeta`): copied from the list, or the object's
/// resourceVersion for a single object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListMeta {
    /// `resourceVersion` (omitted when empty).
    pub resource_version: String,
    /// `continue` token (omitted when empty).
    pub continue_: String,
    /// `remainingItemCount` (omitted when absent).
    pub remaining_item_count: Option<i64>,
}

impl ListMeta {
    /// The metadata of a list object (`{"metadata":{"resourceVersion":..,"continue":..}}`).
    pub fn from_list(list: &Value) -> Self {
        let meta = list.get("metadata");
        let text = |key: &str| {
            meta.and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ListMeta {
            resource_version: text("resourceVersion"),
            continue_: text("continue"),
            remaining_item_count: meta
                .and_then(|m| m.get("remainingItemCount"))
                .and_then(Value::as_i64),
        }
    }

    /// The metadata of a Table for a single object: just its resourceVersion.
    pub fn from_object(obj: &Value) -> Self {
        ListMeta {
            resource_version: obj
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            ..ListMeta::default()
        }
    }
}

impl Serialize for ListMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if !self.resource_version.is_empty() {
            map.serialize_entry("resourceVersion", &self.resource_version)?;
        }
        if !self.continue_.is_empty() {
            map.serialize_entry("continue", &self.continue_)?;
        }
        if let Some(count) = self.remaining_item_count {
            map.serialize_entry("remainingItemCount", &count)?;
        }
        map.end()
    }
}

/// One row of a Table: cells, conditions and the object it was printed from.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow<'a> {
    /// One value per column.
    pub cells: Vec<Value>,
    /// Row conditions (only finished pods have one).
    pub conditions: Vec<RowCondition>,
    /// The object the row describes; what of it is sent depends on [`IncludeObject`].
    pub object: &'a Value,
}

/// A Table ready to serialize.
#[derive(Debug, Clone, PartialEq)]
pub struct Table<'a> {
    /// `meta.k8s.io` version of the document.
    pub version: TableVersion,
    /// `metadata`.
    pub metadata: ListMeta,
    /// `columnDefinitions`; `None` serializes as `null` (later watch events).
    pub column_definitions: Option<&'a [ColumnDefinition]>,
    /// `rows`.
    pub rows: Vec<TableRow<'a>>,
    /// What each row's `object` carries.
    pub include_object: IncludeObject,
}

impl Table<'_> {
    /// The Table as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The Table as JSON bytes, keys in kube-apiserver's order.
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Converts objects to a Table with a convertor: one row per item, headers unless
/// `options.no_headers` (and the convertor honours it), list metadata as given.
pub fn build_table<'a, I>(
    convertor: &'a dyn TableConvertor,
    items: I,
    metadata: ListMeta,
    options: &TableOptions,
    now: Timestamp,
) -> Table<'a>
where
    I: IntoIterator<Item = &'a Value>,
{
    let rows = items
        .into_iter()
        .map(|object| {
            let row = convertor.row(object, now);
            TableRow {
                cells: row.cells,
                conditions: row.conditions,
                object,
            }
        })
        .collect();
    let headers = !options.no_headers || convertor.always_sends_headers();
    Table {
        version: options.version,
        metadata,
        column_definitions: headers.then(|| convertor.columns()),
        rows,
        include_object: options.include_object,
    }
}

/// Builds a `meta.k8s.io/v1` Table as a JSON value from ready-made rows.
pub fn table_json(
    columns: &[ColumnDefinition],
    rows: Vec<TableRow<'_>>,
    list_meta: ListMeta,
    include_object: IncludeObject,
    include_column_definitions: bool,
) -> Value {
    Table {
        version: TableVersion::V1,
        metadata: list_meta,
        column_definitions: include_column_definitions.then_some(columns),
        rows,
        include_object,
    }
    .to_value()
}

impl Serialize for Table<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Table", 5)?;
        s.serialize_field("kind", "Table")?;
        s.serialize_field("apiVersion", self.version.api_version())?;
        s.serialize_field("metadata", &self.metadata)?;
        s.serialize_field("columnDefinitions", &self.column_definitions)?;
        let rows: Vec<RowJson<'_>> = self
            .rows
            .iter()
            .map(|row| RowJson { row, table: self })
            .collect();
        s.serialize_field("rows", &rows)?;
        s.end()
    }
}

struct RowJson<'r> {
    row: &'r TableRow<'r>,
    table: &'r Table<'r>,
}

impl Serialize for RowJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("cells", &self.row.cells)?;
        if !self.row.conditions.is_empty() {
            map.serialize_entry("conditions", &self.row.conditions)?;
        }
        match self.table.include_object {
            IncludeObject::Object => map.serialize_entry("object", self.row.object)?,
            IncludeObject::Metadata => map.serialize_entry(
                "object",
                &PartialObjectMetadata {
                    api_version: self.table.version.api_version(),
                    metadata: self.row.object.get("metadata"),
                },
            )?,
            IncludeObject::None => map.serialize_entry("object", &Value::Null)?,
        }
        map.end()
    }
}

/// `metav1.PartialObjectMetadata` of a row's object (`meta.AsPartialObjectMetadata`).
struct PartialObjectMetadata<'a> {
    api_version: &'static str,
    metadata: Option<&'a Value>,
}

impl Serialize for PartialObjectMetadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("PartialObjectMetadata", 3)?;
        s.serialize_field("kind", "PartialObjectMetadata")?;
        s.serialize_field("apiVersion", self.api_version)?;
        s.serialize_field("metadata", &ObjectMeta(self.metadata))?;
        s.end()
    }
}

/// `metav1.ObjectMeta` fields in Go's order; every field but `creationTimestamp` is omitempty.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

fn is_empty_json(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// An object's metadata as Go re-marshals it: known fields only, in declaration order, empty
/// ones dropped, `creationTimestamp` always present.
struct ObjectMeta<'a>(Option<&'a Value>);

impl Serialize for ObjectMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for key in OBJECT_META_FIELDS {
            let value = self.0.and_then(|m| m.get(key));
            if key == "creationTimestamp" {
                map.serialize_entry(key, value.unwrap_or(&Value::Null))?;
            } else if let Some(value) = value.filter(|v| !is_empty_json(v)) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests;
