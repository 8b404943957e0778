//! The audit log: JSON lines in kube-apiserver's `audit.k8s.io/v1` Event shape, one per
//! request and stage as the audit policy ([`crate::audit_policy`]) says. Without a policy file,
//! one event per request that is not a read, at the Metadata level (who, what, on which object,
//! the outcome and when; never a request or response body).
//!
//! Requests hand their event to a dedicated writer thread through a bounded queue and never
//! wait for the disk: when the queue is full the event is dropped and counted. The writer
//! rotates the file by size, keeping a number of backups named as kube's (lumberjack):
//! `audit-2006-01-02T15-04-05.000.log`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use axum::body::Body;
use axum::response::Response;
use http::HeaderValue;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::audit_policy::{Decision, Level, Policy, Stage};
use crate::auth::{RemoteAddr, UserInfo};
use crate::error::ApiError;
use crate::request_info::RequestInfo;

/// Events waiting for the writer before new ones are dropped.
const QUEUE: usize = 10_000;
/// kube's default rotation size (lumberjack's) when none is given.
const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// Where and how to write the audit log.
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// The log file (`-`: standard output).
    pub path: PathBuf,
    /// Rotate when the file would exceed this many megabytes (0: 100).
    pub max_size_mb: u64,
    /// Rotated files to keep (0: all).
    pub max_backups: usize,
    /// What is audited (`--audit-policy-file`); without one, writes at the Metadata level.
    pub policy: Option<Policy>,
}

/// A running audit log.
pub struct AuditLog {
    tx: SyncSender<Vec<u8>>,
    dropped: AtomicU64,
    policy: Policy,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish()
    }
}

impl AuditLog {
    /// Opens the log and starts its writer thread.
    pub fn start(opts: &AuditOptions) -> io::Result<Arc<AuditLog>> {
        let sink = Sink::open(opts)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || sink.run(rx))?;
        Ok(Arc::new(AuditLog {
            tx,
            dropped: AtomicU64::new(0),
            policy: opts
                .policy
                .clone()
                .unwrap_or_else(Policy::writes_at_metadata),
        }))
    }

    /// Whether some requests are audited with their bodies (which must then be kept).
    pub fn records_bodies(&self) -> bool {
        self.policy.records_bodies()
    }

    /// Queues one event line (without waiting).
    pub fn record(&self, line: Vec<u8>) {
        match self.tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(dropped = n, "audit events dropped: the audit log is behind");
                }
            }
        }
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The writer side: a file (rotated) or standard output.
struct Sink {
    path: PathBuf,
    stdout: bool,
    max_bytes: u64,
    max_backups: usize,
    out: Option<BufWriter<File>>,
    size: u64,
}

fn open_append(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    // The log names users and objects: readable by the server's owner only.
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

impl Sink {
    fn open(opts: &AuditOptions) -> io::Result<Sink> {
        let stdout = opts.path.as_os_str() == "-";
        let max_mb = if opts.max_size_mb == 0 {
            DEFAULT_MAX_SIZE_MB
        } else {
            opts.max_size_mb
        };
        let mut sink = Sink {
            path: opts.path.clone(),
            stdout,
            max_bytes: max_mb.saturating_mul(1024 * 1024),
            max_backups: opts.max_backups,
            out: None,
            size: 0,
        };
        if !stdout {
            let f = open_append(&sink.path)?;
            sink.size = f.metadata()?.len();
            sink.out = Some(BufWriter::new(f));
        }
        Ok(sink)
    }

    fn run(mut self, rx: Receiver<Vec<u8>>) {
        while let Ok(first) = rx.recv() {
            self.write(&first);
            while let Ok(more) = rx.try_recv() {
                self.write(&more);
            }
            self.flush();
        }
        self.flush();
    }

    fn write(&mut self, line: &[u8]) {
        if self.stdout {
            let mut out = io::stdout().lock();
            let _ = out.write_all(line);
            return;
        }
        let len = line.len() as u64;
        if self.size > 0
            && self.size + len > self.max_bytes
            && let Err(e) = self.rotate()
        {
            tracing::warn!(error = %e, path = %self.path.display(), "audit log rotation failed");
        }
        if let Some(out) = self.out.as_mut() {
            match out.write_all(line) {
                Ok(()) => self.size += len,
                Err(e) => tracing::warn!(error = %e, "audit log write failed"),
            }
        }
    }

    fn flush(&mut self) {
        if self.stdout {
            let _ = io::stdout().flush();
        } else if let Some(out) = self.out.as_mut()
            && let Err(e) = out.flush()
        {
            tracing::warn!(error = %e, "audit log flush failed");
        }
    }

    /// The name of a backup made now: `<stem>-<UTC time>.<ext>`.
    fn backup_name(&self) -> PathBuf {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "audit".into());
        let ext = self
            .path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H-%M-%S%.3f");
        self.path.with_file_name(format!("{stem}-{now}{ext}"))
    }

    fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut out) = self.out.take() {
            out.flush()?;
        }
        let mut backup = self.backup_name();
        // Two rotations in one millisecond: keep both.
        let mut n = 1;
        while backup.exists() {
            backup = self.backup_name().with_extension(format!("{n}.log"));
            n += 1;
        }
        fs::rename(&self.path, &backup)?;
        let f = open_append(&self.path)?;
        self.size = 0;
        self.out = Some(BufWriter::new(f));
        self.prune()
    }

    /// Deletes the oldest backups beyond `max_backups`.
    fn prune(&self) -> io::Result<()> {
        if self.max_backups == 0 {
            return Ok(());
        }
        let Some(dir) = self.path.parent() else {
            return Ok(());
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let stem = self
            .path
            .file_stem()
            .map(|s| format!("{}-", s.to_string_lossy()))
            .unwrap_or_default();
        let mut backups: Vec<PathBuf> = fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p != &self.path
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&stem))
            })
            .collect();
        // The timestamp in the name sorts oldest first.
        backups.sort();
        while backups.len() > self.max_backups {
            fs::remove_file(backups.remove(0))?;
        }
        Ok(())
    }
}

