//! The review APIs: create-only, never stored (pkg/registry/authorization/* and
//! pkg/registry/authentication/* in kube).
//!
//! - SelfSubjectAccessReview: may I? (`kubectl auth can-i`)
//! - SelfSubjectRulesReview: what may I do in a namespace? (`kubectl auth can-i --list`)
//! - SubjectAccessReview / LocalSubjectAccessReview: may this user? (aggregated servers,
//!   namespace admins)
//! - SelfSubjectReview: who am I? (`kubectl auth whoami`)
//! - TokenReview: who is this token? (aggregated servers, webhooks)

use std::collections::BTreeMap;

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::auth::attributes::Attributes;
use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, read_body, render_object, request_media};
use crate::object;

fn invalid(ctx: &Ctx, field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        &ctx.def.group,
        &ctx.def.kind,
        "",
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        }],
    )
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The echoed request with kube's response envelope.
fn envelope(ctx: &Ctx, req: &Value, status: Value, creation_now: bool) -> Value {
    let mut meta = req
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    meta.insert(
        "creationTimestamp".into(),
        if creation_now {
            Value::String(object::now_rfc3339())
        } else {
            Value::Null
        },
    );
    if ctx.def.namespaced && !ctx.ns.is_empty() {
        meta.insert("namespace".into(), Value::String(ctx.ns.clone()));
    }
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(ctx.def.kind.clone()));
    out.insert("apiVersion".into(), Value::String(ctx.def.api_version()));
    out.insert("metadata".into(), Value::Object(meta));
    if let Some(spec) = req.get("spec") {
        out.insert("spec".into(), spec.clone());
    }
    out.insert("status".into(), status);
    Value::Object(out)
}

/// Serves a create of a review kind.
pub async fn create(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(ctx, body).await?;
    let req =
        crate::body::decode(&request_media(ctx), &bytes, &ctx.def.kind, &ctx.def.version)?.value;
    let out = match (ctx.def.group.as_str(), ctx.def.kind.as_str()) {
        ("authorization.k8s.io", "SelfSubjectAccessReview") => access_review(ctx, &req, &ctx.user)?,
        ("authorization.k8s.io", "SubjectAccessReview") => {
            let subject = subject_of(ctx, &req)?;
            access_review(ctx, &req, &subject)?
        }
        ("authorization.k8s.io", "LocalSubjectAccessReview") => {
            local_checks(ctx, &req)?;
            let subject = subject_of(ctx, &req)?;
            access_review(ctx, &req, &subject)?
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => rules_review(ctx, &req)?,
        ("authentication.k8s.io", "SelfSubjectReview") => {
            envelope(ctx, &req, json!({"userInfo": ctx.user.to_json()}), true)
        }
        ("authentication.k8s.io", "TokenReview") => token_review(ctx, &req).await?,
        _ => return Err(ApiError::method_not_allowed("create", &ctx.def.kind)),
    };
    render_object(ctx, StatusCode::CREATED, &out, vec![])
}

/// The user named by a SubjectAccessReview spec.
fn subject_of(ctx: &Ctx, req: &Value) -> Result<UserInfo, ApiError> {
    let spec = req.get("spec").cloned().unwrap_or(json!({}));
    let strings = |k: &str| -> Vec<String> {
        spec.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let user = UserInfo {
        name: str_of(&spec, "user").to_string(),
        uid: str_of(&spec, "uid").to_string(),
        groups: strings("groups"),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let vals = v
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|x| x.as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default();
                        (k.clone(), vals)
                    })
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(invalid(
            ctx,
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified",
        ));
    }
    Ok(user)
}

fn local_checks(ctx: &Ctx, req: &Value) -> Result<(), ApiError> {
    if ctx.ns.is_empty() {
        return Err(ApiError::bad_request(
            "a LocalSubjectAccessReview is created in a namespace",
        ));
    }
    let spec = req.get("spec").cloned().unwrap_or(json!({}));
    if spec
        .get("nonResourceAttributes")
        .is_some_and(|v| !v.is_null())
    {
        return Err(invalid(
            ctx,
            "spec.nonResourceAttributes",
            "Invalid value: \"\": disallowed on this kind of request",
        ));
    }
    let ns = spec
        .pointer("/resourceAttributes/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ns != ctx.ns {
        return Err(invalid(
            ctx,
            "spec.resourceAttributes.namespace",
            &format!("Invalid value: {ns:?}: must match metadata.namespace"),
        ));
    }
    Ok(())
}

/// Evaluates a (Self|Local)SubjectAccessReview for `user`.
fn access_review(ctx: &Ctx, req: &Value, user: &UserInfo) -> Result<Value, ApiError> {
    let auth = ctx
        .chain
        .auth()
        .ok_or_else(|| ApiError::unavailable("authorization is not configured"))?;
    let spec = req.get("spec").cloned().unwrap_or(json!({}));
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let decision = match (resource, non_resource) {
        (Some(r), None) => auth.authorizer.authorize(&Attributes {
            user,
            verb: str_of(r, "verb"),
            resource_request: true,
            path: "",
            api_group: str_of(r, "group"),
            api_version: str_of(r, "version"),
            resource: str_of(r, "resource"),
            subresource: str_of(r, "subresource"),
            namespace: str_of(r, "namespace"),
            name: str_of(r, "name"),
        }),
        (None, Some(n)) => auth.authorizer.authorize(&Attributes::non_resource(
            user,
            str_of(n, "verb"),
            str_of(n, "path"),
        )),
        _ => {
            return Err(invalid(
                ctx,
                "spec.resourceAttributes",
                "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
    };
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = Value::String(decision.reason);
    }
    Ok(envelope(ctx, req, status, false))
}

/// Evaluates a SelfSubjectRulesReview.
fn rules_review(ctx: &Ctx, req: &Value) -> Result<Value, ApiError> {
    let auth = ctx
        .chain
        .auth()
        .ok_or_else(|| ApiError::unavailable("authorization is not configured"))?;
    let ns = req
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let found = auth.authorizer.rules_for(&ctx.user, ns);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in &found.rules {
        if !r.resources.is_empty() {
            let mut m = Map::new();
            m.insert("verbs".into(), json!(r.verbs));
            if !r.api_groups.is_empty() {
                m.insert("apiGroups".into(), json!(r.api_groups));
            }
            m.insert("resources".into(), json!(r.resources));
            if !r.resource_names.is_empty() {
                m.insert("resourceNames".into(), json!(r.resource_names));
            }
            resource_rules.push(Value::Object(m));
        }
        if !r.non_resource_urls.is_empty() {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !found.errors.is_empty(),
    });
    if !found.errors.is_empty() {
        status["evaluationError"] = Value::String(found.errors.join(", "));
    }
    Ok(envelope(ctx, req, status, false))
}

/// Evaluates a TokenReview. The token is not echoed back.
async fn token_review(ctx: &Ctx, req: &Value) -> Result<Value, ApiError> {
    let auth = ctx
        .chain
        .auth()
        .ok_or_else(|| ApiError::unavailable("authentication is not configured"))?;
    let token = req
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences: Vec<String> = req
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let outcome = auth
        .authenticator
        .authenticate_token(&ctx.chain.state, token, &audiences)
        .await;
    let status = match outcome.user {
        Some(u) => json!({
            "authenticated": true,
            "user": u.to_json(),
            "audiences": outcome.audiences,
        }),
        None => json!({"user": {}, "error": outcome.error}),
    };
    let mut echoed = req.clone();
    if let Some(spec) = echoed.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("token");
    }
    Ok(envelope(ctx, &echoed, status, false))
}
