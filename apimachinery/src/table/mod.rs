//! Server-side printing: turning objects into `meta.k8s.io/v1` Tables.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever columns the
//! server sends, so this module decides what `kubectl get` shows:
//!
//! - [`printers`]: the built-in kinds, reproducing kube-apiserver's printers column for column;
//! - [`DefaultTableConvertor`]: `Name` + `Created At` for kinds without a printer;
//! - [`CustomColumnsConvertor`]: CRD `additionalPrinterColumns` (and Karmada's own column lists),
//!   evaluated with the Kubernetes [`jsonpath`] dialect;
//! - [`response`]: the Table document itself (`includeObject`, watch headers, list metadata).
//!
//! It works on plain `serde_json::Value` objects and depends on nothing else in the crate.

mod column;
mod custom;
pub mod duration;
mod error;
pub(crate) mod format;
pub mod jsonpath;
pub mod printers;
pub mod quantity;
pub mod response;

pub use column::{ColumnDefinition, DefaultTableConvertor, Row, RowCondition, TableConvertor};
pub use custom::{CustomColumnsConvertor, PrinterColumn, crd_printer_columns, crd_scale_columns};
pub use duration::{human_duration, short_human_duration};
pub use error::TableError;
pub use printers::{builtin_printer, convertor_for};
pub use response::{
    IncludeObject, ListMeta, Table, TableOptions, TableRow, TableVersion, build_table,
    parse_include_object, table_json,
};
