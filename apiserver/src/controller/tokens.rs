//! The service-account token controller for Secrets of type
//! `kubernetes.io/service-account-token` (kube's `TokensController`,
//! pkg/controller/serviceaccount/tokens_controller.go): a Secret annotated with
//! `kubernetes.io/service-account.name` gets a non-expiring token for that account in
//! `data.token`, with `ca.crt` and `namespace` beside it. `karmadactl join` creates such a
//! Secret in the member cluster and waits for it to be filled.

use std::sync::{Arc, Weak};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::auth::service_account::{Ref, ServiceAccountTokens};
use crate::error::ApiError;
use crate::object;
use crate::registry::{Registry, Subresource, WriteContext};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{Filter, RecvError};

/// The Secret type the controller fills.
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the account.
pub const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation recording the account's uid.
pub const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// How often the task checks whether its server is gone.
const LIVENESS: Duration = Duration::from_secs(1);

fn core_def(state: &ApiState, plural: &str) -> Result<Arc<ResourceDef>, ApiError> {
    state
        .catalog
        .snapshot()
        .get("", "v1", plural)
        .cloned()
        .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))
}

/// Does this Secret wait for a token?
fn wants_token(secret: &Value) -> bool {
    secret.get("type").and_then(Value::as_str) == Some(SERVICE_ACCOUNT_TOKEN_TYPE)
        && !object::is_terminating(secret)
        && secret
            .pointer("/data/token")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        && !object::annotations(secret)
            .get(NAME_ANNOTATION)
            .is_none_or(String::is_empty)
}

/// Fills one Secret when it waits for a token and its account exists; returns whether it
/// wrote.
async fn populate(
    state: &ApiState,
    tokens: &ServiceAccountTokens,
    ca_pem: &str,
    secret: &Value,
) -> Result<bool, ApiError> {
    if !wants_token(secret) {
        return Ok(false);
    }
    let ns = object::namespace(secret).to_string();
    let name = object::name(secret).to_string();
    let annotations = object::annotations(secret);
    let sa_name = annotations
        .get(NAME_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let sa = match Registry::new(state, core_def(state, "serviceaccounts")?)
        .get(&ns, &sa_name)
        .await
    {
        Ok(sa) => sa,
        // The account may come later; its creation triggers another pass.
        Err(e) if e.code == 404 => return Ok(false),
        Err(e) => return Err(e),
    };
    let uid = object::uid(&sa).to_string();
    if annotations
        .get(UID_ANNOTATION)
        .is_some_and(|u| !u.is_empty() && *u != uid)
    {
        // Meant for an earlier account of the same name.
        return Ok(false);
    }
    let token = tokens
        .issue_legacy(
            &ns,
            &Ref {
                name: sa_name,
                uid: uid.clone(),
            },
            &name,
        )
        .map_err(ApiError::internal)?;
    let ctx = WriteContext {
        manager: "tokens-controller".into(),
        dry_run: false,
        apply: false,
    };
    let reg = Registry::new(state, core_def(state, "secrets")?);
    let res = reg
        .guaranteed_update(&ns, &name, Subresource::Main, &ctx, |cur| {
            let mut next = cur.clone();
            if !wants_token(cur) {
                return Ok(next);
            }
            let data = next.as_object_mut().map(|m| {
                m.entry("data")
                    .or_insert_with(|| Value::Object(Default::default()))
            });
            if let Some(Value::Object(d)) = data {
                d.insert("token".into(), Value::String(STANDARD.encode(&token)));
                d.insert("ca.crt".into(), Value::String(STANDARD.encode(ca_pem)));
                d.insert("namespace".into(), Value::String(STANDARD.encode(&ns)));
            }
            let meta = object::meta_mut(&mut next);
            let ann = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(a) = ann {
                a.insert(UID_ANNOTATION.into(), Value::String(uid.clone()));
            }
            Ok(next)
        })
        .await;
    match res {
        Ok(_) => {
            tracing::debug!(namespace = %ns, secret = %name, "service-account token issued");
            Ok(true)
        }
        Err(e) if e.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Fills every Secret that waits for a token.
pub async fn sync_all(
    state: &ApiState,
    tokens: &ServiceAccountTokens,
    ca_pem: &str,
) -> Result<(), ApiError> {
    let secrets = state.cache(&core_def(state, "secrets")?)?.all();
    for s in secrets {
        let v = s.value();
        if wants_token(&v)
            && let Err(e) = populate(state, tokens, ca_pem, &v).await
        {
            tracing::warn!(error = %e, secret = %s.name(), "issuing a service-account token failed");
        }
    }
    Ok(())
}

/// Starts the controller; it ends when the server's state or the returned handle is dropped.
pub fn spawn(
    state: Weak<ApiState>,
    tokens: Arc<ServiceAccountTokens>,
    ca_pem: String,
) -> TokenController {
    TokenController(tokio::spawn(async move {
        'subscribe: loop {
            let Some(st) = state.upgrade() else { return };
            let subs = core_def(&st, "secrets")
                .and_then(|d| st.cache(&d))
                .and_then(|secrets| {
                    let sas = st.cache(&core_def(&st, "serviceaccounts")?)?;
                    let sub = |c: &Arc<crate::watch_cache::WatchCache>| {
                        c.subscribe(Some(c.revision()), &Filter::default())
                            .map(|s| s.rx)
                            .map_err(|e| ApiError::internal(format!("{e:?}")))
                    };
                    Ok((sub(&secrets)?, sub(&sas)?))
                });
            let (mut secrets, mut accounts) = match subs {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch secrets; retrying");
                    drop(st);
                    tokio::time::sleep(LIVENESS).await;
                    continue;
                }
            };
            if let Err(e) = sync_all(&st, &tokens, &ca_pem).await {
                tracing::warn!(error = %e, "service-account token sync failed");
            }
            drop(st);
            loop {
                let event = tokio::select! {
                    r = secrets.recv() => match r {
                        Ok(ev) => Some(ev.object.value()),
                        Err(RecvError::Lagged) => None,
                        Err(RecvError::Closed) => continue 'subscribe,
                    },
                    r = accounts.recv() => match r {
                        // A new account may complete Secrets created before it.
                        Ok(_) | Err(RecvError::Lagged) => None,
                        Err(RecvError::Closed) => continue 'subscribe,
                    },
                    _ = tokio::time::sleep(LIVENESS) => {
                        if state.strong_count() == 0 {
                            return;
                        }
                        continue;
                    }
                };
                let Some(st) = state.upgrade() else { return };
                let res = match event {
                    Some(secret) => populate(&st, &tokens, &ca_pem, &secret).await.map(|_| ()),
                    None => sync_all(&st, &tokens, &ca_pem).await,
                };
                if let Err(e) = res {
                    tracing::warn!(error = %e, "issuing a service-account token failed");
                }
            }
        }
    }))
}

/// The running controller; dropping it stops it (a replica that loses the leader Lease).
#[derive(Debug)]
pub struct TokenController(tokio::task::JoinHandle<()>);

impl Drop for TokenController {
    fn drop(&mut self) {
        self.0.abort();
    }
}
