//! Server-side printing glue: picks the Table convertor of a resource (the kind's printer, CRD
//! printer columns) and renders lists, objects and watch events.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::handler::Ctx;
use crate::resources::{ResourceDef, Source};
use crate::watch::Encoder;
use crate::watch_cache::{CacheEvent, CachedObject, EventType};
use apimachinery::table::{
    CustomColumnsConvertor, DefaultTableConvertor, IncludeObject, ListMeta, PrinterColumn,
    TableConvertor, TableOptions, TableVersion, build_table, parse_include_object,
};

/// The convertor of a resource: its kind's ([`crate::kinds`]) or its CRD's printer columns.
pub fn convertor(def: &ResourceDef) -> Arc<dyn TableConvertor> {
    if let Source::Custom(c) = &def.source {
        let cols: Vec<PrinterColumn> = c
            .printer_columns
            .iter()
            .filter_map(|v| PrinterColumn::deserialize(v).ok())
            .collect();
        return Arc::new(CustomColumnsConvertor::new(&cols));
    }
    match crate::kinds::for_resource(def) {
        Some(k) => k.table_convertor(def),
        None => Arc::new(DefaultTableConvertor),
    }
}

fn options(ctx: &Ctx) -> Result<TableOptions, ApiError> {
    let include_object = match ctx.query.get("includeObject").and_then(|v| v.first()) {
        None => IncludeObject::Metadata,
        Some(s) => parse_include_object(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    // The version negotiation chose (v1 when a Table is rendered for another form).
    let version = match ctx.neg.target {
        crate::negotiation::Target::Table(v) => v,
        _ => TableVersion::V1,
    };
    Ok(TableOptions {
        include_object,
        no_headers: false,
        version,
    })
}

/// A Table of objects.
pub fn table(
    ctx: &Ctx,
    items: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<usize>,
) -> Result<Vec<u8>, ApiError> {
    let opts = options(ctx)?;
    let conv = convertor(&ctx.def);
    let meta = ListMeta {
        resource_version: resource_version.to_string(),
        continue_: continue_token.unwrap_or_default().to_string(),
        remaining_item_count: remaining.map(|n| n as i64),
    };
    Ok(build_table(
        conv.as_ref(),
        items.iter(),
        meta,
        &opts,
        jiff::Timestamp::now(),
    )
    .to_vec())
}

/// Watch events as one-row Tables (column definitions only on the first event).
pub struct TableWatchEncoder {
    convertor: Arc<dyn TableConvertor>,
    opts: TableOptions,
}

impl TableWatchEncoder {
    /// An encoder for the request's resource.
    pub fn new(ctx: &Ctx) -> Result<TableWatchEncoder, ApiError> {
        Ok(TableWatchEncoder {
            convertor: convertor(&ctx.def),
            opts: options(ctx)?,
        })
    }
}

impl Encoder for TableWatchEncoder {
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        _shared: Option<&CacheEvent>,
    ) -> Option<bytes::Bytes> {
        let v = obj.value();
        let bytes = build_table(
            self.convertor.as_ref(),
            std::iter::once(&v),
            ListMeta::from_object(&v),
            &self.opts,
            jiff::Timestamp::now(),
        )
        .to_vec();
        self.opts.no_headers = true;
        Some(crate::watch_cache::frame(t.as_str(), &bytes))
    }

    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Option<bytes::Bytes> {
        Some(crate::watch::bookmark_frame(
            self.opts.version.api_version(),
            "Table",
            rv,
            initial_events_end,
        ))
    }
}
