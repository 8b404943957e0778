//! Interpreter webhooks (Karmada's `customized/webhook`): the first webhook, by
//! `<configuration>/<webhook>` name, whose rules match an object's group, version, kind and
//! operation is called over HTTPS with a ResourceInterpreterContext, and its response is
//! checked as Karmada checks it.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Service;
use karmada_api::config::v1alpha1::{
    API_VERSION, GroupVersionKind, ResourceInterpreterContext, ResourceInterpreterRequest,
    ResourceInterpreterResponse, ResourceInterpreterWebhook,
    ResourceInterpreterWebhookConfiguration,
};
use karmada_api::work::v1alpha2::AggregatedStatusItem;
use serde_json::Value;

/// How long a call may take when the webhook does not say (the API's documented default).
const DEFAULT_TIMEOUT_SECONDS: i32 = 10;

/// The port of a service reference without one.
const DEFAULT_SERVICE_PORT: i32 = 443;

/// One webhook of one configuration.
pub struct Hook {
    /// `<configuration>/<webhook>`.
    pub uid: String,
    spec: ResourceInterpreterWebhook,
    client: OnceLock<Result<(kube::Client, String), String>>,
}

/// What one call carries besides the object.
#[derive(Default)]
pub struct Attributes<'a> {
    /// The object (the resource template, or the desired object for Retain).
    pub object: &'a Value,
    /// The member's object, for Retain.
    pub observed: Option<&'a Value>,
    /// The replicas, for ReviseReplica.
    pub replicas: i32,
    /// The members' statuses, for AggregateStatus.
    pub aggregated_status: &'a [AggregatedStatusItem],
}

/// The webhooks of every configuration, replaced whole on every change.
pub struct Webhooks {
    hooks: RwLock<Arc<Vec<Arc<Hook>>>>,
    /// The control plane, where services named by webhooks are looked up.
    control_plane: Option<kube::Client>,
}

impl Webhooks {
    /// No webhooks yet; `control_plane` resolves service references.
    pub fn new(control_plane: Option<kube::Client>) -> Webhooks {
        Webhooks {
            hooks: RwLock::new(Arc::new(Vec::new())),
            control_plane,
        }
    }

    /// Replaces the webhooks (`LoadConfig`); a webhook whose definition did not change keeps its
    /// client.
    pub fn load(&self, configurations: &[ResourceInterpreterWebhookConfiguration]) {
        let previous = self.snapshot();
        let mut hooks: Vec<Arc<Hook>> = Vec::new();
        for c in configurations {
            let name = c.metadata.name.clone().unwrap_or_default();
            for w in &c.webhooks {
                let uid = format!("{name}/{}", w.name);
                let kept = previous
                    .iter()
                    .find(|h| h.uid == uid && h.spec == *w)
                    .cloned();
                hooks.push(kept.unwrap_or_else(|| {
                    Arc::new(Hook {
                        uid,
                        spec: w.clone(),
                        client: OnceLock::new(),
                    })
                }));
            }
        }
        // getFirstRelevantHook takes the first by uid.
        hooks.sort_by(|a, b| a.uid.cmp(&b.uid));
        *self.hooks.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
    }

    fn snapshot(&self) -> Arc<Vec<Arc<Hook>>> {
        self.hooks.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The webhook that interprets an operation on a kind, if any.
    pub fn relevant(&self, api_version: &str, kind: &str, operation: &str) -> Option<Arc<Hook>> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        self.snapshot()
            .iter()
            .find(|h| {
                h.spec
                    .rules
                    .iter()
                    .any(|r| r.matches(group, version, kind, operation))
            })
            .cloned()
    }