/// Turns a handler's result into the response: records the request's audit events (when
/// auditing is on and the policy audits it) and sets kube's `Audit-Id` response header.
pub async fn complete(
    log: Option<&Arc<AuditLog>>,
    audit: &mut RequestAudit,
    result: Result<Response, ApiError>,
    errors: &crate::output::ErrorForm,
) -> Response {
    let log = log.cloned();
    let decision = log.as_ref().map(|l| audit.decide(&l.policy));
    let mut resp = match (log, decision) {
        (Some(log), Some(d)) if d.level > Level::None => match result {
            Ok(resp) if audit.long_running && resp.status().is_success() => {
                // A watch: started now, complete when its stream ends.
                if d.writes(Stage::ResponseStarted)
                    && let Some(line) = audit.event(
                        Stage::ResponseStarted,
                        &d,
                        resp.status().as_u16(),
                        None,
                        None,
                    )
                {
                    log.record(line);
                }
                let code = resp.status().as_u16();
                let (parts, body) = resp.into_parts();
                let completing = Completing {
                    inner: body,
                    done: d
                        .writes(Stage::ResponseComplete)
                        .then(|| (log, audit.clone(), d, code)),
                };
                Response::from_parts(parts, Body::new(completing))
            }
            Ok(resp) => {
                let wants_object = d.level >= Level::RequestResponse;
                let (resp, object) =
                    if (audit.verb == "create" && resp.status().is_success()) || wants_object {
                        read_object(resp).await
                    } else {
                        (resp, None)
                    };
                if let Some(o) = &object {
                    audit.set_created_from(o);
                }
                if d.writes(Stage::ResponseComplete)
                    && let Some(line) = audit.event(
                        Stage::ResponseComplete,
                        &d,
                        resp.status().as_u16(),
                        None,
                        object.filter(|_| wants_object).as_ref(),
                    )
                {
                    log.record(line);
                }
                resp
            }
            Err(e) => {
                if d.writes(Stage::ResponseComplete)
                    && let Some(line) =
                        audit.event(Stage::ResponseComplete, &d, e.code, Some(&e), None)
                {
                    log.record(line);
                }
                errors.render(&e)
            }
        },
        _ => match result {
            Ok(resp) => resp,
            Err(e) => errors.render(&e),
        },
    };
    if let Ok(v) = HeaderValue::from_str(audit.id()) {
        resp.headers_mut().insert("audit-id", v);
    }
    resp
}

/// A long-running response's body that writes the ResponseComplete event when it ends (or
/// the client goes away), as kube does for watches.
struct Completing {
    inner: Body,
    done: Option<(Arc<AuditLog>, RequestAudit, Decision, u16)>,
}

