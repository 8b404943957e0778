//! Writes whose answer is not decoded. Controllers read objects from their informers, never
//! from write responses, and decoding the whole Work or binding the server returns after each
//! write was a measurable share of the control plane's CPU. Errors are the ones the matching
//! `Api` methods return (`is_not_found`, `is_conflict`, ... apply).

use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Request;
use kube::{Api, Resource};
use serde::Serialize;
use serde_json::Value;

/// Creates `obj` through `api`.
pub async fn create<K: Resource + Serialize>(api: Api<K>, obj: &K) -> kube::Result<()> {
    let body = serde_json::to_vec(obj).map_err(kube::Error::SerdeError)?;
    let req = Request::new(api.resource_url())
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    send(api, req).await
}

/// Replaces `name` with `obj` through `api` (a resourceVersion in `obj` is a precondition).
pub async fn replace<K: Resource + Serialize>(
    api: Api<K>,
    name: &str,
    obj: &K,
) -> kube::Result<()> {
    let body = serde_json::to_vec(obj).map_err(kube::Error::SerdeError)?;
    let req = Request::new(api.resource_url())
        .replace(name, &PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    send(api, req).await
}

/// Merge-patches `name`'s status subresource through `api`.
pub async fn merge_patch_status<K: Resource>(
    api: Api<K>,
    name: &str,
    patch: &Value,
) -> kube::Result<()> {
    let req = Request::new(api.resource_url())
        .patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .map_err(kube::Error::BuildRequest)?;
    send(api, req).await
}

async fn send<K: Resource>(api: Api<K>, req: http::Request<Vec<u8>>) -> kube::Result<()> {
    api.into_client().request_text(req).await.map(drop)
}
