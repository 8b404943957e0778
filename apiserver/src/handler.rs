//! The request pipeline: authentication → request info → dispatch to discovery, health,
//! OpenAPI or the registry, with responses rendered as the client negotiated.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use crate::auth::{self, UserInfo};
use crate::body;
use crate::discovery;
use crate::error::ApiError;
use crate::negotiation::{self, Output};
use crate::object;
use crate::options::{DeleteOptions, FieldValidation, ListOptions, WriteOptions};
use crate::registry::{DeleteOutcome, Registry, Subresource, WriteContext};
use crate::request_info::{RequestInfo, parse_query, request_info};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch;

/// The axum router serving the whole API.
pub fn router(state: Arc<ApiState>) -> Router {
    Router::new().fallback(entry).with_state(state)
}

async fn entry(State(state): State<Arc<ApiState>>, req: http::Request<Body>) -> Response {
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let query = parse_query(req.uri().query());
    let info = request_info(&method, req.uri().path(), &query);
    let apply = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/apply-patch"));
    let verb = crate::metrics::verb_label(&method, &info.verb, apply);
    let long_running = info.verb == "watch" || info.subresource == "proxy";
    let mutating = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    // In-flight limits as kube's MaxInFlightLimit filter: long-running requests are exempt.
    let guard = if long_running {
        None
    } else {
        let limit = if mutating {
            state.config.max_mutating_requests_inflight
        } else {
            state.config.max_requests_inflight
        };
        match state.metrics.admit(mutating, limit) {
            Some(g) => Some(g),
            None => {
                return ApiError::too_many_requests(
                    "Too many requests, please try again later.",
                    1,
                )
                .into_response();
            }
        }
    };
    let labels = info
        .is_resource_request
        .then(|| crate::metrics::RequestLabels {
            verb,
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            scope: if !info.name.is_empty() && !info.name_from_selector {
                "resource"
            } else if !info.namespace.is_empty() {
                "namespace"
            } else {
                "cluster"
            },
        });
    let path = info.path.clone();
    let mut audit = crate::audit::RequestAudit::begin(&req);
    let result = handle(&state, req, info, query, &mut audit).await;
    let resp = crate::audit::complete(&state, &mut audit, result).await;
    drop(guard);
    let elapsed = started.elapsed();
    if let Some(l) = labels {
        state
            .metrics
            .observe(l, resp.status().as_u16(), elapsed.as_secs_f64());
    }
    tracing::debug!(
        method = %method,
        verb,
        path = %path,
        status = resp.status().as_u16(),
        elapsed_ms = elapsed.as_secs_f64() * 1000.0,
        "request"
    );
    resp
}

/// Everything a resource handler needs about one request.
pub struct Ctx {
    /// Shared state.
    pub state: Arc<ApiState>,
    /// Derived request attributes.
    pub info: RequestInfo,
    /// The resource.
    pub def: Arc<ResourceDef>,
    /// Namespace (`""` for cluster scope or all namespaces).
    pub ns: String,
    /// Query parameters.
    pub query: HashMap<String, Vec<String>>,
    /// Request headers.
    pub headers: HeaderMap,
    /// The caller.
    pub user: UserInfo,
    /// Negotiated output.
    pub output: Output,
}

impl Ctx {
    fn registry(&self) -> Registry<'_> {
        Registry::new(&self.state, self.def.clone())
    }

    fn header(&self, h: header::HeaderName) -> Option<&str> {
        self.headers.get(h).and_then(|v| v.to_str().ok())
    }

    /// The field manager kube derives from the User-Agent when none is given.
    fn default_manager(&self) -> String {
        self.header(header::USER_AGENT)
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_string())
    }
}

async fn handle(
    state: &Arc<ApiState>,
    req: http::Request<Body>,
    info: RequestInfo,
    query: HashMap<String, Vec<String>>,
    audit: &mut crate::audit::RequestAudit,
) -> Result<Response, ApiError> {
    let (mut parts, body) = req.into_parts();
    audit.set_request(&info);
    let user = match state.delegated_auth() {
        Some(d) => std::sync::Arc::new(d.admit(&mut parts, &info).await?),
        None => auth::admit(state, &mut parts, &info, audit).await?,
    };
    auth::scope(
        user.clone(),
        dispatch(state, parts, body, query, info, (*user).clone()),
    )
    .await
}

