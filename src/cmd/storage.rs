//! `karmada-rs storage rewrite`: writes every object of a resource back unchanged, through the
//! API server, so each is stored again with the encryption configuration's first key (what
//! `kubectl get secrets -A -o json | kubectl replace -f -` does after a key rotation; an
//! unchanged update still rewrites an object whose stored form is stale).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::{ApiResource, Discovery, Scope};

/// `karmada-rs storage ...`.
#[derive(Subcommand)]
pub enum StorageCommand {
    /// Rewrite every object of a resource (after adding or rotating an encryption key).
    Rewrite(RewriteArgs),
}

/// Options of `storage rewrite`.
#[derive(Args, Clone, Debug)]
pub struct RewriteArgs {
    /// The resource, as the EncryptionConfiguration names it: `secrets`, `deployments.apps`.
    #[arg(long, env = "KARMADA_RS_RESOURCE")]
    pub resource: String,
    /// Kubeconfig of the Karmada control plane; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
}

/// Runs a storage command.
pub async fn run(cmd: StorageCommand) -> anyhow::Result<()> {
    match cmd {
        StorageCommand::Rewrite(a) => rewrite(a).await,
    }
}

/// How many objects a list page holds.
const PAGE: u32 = 500;

async fn rewrite(args: RewriteArgs) -> anyhow::Result<()> {
    let client = controllers::join::client_from_kubeconfig(
        args.kubeconfig.as_deref(),
        args.karmada_context.as_deref(),
    )
    .await?;
    let (resource, group) = match args.resource.split_once('.') {
        Some((r, g)) => (r.to_string(), g.to_string()),
        None => (args.resource.clone(), String::new()),
    };
    let discovery = Discovery::new(client.clone())
        .filter(&[group.as_str()])
        .run()
        .await
        .context("discovering the API")?;
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.plural == resource)
        .with_context(|| {
            format!(
                "the server doesn't have a resource type {:?}",
                args.resource
            )
        })?;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let mut rewritten = 0usize;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await.context("listing")?;
        for obj in page.items {
            rewrite_one(&client, &ar, &caps.scope, obj).await?;
            rewritten += 1;
        }
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => params = params.continue_token(&c),
            _ => break,
        }
    }
    println!("{}: {rewritten} rewritten", args.resource);
    Ok(())
}

/// Replaces one object with itself, reading it again when it changed in between.
async fn rewrite_one(
    client: &kube::Client,
    ar: &ApiResource,
    scope: &Scope,
    mut obj: DynamicObject,
) -> anyhow::Result<()> {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> = match (scope, obj.metadata.namespace.as_deref()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
        _ => Api::all_with(client.clone(), ar),
    };
    loop {
        match api.replace(&name, &PostParams::default(), &obj).await {
            Ok(_) => return Ok(()),
            // Written by someone else meanwhile (and so already with the current key), or
            // gone: either is fine, but a changed object is written again to be sure.
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                obj = match api.get_opt(&name).await? {
                    Some(o) => o,
                    None => return Ok(()),
                };
            }
            Err(e) => return Err(e).with_context(|| format!("rewriting {name:?}")),
        }
    }
}