    /// Calls a webhook and checks its answer for `operation` (`callHook` and
    /// `VerifyResourceInterpreterContext`).
    pub async fn call(
        &self,
        hook: &Hook,
        operation: &str,
        attributes: &Attributes<'_>,
    ) -> Result<ResourceInterpreterResponse, String> {
        let failed = |reason: String| {
            format!(
                "Internal error occurred: failed calling webhook {:?}: {reason}",
                hook.uid
            )
        };
        if !hook
            .spec
            .interpreter_context_versions
            .iter()
            .any(|v| v == "v1alpha1")
        {
            return Err(failed(
                "could not create ResourceInterpreterContext objects: webhook does not accept known ResourceInterpreterContext versions (v1alpha1)".into(),
            ));
        }
        let (client, path) = self
            .client(hook)
            .await
            .map_err(|e| failed(format!("could not get REST client: {e}")))?;
        let object = attributes.object;
        let api_version = object["apiVersion"].as_str().unwrap_or("");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let uid = uuid::Uuid::new_v4().to_string();
        let context = ResourceInterpreterContext {
            api_version: API_VERSION.into(),
            kind: "ResourceInterpreterContext".into(),
            request: Some(ResourceInterpreterRequest {
                uid: uid.clone(),
                kind: GroupVersionKind {
                    group: group.into(),
                    version: version.into(),
                    kind: object["kind"].as_str().unwrap_or("").into(),
                },
                name: object["metadata"]["name"].as_str().unwrap_or("").into(),
                namespace: object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .into(),
                operation: operation.into(),
                object: object.clone(),
                observed_object: attributes.observed.cloned(),
                desired_replicas: Some(attributes.replicas),
                aggregated_status: attributes.aggregated_status.to_vec(),
            }),
            response: None,
        };
        let body = serde_json::to_vec(&context).map_err(|e| failed(e.to_string()))?;
        let request = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .map_err(|e| failed(e.to_string()))?;
        let timeout = Duration::from_secs(
            hook.spec
                .timeout_seconds
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
                .max(1) as u64,
        );
        let answer: ResourceInterpreterContext =
            match tokio::time::timeout(timeout, client.request(request)).await {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => return Err(failed(format!("failed to call webhook: {e}"))),
                Err(_) => {
                    return Err(failed(format!(
                        "failed to call webhook: the request did not complete within {}s",
                        timeout.as_secs()
                    )));
                }
            };
        let response = verify(&uid, operation, answer)
            .map_err(|e| failed(format!("received invalid webhook response: {e}")))?;
        if !response.successful {
            let status = response.status.clone().unwrap_or_default();
            return Err(failed(format!(
                "webhook call failed, get status code: {}, msg: {}",
                status.code, status.message
            )));
        }
        Ok(response)
    }

    /// The webhook's client and request path, built on first use.
    async fn client(&self, hook: &Hook) -> Result<(kube::Client, String), String> {
        if let Some(c) = hook.client.get() {
            return c.clone();
        }
        let built = self.build_client(&hook.spec).await;
        // Resolution failures (a Service not found yet) are not kept: the next call retries.
        if built.is_ok() {
            let _ = hook.client.set(built.clone());
        }
        built
    }

    async fn build_client(
        &self,
        spec: &ResourceInterpreterWebhook,
    ) -> Result<(kube::Client, String), String> {
        let cc = &spec.client_config;
        let (base, path, server_name) = match (&cc.url, &cc.service) {
            (Some(url), _) => {
                let uri: http::Uri = url.parse().map_err(|e| format!("invalid url {url}: {e}"))?;
                let authority = uri
                    .authority()
                    .map(|a| a.to_string())
                    .ok_or_else(|| format!("url {url} has no host"))?;
                let path = uri
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "/".into());
                (format!("https://{authority}"), path, None)
            }
            (None, Some(svc)) => {
                let port = svc.port.unwrap_or(DEFAULT_SERVICE_PORT);
                let host = self
                    .resolve_service(&svc.namespace, &svc.name, port)
                    .await?;
                let path = svc.path.clone().unwrap_or_else(|| "/".into());
                (
                    format!("https://{host}"),
                    path,
                    Some(format!("{}.{}.svc", svc.name, svc.namespace)),
                )
            }
            (None, None) => return Err("exactly one of url or service is required".into()),
        };
        let uri: http::Uri = base
            .parse()
            .map_err(|e| format!("invalid address {base}: {e}"))?;
        let mut config = kube::Config::new(uri);
        if let Some(bundle) = &cc.ca_bundle {
            let certs = pem_certificates(&bundle.0)?;
            if !certs.is_empty() {
                config.root_cert = Some(certs);
            }
        }
        config.tls_server_name = server_name;
        config.default_retry = false;
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        Ok((client, path))
    }

    /// A service's address (Karmada's `serviceResolver`): its cluster IP or external name when
    /// the control plane has the Service, else its cluster DNS name.
    async fn resolve_service(
        &self,
        namespace: &str,
        name: &str,
        port: i32,
    ) -> Result<String, String> {
        let service = match &self.control_plane {
            Some(c) => kube::Api::<Service>::namespaced(c.clone(), namespace)
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?,
            None => None,
        };
        let Some(svc) = service else {
            return Ok(format!("{name}.{namespace}.svc:{port}"));
        };
        let spec = svc.spec.unwrap_or_default();
        match spec.type_.as_deref().unwrap_or("ClusterIP") {
            "ClusterIP" if spec.cluster_ip.as_deref() == Some("None") => {
                Err("cannot route to service with ClusterIP \"None\"".into())
            }
            "ClusterIP" | "LoadBalancer" | "NodePort" => {
                if !spec
                    .ports
                    .unwrap_or_default()
                    .iter()
                    .any(|p| p.port == port)
                {
                    return Err(format!("no service port {port} found for service {name:?}"));
                }
                Ok(format!("{}:{port}", spec.cluster_ip.unwrap_or_default()))
            }
            "ExternalName" => Ok(format!("{}:{port}", spec.external_name.unwrap_or_default())),
            other => Err(format!("unsupported service type {other:?}")),
        }
    }
}

