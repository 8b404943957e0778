//! The in-process client: a `kube::Client` whose transport is the server's own router (no
//! TCP, no TLS), carrying a fixed identity as kube-apiserver's loopback client does.

use std::sync::Arc;

use axum::Router;

use crate::auth::{InProcessIdentity, UserInfo};

/// A `kube::Client` that calls `router` directly as `user`, sending `user_agent` (whose
/// part before the first `/` names the field manager of its writes, as for any client).
/// Must be called inside a runtime.
pub fn in_process_client(router: Router, user: UserInfo, user_agent: &str) -> kube::Client {
    let identity = InProcessIdentity(Arc::new(user));
    let agent = http::HeaderValue::from_str(user_agent)
        .unwrap_or_else(|_| http::HeaderValue::from_static("karmada-rs"));
    let svc = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<kube::client::Body>| {
            req.extensions_mut().insert(identity.clone());
            if !req.headers().contains_key(http::header::USER_AGENT) {
                req.headers_mut()
                    .insert(http::header::USER_AGENT, agent.clone());
            }
            req
        })
        .service(router);
    kube::Client::new(svc, "default")
}
