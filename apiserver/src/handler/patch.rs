//! PATCH requests: JSON patch, merge patch, strategic merge patch and server-side apply
//! (k8s.io/apiserver/pkg/endpoints/handlers/patch.go).

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, read_body, render_written, request_media, write_context};
use crate::managed_fields;
use crate::object;
use crate::options::{OptionsKind, WriteOptions};
use crate::registry::{Registry, Subresource};
use apimachinery::patch::{self, GroupVersionKindRef, PatchError};

/// The patch formats kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Kubernetes strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

const CRD_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];
const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn patch_type(media: &str, strategic_allowed: bool) -> Result<PatchType, ApiError> {
    let accepted = if strategic_allowed {
        BUILTIN_PATCH_TYPES
    } else {
        CRD_PATCH_TYPES
    };
    match media {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" if strategic_allowed => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(ApiError::unsupported_media_type(accepted)),
    }
}

/// Maps a patch-module error to the API error kube-apiserver returns.
pub fn patch_error(e: PatchError) -> ApiError {
    match &e {
        PatchError::Conflicts(conflicts) => ApiError::conflict_with_causes(
            e.status_message(),
            conflicts
                .iter()
                .map(|c| Cause {
                    reason: "FieldManagerConflict".into(),
                    message: c.cause_message(),
                    field: c.field.clone(),
                })
                .collect(),
        ),
        _ => {
            let code = e.http_status();
            let message = e.status_message();
            match code {
                400 => ApiError::bad_request(message),
                413 => ApiError::too_large(message),
                415 => ApiError::unsupported_media_type_message(message),
                422 => ApiError::invalid_message(message),
                _ => ApiError::internal(message),
            }
        }
    }
}

fn parse_patch_body(t: PatchType, bytes: &[u8]) -> Result<Value, ApiError> {
    match t {
        PatchType::Apply => crate::body::decode_yaml(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}"))),
        _ => serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}"))),
    }
}

/// Applies a non-apply patch to a value.
fn apply_non_apply(
    t: PatchType,
    current: &Value,
    patch_doc: &Value,
    gvk: &GroupVersionKindRef<'_>,
) -> Result<Value, ApiError> {
    match t {
        PatchType::Json => patch::json_patch(current, patch_doc).map_err(patch_error),
        PatchType::Merge => patch::json_merge_patch(current, patch_doc).map_err(patch_error),
        PatchType::Strategic => {
            patch::strategic_merge_patch(current, patch_doc, gvk).map_err(patch_error)
        }
        PatchType::Apply => Err(ApiError::internal("apply is not a plain patch")),
    }
}

/// The patch type of a subresource that takes no apply patches (scale), or its 415.
pub fn non_apply_patch_type(media: &str) -> Result<PatchType, ApiError> {
    match patch_type(media, true)? {
        PatchType::Apply => Err(ApiError::unsupported_media_type(&BUILTIN_PATCH_TYPES[..3])),
        t => Ok(t),
    }
}

/// Applies a patch body of the given media type to a value (used for subresources such as
/// scale that patch a derived object).
pub fn apply_to(
    media: &str,
    current: &Value,
    patch_bytes: &[u8],
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Value, ApiError> {
    let t = non_apply_patch_type(media)?;
    let doc = parse_patch_body(t, patch_bytes)?;
    apply_non_apply(
        t,
        current,
        &doc,
        &GroupVersionKindRef {
            group,
            version,
            kind,
        },
    )
}

/// kube's checkName after a patch is applied (patcher.applyPatch): a patch may not rename the
/// object or move it to another namespace (400, not an immutable-field 422).
fn check_name(ctx: &Ctx, patched: &Value) -> Result<(), ApiError> {
    let name = object::name(patched);
    if name != ctx.info.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.info.name
        )));
    }
    let ns = object::namespace(patched);
    if ctx.def.namespaced && !ns.is_empty() && ns != ctx.ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Serves a PATCH of the main resource or the status subresource.