/// The DER certificates of a PEM bundle.
fn pem_certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "caBundle is not PEM text".to_string())?;
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("-----BEGIN CERTIFICATE") {
            body = Some(String::new());
        } else if line.starts_with("-----END CERTIFICATE") {
            let b64 = body.take().unwrap_or_default();
            out.push(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("caBundle: {e}"))?,
            );
        } else if let Some(b) = body.as_mut() {
            b.push_str(line);
        }
    }
    if out.is_empty() && !text.trim().is_empty() {
        return Err("caBundle holds no PEM certificate".into());
    }
    Ok(out)
}

/// Checks a webhook's answer (`verifyResourceInterpreterContext`).
fn verify(
    uid: &str,
    operation: &str,
    answer: ResourceInterpreterContext,
) -> Result<ResourceInterpreterResponse, String> {
    let response = answer
        .response
        .ok_or_else(|| "webhook response was absent".to_string())?;
    if response.uid != uid {
        return Err(format!(
            "expected response.uid {uid:?}, got {:?}",
            response.uid
        ));
    }
    if !response.successful {
        if response.status.is_none() {
            return Err("webhook require response.status when response.successful is false".into());
        }
        return Ok(response);
    }
    match operation {
        "InterpretReplica" if response.replicas.is_none() => {
            Err("webhook returned nil response.replicas".into())
        }
        "ReviseReplica" | "Retain" | "AggregateStatus" => {
            let empty_patch = response.patch.as_ref().is_none_or(|p| p.0.is_empty());
            match (&response.patch_type, empty_patch) {
                (None, true) => Ok(response),
                (None, false) => Err("webhook returned nil response.patchType".into()),
                (Some(_), true) => Err("webhook returned empty response.patch".into()),
                (Some(t), false) if t != "JSONPatch" => Err(format!(
                    "webhook returned invalid response.patchType of {t:?}"
                )),
                _ => Ok(response),
            }
        }
        "InterpretStatus" if response.raw_status.is_none() => {
            Err("webhook returned nill response.rawStatus".into())
        }
        "InterpretHealth" if response.healthy.is_none() => {
            Err("webhook returned nil response.healthy".into())
        }
        _ => Ok(response),
    }
}

/// Applies a webhook's JSON patch (RFC 6902, as evanphx/json-patch applies it) to an object.
pub fn apply_json_patch(object: &Value, patch: &[u8]) -> Result<Value, String> {
    use crate::overrides::json_patch::{Op, PatchOp, apply_to_value};
    let ops: Vec<serde_json::Map<String, Value>> =
        serde_json::from_slice(patch).map_err(|e| format!("invalid JSON patch: {e}"))?;
    let mut doc = object.clone();
    for raw in ops {
        let field = |name: &str| -> Result<String, String> {
            raw.get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("operation missing {name:?} field"))
        };
        let op = field("op")?;
        let path = field("path")?;
        let value = || raw.get("value").cloned().unwrap_or(Value::Null);
        let simple = |op: Op, value: Value| PatchOp {
            op,
            path: path.clone(),
            value,
        };
        let at = |doc: &Value, pointer: &str| -> Result<Value, String> {
            doc.pointer(pointer)
                .cloned()
                .ok_or_else(|| format!("doc is missing path: {pointer}"))
        };
        match op.as_str() {
            "add" => apply_to_value(&mut doc, &[simple(Op::Add, value())])?,
            "remove" => apply_to_value(&mut doc, &[simple(Op::Remove, Value::Null)])?,
            "replace" => apply_to_value(&mut doc, &[simple(Op::Replace, value())])?,
            "move" | "copy" => {
                let from = field("from")?;
                let moved = at(&doc, &from)?;
                if op == "move" {
                    let remove = PatchOp {
                        op: Op::Remove,
                        path: from,
                        value: Value::Null,
                    };
                    apply_to_value(&mut doc, &[remove])?;
                }
                apply_to_value(&mut doc, &[simple(Op::Add, moved)])?;
            }
            "test" => {
                if at(&doc, &path)? != value() {
                    return Err(format!("testing value {path} failed"));
                }
            }
            other => return Err(format!("unexpected operation {other:?}")),
        }
    }
    Ok(doc)
}
