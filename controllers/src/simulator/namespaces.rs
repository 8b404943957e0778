//! Namespace finalization for a simulated member, as kube-controller-manager's namespace
//! controller does it (pkg/controller/namespace/deletion): once a namespace is terminating,
//! delete everything in it, then remove the `kubernetes` finalizer.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::{Discovery, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

/// The finalizer the namespace controller owns.
const FINALIZER: &str = "kubernetes";
/// How soon a namespace whose content is still going is looked at again.
const RETRY: Duration = Duration::from_millis(200);

fn terminating(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_some()
        && ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Watches namespaces and finalizes the terminating ones.
pub(super) async fn run(client: kube::Client) {
    let api = Api::<Namespace>::all(client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut waiting: HashSet<String> = HashSet::new();
    loop {
        let retry = !waiting.is_empty();
        tokio::select! {
            ev = stream.next() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(ns) | watcher::Event::InitApply(ns)) => {
                        if terminating(&ns) {
                            waiting.insert(ns.name_any());
                        } else {
                            waiting.remove(&ns.name_any());
                        }
                    }
                    Ok(watcher::Event::Delete(ns)) => {
                        waiting.remove(&ns.name_any());
                    }
                    _ => {}
                }
            }
            _ = tokio::time::sleep(RETRY), if retry => {}
        }
        if waiting.is_empty() {
            continue;
        }
        let discovery = match Discovery::new(client.clone()).run_aggregated().await {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(error = %e, "namespace finalizer: discovery failed");
                continue;
            }
        };
        let names: Vec<String> = waiting.iter().cloned().collect();
        for name in names {
            match finalize(&client, &discovery, &name).await {
                Ok(true) => {
                    waiting.remove(&name);
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!(namespace = %name, error = %e, "namespace finalizer: retrying")
                }
            }
        }
    }
}

/// Deletes the namespace's content; when nothing is left, removes the finalizer. True when
/// finalized.
async fn finalize(
    client: &kube::Client,
    discovery: &Discovery,
    name: &str,
) -> Result<bool, kube::Error> {
    let mut empty = true;
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced
                || !caps.operations.iter().any(|o| o == "list")
                || !caps.operations.iter().any(|o| o == "delete")
            {
                continue;
            }
            let api = Api::<DynamicObject>::namespaced_with(client.clone(), name, &ar);
            let list = match api.list_metadata(&ListParams::default().limit(1)).await {
                Ok(l) => l,
                Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 405 => continue,
                Err(e) => return Err(e),
            };
            if list.items.is_empty() {
                continue;
            }
            empty = false;
            tracing::debug!(namespace = name, resource = %ar.plural, "namespace finalizer: deleting content");
            let supports_collection = caps.operations.iter().any(|o| o == "deletecollection");
            if supports_collection {
                api.delete_collection(&DeleteParams::default(), &ListParams::default())
                    .await?;
            } else {
                for item in api.list_metadata(&ListParams::default()).await?.items {
                    match api.delete(&item.name_any(), &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.is_not_found() => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
    if !empty {
        return Ok(false);
    }
    let namespaces = Api::<Namespace>::all(client.clone());
    let Some(mut ns) = namespaces.get_opt(name).await? else {
        return Ok(true);
    };
    if let Some(spec) = ns.spec.as_mut()
        && let Some(f) = spec.finalizers.as_mut()
    {
        f.retain(|x| x != FINALIZER);
    }
    match namespaces
        .replace_subresource("finalize", name, &PostParams::default(), &ns)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(true),
        Err(e) => Err(e),
    }
}
