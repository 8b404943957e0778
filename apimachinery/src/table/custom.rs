//! Printing with column lists from data: CRD `additionalPrinterColumns`, and Karmada's kinds
//! (apiextensions-apiserver `pkg/registry/customresource/tableconvertor`).

use std::borrow::Cow;

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;

use super::column::{AGE_DESCRIPTION, ColumnDefinition, Row, TableConvertor};
use super::duration::{human_duration, parse_time_str};
use super::error::TableError;
use super::jsonpath::{JsonPath, print_value};

/// A printer column as CRDs declare it (`additionalPrinterColumns[]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrinterColumn {
    /// Header text.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// OpenAPI format hint (`name`, `int32`, ...).
    #[serde(default)]
    pub format: String,
    /// Human-readable explanation; a generated one is used when empty.
    #[serde(default)]
    pub description: String,
    /// 0 for always-shown columns, more for `-o wide` only.
    #[serde(default)]
    pub priority: i32,
    /// Path of the value, e.g. `.status.replicas` (no surrounding braces).
    pub json_path: String,
}

impl PrinterColumn {
    /// The `Age` column served when a CRD version declares no columns.
    pub fn age() -> Self {
        PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: AGE_DESCRIPTION.into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }
    }
}

/// The columns of one version of a CRD (`spec.versions[].additionalPrinterColumns`), `None` when
/// the version is not served by it. An empty list means "no columns declared".
pub fn crd_printer_columns(crd: &Value, version: &str) -> Option<Vec<PrinterColumn>> {
    let v = crd_version(crd, version)?;
    let columns = v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .filter_map(|c| PrinterColumn::deserialize(c).ok())
                .collect()
        })
        .unwrap_or_default();
    Some(columns)
}

/// The columns of a CRD version's `/scale` Table: `Desired`/`Available` when the scale
/// subresource declares the replica paths, then `Age` (apiextensions `getScaleColumnsForVersion`).
pub fn crd_scale_columns(crd: &Value, version: &str) -> Option<Vec<PrinterColumn>> {
    let v = crd_version(crd, version)?;
    let scale = v.pointer("/subresources/scale");
    let has = |key: &str| {
        scale
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .is_some_and(|p| !p.is_empty())
    };
    let mut cols = Vec::new();
    if has("specReplicasPath") {
        cols.push(PrinterColumn {
            name: "Desired".into(),
            type_: "integer".into(),
            format: String::new(),
            description: "Desired number of replicas.".into(),
            priority: 0,
            json_path: ".spec.replicas".into(),
        });
    }
    if has("statusReplicasPath") {
        cols.push(PrinterColumn {
            name: "Available".into(),
            type_: "integer".into(),
            format: String::new(),
            description: "Observed number of replicas.".into(),
            priority: 0,
            json_path: ".status.replicas".into(),
        });
    }
    cols.push(PrinterColumn::age());
    Some(cols)
}

fn crd_version<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
}

/// Prints objects with a list of JSONPath columns after the `Name` column.
#[derive(Debug, Clone)]
pub struct CustomColumnsConvertor {
    columns: Vec<ColumnDefinition>,
    paths: Vec<JsonPath>,
}

impl CustomColumnsConvertor {
    /// Builds the convertor kube-apiserver serves for these columns: `Age` when the list is
    /// empty, and — like upstream, which keeps the convertor it built so far when a path does
    /// not parse — only the columns before the first invalid one.
    pub fn new(columns: &[PrinterColumn]) -> Self {
        match Self::build(columns) {
            Ok(c) => c,
            Err((partial, err)) => {
                tracing::warn!(error = %err, "invalid printer column; serving the columns before it");
                partial
            }
        }
    }

    /// Like [`CustomColumnsConvertor::new`] but fails on the first invalid JSONPath.
    pub fn try_new(columns: &[PrinterColumn]) -> Result<Self, TableError> {
        Self::build(columns).map_err(|(_, err)| err)
    }

    fn build(columns: &[PrinterColumn]) -> Result<Self, (Self, TableError)> {
        let defaulted;
        let columns = if columns.is_empty() {
            defaulted = [PrinterColumn::age()];
            &defaulted[..]
        } else {
            columns
        };
        let mut convertor = CustomColumnsConvertor {
            columns: vec![ColumnDefinition::name_column()],
            paths: Vec::with_capacity(columns.len()),
        };
        for col in columns {
            let path = match JsonPath::parse_path(&col.json_path) {
                Ok(path) => path.allow_missing_keys(true),
                Err(err) => {
                    let err = TableError::InvalidColumn {
                        json_path: col.json_path.clone(),
                        reason: err.to_string(),
                    };
                    return Err((convertor, err));
                }
            };
            let description = if col.description.is_empty() {
                format!("Value of the JSONPath {} in the object.", col.json_path)
            } else {
                col.description.clone()
            };
            convertor.columns.push(ColumnDefinition {
                name: Cow::Owned(col.name.clone()),
                type_: Cow::Owned(col.type_.clone()),
                format: Cow::Owned(col.format.clone()),
                description: Cow::Owned(description),
                priority: col.priority,
            });
            convertor.paths.push(path);
        }
        Ok(convertor)
    }
}

impl TableConvertor for CustomColumnsConvertor {
    fn columns(&self) -> &[ColumnDefinition] {
        &self.columns
    }

    fn row(&self, obj: &Value, now: Timestamp) -> Row {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut cells = Vec::with_capacity(self.columns.len());
        cells.push(Value::from(name));
        for (column, path) in self.columns[1..].iter().zip(&self.paths) {
            // Only the first result counts (upstream: "we only support simple JSON path").
            let cell = match path.first(obj) {
                None => Value::Null,
                Some(value) if column.type_ == "string" => Value::String(print_value(&value)),
                Some(value) => typed_cell(&column.type_, &value, now),
            };
            cells.push(cell);
        }
        Row::new(cells)
    }
}

/// A non-string cell from a JSON value (tableconvertor `cellForJSONValue`): null when the value
/// does not have the column's type.
fn typed_cell(type_: &str, value: &Value, now: Timestamp) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            // Go converts float64 to int64 by truncation (saturating here).
            None => n
                .as_f64()
                .map(|f| Value::from(f as i64))
                .unwrap_or(Value::Null),
        },
        ("number", Value::Number(n)) => n.as_f64().map(Value::from).unwrap_or(Value::Null),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => match parse_time_str(s) {
            Ok(Some(ts)) => Value::from(human_duration(now.duration_since(ts))),
            Ok(None) => Value::from("<unknown>"),
            Err(_) => Value::from("<invalid>"),
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests;
