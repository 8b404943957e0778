//! The request pipeline: authentication → request info → dispatch to discovery, health,
//! OpenAPI or the registry, with responses rendered as the client negotiated.

pub mod binding;
pub mod componentstatus;
pub mod eviction;
pub mod patch;
pub mod review;
pub mod scale;
pub mod tables;
pub mod token_request;

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
use crate::negotiation::{self, Endpoint, MediaType, Negotiated, Target};
use crate::object;
use crate::options::{DeleteOptions, FieldValidation, ListOptions, OptionsKind, WriteOptions};
use crate::output::{self, ErrorForm};
use crate::registry::{DeleteOutcome, Registry, Subresource, WriteContext};
use crate::request_info::{RequestInfo, parse_query, request_info};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch;

/// What the handler chain serves with: the registry's state, what the chain's filters
/// need (authentication and authorization, or their delegation to a host API server in
/// `--aggregated` mode, and the audit log), and the two routes beside the chain, the
/// aggregation layer and the cluster proxy. Nothing below the handler holds these: the
/// registry, admission and storage see only [`ApiState`].
pub struct Chain {
    /// The registry's state.
    pub state: Arc<ApiState>,
    /// The aggregation layer's routes to APIService backends.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// The cluster proxy's targets and connection pools.
    pub cluster_proxy: Arc<crate::proxy::ClusterProxy>,
    /// Authentication and authorization; requests fail closed until it is set.
    auth: std::sync::OnceLock<Arc<auth::Auth>>,
    /// Delegated authentication and authorization (`--aggregated` mode).
    delegated_auth: std::sync::OnceLock<Arc<crate::aggregated::DelegatedAuth>>,
    /// The audit log, when enabled.
    audit: std::sync::OnceLock<Arc<crate::audit::AuditLog>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain").finish_non_exhaustive()
    }
}

impl Chain {
    /// A chain over `state`, with no security stack yet (requests fail closed).
    pub fn new(state: Arc<ApiState>) -> Arc<Chain> {
        Arc::new(Chain {
            state,
            aggregator: Default::default(),
            cluster_proxy: Default::default(),
            auth: Default::default(),
            delegated_auth: Default::default(),
            audit: Default::default(),
        })
    }

    /// The security stack, once configured.
    pub fn auth(&self) -> Option<&Arc<auth::Auth>> {
        self.auth.get()
    }

    /// Sets the security stack (once).
    pub fn set_auth(&self, auth: Arc<auth::Auth>) {
        let _ = self.auth.set(auth);
    }

    /// The delegated security stack, in `--aggregated` mode.
    pub fn delegated_auth(&self) -> Option<&Arc<crate::aggregated::DelegatedAuth>> {
        self.delegated_auth.get()
    }

    /// Makes requests authenticate and authorize through the host (once).
    pub fn set_delegated_auth(&self, d: Arc<crate::aggregated::DelegatedAuth>) {
        let _ = self.delegated_auth.set(d);
    }

    /// The audit log, when enabled.
    pub fn audit(&self) -> Option<&Arc<crate::audit::AuditLog>> {
        self.audit.get()
    }

    /// Turns auditing on with `log` (once).
    pub fn set_audit(&self, log: Arc<crate::audit::AuditLog>) {
        let _ = self.audit.set(log);
    }
}

/// The axum router serving the whole API.
pub fn router(chain: Arc<Chain>) -> Router {
    Router::new().fallback(entry_recovering).with_state(chain)
}

/// [`entry`] behind [`recover_panics`].
// axum boxes this handler's future once, with `entry`'s inside it; boxing `entry` again would
// add a second allocation per request for nothing.
#[allow(clippy::large_futures)]
async fn entry_recovering(chain: State<Arc<Chain>>, req: http::Request<Body>) -> Response {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    recover_panics(&method, &uri, entry(chain, req)).await
}

/// The message of the 500 a panicking request gets (kube-apiserver's words).
pub const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

/// kube-apiserver's WithPanicRecovery: a request whose handling panics gets a 500 Status and
/// an error log line naming it, instead of a dropped connection. (A panic while a response
/// body is already streaming can only end that stream.)
pub async fn recover_panics(
    method: &Method,
    uri: &http::Uri,
    handling: impl std::future::Future<Output = Response>,
) -> Response {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(handling).catch_unwind().await {
        Ok(resp) => resp,
        Err(payload) => {
            let cause = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            tracing::error!(%method, path = %uri.path(), panic = %cause, "apiserver panic'd");
            ApiError::internal(PANIC_MESSAGE).into_response()
        }
    }
}