async fn dispatch(
    state: &Arc<ApiState>,
    parts: http::request::Parts,
    body: Body,
    query: HashMap<String, Vec<String>>,
    info: RequestInfo,
    user: UserInfo,
) -> Result<Response, ApiError> {
    if let Some(backend) = state.aggregator.route(&info) {
        return Ok(crate::aggregator::proxy(&backend, parts, body, &user).await);
    }
    if crate::proxy::is_proxy_request(state, &info) {
        return crate::proxy::serve(state, parts, body, user, &info).await;
    }
    if !info.is_resource_request {
        return non_resource(state, &parts, &info).await;
    }
    let snapshot = state.catalog.snapshot();
    let def = snapshot
        .get(&info.api_group, &info.api_version, &info.resource)
        .cloned()
        .ok_or_else(|| {
            ApiError::unknown_resource(&info.api_group, &info.api_version, &info.resource)
        })?;
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let output = negotiation::negotiate(accept)?;
    let ns = scope(&def, &info)?;
    let ctx = Ctx {
        state: state.clone(),
        ns,
        def,
        query,
        headers: parts.headers,
        user,
        output,
        info,
    };
    let watch = ctx.info.verb == "watch";
    let gv = (ctx.info.api_group.clone(), ctx.info.api_version.clone());
    let resp = resource(ctx, body).await?;
    Ok(if watch {
        state.aggregator.end_when_remote(&gv.0, &gv.1, resp)
    } else {
        resp
    })
}

/// Resolves the namespace of a request against the resource's scope.
fn scope(def: &ResourceDef, info: &RequestInfo) -> Result<String, ApiError> {
    let is_namespace_resource = def.group.is_empty() && def.plural == "namespaces";
    if def.namespaced {
        if info.namespace.is_empty()
            && !matches!(info.verb.as_str(), "list" | "watch")
            && !(info.verb == "create" && def.storage == crate::resources::Storage::Virtual)
        {
            return Err(ApiError::path_not_found());
        }
        Ok(info.namespace.clone())
    } else {
        if !info.namespace.is_empty() && !is_namespace_resource {
            return Err(ApiError::path_not_found());
        }
        Ok(String::new())
    }
}

async fn non_resource(
    state: &Arc<ApiState>,
    parts: &http::request::Parts,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return Err(ApiError::method_not_allowed(
            &parts.method.to_string().to_lowercase(),
            "",
        ));
    }
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let path = info.path.trim_end_matches('/');
    let snapshot = state.catalog.snapshot();
    if crate::openapi::handles(path) {
        return crate::openapi::serve(&snapshot, path, parts);
    }
    match path {
        "/version" => Ok(json_response(StatusCode::OK, &discovery::version())),
        "/metrics" => {
            let text = state.metrics.render(&state.cache_stats());
            let mut resp = (StatusCode::OK, text).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            Ok(resp)
        }
        "/healthz" | "/livez" | "/readyz" => health(state, path).await,
        "/api" | "/apis" => {
            let core = path == "/api";
            if core && snapshot.get("", "v1", "namespaces").is_none() {
                // A server without the core group (`--aggregated`) serves no legacy API.
                return Err(ApiError::path_not_found());
            }
            if let Some(v) = discovery::aggregated_version(accept) {
                let mut doc = discovery::aggregated(&snapshot, core, v);
                if !core {
                    crate::aggregator::discovery::merge_aggregated(
                        &mut doc,
                        &state.aggregator.table(),
                    );
                }
                let mut resp = json_response(StatusCode::OK, &doc);
                if let Ok(ct) = HeaderValue::from_str(&discovery::aggregated_content_type(v)) {
                    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
                }
                Ok(resp)
            } else if core {
                Ok(json_response(
                    StatusCode::OK,
                    &discovery::api_versions(&state.config.external_address),
                ))
            } else {
                let mut doc = discovery::group_list(&snapshot);
                crate::aggregator::discovery::merge_group_list(&mut doc, &state.aggregator.table());
                Ok(json_response(StatusCode::OK, &doc))
            }
        }
        _ => {
            let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            match segs.as_slice() {
                ["api", v] => discovery::resource_list(&snapshot, "", v)
                    .map(|d| json_response(StatusCode::OK, &d))
                    .ok_or_else(ApiError::path_not_found),
                ["apis", g] => crate::aggregator::discovery::group(
                    discovery::group(&snapshot, g),
                    g,
                    &state.aggregator.table(),
                )
                .map(|d| json_response(StatusCode::OK, &d))
                .ok_or_else(ApiError::path_not_found),
                ["apis", g, v] => discovery::resource_list(&snapshot, g, v)
                    .map(|d| json_response(StatusCode::OK, &d))
                    .ok_or_else(ApiError::path_not_found),
                ["healthz" | "livez" | "readyz", _check] => health(state, path).await,
                _ => Err(ApiError::path_not_found()),
            }
        }
    }
}