impl http_body::Body for Completing {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Completing {
    fn drop(&mut self) {
        if let Some((log, audit, d, code)) = self.done.take()
            && let Some(line) = audit.event(Stage::ResponseComplete, &d, code, None, None)
        {
            log.record(line);
        }
    }
}

/// Decodes a request or response body by its media type (JSON, YAML or protobuf).
fn decode_body(content_type: &str, bytes: &[u8]) -> Option<Value> {
    if content_type.starts_with(apimachinery::protobuf::CONTENT_TYPE) {
        apimachinery::protobuf::decode_response(bytes).ok()
    } else if content_type.contains("yaml") {
        serde_yaml::from_slice(bytes).ok()
    } else {
        serde_json::from_slice(bytes).ok()
    }
}

/// Reads the object a response carries (for a created object's name, which its URL lacks,
/// and for RequestResponse events); the body is passed on unchanged.
async fn read_object(resp: Response) -> (Response, Option<Value>) {
    let (parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "reading a response for the audit log failed");
            return (Response::from_parts(parts, Body::empty()), None);
        }
    };
    // The response is in the media type the client negotiated.
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|ct| ct.to_str().ok())
        .unwrap_or("");
    let object = decode_body(content_type, &bytes);
    (Response::from_parts(parts, Body::from(bytes)), object)
}

/// Removes `metadata.managedFields` from an object and a list's items (`omitManagedFields`).
fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

/// kube's MicroTime format.
fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The audit.k8s.io/v1 Event, fields in kube's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: &'static str,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: &'a UserInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<&'a UserInfo>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    source_ips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "Map::is_empty")]
    annotations: &'a Map<String, Value>,
}

/// Resources whose error messages are kept out of the log, in case a message quotes
/// what was sent.
const SENSITIVE: &[&str] = &["secrets", "tokenreviews"];

/// What one request contributes to its audit events, collected along the request path.
#[derive(Clone, Debug)]
pub struct RequestAudit {
    id: String,
    received: jiff::Timestamp,
    request_uri: String,
    user_agent: Option<String>,
    source: Option<String>,
    verb: String,
    object_ref: Option<Value>,
    user: Option<UserInfo>,
    impersonated: Option<UserInfo>,
    annotations: Map<String, Value>,
    /// The request as the policy sees it (set with [`RequestAudit::set_request`]).
    info: Option<RequestInfo>,
    /// The policy's decision, once the user is known.
    decision: Option<Decision>,
    /// The body and its media type, kept when the policy records request bodies.
    request_body: Option<(bytes::Bytes, String)>,
    /// A watch or another long-running request.
    pub long_running: bool,
    /// Whether the server audits at all; when not, nothing is collected.
    enabled: bool,
}

impl RequestAudit {
    /// Starts the record of a request.
    pub fn begin<B>(req: &http::Request<B>) -> RequestAudit {
        RequestAudit {
            id: crate::ids::uuid_v4().to_string(),
            received: jiff::Timestamp::now(),
            request_uri: req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| req.uri().path().to_string()),
            user_agent: req
                .headers()
                .get(http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            source: req
                .extensions()
                .get::<RemoteAddr>()
                .map(|a| a.0.ip().to_string()),
            verb: req.method().as_str().to_lowercase(),
            object_ref: None,
            user: None,
            impersonated: None,
            annotations: Map::new(),
            info: None,
            decision: None,
            request_body: None,
            long_running: false,
            enabled: true,
        }
    }

    /// A record that collects nothing: for a server without an audit log (the request still
    /// gets its `Audit-Id`).
    pub fn disabled(mut self) -> RequestAudit {
        self.enabled = false;
        self
    }

    /// Keeps the request's body for Request and RequestResponse events.
    pub fn set_request_body(&mut self, body: bytes::Bytes, content_type: &str) {
        self.request_body = Some((body, content_type.to_string()));
    }

    /// The policy's decision for this request: decided once the user is known (kube evaluates
    /// the policy with the authenticated user, before impersonation); a request that failed
    /// before that is evaluated without a user.
    fn decide(&mut self, policy: &Policy) -> Decision {
        if let Some(d) = &self.decision {
            return d.clone();
        }
        let user = self.user.as_ref().map(|u| crate::audit_policy::PolicyUser {
            name: &u.name,
            groups: &u.groups,
        });
        // The handler records the request before anything can fail, so `info` is set.
        let d = match &self.info {
            Some(info) => policy.evaluate(user, info),
            None => Decision {
                level: Level::None,
                omit_stages: Vec::new(),
                omit_managed_fields: false,
            },
        };
        self.decision = Some(d.clone());
        d
    }

    /// Called once the request is authenticated: decides the level and writes the
    /// RequestReceived event when the policy wants it.
    pub fn received(&mut self, log: &AuditLog) {
        self.decision = None;
        let d = self.decide(&log.policy);
        if d.writes(Stage::RequestReceived)
            && let Some(line) = self.event(Stage::RequestReceived, &d, 0, None, None)
        {
            log.record(line);
        }
    }

