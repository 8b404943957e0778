//! The TokenRequest subresource, `POST .../serviceaccounts/NAME/token` (kube's
//! `pkg/registry/core/serviceaccount/storage.TokenREST`): mints a service-account token for
//! the named account, optionally bound to a Pod, Secret or Node. `kubectl create token` uses it.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::auth::service_account::{Ref, TokenSpec};
use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, read_body, render_object, request_media};
use crate::object;
use crate::registry::Registry;

/// Default lifetime of a requested token (kube's TokenRequestSpec default: one hour).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Shortest lifetime kube accepts.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// Longest lifetime kube accepts (2^32 seconds).
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

fn invalid(name: &str, field: &str, value: &Value, msg: &str) -> ApiError {
    ApiError::invalid(
        "authentication.k8s.io",
        "TokenRequest",
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {value}: {msg}"),
            field: field.into(),
        }],
    )
}

/// Serves a TokenRequest create.
pub async fn create(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let auth = ctx
        .chain
        .auth()
        .ok_or_else(|| ApiError::unavailable("token issuance is not configured"))?;
    let sa_name = ctx.info.name.clone();
    let bytes = read_body(ctx, body).await?;
    let req = crate::body::decode(&request_media(ctx), &bytes, "TokenRequest", "v1")?.value;
    let spec = req.get("spec").cloned().unwrap_or(json!({}));

    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if expiration < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            &sa_name,
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        return Err(invalid(
            &sa_name,
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let audiences: Vec<String> = match spec.get("audiences") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::bad_request("spec.audiences must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::bad_request("spec.audiences must be a list")),
    };

    let sa = Registry::new(&ctx.chain.state, ctx.def.clone())
        .get(&ctx.ns, &sa_name)
        .await?;
    let sa_ref = Ref {
        name: sa_name.clone(),
        uid: object::uid(&sa).to_string(),
    };
    let bound = match spec.get("boundObjectRef") {
        None | Some(Value::Null) => None,
        Some(r) => Some(bound_object(ctx, r).await?),
    };
    let bound_json = bound.as_ref().map(|(kind, r, api_version)| {
        json!({"kind": kind, "apiVersion": api_version, "name": r.name, "uid": r.uid})
    });
    let token_spec = TokenSpec {
        namespace: ctx.ns.clone(),
        service_account: sa_ref,
        audiences,
        expiration_seconds: expiration,
        bound: bound.map(|(kind, r, _)| (kind, r)),
    };
    let (token, exp) = auth.tokens.issue(&token_spec).map_err(ApiError::internal)?;
    let audiences = if token_spec.audiences.is_empty() {
        auth.tokens.audiences().to_vec()
    } else {
        token_spec.audiences.clone()
    };
    let expires = jiff::Timestamp::from_second(exp)
        .map(object::format_time)
        .map_err(ApiError::internal)?;
    let out = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": sa_name,
            "namespace": ctx.ns,
            "creationTimestamp": object::now_rfc3339(),
        },
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": bound_json,
        },
        "status": {"token": token, "expirationTimestamp": expires},
    });
    render_object(ctx, StatusCode::CREATED, &out, vec![])
}

/// Resolves `spec.boundObjectRef` to (kind, reference with the live uid, apiVersion).
async fn bound_object(ctx: &Ctx, r: &Value) -> Result<(String, Ref, String), ApiError> {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (kind, api_version, name, uid) = (s("kind"), s("apiVersion"), s("name"), s("uid"));
    let (resource, namespaced) = match (kind.as_str(), api_version.as_str()) {
        ("Pod", "v1") => ("pods", true),
        ("Secret", "v1") => ("secrets", true),
        ("Node", "v1") => ("nodes", false),
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {api_version}, Kind={kind}"
            )));
        }
    };
    if name.is_empty() {
        return Err(ApiError::bad_request(
            "spec.boundObjectRef.name is required",
        ));
    }
    let snapshot = ctx.chain.state.catalog.snapshot();
    let def = snapshot
        .get("", "v1", resource)
        .cloned()
        .ok_or_else(|| ApiError::bad_request(format!("{resource} are not served")))?;
    let ns = if namespaced { ctx.ns.as_str() } else { "" };
    let obj = Registry::new(&ctx.chain.state, def).get(ns, &name).await?;
    let live_uid = object::uid(&obj).to_string();
    if !uid.is_empty() && uid != live_uid {
        return Err(ApiError::conflict(
            "",
            &kind,
            &name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok((
        kind,
        Ref {
            name,
            uid: live_uid,
        },
        api_version,
    ))
}
