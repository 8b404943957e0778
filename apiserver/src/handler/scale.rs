//! The `scale` subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets,
//! StatefulSets and custom resources that declare one.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, read_body, render_object, request_media, write_context};
use crate::object;
use crate::options::{OptionsKind, WriteOptions};
use crate::registry::{Registry, Subresource};
use crate::resources::ScaleDef;

/// Formats a metav1.LabelSelector as its string form (metav1.FormatLabelSelector).
pub fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut values = values;
            values.sort_unstable();
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.sort();
    parts.join(",")
}

fn scale_of(ctx: &Ctx, def: &ScaleDef, obj: &Value) -> Value {
    let spec_replicas = object::get_path(obj, &def.spec_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(if ctx.def.is_custom() { 0 } else { 1 });
    let status_replicas = object::get_path(obj, &def.status_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = if ctx.def.is_custom() {
        def.label_selector_path
            .as_deref()
            .and_then(|p| object::get_path(obj, p))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    } else {
        obj.pointer("/spec/selector")
            .map(format_label_selector)
            .unwrap_or_default()
    };
    let m = object::meta(obj).cloned().unwrap_or_default();
    let mut meta = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(f) {
            meta[f] = v.clone();
        }
    }
    let mut status = json!({"replicas": status_replicas});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

fn scale_def(ctx: &Ctx) -> Result<ScaleDef, ApiError> {
    ctx.def.scale.clone().ok_or_else(ApiError::path_not_found)
}

/// GET .../scale.
pub async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let def = scale_def(ctx)?;
    let obj = Registry::new(&ctx.chain.state, ctx.def.clone())
        .get(&ctx.ns, &ctx.info.name)
        .await?;
    render_object(ctx, StatusCode::OK, &scale_of(ctx, &def, &obj), vec![])
}

/// Updates the object from a desired Scale computed from the current object's Scale.
/// A resourceVersion in the desired Scale is a precondition on the object.
async fn write_scale(
    ctx: &Ctx,
    opts: &WriteOptions,
    desired: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<Response, ApiError> {
    let def = scale_def(ctx)?;
    let wctx = write_context(ctx, opts);
    let reg = Registry::new(&ctx.chain.state, ctx.def.clone());
    let path = def.spec_replicas_path.clone();
    let updated = reg
        .guaranteed_update(&ctx.ns, &ctx.info.name, Subresource::Main, &wctx, |cur| {
            let want = desired(&scale_of(ctx, &def, cur))?;
            let replicas = want
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if replicas < 0 {
                return Err(ApiError::invalid(
                    "autoscaling",
                    "Scale",
                    &ctx.info.name,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!(
                            "Invalid value: {replicas}: must be greater than or equal to 0"
                        ),
                        field: "spec.replicas".into(),
                    }],
                ));
            }
            let mut next = cur.clone();
            object::set_path(&mut next, &path, json!(replicas));
            match object::resource_version(&want)? {
                Some(rv) => object::set_resource_version(&mut next, rv),
                None => {
                    object::meta_mut(&mut next).remove("resourceVersion");
                }
            }
            Ok(next)
        })
        .await?;
    render_object(ctx, StatusCode::OK, &scale_of(ctx, &def, &updated), vec![])
}

/// PUT .../scale.
pub async fn update(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Update)?;
    let bytes = read_body(ctx, body).await?;
    let media = request_media(ctx);
    let scale = crate::body::decode(&media, &bytes, "Scale", "v1")?.value;
    write_scale(ctx, &opts, |_| Ok(scale.clone())).await
}

/// PATCH .../scale: the patch applies to the current Scale, whose replicas then go to the
/// object.
pub async fn patch(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let media = request_media(ctx);
    crate::handler::patch::non_apply_patch_type(&media)?;
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Patch { apply: false })?;
    let bytes = read_body(ctx, body).await?;
    write_scale(ctx, &opts, |scale| {
        let mut patched =
            crate::handler::patch::apply_to(&media, scale, &bytes, "autoscaling", "v1", "Scale")?;
        // Unless the patch names a resourceVersion, it applies to whatever is current.
        if patched.pointer("/metadata/resourceVersion")
            == scale.pointer("/metadata/resourceVersion")
        {
            object::meta_mut(&mut patched).remove("resourceVersion");
        }
        Ok(patched)
    })
    .await
}