    /// The audit ID (also sent as the `Audit-Id` response header).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Records what the request is about.
    pub fn set_request(&mut self, info: &RequestInfo) {
        if !self.enabled {
            return;
        }
        self.info = Some(info.clone());
        self.verb = info.verb.clone();
        if info.is_resource_request {
            let mut r = Map::new();
            let mut put = |k: &str, v: &str| {
                if !v.is_empty() {
                    r.insert(k.into(), Value::String(v.to_string()));
                }
            };
            put("resource", &info.resource);
            put("namespace", &info.namespace);
            put("name", &info.name);
            put("apiGroup", &info.api_group);
            put("apiVersion", &info.api_version);
            put("subresource", &info.subresource);
            self.object_ref = Some(Value::Object(r));
        }
    }

    /// Records the authenticated user.
    pub fn set_user(&mut self, u: &UserInfo) {
        if !self.enabled {
            return;
        }
        self.user = Some(u.clone());
    }

    /// Records the impersonated user.
    pub fn set_impersonated(&mut self, u: &UserInfo) {
        if !self.enabled {
            return;
        }
        self.impersonated = Some(u.clone());
    }

    /// Records the authorization decision (kube's `authorization.k8s.io/*` annotations).
    pub fn set_decision(&mut self, allowed: bool, reason: &str) {
        if !self.enabled {
            return;
        }
        self.annotations.insert(
            "authorization.k8s.io/decision".into(),
            Value::String(if allowed { "allow" } else { "forbid" }.into()),
        );
        self.annotations.insert(
            "authorization.k8s.io/reason".into(),
            Value::String(reason.to_string()),
        );
    }

    /// Adds annotations admission plugins gave the request (kube's `AddAuditAnnotation`: the
    /// first value of a key stays).
    pub fn add_annotations(&mut self, annotations: Vec<(String, String)>) {
        if !self.enabled {
            return;
        }
        for (k, v) in annotations {
            self.annotations.entry(k).or_insert(Value::String(v));
        }
    }