async fn health(state: &Arc<ApiState>, path: &str) -> Result<Response, ApiError> {
    let ready_needed = path.starts_with("/readyz");
    if ready_needed {
        if let Err(e) = state.store.health().await {
            return Ok((
                StatusCode::SERVICE_UNAVAILABLE,
                format!("[-]etcd failed: {e}\nreadyz check failed\n"),
            )
                .into_response());
        }
        if !state.caches_ready() {
            return Ok((
                StatusCode::SERVICE_UNAVAILABLE,
                "[-]watch-cache failed: not synced\nreadyz check failed\n",
            )
                .into_response());
        }
    }
    Ok((StatusCode::OK, "ok").into_response())
}

/// A JSON response.
pub fn json_response(status: StatusCode, v: &Value) -> Response {
    bytes_response(status, serde_json::to_vec(v).unwrap_or_default())
}

fn bytes_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn resource(ctx: Ctx, body: Body) -> Result<Response, ApiError> {
    let verb = ctx.info.verb.clone();
    let sub = ctx.info.subresource.clone();
    if ctx.def.storage == crate::resources::Storage::Virtual {
        return match (verb.as_str(), sub.as_str()) {
            ("create", "") => crate::auth::review::create(&ctx, body).await,
            _ => Err(ApiError::method_not_allowed(&verb, &ctx.def.kind)),
        };
    }
    match sub.as_str() {
        "" => match verb.as_str() {
            "get" => get(&ctx).await,
            "list" => list(&ctx).await,
            "watch" => watch_req(&ctx).await,
            "create" => create(&ctx, body).await,
            "update" => update(&ctx, body, Subresource::Main).await,
            "patch" => crate::patch_handler::patch(&ctx, body, Subresource::Main).await,
            "delete" => delete(&ctx, body).await,
            "deletecollection" => delete_collection(&ctx, body).await,
            _ => Err(ApiError::method_not_allowed(&verb, &ctx.def.kind)),
        },
        "status" if ctx.def.status => match verb.as_str() {
            "get" => get(&ctx).await,
            "update" => update(&ctx, body, Subresource::Status).await,
            "patch" => crate::patch_handler::patch(&ctx, body, Subresource::Status).await,
            _ => Err(ApiError::method_not_allowed(&verb, &ctx.def.kind)),
        },
        "scale" if ctx.def.scale.is_some() => match verb.as_str() {
            "get" => crate::scale::get(&ctx).await,
            "update" => crate::scale::update(&ctx, body).await,
            "patch" => crate::scale::patch(&ctx, body).await,
            _ => Err(ApiError::method_not_allowed(&verb, "Scale")),
        },
        "token" if ctx.def.extra_subresources.iter().any(|s| s == "token") => match verb.as_str() {
            "create" => crate::auth::token_request::create(&ctx, body).await,
            _ => Err(ApiError::method_not_allowed(&verb, "TokenRequest")),
        },
        "finalize" if ctx.def.extra_subresources.iter().any(|s| s == "finalize") => {
            match verb.as_str() {
                "update" => finalize(&ctx, body).await,
                _ => Err(ApiError::method_not_allowed(&verb, &ctx.def.kind)),
            }
        }
        _ => Err(ApiError::path_not_found()),
    }
}

fn first<'a>(q: &'a HashMap<String, Vec<String>>, k: &str) -> Option<&'a str> {
    q.get(k).and_then(|v| v.first()).map(String::as_str)
}

async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let rv = first(&ctx.query, "resourceVersion").filter(|s| !s.is_empty());
    let obj = ctx
        .registry()
        .get_with_rv(&ctx.ns, &ctx.info.name, rv)
        .await?;
    render_object(ctx, StatusCode::OK, &obj, vec![])
}

