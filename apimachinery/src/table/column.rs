//! Column definitions, rows, and the convertor abstraction shared by all printers.

use std::borrow::Cow;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::duration::{parse_time, rfc3339};

/// Description of the `Name` column.
pub(crate) const NAME_DESCRIPTION: &str =
    "Name of the object, unique among objects of its kind in its namespace.";
/// Description of `Age`-style columns.
pub(crate) const AGE_DESCRIPTION: &str = "Time elapsed since the object was created.";

/// One column of a Table (`metav1.TableColumnDefinition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnDefinition {
    /// Header text shown by kubectl (upper-cased by it).
    pub name: Cow<'static, str>,
    /// OpenAPI type of the cells: `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: Cow<'static, str>,
    /// OpenAPI format hint; `name` marks the object-name column.
    pub format: Cow<'static, str>,
    /// Human-readable explanation of the column.
    pub description: Cow<'static, str>,
    /// 0 for columns always shown; higher values only with `-o wide`.
    pub priority: i32,
}

impl ColumnDefinition {
    /// A column from static text, for the built-in printers.
    pub const fn new(
        name: &'static str,
        type_: &'static str,
        format: &'static str,
        description: &'static str,
        priority: i32,
    ) -> Self {
        ColumnDefinition {
            name: Cow::Borrowed(name),
            type_: Cow::Borrowed(type_),
            format: Cow::Borrowed(format),
            description: Cow::Borrowed(description),
            priority,
        }
    }

    /// The leading `Name` column every printer starts with.
    pub const fn name_column() -> Self {
        Self::new("Name", "string", "name", NAME_DESCRIPTION, 0)
    }
}

/// A per-row condition (`metav1.TableRowCondition`); kube marks finished pods `Completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowCondition {
    /// Condition type; only `Completed` exists upstream.
    #[serde(rename = "type")]
    pub type_: Cow<'static, str>,
    /// `True`, `False` or `Unknown`.
    pub status: Cow<'static, str>,
    /// Machine-readable reason.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: Cow<'static, str>,
    /// Human-readable message.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub message: Cow<'static, str>,
}

/// The printed form of one object: a cell per column, plus optional row conditions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// One JSON value per column, in column order.
    pub cells: Vec<Value>,
    /// Row conditions (empty for almost every kind).
    pub conditions: Vec<RowCondition>,
}

impl Row {
    /// A row without conditions.
    pub fn new(cells: Vec<Value>) -> Self {
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

/// Converts objects of one kind into Table rows (kube's `rest.TableConvertor`).
pub trait TableConvertor: Send + Sync {
    /// The columns, all of them (kube-apiserver always generates the wide set).
    fn columns(&self) -> &[ColumnDefinition];

    /// The row for one object; `now` is the reference time for ages.
    fn row(&self, obj: &Value, now: Timestamp) -> Row;

    /// The cells for one object.
    fn cells(&self, obj: &Value, now: Timestamp) -> Vec<Value> {
        self.row(obj, now).cells
    }

    /// Whether column definitions are sent even when the request asked for no headers (later
    /// watch events). kube-aggregator's APIService convertor ignores `NoHeaders`.
    fn always_sends_headers(&self) -> bool {
        false
    }
}

/// `Name` + `Created At` for kinds without a printer (apiserver `rest.NewDefaultTableConvertor`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultTableConvertor;

static DEFAULT_COLUMNS: [ColumnDefinition; 2] = [
    ColumnDefinition::name_column(),
    ColumnDefinition::new(
        "Created At",
        "date",
        "",
        "Time the object was created, in RFC 3339 form.",
        0,
    ),
];

impl TableConvertor for DefaultTableConvertor {
    fn columns(&self) -> &[ColumnDefinition] {
        &DEFAULT_COLUMNS
    }

    fn row(&self, obj: &Value, _now: Timestamp) -> Row {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let created = rfc3339(parse_time(obj.pointer("/metadata/creationTimestamp")));
        Row::new(vec![Value::from(name), Value::from(created)])
    }
}
