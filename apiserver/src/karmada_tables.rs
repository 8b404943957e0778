//! Table columns of Karmada's kinds (their CRDs' additionalPrinterColumns, and the
//! aggregated apiserver's Cluster printer).

use crate::table::{CustomColumnsConvertor, PrinterColumn};

/// The convertor of a Karmada kind.
pub fn convertor(kind: &str) -> CustomColumnsConvertor {
    // TODO(lead): take the columns from the api crate once it lands.
    let _ = kind;
    CustomColumnsConvertor::new(&[PrinterColumn::age()])
}
