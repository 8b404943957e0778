//! The in-process client: a `kube::Client` whose transport is the server's own router (no
//! TCP, no TLS), carrying a fixed identity as kube-apiserver's loopback client does.

use std::sync::Arc;

use axum::Router;

use crate::auth::{InProcessIdentity, UserInfo};

/// A `kube::Client` that calls `router` directly as `user`. Must be called inside a runtime.
pub fn in_process_client(router: Router, user: UserInfo) -> kube::Client {
    let identity = InProcessIdentity(Arc::new(user));
    let svc = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<kube::client::Body>| {
            req.extensions_mut().insert(identity.clone());
            req
        })
        .service(router);
    kube::Client::new(svc, "default")
}
