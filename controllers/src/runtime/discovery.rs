//! Which resources a server serves: aggregated discovery (`/api` and `/apis` as
//! `apidiscovery.k8s.io/v2` APIGroupDiscoveryList), falling back to per-group discovery for
//! servers without it. Each resource is reported once, in its group's preferred version or,
//! for resources the preferred version lacks, the first version serving them, as client-go's
//! ServerPreferredResources does.

use kube::Client;
use kube::core::ApiResource;
use serde::Deserialize;
use serde_json::Value;

const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// One served resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServedResource {
    /// API group, empty for the core group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Verbs the resource supports.
    pub verbs: Vec<String>,
    /// Whether the resource has a `status` subresource.
    pub status_subresource: bool,
    /// The singular name (empty where the server gives none).
    pub singular: String,
    /// Short names, as `kubectl get` accepts them.
    pub short_names: Vec<String>,
    /// Categories (such as `all`) the resource belongs to.
    pub categories: Vec<String>,
}

impl ServedResource {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kube-rs description of the resource.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    /// Whether the resource supports all of the verbs.
    pub fn supports(&self, verbs: &[&str]) -> bool {
        verbs.iter().all(|v| self.verbs.iter().any(|s| s == v))
    }
}

/// Discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The request failed.
    #[error("discovery request failed: {0}")]
    Request(#[from] kube::Error),
    /// The request could not be built.
    #[error("discovery request: {0}")]
    Http(#[from] http::Error),
}

#[derive(Deserialize)]
struct GroupDiscoveryList {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Vec<GroupDiscovery>,
}

#[derive(Deserialize)]
struct GroupDiscovery {
    #[serde(default)]
    metadata: NameOnly,
    #[serde(default)]
    versions: Vec<VersionDiscovery>,
}

#[derive(Deserialize, Default)]
struct NameOnly {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct VersionDiscovery {
    #[serde(default)]
    version: String,
    #[serde(default)]
    resources: Vec<ResourceDiscovery>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDiscovery {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    response_kind: Option<KindOnly>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    subresources: Vec<SubresourceDiscovery>,
    #[serde(default)]
    singular_resource: String,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

#[derive(Deserialize)]
struct SubresourceDiscovery {
    #[serde(default)]
    subresource: String,
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: String,
}

/// Lists every served resource once, in its preferred version (subresources excluded).
pub async fn served_resources(client: &Client) -> Result<Vec<ServedResource>, DiscoveryError> {
    let mut out = Vec::new();
    let mut aggregated = true;
    for path in ["/api", "/apis"] {
        let req = http::Request::get(path)
            .header(http::header::ACCEPT, AGGREGATED_ACCEPT)
            .body(Vec::new())?;
        let list: Value = client.request(req).await?;
        let Ok(list) = serde_json::from_value::<GroupDiscoveryList>(list) else {
            aggregated = false;
            break;
        };
        if list.kind != "APIGroupDiscoveryList" {
            aggregated = false;
            break;
        }
        for g in list.items {
            // The preferred (first) version's resources, then those only other versions
            // serve, as client-go's ServerPreferredResources gives them.
            let mut seen: Vec<String> = Vec::new();
            for v in g.versions {
                for r in v.resources {
                    if r.resource.contains('/') || seen.contains(&r.resource) {
                        continue;
                    }
                    seen.push(r.resource.clone());
                    let Some(kind) = r.response_kind.map(|k| k.kind) else {
                        continue;
                    };
                    out.push(ServedResource {
                        group: g.metadata.name.clone(),
                        version: v.version.clone(),
                        kind,
                        plural: r.resource,
                        namespaced: r.scope == "Namespaced",
                        verbs: r.verbs,
                        status_subresource: r
                            .subresources
                            .iter()
                            .any(|s| s.subresource == "status"),
                        singular: r.singular_resource,
                        short_names: r.short_names,
                        categories: r.categories,
                    });
                }
            }
        }
    }
    if aggregated {
        return Ok(out);
    }
    legacy(client).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceList {
    #[serde(default)]
    resources: Vec<LegacyResource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LegacyResource {
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    singular_name: String,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

async fn legacy(client: &Client) -> Result<Vec<ServedResource>, DiscoveryError> {
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".to_owned())];
    let groups: Value = client
        .request(http::Request::get("/apis").body(Vec::new())?)
        .await?;
    for g in groups["groups"].as_array().into_iter().flatten() {
        let name = g["name"].as_str().unwrap_or_default();
        if let Some(v) = g["preferredVersion"]["version"].as_str() {
            gvs.push((name.to_owned(), v.to_owned()));
        }
    }
    let mut out = Vec::new();
    for (group, version) in gvs {
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let list: ResourceList = match client
            .request(http::Request::get(&path).body(Vec::new())?)
            .await
        {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(%path, error = %e, "group discovery failed");
                continue;
            }
        };
        let with_status: Vec<String> = list
            .resources
            .iter()
            .filter_map(|r| r.name.strip_suffix("/status").map(str::to_owned))
            .collect();
        for r in list.resources {
            if r.name.contains('/') {
                continue;
            }
            out.push(ServedResource {
                group: group.clone(),
                version: version.clone(),
                kind: r.kind,
                status_subresource: with_status.contains(&r.name),
                plural: r.name,
                namespaced: r.namespaced,
                verbs: r.verbs,
                singular: r.singular_name,
                short_names: r.short_names,
                categories: r.categories,
            });
        }
    }
    Ok(out)
}