/// Renders one object in the negotiated form.
pub fn render_object(
    ctx: &Ctx,
    status: StatusCode,
    obj: &Value,
    warnings: Vec<String>,
) -> Result<Response, ApiError> {
    let body = match ctx.output {
        Output::Json => serde_json::to_vec(obj).map_err(ApiError::internal)?,
        Output::Metadata => serde_json::to_vec(&json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
        }))
        .map_err(ApiError::internal)?,
        Output::Table => {
            let rv = object::meta_str(obj, "resourceVersion").to_string();
            let items = vec![obj.clone()];
            crate::tables::table(ctx, &items, &rv, None, None)?
        }
    };
    let mut resp = bytes_response(status, body);
    add_warnings(&mut resp, &warnings);
    Ok(resp)
}

/// [`render_object`] for an object a write just stored: JSON is its stored bytes with the
/// resourceVersion spliced in, as the watch cache serves it, instead of a second
/// serialization of the same object.
pub fn render_written(
    ctx: &Ctx,
    status: StatusCode,
    written: &crate::registry::Written,
    mut warnings: Vec<String>,
) -> Result<Response, ApiError> {
    warnings.extend(written.warnings.iter().cloned());
    if let (Output::Json, Some((stored, rv))) = (&ctx.output, &written.stored)
        && let Some(body) = crate::json_splice::with_resource_version(stored, *rv)
    {
        let mut resp = bytes_response(status, body);
        add_warnings(&mut resp, &warnings);
        return Ok(resp);
    }
    render_object(ctx, status, &*written.object()?, warnings)
}

fn add_warnings(resp: &mut Response, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

async fn list(ctx: &Ctx) -> Result<Response, ApiError> {
    let opts = ListOptions::parse(&ctx.query)?;
    let page = ctx.registry().list(&ctx.ns, &opts).await?;
    match ctx.output {
        Output::Json | Output::Metadata => {
            let mut meta = format!("{{\"resourceVersion\":\"{}\"", page.revision);
            if let Some(c) = &page.continue_token {
                meta.push_str(&format!(",\"continue\":{}", Value::String(c.clone())));
            }
            if let Some(n) = page.remaining {
                meta.push_str(&format!(",\"remainingItemCount\":{n}"));
            }
            meta.push('}');
            let (kind, api_version) = if ctx.output == Output::Metadata {
                (
                    "PartialObjectMetadataList".to_string(),
                    "meta.k8s.io/v1".to_string(),
                )
            } else {
                (ctx.def.list_kind.clone(), ctx.def.api_version())
            };
            let mut out = Vec::with_capacity(
                page.items.iter().map(|i| i.json_len() + 1).sum::<usize>() + 128,
            );
            out.extend_from_slice(
                format!("{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{meta},\"items\":[")
                    .as_bytes(),
            );
            for (i, item) in page.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if ctx.output == Output::Metadata {
                    let v = item.value();
                    let pom = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": v.get("metadata").cloned().unwrap_or(json!({})),
                    });
                    out.extend_from_slice(pom.to_string().as_bytes());
                } else {
                    item.write_json(&mut out);
                }
            }
            out.extend_from_slice(b"]}");
            Ok(bytes_response(StatusCode::OK, out))
        }
        Output::Table => {
            let items: Vec<Value> = page.items.iter().map(|i| i.value()).collect();
            let t = crate::tables::table(
                ctx,
                &items,
                &page.revision.to_string(),
                page.continue_token.as_deref(),
                page.remaining,
            )?;
            Ok(bytes_response(StatusCode::OK, t))
        }
    }
}

async fn watch_req(ctx: &Ctx) -> Result<Response, ApiError> {
    let opts = ListOptions::parse_watch(&ctx.query)?;
    match ctx.output {
        Output::Table => {
            let enc = crate::tables::TableWatchEncoder::new(ctx)?;
            watch::serve(&ctx.state, &ctx.def, &ctx.ns, &opts, enc).await
        }
        _ => {
            let enc = watch::JsonEncoder {
                api_version: ctx.def.api_version(),
                kind: ctx.def.kind.clone(),
            };
            watch::serve(&ctx.state, &ctx.def, &ctx.ns, &opts, enc).await
        }
    }
}