    /// Fills in a created object's name and namespace from the response's object.
    fn set_created_from(&mut self, object: &Value) {
        if self.verb != "create" {
            return;
        }
        let meta = |k: &str| {
            object["metadata"][k]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let (name, namespace) = (meta("name"), meta("namespace"));
        self.set_created(&name, &namespace);
    }

    /// Fills in the name (and namespace) of a created object, which its URL lacks.
    pub fn set_created(&mut self, name: &str, namespace: &str) {
        if let Some(Value::Object(r)) = self.object_ref.as_mut() {
            if !name.is_empty() && !r.contains_key("name") {
                r.insert("name".into(), Value::String(name.to_string()));
            }
            if !namespace.is_empty() && !r.contains_key("namespace") {
                r.insert("namespace".into(), Value::String(namespace.to_string()));
            }
        }
    }

    /// The event line for a finished request at the Metadata level without a policy file
    /// (None for reads).
    #[cfg(test)]
    fn finish(&mut self, code: u16, error: Option<&ApiError>) -> Option<Vec<u8>> {
        let d = self.decide(&Policy::writes_at_metadata());
        if !d.writes(Stage::ResponseComplete) {
            return None;
        }
        self.event(Stage::ResponseComplete, &d, code, error, None)
    }

    /// The event line of `stage` at the decided level; the response object is given for
    /// RequestResponse events.
    fn event(
        &self,
        stage: Stage,
        d: &Decision,
        code: u16,
        error: Option<&ApiError>,
        response: Option<&Value>,
    ) -> Option<Vec<u8>> {
        if d.level == Level::None {
            return None;
        }
        let sensitive = self
            .object_ref
            .as_ref()
            .and_then(|r| r.get("resource"))
            .and_then(Value::as_str)
            .is_some_and(|r| SENSITIVE.contains(&r));
        let response_status = match (stage, error) {
            (Stage::RequestReceived, _) => None,
            (_, None) => Some(json!({"metadata": {}, "code": code})),
            (_, Some(e)) => {
                let mut s = json!({"metadata": {}, "status": "Failure", "reason": e.reason, "code": e.code});
                // Without a policy that asks for bodies, messages of sensitive resources are
                // left out in case they quote what was sent.
                if !sensitive || d.level >= Level::Request {
                    s["message"] = Value::String(e.message.clone());
                }
                Some(s)
            }
        };
        let with_fields = |mut v: Value| {
            if d.omit_managed_fields {
                strip_managed_fields(&mut v);
            }
            v
        };
        let request_object = (d.level >= Level::Request)
            .then_some(self.request_body.as_ref())
            .flatten()
            .and_then(|(b, ct)| decode_body(ct, b))
            .map(with_fields);
        let response_object = (d.level >= Level::RequestResponse
            && stage != Stage::RequestReceived)
            .then_some(response)
            .flatten()
            .cloned()
            .map(with_fields);
        let nobody = UserInfo::default();
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: d.level.as_str(),
            audit_id: &self.id,
            stage: stage.as_str(),
            request_uri: &self.request_uri,
            verb: &self.verb,
            user: self.user.as_ref().unwrap_or(&nobody),
            impersonated_user: self.impersonated.as_ref(),
            source_ips: self.source.iter().cloned().collect(),
            user_agent: self.user_agent.as_deref(),
            object_ref: self.object_ref.as_ref(),
            response_status,
            request_object,
            response_object,
            request_received_timestamp: micro_time(self.received),
            stage_timestamp: micro_time(jiff::Timestamp::now()),
            annotations: &self.annotations,
        };
        let mut line = serde_json::to_vec(&event).ok()?;
        line.push(b'\n');
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::{parse_query, request_info};

    fn wait_for(mut f: impl FnMut() -> bool) {
        let start = std::time::Instant::now();
        while !f() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "timed out"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn event_shape() {
        let req = http::Request::builder()
            .method("POST")
            .uri("/api/v1/namespaces/default/secrets?fieldManager=kubectl-create")
            .header("user-agent", "kubectl/v1.32.4")
            .body(())
            .unwrap();
        let mut a = RequestAudit::begin(&req);
        let info = request_info(&http::Method::POST, req.uri().path(), &parse_query(None));
        a.set_request(&info);
        a.set_user(&UserInfo::new("alice", vec![]));
        a.set_decision(true, "RBAC: allowed by ...");
        a.set_created("s1", "");
        let line = a.finish(201, None).unwrap();
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["kind"], "Event");
        assert_eq!(v["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(v["level"], "Metadata");
        assert_eq!(v["stage"], "ResponseComplete");
        assert_eq!(v["verb"], "create");
        assert_eq!(v["user"]["username"], "alice");
        assert_eq!(
            v["objectRef"],
            json!({"resource": "secrets", "namespace": "default", "name": "s1", "apiVersion": "v1"})
        );
        assert_eq!(v["responseStatus"]["code"], 201);
        assert_eq!(v["annotations"]["authorization.k8s.io/decision"], "allow");
        assert!(
            v["requestReceivedTimestamp"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        assert_eq!(v["requestReceivedTimestamp"].as_str().unwrap().len(), 27);
        let text = String::from_utf8(line).unwrap();
        let order: Vec<usize> = [
            "\"kind\"",
            "\"auditID\"",
            "\"verb\"",
            "\"user\"",
            "\"objectRef\"",
            "\"stageTimestamp\"",
        ]
        .iter()
        .map(|k| text.find(k).unwrap())
        .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "kube's field order: {text}"
        );

        // Errors on secrets keep their reason but not their message.
        let e = ApiError::bad_request("value s3cr3t is wrong");
        let line = a.finish(400, Some(&e)).unwrap();
        assert!(!String::from_utf8(line).unwrap().contains("s3cr3t"));

        // Reads are not audited.
        let get = http::Request::builder()
            .uri("/api/v1/pods")
            .body(())
            .unwrap();
        let mut g = RequestAudit::begin(&get);
        g.set_request(&request_info(
            &http::Method::GET,
            "/api/v1/pods",
            &parse_query(None),
        ));
        assert!(g.finish(200, None).is_none());
    }

    #[test]
    fn rotation_keeps_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = AuditLog::start(&AuditOptions {
            path: path.clone(),
            max_size_mb: 1,
            max_backups: 2,
            policy: None,
        })
        .unwrap();
        let line = vec![b'x'; 100 * 1024 - 1]
            .into_iter()
            .chain(std::iter::once(b'\n'))
            .collect::<Vec<u8>>();
        // 35 lines of 100 KiB: three rotations at 1 MiB each.
        for _ in 0..35 {
            log.record(line.clone());
        }
        let count = |dir: &Path| fs::read_dir(dir).unwrap().count();
        wait_for(|| {
            let backups = count(dir.path()) - 1;
            let current = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            backups == 2 && current == 5 * line.len() as u64
        });
        for e in fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            let len = fs::metadata(&p).unwrap().len();
            assert!(len <= 1024 * 1024, "{} is {len} bytes", p.display());
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("audit"), "{name}");
        }
        assert_eq!(log.dropped(), 0);
    }
}
