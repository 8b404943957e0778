//! What the cluster-status controller asks a member: health (`/readyz`, falling back to
//! `/healthz`), version and API enablements (discovery, aggregated or legacy).

use std::time::Duration;

use http::{Request, StatusCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use karmada_api::cluster::v1alpha1::{ApiEnablement, ApiResource};

/// The outcome of a health probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health {
    /// The member answered.
    pub online: bool,
    /// It answered 200.
    pub healthy: bool,
}

/// getClusterHealthStatus: `/readyz`, or `/healthz` when `/readyz` is not served.
pub async fn health(client: &kube::Client, timeout: Duration) -> Health {
    let mut status = probe(client, "/readyz", timeout).await;
    if status == Some(StatusCode::NOT_FOUND) {
        status = probe(client, "/healthz", timeout).await;
    }
    match status {
        None => Health {
            online: false,
            healthy: false,
        },
        Some(s) => Health {
            online: true,
            healthy: s == StatusCode::OK,
        },
    }
}

async fn probe(client: &kube::Client, path: &str, timeout: Duration) -> Option<StatusCode> {
    let req = Request::get(path).body(kube::client::Body::empty()).ok()?;
    match tokio::time::timeout(timeout, client.send(req)).await {
        Ok(Ok(resp)) => Some(resp.status()),
        Ok(Err(kube::Error::Api(s))) => StatusCode::from_u16(s.code).ok(),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, path, "member health probe failed");
            None
        }
        Err(_) => {
            tracing::debug!(path, "member health probe timed out");
            None
        }
    }
}

/// The member's gitVersion.
pub async fn kubernetes_version(client: &kube::Client) -> Result<String, kube::Error> {
    Ok(client.apiserver_version().await?.git_version)
}

/// The member's API enablements sorted by group/version and resource name, without
/// subresources; `complete` is false when some group could not be listed (getAPIEnablements).
pub async fn api_enablements(client: &kube::Client) -> (Vec<ApiEnablement>, bool) {
    match aggregated(client).await {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!(error = %e, "aggregated discovery unavailable, using legacy discovery");
            legacy(client).await
        }
    }
}

async fn aggregated(client: &kube::Client) -> Result<(Vec<ApiEnablement>, bool), kube::Error> {
    let mut out = Vec::new();
    let mut complete = true;
    let core = client.list_core_api_versions_aggregated().await?;
    let groups = client.list_api_groups_aggregated().await?;
    for group in core.items.iter().chain(groups.items.iter()) {
        let name = group
            .metadata
            .as_ref()
            .and_then(|m| m.name.clone())
            .unwrap_or_default();
        for version in &group.versions {
            let Some(v) = version.version.as_deref() else {
                continue;
            };
            if version.freshness.as_deref() == Some("Stale") {
                complete = false;
                continue;
            }
            let group_version = if name.is_empty() {
                v.to_owned()
            } else {
                format!("{name}/{v}")
            };
            let resources = version
                .resources
                .iter()
                .filter_map(|r| {
                    Some(ApiResource {
                        name: r.resource.clone()?,
                        kind: r.response_kind.as_ref()?.kind.clone()?,
                    })
                })
                .collect();
            out.push(enablement(group_version, resources));
        }
    }
    if out.is_empty() {
        return Err(kube::Error::Api(
            kube::core::Status::failure("aggregated discovery returned nothing", "").boxed(),
        ));
    }
    sort(&mut out);
    Ok((out, complete))
}

async fn legacy(client: &kube::Client) -> (Vec<ApiEnablement>, bool) {
    let mut lists: Vec<APIResourceList> = Vec::new();
    let mut complete = true;
    match client.list_core_api_versions().await {
        Ok(core) => {
            for v in core.versions {
                match client.list_core_api_resources(&v).await {
                    Ok(l) => lists.push(l),
                    Err(_) => complete = false,
                }
            }
        }
        Err(_) => complete = false,
    }
    match client.list_api_groups().await {
        Ok(groups) => {
            for g in groups.groups {
                for v in g.versions {
                    match client.list_api_group_resources(&v.group_version).await {
                        Ok(l) => lists.push(l),
                        Err(_) => complete = false,
                    }
                }
            }
        }
        Err(_) => complete = false,
    }
    let mut out: Vec<ApiEnablement> = lists
        .into_iter()
        .map(|l| {
            let resources = l
                .resources
                .into_iter()
                .map(|r| ApiResource {
                    name: r.name,
                    kind: r.kind,
                })
                .collect();
            enablement(l.group_version, resources)
        })
        .collect();
    sort(&mut out);
    (out, complete)
}

/// One group/version without subresources, its resources sorted by name.
fn enablement(group_version: String, resources: Vec<ApiResource>) -> ApiEnablement {
    let mut resources: Vec<ApiResource> = resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .collect();
    resources.sort_by(|a, b| a.name.cmp(&b.name));
    ApiEnablement {
        group_version,
        resources,
    }
}

fn sort(list: &mut [ApiEnablement]) {
    list.sort_by(|a, b| a.group_version.cmp(&b.group_version));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enablements_drop_subresources_and_sort() {
        let r = |n: &str, k: &str| ApiResource {
            name: n.into(),
            kind: k.into(),
        };
        let e = enablement(
            "apps/v1".into(),
            vec![
                r("statefulsets", "StatefulSet"),
                r("deployments/scale", "Scale"),
                r("deployments", "Deployment"),
                r("deployments/status", "Deployment"),
            ],
        );
        assert_eq!(
            e.resources,
            vec![
                r("deployments", "Deployment"),
                r("statefulsets", "StatefulSet")
            ]
        );
        let mut list = vec![
            enablement("v1".into(), vec![]),
            enablement("apps/v1".into(), vec![]),
            enablement("batch/v1".into(), vec![]),
        ];
        sort(&mut list);
        let gvs: Vec<&str> = list.iter().map(|e| e.group_version.as_str()).collect();
        assert_eq!(gvs, ["apps/v1", "batch/v1", "v1"]);
    }
}