/// Reads and decodes a create/update body; returns the object and warnings.
async fn read_object(
    ctx: &Ctx,
    body: Body,
    opts: &WriteOptions,
) -> Result<(Value, Vec<String>), ApiError> {
    let bytes = body::read_limited(body, ctx.state.config.max_request_bytes).await?;
    let media = body::content_type(ctx.header(header::CONTENT_TYPE));
    let decoded = body::decode(&media, &bytes, &ctx.def.kind, &ctx.def.version)?;
    let mut problems: Vec<String> = decoded
        .duplicates
        .iter()
        .map(|d| format!("duplicate field \"{d}\""))
        .collect();
    let mut value = decoded.value;
    problems.extend(
        crate::schema::prune_unknown(&ctx.state, &ctx.def, &mut value)
            .into_iter()
            .map(|u| format!("unknown field \"{u}\"")),
    );
    let warnings = match opts.field_validation {
        FieldValidation::Strict if !problems.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                ctx.def.kind,
                ctx.def.version,
                ctx.def.kind,
                problems.join(", ")
            )));
        }
        FieldValidation::Warn => problems,
        _ => vec![],
    };
    Ok((value, warnings))
}

async fn create(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query)?;
    let (obj, warnings) = read_object(ctx, body, &opts).await?;
    let wctx = WriteContext::new(&opts, &ctx.default_manager());
    let created = ctx.registry().create_written(&ctx.ns, obj, &wctx).await?;
    render_written(ctx, StatusCode::CREATED, &created, warnings)
}

async fn update(ctx: &Ctx, body: Body, sub: Subresource) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query)?;
    let (obj, warnings) = read_object(ctx, body, &opts).await?;
    let wctx = WriteContext::new(&opts, &ctx.default_manager());
    let (obj, created) = ctx
        .registry()
        .update_written(&ctx.ns, &ctx.info.name, obj, sub, &wctx)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    render_written(ctx, status, &obj, warnings)
}

async fn finalize(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query)?;
    let (obj, _) = read_object(ctx, body, &opts).await?;
    let wctx = WriteContext::new(&opts, &ctx.default_manager());
    let finalizers = obj
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or(json!([]));
    let user_rv = object::resource_version(&obj)?;
    let updated = ctx
        .registry()
        .guaranteed_update(
            &ctx.ns,
            &ctx.info.name,
            Subresource::Finalize,
            &wctx,
            |cur| {
                let mut next = cur.clone();
                object::set_path(&mut next, ".spec.finalizers", finalizers.clone());
                if let Some(rv) = user_rv {
                    object::set_resource_version(&mut next, rv);
                }
                Ok(next)
            },
        )
        .await?;
    render_object(ctx, StatusCode::OK, &updated, vec![])
}

async fn read_delete_options(ctx: &Ctx, body: Body) -> Result<DeleteOptions, ApiError> {
    let bytes = body::read_limited(body, ctx.state.config.max_request_bytes).await?;
    let body_value = if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        None
    } else {
        let media = body::content_type(ctx.header(header::CONTENT_TYPE));
        Some(body::decode(&media, &bytes, "DeleteOptions", "v1")?.value)
    };
    DeleteOptions::parse(&ctx.query, body_value.as_ref())
}

async fn delete(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = read_delete_options(ctx, body).await?;
    match ctx
        .registry()
        .delete(&ctx.ns, &ctx.info.name, &opts)
        .await?
    {
        DeleteOutcome::Deleted(v) => Ok(json_response(StatusCode::OK, &v)),
        DeleteOutcome::Terminating(v) => render_object(ctx, StatusCode::OK, &v, vec![]),
    }
}

async fn delete_collection(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = read_delete_options(ctx, body).await?;
    let list_opts = ListOptions::parse(&ctx.query)?;
    let deleted = ctx
        .registry()
        .delete_collection(&ctx.ns, &list_opts, &opts)
        .await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "kind": ctx.def.list_kind,
            "apiVersion": ctx.def.api_version(),
            "metadata": {},
            "items": deleted,
        }),
    ))
}

/// Reads the raw body of a request (patches), with the size limit.
pub async fn read_body(ctx: &Ctx, body: Body) -> Result<bytes::Bytes, ApiError> {
    body::read_limited(body, ctx.state.config.max_request_bytes).await
}

/// The write context of a request.
pub fn write_context(ctx: &Ctx, opts: &WriteOptions) -> WriteContext {
    WriteContext::new(opts, &ctx.default_manager())
}

/// The Content-Type essence of a request.
pub fn request_media(ctx: &Ctx) -> String {
    body::content_type(ctx.header(header::CONTENT_TYPE))
}