async fn entry(State(chain): State<Arc<Chain>>, req: http::Request<Body>) -> Response {
    let state = &chain.state;
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
    let errors = ErrorForm::of(req.headers(), req.uri().query());
    let long_running = is_long_running(&info);
    let mutating = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    // In-flight limits as kube's MaxInFlightLimit filter (when API Priority and Fairness is
    // off): long-running requests are exempt. A request past the limit is answered 429 once
    // its caller is known (in `handle`), unless it comes from system:masters: kube always
    // serves the super-admin, without a slot.
    let (guard, over_limit) = if long_running || state.flow_control.is_some() {
        (None, false)
    } else {
        let limit = if mutating {
            state.config.max_mutating_requests_inflight
        } else {
            state.config.max_requests_inflight
        };
        let guard = state.metrics.admit(mutating, limit);
        let over = guard.is_none();
        (guard, over)
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
    if chain.audit().is_none() {
        audit = audit.disabled();
    }
    audit.long_running = long_running;
    let req = match keep_body_for_audit(&chain, req, long_running, &mut audit).await {
        Ok(req) => req,
        Err(e) => return errors.render(&e),
    };
    // Long-running requests have no deadline.
    let deadline = if long_running {
        Ok(None)
    } else {
        request_deadline(&query, state.config.request_timeout).map(Some)
    };
    let result = match deadline {
        Ok(deadline) => {
            // Pinned here so the (large) handler future stays in this frame.
            let handling = handle(&chain, req, info, query, over_limit, &mut audit);
            tokio::pin!(handling);
            within_deadline(deadline, handling).await
        }
        Err(e) => Err(e),
    };
    let resp = crate::audit::complete(chain.audit(), &mut audit, result, &errors).await;
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

/// Reads a write's body up front when the audit policy records request bodies, so its event
/// can carry the object; the handler reads the same bytes.
async fn keep_body_for_audit(
    chain: &Chain,
    req: http::Request<Body>,
    long_running: bool,
    audit: &mut crate::audit::RequestAudit,
) -> Result<http::Request<Body>, ApiError> {
    let records = chain.audit().is_some_and(|l| l.records_bodies());
    if !records
        || long_running
        || !matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
    {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let bytes = body::read_limited(body, chain.state.config.max_request_bytes).await?;
    let content_type = body::content_type(header_str(&parts.headers, header::CONTENT_TYPE));
    audit.set_request_body(bytes.clone(), &content_type);
    Ok(http::Request::from_parts(parts, Body::from(bytes)))
}

/// A seat of the request's priority level, or kube's 429 when its level rejects, its queue is
/// full or it waited too long.
async fn admit_flow(
    fc: &flowcontrol::FlowControl,
    user: &UserInfo,
    info: &RequestInfo,
) -> Result<flowcontrol::Seat, ApiError> {
    let class = fc.classify(&flowcontrol::RequestDigest {
        user: &user.name,
        groups: &user.groups,
        verb: &info.verb,
        api_group: &info.api_group,
        resource: &info.resource,
        subresource: &info.subresource,
        namespace: &info.namespace,
        path: &info.path,
        is_resource_request: info.is_resource_request,
    });
    fc.admit(&class).await.map_err(|rejection| {
        tracing::debug!(user = %user.name, flow_schema = %class.flow_schema, priority_level = %class.priority_level, reason = rejection.reason(), "request rejected by priority and fairness");
        too_many_requests()
    })
}

/// kube-apiserver's long-running request check (verbs watch and proxy; subresources
/// attach, exec, proxy, log, portforward), plus an agent's tunnel: exempt from the in-flight
/// limits and the request timeout.
fn is_long_running(info: &RequestInfo) -> bool {
    matches!(info.verb.as_str(), "watch" | "proxy")
        || matches!(
            info.subresource.as_str(),
            "attach" | "exec" | "proxy" | "log" | "portforward" | "tunnel"
        )
}

/// kube's WithRequestDeadline: the request's `timeout` parameter shortens the server's
/// `--request-timeout`, never lengthens it; 0 or a negative one means the server's.
fn request_deadline(
    query: &HashMap<String, Vec<String>>,
    server: std::time::Duration,
) -> Result<std::time::Duration, ApiError> {
    let Some(given) = query.get("timeout").and_then(|v| v.first()) else {
        return Ok(server);
    };
    let invalid = || {
        ApiError::bad_request(format!(
            "invalid timeout specified in the request URL - time: invalid duration {given:?}"
        ))
    };
    // Go's ParseDuration accepts a sign; a negative timeout is then no timeout of the user's.
    let (negative, magnitude) = match given.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, given.strip_prefix('+').unwrap_or(given)),
    };
    let d = apimachinery::duration::parse_duration(magnitude).map_err(|_| invalid())?;
    Ok(if negative || d.is_zero() || d >= server {
        server
    } else {
        d
    })
}

/// kube's WithTimeoutForNonLongRunningRequests: a request still being handled at its
/// deadline gets a 504. Dropping the handler cancels it between storage calls; each write is
/// one atomic storage transaction, so an object is either written or not, as after kube's
/// post-timeout completion.
async fn within_deadline(
    deadline: Option<std::time::Duration>,
    handling: std::pin::Pin<&mut impl std::future::Future<Output = Result<Response, ApiError>>>,
) -> Result<Response, ApiError> {
    let Some(deadline) = deadline else {
        return handling.await;
    };
    match tokio::time::timeout(deadline, handling).await {
        Ok(result) => result,
        Err(_) => Err(ApiError::timeout(
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
            None,
        )),
    }
}

/// Everything a resource handler needs about one request.
pub struct Ctx {
    /// The handler chain: the registry's state, the security stack, aggregator and proxy.
    pub chain: Arc<Chain>,
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
    /// The negotiated response form.
    pub neg: Negotiated,
}

impl Ctx {
    fn registry(&self) -> Registry<'_> {
        Registry::new(&self.chain.state, self.def.clone())
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
    chain: &Arc<Chain>,
    req: http::Request<Body>,
    mut info: RequestInfo,
    query: HashMap<String, Vec<String>>,
    over_limit: bool,
    audit: &mut crate::audit::RequestAudit,
) -> Result<Response, ApiError> {
    let (mut parts, body) = req.into_parts();
    audit.set_request(&info);
    let (user, authorized) = match chain.delegated_auth() {
        // The delegated path asks its SubjectAccessReview as it authenticates.
        Some(d) => (d.admit(&mut parts, &mut info, &query).await?, true),
        None => (
            identify(chain, &mut parts, &mut info, &query, audit).await?,
            false,
        ),
    };
    // kube's WithMaxInFlightLimit, or WithPriorityAndFairness: after authentication and
    // impersonation, by who asks, and before authorization.
    refuse_over_limit(over_limit, &user)?;
    let _seat = match &chain.state.flow_control {
        Some(fc) if !is_long_running(&info) => Some(admit_flow(fc, &user, &info).await?),
        _ => None,
    };
    if !authorized {
        authorize(chain, &user, &info, audit)?;
    }
    let user = Arc::new(user);
    // Boxed: the request's whole dispatch is a large future.
    let (response, annotations) = Box::pin(
        genericapiserver::admission_plugin::collect_audit_annotations(auth::scope(
            user.clone(),
            dispatch(chain, parts, body, query, info, (*user).clone()),
        )),
    )
    .await;
    audit.add_annotations(annotations);
    response
}

/// kube's MaxInFlightLimit filter for a request that found every slot taken: 429 with
/// Retry-After, except for system:masters, whom kube always answers.
fn refuse_over_limit(over_limit: bool, user: &UserInfo) -> Result<(), ApiError> {
    if over_limit && !user.is_master() {
        return Err(too_many_requests());
    }
    Ok(())
}

/// kube's answer from either limit filter: 429 with `Retry-After: 1`.
fn too_many_requests() -> ApiError {
    ApiError::too_many_requests("Too many requests, please try again later.", 1)
}

/// Authenticates one request and applies impersonation (kube's WithAuthentication and
/// WithImpersonation filters). Returns the identity the request acts as. Only an
/// authenticated request has its field selector read (for the name RBAC checks,
/// [`crate::request_info::add_selector_name`]).
async fn identify(
    chain: &Chain,
    parts: &mut http::request::Parts,
    info: &mut RequestInfo,
    query: &HashMap<String, Vec<String>>,
    audit: &mut crate::audit::RequestAudit,
) -> Result<UserInfo, ApiError> {
    let auth = configured_auth(chain)?;
    let user = auth.authenticator.authenticate(&chain.state, parts).await?;
    audit.set_user(&user);
    crate::request_info::add_selector_name(info, query);
    audit.set_request(info);
    if let Some(log) = chain.audit() {
        audit.received(log);
    }
    Ok(
        match auth::impersonation::impersonate(&auth.authorizer, &user, &parts.headers)? {
            Some(acting_as) => {
                audit.set_impersonated(&acting_as);
                auth::impersonation::strip_headers(&mut parts.headers);
                acting_as
            }
            None => user,
        },
    )
}

/// The security stack, set once the server has its certificates.
fn configured_auth(chain: &Chain) -> Result<&Arc<auth::Auth>, ApiError> {
    chain
        .auth()
        .ok_or_else(|| ApiError::unavailable("the server's authentication is not configured"))
}

/// kube's WithAuthorization filter: `user` may do what the request asks, or a 403.
fn authorize(
    chain: &Chain,
    user: &UserInfo,
    info: &RequestInfo,
    audit: &mut crate::audit::RequestAudit,
) -> Result<(), ApiError> {
    let auth = configured_auth(chain)?;
    let attrs = auth::attributes::Attributes::from_request(user, info);
    let decision = auth.authorizer.authorize(&attrs);
    audit.set_decision(decision.allowed, &decision.reason);
    if !decision.allowed {
        tracing::debug!(user = %user.name, verb = %info.verb, path = %info.path, "forbidden");
        return Err(attrs.forbidden(&decision.reason));
    }
    Ok(())
}

async fn dispatch(
    chain: &Arc<Chain>,
    parts: http::request::Parts,
    body: Body,
    query: HashMap<String, Vec<String>>,
    info: RequestInfo,
    user: UserInfo,
) -> Result<Response, ApiError> {
    let state = &chain.state;
    if let Some(backend) = chain.aggregator.route(&info) {
        return Ok(crate::aggregator::proxy(&backend, parts, body, &user).await);
    }
    if crate::proxy::tunnel::is_tunnel_request(state, &info) {
        return crate::proxy::tunnel::accept(state, &chain.cluster_proxy, parts, &user, &info)
            .await;
    }
    if crate::proxy::is_proxy_request(state, &info) {
        return crate::proxy::serve(state, &chain.cluster_proxy, parts, body, user, &info).await;
    }
    if !info.is_resource_request {
        return non_resource(chain, &parts, &info).await;
    }
    let snapshot = state.catalog.snapshot();
    let def = snapshot
        .get(&info.api_group, &info.api_version, &info.resource)
        .cloned()
        .ok_or_else(|| {
            ApiError::unknown_resource(&info.api_group, &info.api_version, &info.resource)
        })?;
    let ns = scope(&def, &info)?;
    let neg = negotiation::negotiate(
        header_str(&parts.headers, header::ACCEPT),
        resource_endpoint(&def, &info, &query),
        negotiation::pretty_requested(
            parts.uri.query(),
            header_str(&parts.headers, header::USER_AGENT),
        ),
    )?;
    let ctx = Ctx {
        chain: chain.clone(),
        ns,
        def,
        query,
        headers: parts.headers,
        user,
        neg,
        info,
    };
    let watch = ctx.info.verb == "watch";
    let gv = (ctx.info.api_group.clone(), ctx.info.api_version.clone());
    let resp = resource(ctx, body).await?;
    Ok(if watch {
        chain.aggregator.end_when_remote(&gv.0, &gv.1, resp)
    } else {
        resp
    })
}

/// True when the URL names one object (`.../configmaps/NAME`), not a collection.
fn is_item_path(info: &RequestInfo) -> bool {
    !info.name.is_empty() && !info.name_from_selector
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What a resource endpoint serves (its `RequestScope`): protobuf for built-in kinds that have
/// a message (custom resources and Karmada's kinds, CRDs in Karmada, have none: a CRD scope's
/// `StandardSerializers`, copied to its status and scale scopes), Tables except to watch-list
/// requests.
fn resource_endpoint(
    def: &ResourceDef,
    info: &RequestInfo,
    query: &HashMap<String, Vec<String>>,
) -> Endpoint {
    let protobuf = def.source == crate::resources::Source::BuiltIn && {
        let (api_version, kind) = match info.subresource.as_str() {
            "scale" => ("autoscaling/v1".to_string(), "Scale"),
            "token" => ("authentication.k8s.io/v1".to_string(), "TokenRequest"),
            _ => (def.api_version(), def.kind.as_str()),
        };
        apimachinery::protobuf::Codec::for_kind(&api_version, kind).is_some()
    };
    let watch_list = info.verb == "watch"
        && ListOptions::parse_watch(query)
            .is_ok_and(|o| o.send_initial_events == Some(true) && o.allow_bookmarks);
    Endpoint::Resource {
        protobuf,
        table: !watch_list,
    }
}

/// Resolves the namespace of a request against the resource's scope.
fn scope(def: &ResourceDef, info: &RequestInfo) -> Result<String, ApiError> {
    let is_namespace_resource = def.group.is_empty() && def.plural == "namespaces";
    if def.namespaced {
        if info.namespace.is_empty()
            && !matches!(info.verb.as_str(), "list" | "watch")
            && !(info.verb == "create" && def.storage == crate::resources::Storage::Virtual)
        {
            // A namespaced kind serves only list and watch across namespaces: its
            // cluster-wide collection path answers other methods 405, and has no items.
            return Err(if is_item_path(info) {
                ApiError::path_not_found()
            } else {
                ApiError::method_not_allowed_route()
            });
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
    chain: &Chain,
    parts: &http::request::Parts,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    let state = &chain.state;
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return Err(ApiError::method_not_allowed_route());
    }
    let accept = header_str(&parts.headers, header::ACCEPT);
    let pretty = negotiation::pretty_requested(
        parts.uri.query(),
        header_str(&parts.headers, header::USER_AGENT),
    );
    let path = info.path.trim_end_matches('/');
    let snapshot = state.catalog.snapshot();
    if crate::openapi::handles(path) {
        let remote = crate::aggregator::openapi(&chain.aggregator.table());
        return crate::openapi::serve(&snapshot, &remote, path, parts);
    }
    match path {
        "/version" => Ok(json_response(StatusCode::OK, &crate::version::info())),
        "/metrics" => {
            let mut text = state.metrics.render(&state.cache_stats());
            if let Some(fc) = &state.flow_control {
                fc.render_metrics(&mut text);
            }
            // kube's storage monitor: asked at each scrape, for at most a second, and left
            // out when the store does not answer.
            let size =
                tokio::time::timeout(std::time::Duration::from_secs(1), state.store.db_size())
                    .await;
            crate::metrics::render_storage_size(&mut text, size.ok().and_then(Result::ok));
            let mut resp = (StatusCode::OK, text).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            Ok(resp)
        }
        "/healthz" | "/livez" | "/readyz" => health(state, path, parts.uri.query()).await,
        "/debug/api_priority_and_fairness/dump_priority_levels"
        | "/debug/api_priority_and_fairness/dump_requests" => {
            let Some(fc) = &state.flow_control else {
                return Err(ApiError::path_not_found());
            };
            let text = if path.ends_with("dump_requests") {
                fc.dump_requests()
            } else {
                fc.dump_priority_levels()
            };
            Ok((StatusCode::OK, text).into_response())
        }
        "/api" | "/apis" => {
            let core = path == "/api";
            if core && snapshot.get("", "v1", "namespaces").is_none() {
                // A server without the core group (`--aggregated`) serves no legacy API.
                return Err(ApiError::path_not_found());
            }
            // kube's WrappedHandler: Accept asking for APIGroupDiscoveryList gets aggregated
            // discovery, anything else the legacy document.
            if let Some(accepted) = negotiation::negotiate_media(accept, Endpoint::Discovery)
                && let Some(v) = accepted
                    .convert
                    .as_ref()
                    .and_then(negotiation::Convert::discovery_version)
            {
                let mut doc = discovery::aggregated(&snapshot, core, v);
                if !core {
                    crate::aggregator::discovery::merge_aggregated(
                        &mut doc,
                        &chain.aggregator.table(),
                    );
                }
                let media = accepted.media;
                let pretty = media == MediaType::Json && (accepted.pretty || pretty);
                let body = output::encode_value(media, pretty, &doc)?;
                // The Content-Type names the conversion (`generateMediaTypeWithGVK`).
                let content_type = format!(
                    "{};g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList",
                    media.as_str()
                );
                Ok(output::respond(StatusCode::OK, &content_type, body))
            } else if core {
                discovery_document(
                    accept,
                    pretty,
                    &discovery::api_versions(&state.config.external_address),
                )
            } else {
                let mut doc = discovery::group_list(&snapshot);
                crate::aggregator::discovery::merge_group_list(&mut doc, &chain.aggregator.table());
                discovery_document(accept, pretty, &doc)
            }
        }
        _ => {
            let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            match segs.as_slice() {
                ["api", v] => discovery::resource_list(&snapshot, "", v)
                    .ok_or_else(ApiError::path_not_found)
                    .and_then(|d| discovery_document(accept, pretty, &d)),
                ["apis", g] => crate::aggregator::discovery::group(
                    discovery::group(&snapshot, g),
                    g,
                    &chain.aggregator.table(),
                )
                .ok_or_else(ApiError::path_not_found)
                .and_then(|d| discovery_document(accept, pretty, &d)),
                ["apis", g, v] => discovery::resource_list(&snapshot, g, v)
                    .ok_or_else(ApiError::path_not_found)
                    .and_then(|d| discovery_document(accept, pretty, &d)),
                ["healthz" | "livez" | "readyz", ..] => {
                    health(state, path, parts.uri.query()).await
                }
                _ => Err(ApiError::path_not_found()),
            }
        }
    }
}

/// A legacy discovery document in the media type the Accept header allows (kube writes them
/// with `DefaultEndpointRestrictions`).
fn discovery_document(
    accept: Option<&str>,
    pretty: bool,
    doc: &Value,
) -> Result<Response, ApiError> {
    let neg = negotiation::negotiate(accept, Endpoint::Default, pretty)?;
    let body = output::encode_value(neg.media, neg.pretty, doc)?;
    Ok(output::respond(StatusCode::OK, neg.media.as_str(), body))
}

async fn health(
    state: &Arc<ApiState>,
    path: &str,
    query: Option<&str>,
) -> Result<Response, ApiError> {
    let (probe, check) =
        crate::healthz::Probe::of_path(path).ok_or_else(ApiError::path_not_found)?;
    state
        .health
        .respond(probe, check, query)
        .await
        .ok_or_else(ApiError::path_not_found)
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
    let item = is_item_path(&ctx.info);
    // A method the path's routes do not serve is 405, as go-restful answers it; a path with no
    // route at all is 404 (kube-apiserver's installer registers collection routes for list,
    // watch, create and deletecollection, item routes for get, update, patch and delete).
    let no_route = ApiError::method_not_allowed_route;
    let core_kind = |kind: &str| ctx.def.group.is_empty() && ctx.def.kind == kind;
    if ctx.def.storage == crate::resources::Storage::Virtual {
        return match (item, verb.as_str()) {
            (true, _) => Err(ApiError::path_not_found()),
            (false, "create") if core_kind("Binding") => {
                crate::handler::binding::create(&ctx, body, None).await
            }
            (false, "create") => crate::handler::review::create(&ctx, body).await,
            (false, _) => Err(no_route()),
        };
    }
    if ctx.def.storage == crate::resources::Storage::Probed {
        return match (item, sub.as_str(), verb.as_str()) {
            (true, "", "get") => crate::handler::componentstatus::get(&ctx).await,
            (false, "", "list") => crate::handler::componentstatus::list(&ctx).await,
            (_, "", _) => Err(no_route()),
            _ => Err(ApiError::path_not_found()),
        };
    }
    match sub.as_str() {
        "" if item => match verb.as_str() {
            "get" => get(&ctx).await,
            "watch" => watch_req(&ctx).await,
            "update" => update(&ctx, body, Subresource::Main).await,
            "patch" => crate::handler::patch::patch(&ctx, body, Subresource::Main).await,
            "delete" => delete(&ctx, body).await,
            _ => Err(no_route()),
        },
        "" => match verb.as_str() {
            "list" => list(&ctx).await,
            "watch" => watch_req(&ctx).await,
            "create" => create(&ctx, body).await,
            "deletecollection" if ctx.def.verbs().contains(&"deletecollection") => {
                delete_collection(&ctx, body).await
            }
            _ => Err(no_route()),
        },
        "status" if ctx.def.status => match verb.as_str() {
            "get" => get(&ctx).await,
            "update" => update(&ctx, body, Subresource::Status).await,
            "patch" => crate::handler::patch::patch(&ctx, body, Subresource::Status).await,
            _ => Err(no_route()),
        },
        "scale" if ctx.def.scale.is_some() => match verb.as_str() {
            "get" => crate::handler::scale::get(&ctx).await,
            "update" => crate::handler::scale::update(&ctx, body).await,
            "patch" => crate::handler::scale::patch(&ctx, body).await,
            _ => Err(no_route()),
        },
        "binding" if ctx.def.extra_subresources.iter().any(|s| s == "binding") => {
            match verb.as_str() {
                "create" => {
                    let name = ctx.info.name.clone();
                    crate::handler::binding::create(&ctx, body, Some(&name)).await
                }
                _ => Err(no_route()),
            }
        }
        "eviction" if ctx.def.extra_subresources.iter().any(|s| s == "eviction") => {
            match verb.as_str() {
                "create" => crate::handler::eviction::create(&ctx, body).await,
                _ => Err(no_route()),
            }
        }
        "token" if ctx.def.extra_subresources.iter().any(|s| s == "token") => match verb.as_str() {
            "create" => crate::handler::token_request::create(&ctx, body).await,
            _ => Err(no_route()),
        },
        "approval" if ctx.def.extra_subresources.iter().any(|s| s == "approval") => {
            match verb.as_str() {
                "get" => get(&ctx).await,
                "update" => approval(&ctx, body).await,
                _ => Err(no_route()),
            }
        }
        "finalize" if ctx.def.extra_subresources.iter().any(|s| s == "finalize") => {
            match verb.as_str() {
                "update" => finalize(&ctx, body).await,
                _ => Err(no_route()),
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

/// Renders one object in the negotiated form (kube's `transformResponseObject`): the object,
/// its PartialObjectMetadata or a one-row Table, as JSON, YAML or protobuf. A Status is never
/// converted.
pub fn render_object(
    ctx: &Ctx,
    status: StatusCode,
    obj: &Value,
    warnings: Vec<String>,
) -> Result<Response, ApiError> {
    let neg = ctx.neg;
    let target = if is_status(obj) {
        Target::Object
    } else {
        neg.target
    };
    let body = match target {
        Target::Object => output::encode_value(neg.media, neg.pretty, obj)?,
        Target::PartialObjectMetadata(v) => output::encode_value(
            neg.media,
            neg.pretty,
            &output::partial_object_metadata(obj, v),
        )?,
        Target::PartialObjectMetadataList(_) => {
            return Err(ApiError::not_acceptable_message(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                go_type(&ctx.def, false)
            )));
        }
        Target::Table(_) => {
            let rv = object::meta_str(obj, "resourceVersion").to_string();
            let items = vec![obj.clone()];
            let table = crate::handler::tables::table(ctx, &items, &rv, None, None)?;
            output::encode_json(neg.media, neg.pretty, table)?
        }
    };
    let mut resp = output::respond(status, neg.media.as_str(), body);
    add_warnings(&mut resp, &warnings);
    Ok(resp)
}

/// Whether a response object is a `metav1.Status` (which conversions leave alone).
fn is_status(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Status")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// The Go type kube names in conversion errors (`%T` of the registry's object): the internal
/// type of a built-in kind (`*core.ConfigMap`), unstructured for everything served as a CRD.
fn go_type(def: &ResourceDef, list: bool) -> String {
    if def.source != crate::resources::Source::BuiltIn {
        return if list {
            "*unstructured.UnstructuredList".into()
        } else {
            "*unstructured.Unstructured".into()
        };
    }
    let package = match def.group.split('.').next() {
        None | Some("") => "core",
        Some(p) => p,
    };
    let kind = if list { &def.list_kind } else { &def.kind };
    format!("*{package}.{kind}")
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
    if let (MediaType::Json, Target::Object, Some((stored, rv))) =
        (ctx.neg.media, ctx.neg.target, written.stored_json())
        && let Some(body) = crate::json_splice::with_resource_version(stored, rv)
    {
        let body = output::encode_json(MediaType::Json, ctx.neg.pretty, body)?;
        let mut resp = output::respond(status, MediaType::Json.as_str(), body);
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

/// The items of a list response: cached objects (served from their stored JSON) or values.
pub enum ListItems<'a> {
    /// Objects of the watch cache or the store.
    Cached(&'a [Arc<crate::watch_cache::CachedObject>]),
    /// Parsed objects.
    Values(&'a [Value]),
}

impl ListItems<'_> {
    fn len(&self) -> usize {
        match self {
            ListItems::Cached(items) => items.len(),
            ListItems::Values(items) => items.len(),
        }
    }

    fn json_len(&self) -> usize {
        match self {
            ListItems::Cached(items) => items.iter().map(|i| i.json_len() + 1).sum(),
            ListItems::Values(items) => items.len() * 256,
        }
    }

    fn value(&self, i: usize) -> Value {
        match self {
            ListItems::Cached(items) => items[i].value(),
            ListItems::Values(items) => items[i].clone(),
        }
    }

    fn write_json(&self, i: usize, out: &mut Vec<u8>) {
        match self {
            ListItems::Cached(items) => items[i].write_json(out),
            ListItems::Values(items) => {
                let _ = serde_json::to_writer(&mut *out, &items[i]);
            }
        }
    }
}

/// A list's `metadata` (`metav1.ListMeta`).
#[derive(Clone, Debug, Default)]
pub struct ListMeta {
    /// `resourceVersion` (none for a delete-collection's answer).
    pub resource_version: Option<String>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `remainingItemCount`.
    pub remaining: Option<usize>,
}

impl ListMeta {
    /// The metadata as a JSON value (for encoders).
    fn to_json(&self) -> Value {
        serde_json::from_slice(&self.json_bytes()).unwrap_or_else(|_| json!({}))
    }

    /// The metadata's JSON in `metav1.ListMeta`'s field order.
    fn json_bytes(&self) -> Vec<u8> {
        let mut fields = Vec::new();
        if let Some(rv) = &self.resource_version {
            fields.push(format!("\"resourceVersion\":{}", Value::String(rv.clone())));
        }
        if let Some(c) = &self.continue_token {
            fields.push(format!("\"continue\":{}", Value::String(c.clone())));
        }
        if let Some(n) = self.remaining {
            fields.push(format!("\"remainingItemCount\":{n}"));
        }
        format!("{{{}}}", fields.join(",")).into_bytes()
    }
}

/// Renders a list in the negotiated form: the list, its PartialObjectMetadataList or a Table.
pub fn render_list(ctx: &Ctx, meta: &ListMeta, items: ListItems<'_>) -> Result<Response, ApiError> {
    let neg = ctx.neg;
    let (kind, api_version, partial) = match neg.target {
        Target::Object => (ctx.def.list_kind.clone(), ctx.def.api_version(), false),
        Target::PartialObjectMetadataList(v) => (
            "PartialObjectMetadataList".to_string(),
            v.api_version().to_string(),
            true,
        ),
        Target::PartialObjectMetadata(_) => {
            return Err(ApiError::not_acceptable_message(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({})",
                go_type(&ctx.def, true)
            )));
        }
        Target::Table(_) => {
            let values: Vec<Value> = (0..items.len()).map(|i| items.value(i)).collect();
            let table = crate::handler::tables::table(
                ctx,
                &values,
                meta.resource_version.as_deref().unwrap_or(""),
                meta.continue_token.as_deref(),
                meta.remaining,
            )?;
            let body = output::encode_json(neg.media, neg.pretty, table)?;
            return Ok(output::respond(StatusCode::OK, neg.media.as_str(), body));
        }
    };
    let partial_version = match neg.target {
        Target::PartialObjectMetadataList(v) => v,
        _ => apimachinery::table::TableVersion::V1,
    };
    let body = if neg.media == MediaType::Protobuf {
        let item = if partial {
            apimachinery::protobuf::Codec::for_kind(
                partial_version.api_version(),
                "PartialObjectMetadata",
            )
        } else {
            apimachinery::protobuf::Codec::for_kind(&ctx.def.api_version(), &ctx.def.kind)
        }
        .ok_or_else(|| ApiError::internal(format!("{kind} has no protobuf encoding")))?;
        let mut list = apimachinery::protobuf::ListWriter::new(&api_version, &kind, item);
        for i in 0..items.len() {
            let value = items.value(i);
            let value = if partial {
                output::partial_object_metadata(&value, partial_version)
            } else {
                value
            };
            list.push(&value).map_err(output::protobuf_error)?;
        }
        list.finish(&meta.to_json())
            .map_err(output::protobuf_error)?
    } else {
        let mut out = Vec::with_capacity(items.json_len() + 128);
        out.extend_from_slice(
            format!("{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":")
                .as_bytes(),
        );
        out.extend_from_slice(&meta.json_bytes());
        out.extend_from_slice(b",\"items\":");
        if partial && items.len() == 0 {
            // asPartialObjectMetadataList builds a new list whose items stay nil.
            out.extend_from_slice(b"null");
        } else {
            out.push(b'[');
            for i in 0..items.len() {
                if i > 0 {
                    out.push(b',');
                }
                if partial {
                    let pom = output::partial_object_metadata(&items.value(i), partial_version);
                    out.extend_from_slice(pom.to_string().as_bytes());
                } else {
                    items.write_json(i, &mut out);
                }
            }
            out.push(b']');
        }
        out.push(b'}');
        output::encode_json(neg.media, neg.pretty, out)?
    };
    Ok(output::respond(StatusCode::OK, neg.media.as_str(), body))
}

async fn list(ctx: &Ctx) -> Result<Response, ApiError> {
    let opts = ListOptions::parse(&ctx.query)?;
    let page = ctx.registry().list(&ctx.ns, &opts).await?;
    let meta = ListMeta {
        resource_version: Some(page.revision.to_string()),
        continue_token: page.continue_token.clone(),
        remaining: page.remaining,
    };
    render_list(ctx, &meta, ListItems::Cached(&page.items))
}

async fn watch_req(ctx: &Ctx) -> Result<Response, ApiError> {
    let mut opts = ListOptions::parse_watch(&ctx.query)?;
    // The deprecated `/watch/.../NAME` path watches one object (kube's ListResource).
    if is_item_path(&ctx.info) {
        if opts.field_selector.is_empty() {
            opts.field_selector = apimachinery::selectors::FieldSelector {
                terms: vec![apimachinery::selectors::FieldTerm {
                    field: "metadata.name".into(),
                    value: ctx.info.name.clone(),
                    negated: false,
                }],
            };
        } else if opts.field_selector.exact_name() != Some(ctx.info.name.as_str()) {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
    }
    // serveWatchHandler: the stream's own serializer (YAML has none).
    let media = negotiation::negotiate_stream(
        header_str(&ctx.headers, header::ACCEPT),
        resource_endpoint(&ctx.def, &ctx.info, &ctx.query),
    )?;
    let watch_list = opts.send_initial_events == Some(true) && opts.allow_bookmarks;
    match ctx.neg.target {
        Target::Table(_) => {
            let enc = crate::handler::tables::TableWatchEncoder::new(ctx)?;
            watch::serve(&ctx.chain.state, &ctx.def, &ctx.ns, &opts, enc).await
        }
        Target::PartialObjectMetadata(version) => {
            let blueprint = watch_list
                .then(|| {
                    let codec = apimachinery::protobuf::Codec::for_kind(
                        version.api_version(),
                        "PartialObjectMetadata",
                    )?;
                    list_blueprint(
                        media,
                        version.api_version(),
                        "PartialObjectMetadataList",
                        codec,
                    )
                })
                .flatten();
            let enc = watch::MetadataEncoder {
                media,
                version,
                bookmark: watch::Bookmark {
                    api_version: ctx.def.api_version(),
                    kind: ctx.def.kind.clone(),
                    blueprint,
                },
            };
            watch::serve(&ctx.chain.state, &ctx.def, &ctx.ns, &opts, enc).await
        }
        // A PartialObjectMetadataList conversion fails for each event, and kube's watch then
        // sends the object itself (watchEmbeddedEncoder).
        Target::Object | Target::PartialObjectMetadataList(_) => {
            let api_version = ctx.def.api_version();
            let codec = apimachinery::protobuf::Codec::for_kind(&api_version, &ctx.def.kind);
            let blueprint = watch_list
                .then(|| list_blueprint(media, &api_version, &ctx.def.list_kind, codec?))
                .flatten();
            let bookmark = watch::Bookmark {
                api_version: api_version.clone(),
                kind: ctx.def.kind.clone(),
                blueprint,
            };
            match (media, codec) {
                (MediaType::Protobuf, Some(codec)) => {
                    let enc = watch::ProtobufEncoder { codec, bookmark };
                    watch::serve(&ctx.chain.state, &ctx.def, &ctx.ns, &opts, enc).await
                }
                _ => {
                    let enc = watch::JsonEncoder { bookmark };
                    watch::serve(&ctx.chain.state, &ctx.def, &ctx.ns, &opts, enc).await
                }
            }
        }
    }
}

/// The empty list a watch-list request's initial-events-end bookmark carries, in the stream's
/// encoding, base64 (`watchListTransformer`): `items` is nil, as in the Go list it encodes.
fn list_blueprint(
    media: MediaType,
    api_version: &str,
    list_kind: &str,
    item: apimachinery::protobuf::Codec,
) -> Option<String> {
    use base64::Engine as _;
    let bytes = match media {
        MediaType::Protobuf => apimachinery::protobuf::ListWriter::new(api_version, list_kind, item)
            .finish(&json!({}))
            .ok()?,
        // The JSON encoder ends its document with a newline.
        _ => format!(
            "{{\"kind\":\"{list_kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{}},\"items\":null}}\n"
        )
        .into_bytes(),
    };
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Reads and decodes a create/update body; returns the object and warnings.
async fn read_object(
    ctx: &Ctx,
    body: Body,
    opts: &WriteOptions,
) -> Result<(Value, Vec<String>), ApiError> {
    let bytes = body::read_limited(body, ctx.chain.state.config.max_request_bytes).await?;
    let media = body::content_type(ctx.header(header::CONTENT_TYPE));
    let decoded = body::decode(&media, &bytes, &ctx.def.kind, &ctx.def.version)?;
    if ctx.def.served_as_crd() {
        let json = if media == "application/json" {
            std::borrow::Cow::Borrowed(&bytes[..])
        } else {
            std::borrow::Cow::Owned(serde_json::to_vec(&decoded.value).unwrap_or_default())
        };
        body::require_type_meta(
            &bytes,
            &json,
            &decoded.value,
            &ctx.def.kind,
            &ctx.def.api_version(),
        )?;
    }
    let mut problems: Vec<String> = decoded
        .duplicates
        .iter()
        .map(|d| format!("duplicate field \"{d}\""))
        .collect();
    let mut value = decoded.value;
    problems.extend(
        crate::schema::prune_unknown(&ctx.def, &mut value)
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
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Create)?;
    let (mut obj, warnings) = read_object(ctx, body, &opts).await?;
    if kube_registry::certificates::is_csr(&ctx.def.group, &ctx.def.kind) {
        let user = &ctx.user;
        kube_registry::certificates::set_requester(
            &mut obj,
            &kube_registry::certificates::Requester {
                name: &user.name,
                uid: &user.uid,
                groups: &user.groups,
                extra: &user.extra,
            },
        );
    }
    let wctx = WriteContext::new(&opts, &ctx.default_manager());
    let created = ctx.registry().create_written(&ctx.ns, obj, &wctx).await?;
    render_written(ctx, StatusCode::CREATED, &created, warnings)
}

async fn update(ctx: &Ctx, body: Body, sub: Subresource) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Update)?;
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

/// PUT of a CertificateSigningRequest's `approval`: only the conditions come from the body.
async fn approval(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Update)?;
    let (obj, _) = read_object(ctx, body, &opts).await?;
    let wctx = WriteContext::new(&opts, &ctx.default_manager());
    let user_rv = object::resource_version(&obj)?;
    let auth = ctx.chain.auth();
    let updated = ctx
        .registry()
        .guaranteed_update(&ctx.ns, &ctx.info.name, Subresource::Status, &wctx, |cur| {
            let mut next = kube_registry::certificates::approval_update(cur, &obj);
            if let Some(auth) = &auth {
                auth::csr_approval::admit(&auth.authorizer, &ctx.user, &next)?;
            }
            if let Some(rv) = user_rv {
                object::set_resource_version(&mut next, rv);
            }
            Ok(next)
        })
        .await?;
    render_object(ctx, StatusCode::OK, &updated, vec![])
}

async fn finalize(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Update)?;
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
    let bytes = body::read_limited(body, ctx.chain.state.config.max_request_bytes).await?;
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
        DeleteOutcome::Deleted(v) | DeleteOutcome::Terminating(v) => {
            render_object(ctx, StatusCode::OK, &v, vec![])
        }
    }
}

async fn delete_collection(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = read_delete_options(ctx, body).await?;
    let list_opts = ListOptions::parse(&ctx.query)?;
    let deleted = ctx
        .registry()
        .delete_collection(&ctx.ns, &list_opts, &opts)
        .await?;
    render_list(ctx, &ListMeta::default(), ListItems::Values(&deleted))
}

/// Reads the raw body of a request (patches), with the size limit.
pub async fn read_body(ctx: &Ctx, body: Body) -> Result<bytes::Bytes, ApiError> {
    body::read_limited(body, ctx.chain.state.config.max_request_bytes).await
}

/// The write context of a request.
pub fn write_context(ctx: &Ctx, opts: &WriteOptions) -> WriteContext {
    WriteContext::new(opts, &ctx.default_manager())
}

/// The Content-Type essence of a request.
pub fn request_media(ctx: &Ctx) -> String {
    body::content_type(ctx.header(header::CONTENT_TYPE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn timeout_query(v: &str) -> HashMap<String, Vec<String>> {
        HashMap::from([("timeout".to_string(), vec![v.to_string()])])
    }

    /// The `timeout` parameter only shortens the server's request timeout.
    #[test]
    fn request_deadline_follows_kubes_rules() {
        use std::time::Duration;
        let server = Duration::from_secs(60);
        assert_eq!(request_deadline(&HashMap::new(), server).unwrap(), server);
        let cases = [
            ("5s", Duration::from_secs(5)),
            ("1m30s", server),
            ("0s", server),
            ("-3s", server),
            ("250ms", Duration::from_millis(250)),
        ];
        for (given, want) in cases {
            assert_eq!(
                request_deadline(&timeout_query(given), server).unwrap(),
                want,
                "{given}"
            );
        }
        let e = request_deadline(&timeout_query("soon"), server).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "invalid timeout specified in the request URL - time: invalid duration \"soon\""
        );
    }

    /// A handler still running at its deadline gets kube's 504; one within it is untouched.
    #[tokio::test]
    async fn a_request_past_its_deadline_gets_a_timeout_status() {
        use std::time::Duration;
        // The slow handler never finishes by itself; the quick one is ready at once.
        let slow = std::pin::pin!(async {
            std::future::pending::<()>().await;
            Ok((StatusCode::OK, "never").into_response())
        });
        let slow = within_deadline(Some(Duration::from_millis(50)), slow).await;
        let e = slow.expect_err("the slow request must time out");
        assert_eq!((e.code, e.reason), (504, "Timeout"));
        assert_eq!(
            e.message,
            "Timeout: request did not complete within requested timeout - context deadline exceeded"
        );
        for deadline in [Some(Duration::from_secs(60)), None] {
            let quick = std::pin::pin!(async { Ok((StatusCode::CREATED, "made").into_response()) });
            let quick = within_deadline(deadline, quick)
                .await
                .expect("within the deadline");
            assert_eq!(quick.status(), StatusCode::CREATED);
        }
    }

    /// Watches, proxies, logs, exec and an agent's tunnel are long-running, as kube's check.
    #[test]
    fn long_running_requests_are_kubes() {
        let info = |verb: &str, sub: &str| {
            let mut i = request_info(&Method::GET, "/api/v1/namespaces/a/pods/p", &HashMap::new());
            i.verb = verb.into();
            i.subresource = sub.into();
            i
        };
        for (verb, sub) in [
            ("watch", ""),
            ("get", "log"),
            ("create", "exec"),
            ("get", "proxy"),
            ("create", "tunnel"),
            ("get", "portforward"),
            ("get", "attach"),
        ] {
            assert!(is_long_running(&info(verb, sub)), "{verb} {sub}");
        }
        for (verb, sub) in [
            ("get", ""),
            ("list", ""),
            ("update", "status"),
            ("get", "scale"),
        ] {
            assert!(!is_long_running(&info(verb, sub)), "{verb} {sub}");
        }
    }

    /// A handler that panics answers 500 with kube's message; one that does not is untouched.
    #[tokio::test]
    async fn panics_become_internal_errors() {
        let uri: http::Uri = "/api/v1/configmaps?x=1".parse().unwrap();
        let resp = recover_panics(&Method::GET, &uri, async {
            let items: Vec<u8> = Vec::new();
            // An index out of range, as a bug on a request path would be.
            let at = items.len() + 3;
            (StatusCode::OK, format!("{}", items[at])).into_response()
        })
        .await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let status: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 500);
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(
            status["message"],
            "Internal error occurred: This request caused apiserver to panic. Look in the logs for details."
        );

        let fine = recover_panics(&Method::GET, &uri, async {
            (StatusCode::CREATED, "made").into_response()
        })
        .await;
        assert_eq!(fine.status(), StatusCode::CREATED);
    }
}