pub async fn patch(ctx: &Ctx, body: Body, sub: Subresource) -> Result<Response, ApiError> {
    // PatchResource checks the content type before the options.
    let media = request_media(ctx);
    let t = patch_type(&media, ctx.def.strategic_merge)?;
    let opts = WriteOptions::parse(
        &ctx.query,
        OptionsKind::Patch {
            apply: t == PatchType::Apply,
        },
    )?;
    let bytes = read_body(ctx, body).await?;
    let doc = parse_patch_body(t, &bytes)?;
    let reg = Registry::new(&ctx.chain.state, ctx.def.clone());
    let mut wctx = write_context(ctx, &opts);
    let gvk = GroupVersionKindRef {
        group: &ctx.def.group,
        version: &ctx.def.version,
        kind: &ctx.def.kind,
    };

    if t != PatchType::Apply {
        let mut unknown = Vec::new();
        let mutate = |cur: &Value| {
            let mut next = apply_non_apply(t, cur, &doc, &gvk)?;
            if !next.is_object() {
                return Err(ApiError::invalid_message(
                    "the patch turned the object into something that is not an object",
                ));
            }
            check_name(ctx, &next)?;
            if object::resource_version(&next)?.is_none()
                && object::resource_version(cur)?.is_some()
                && !crate::registry::allow_unconditional_update(&ctx.def)
            {
                // The patch removed the resourceVersion: an unconditional update, which
                // Store.Update refuses for kinds that require a resourceVersion.
                return Err(reg.resource_version_required(&ctx.info.name));
            }
            // kube decodes the patched object strictly (unknown fields for fieldValidation).
            let strict = opts.field_validation == crate::options::FieldValidation::Strict;
            let patched = strict.then(|| next.clone());
            unknown = crate::schema::prune_unknown(&ctx.def, &mut next);
            if let Some(patched) = patched.filter(|_| !unknown.is_empty()) {
                return Err(crate::schema::strict_patch_error(
                    t == PatchType::Strategic,
                    &doc,
                    &patched,
                    &unknown,
                ));
            }
            // Unless the patch names a resourceVersion (a precondition), it applies to
            // whatever is current, and races are retried.
            if next.pointer("/metadata/resourceVersion") == cur.pointer("/metadata/resourceVersion")
                && doc.pointer("/metadata/resourceVersion").is_none()
            {
                object::meta_mut(&mut next).remove("resourceVersion");
            }
            Ok(next)
        };
        // A merge patch of the status subresource reads and changes only metadata and status
        // (whatever else it names is dropped); a JSON patch may test any member.
        let updated = if sub == Subresource::Status && t != PatchType::Json {
            reg.guaranteed_status_update(&ctx.ns, &ctx.info.name, &wctx, mutate)
                .await?
        } else {
            reg.guaranteed_update_written(&ctx.ns, &ctx.info.name, sub, &wctx, mutate)
                .await?
        };
        let warnings = match opts.field_validation {
            crate::options::FieldValidation::Warn => unknown
                .iter()
                .map(|u| format!("unknown field \"{u}\""))
                .collect(),
            _ => vec![],
        };
        return render_written(ctx, StatusCode::OK, &updated, warnings);
    }

    // Server-side apply (the options check made sure a field manager is named).
    let manager = opts.field_manager.clone().unwrap_or_default();
    if !doc.is_object() {
        return Err(ApiError::bad_request("the apply patch must be an object"));
    }
    let force = opts.force.unwrap_or(false);
    let api_version = ctx.def.api_version();
    let schema = managed_fields::schema_for(&ctx.def);
    let reset = managed_fields::reset_fields(&ctx.def, sub);
    let subresource = (sub == Subresource::Status).then_some("status");
    wctx.manager = manager.clone();
    wctx.apply = true;
    let apply_opts = || patch::ApplyOptions {
        manager: &manager,
        force,
        api_version: &api_version,
        kind: &ctx.def.kind,
        subresource,
        reset_fields: reset,
        now: jiff::Timestamp::now(),
    };
    let result = reg
        .guaranteed_update_written(&ctx.ns, &ctx.info.name, sub, &wctx, |cur| {
            let mut next =
                patch::apply(&schema, Some(cur), &doc, &apply_opts()).map_err(patch_error)?;
            check_name(ctx, &next)?;
            if doc.pointer("/metadata/resourceVersion").is_none() {
                object::meta_mut(&mut next).remove("resourceVersion");
            }
            Ok(next)
        })
        .await;
    match result {
        Ok(updated) => render_written(ctx, StatusCode::OK, &updated, vec![]),
        Err(e) if e.code == 404 && sub == Subresource::Main => {
            // Apply creates a missing object.
            let mut created =
                patch::apply(&schema, None, &doc, &apply_opts()).map_err(patch_error)?;
            let meta = object::meta_mut(&mut created);
            if meta
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                meta.insert("name".into(), Value::String(ctx.info.name.clone()));
            }
            if object::name(&created) != ctx.info.name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({})",
                    object::name(&created),
                    ctx.info.name
                )));
            }
            let obj = reg.create_written(&ctx.ns, created, &wctx).await?;
            render_written(ctx, StatusCode::CREATED, &obj, vec![])
        }
        Err(e) => Err(e),
    }
}
