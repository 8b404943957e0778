//! Table columns of Karmada's kinds: their CRDs' additionalPrinterColumns, and the
//! aggregated apiserver's Cluster printer (from the api crate).

use std::borrow::Cow;

use serde_json::Value;

use apimachinery::table::{ColumnDefinition, Row, TableConvertor};

/// The convertor of a Karmada kind at one of its served versions.
pub fn convertor(version: &str, kind: &str) -> KarmadaConvertor {
    let columns = karmada_api::printers::printer_columns_at(version, kind)
        .iter()
        .map(|c| ColumnDefinition {
            name: Cow::Borrowed(c.name),
            type_: Cow::Borrowed(c.type_),
            format: Cow::Borrowed(c.format),
            description: Cow::Borrowed(c.description),
            priority: c.priority,
        })
        .collect();
    KarmadaConvertor {
        version: version.to_string(),
        kind: kind.to_string(),
        columns,
    }
}

/// Prints a Karmada kind with the api crate's columns and rows.
pub struct KarmadaConvertor {
    version: String,
    kind: String,
    columns: Vec<ColumnDefinition>,
}

impl TableConvertor for KarmadaConvertor {
    fn columns(&self) -> &[ColumnDefinition] {
        &self.columns
    }

    fn row(&self, obj: &Value, now: jiff::Timestamp) -> Row {
        let cells = karmada_api::printers::table_row_at(&self.version, &self.kind, obj, now)
            .unwrap_or_else(|| vec![Value::String(crate::object::name(obj).to_string())]);
        Row::new(cells)
    }
}
