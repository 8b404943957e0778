//! `karmada-rs promote TYPE NAME -C CLUSTER` (karmadactl's pkg/karmadactl/promote): an
//! object already running in a member becomes a resource template on the control plane, with
//! a (Cluster)PropagationPolicy placing it back on that member with `conflictResolution:
//! Overwrite`, so Karmada adopts the member's object without recreating it. With
//! `--dependencies`, what the control plane's interpreter says the object depends on
//! (ConfigMaps, Secrets, ServiceAccounts, PVCs...) is promoted first.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use controllers::interpreter::ResourceInterpreter;
use controllers::runtime::discovery::{ServedResource, served_resources};
use karmada_api::config::v1alpha1::{
    DependentObjectReference, ResourceInterpreterCustomization,
    ResourceInterpreterWebhookConfiguration,
};
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::cmd::fleet::{Fleet, KarmadaFlags, exit_on_error, kube_message, send};
use crate::cmd::get::{resolve, resource_path};
use crate::cmd::printer::{Output, print_object};

/// Karmada's ResourceConflictResolutionAnnotation and its Overwrite value.
const CONFLICT_RESOLUTION: &str = "work.karmada.io/conflict-resolution";

/// Labels the reverting of a promoted dependency takes off the member's copy
/// (WorkPermanentIDLabel, ManagedByKarmadaLabel).
const PROPAGATION_LABELS: [&str; 2] = ["work.karmada.io/permanent-id", "karmada.io/managed"];

/// `karmada-rs promote TYPE NAME -n NS -C CLUSTER`.
#[derive(Args, Clone, Debug)]
pub struct PromoteArgs {
    /// The resource type and the object's name.
    pub args: Vec<String>,
    /// Name of the legacy cluster (e.g. -C=member1).
    #[arg(short = 'C', long, env = "KARMADA_RS_CLUSTER", default_value = "")]
    pub cluster: String,
    /// The namespace; the kubeconfig context's by default.
    #[arg(short = 'n', long, env = "KARMADA_RS_NAMESPACE")]
    pub namespace: Option<String>,
    /// Automatically create a PropagationPolicy for namespace-scoped resources or create a
    /// ClusterPropagationPolicy for cluster-scoped resources.
    #[arg(long, env = "KARMADA_RS_AUTO_CREATE_POLICY", default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_create_policy: bool,
    /// The name of the policy created; the resource name with a hash suffix by default.
    #[arg(long, env = "KARMADA_RS_POLICY_NAME", default_value = "")]
    pub policy_name: String,
    /// Print the template and policy (json or yaml) instead of creating them.
    #[arg(short = 'o', long, env = "KARMADA_RS_OUTPUT", default_value = "")]
    pub output: String,
    /// Path of the legacy cluster's kubeconfig (instead of the cluster proxy).
    #[arg(long, env = "KARMADA_RS_CLUSTER_KUBECONFIG")]
    pub cluster_kubeconfig: Option<PathBuf>,
    /// Context of the legacy cluster in --cluster-kubeconfig; the cluster's name by default.
    #[arg(long, env = "KARMADA_RS_CLUSTER_CONTEXT")]
    pub cluster_context: Option<String>,
    /// Promote the resource's dependencies first.
    #[arg(short = 'd', long, env = "KARMADA_RS_DEPENDENCIES", num_args = 0..=1, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub dependencies: bool,
    /// Run the command in dry-run mode, without making any server requests.
    #[arg(long, env = "KARMADA_RS_DRY_RUN")]
    pub dry_run: bool,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// `group/version, Resource=plural` (GroupVersionResource.String).
fn gvr(r: &ServedResource) -> String {
    format!("{}, Resource={}", r.api_version(), r.plural)
}

/// `group/version, Kind=Kind` (GroupVersionKind.String), which policy names hash.
pub(crate) fn gvk(object: &Value) -> String {
    format!(
        "{}, Kind={}",
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default()
    )
}

/// preprocessResource: the fields a template must not carry, and Overwrite unless the
/// object names its own conflict resolution.
fn preprocess(object: &mut Value) {
    karmada_api::prune::remove_irrelevant_fields(object, false);
    let annotations = &mut object["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if annotations.get(CONFLICT_RESOLUTION).is_none() {
        annotations[CONFLICT_RESOLUTION] = json!("overwrite");
    }
}

/// buildPropagationPolicy / buildClusterPropagationPolicy.
fn policy(
    resource: &ServedResource,
    object: &Value,
    policy_name: &str,
    cluster: &str,
    deps: bool,
) -> Value {
    let name = object["metadata"]["name"].clone();
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut metadata = json!({"name": policy_name});
    let kind = if namespace.is_empty() {
        "ClusterPropagationPolicy"
    } else {
        metadata["namespace"] = json!(namespace);
        "PropagationPolicy"
    };
    let mut spec = json!({
        "resourceSelectors": [{"apiVersion": resource.api_version(),
            "kind": object["kind"], "name": name}],
        "placement": {"clusterAffinity": {"clusterNames": [cluster]}},
        "conflictResolution": "Overwrite",
        "preserveResourcesOnDeletion": true,
    });
    if deps {
        spec["propagateDeps"] = json!(true);
    }
    json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata,
        "spec": spec})
}

/// The control plane and the member, with what each serves.
struct Promotion<'a> {
    args: &'a PromoteArgs,
    namespace: String,
    control_plane: kube::Client,
    cp_served: Vec<ServedResource>,
    member: kube::Client,
    member_served: Vec<ServedResource>,
}

impl Promotion<'_> {
    /// An object of the member (ResourceTypeOrNameArgs, NotFound ignored).
    async fn member_object(
        &self,
        kind: &str,
        name: &str,
    ) -> anyhow::Result<(ServedResource, Value)> {
        let missing = || {
            anyhow::anyhow!(
                "the {kind} or {name} don't exist in cluster({})",
                self.args.cluster
            )
        };
        let resource = resolve(&self.member_served, kind)?
            .into_iter()
            .next()
            .ok_or_else(missing)?;
        let path = resource_path(&resource, Some(&self.namespace), Some(name));
        match send(&self.member, http::Request::get(path), None).await {
            Ok(o) => Ok((resource, o)),
            Err(kube::Error::Api(s)) if s.code == 404 => Err(missing()),
            Err(e) => Err(anyhow::anyhow!(kube_message(&e))),
        }
    }

    /// The control plane's resource of the member object's kind (GetGroupVersionResource).
    fn control_plane_resource(&self, object: &Value) -> anyhow::Result<ServedResource> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        self.cp_served
            .iter()
            .find(|r| r.api_version() == api_version && r.kind == kind)
            .cloned()
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "failed to get gvr from {:?}: no matches for kind {kind:?} in version {api_version:?}",
                    gvk(object)
                )
            })
    }

    /// Whether the control plane has the object (errors other than NotFound fail).
    async fn exists(
        &self,
        resource: &ServedResource,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<bool> {
        let path = resource_path(resource, Some(namespace), Some(name));
        match send(&self.control_plane, http::Request::get(path), None).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(anyhow::anyhow!(kube_message(&e))),
        }
    }

    async fn create(&self, resource: &ServedResource, object: &Value) -> anyhow::Result<()> {
        let namespace = object["metadata"]["namespace"].as_str();
        let req = http::Request::post(resource_path(resource, namespace, None))
            .header(http::header::CONTENT_TYPE, "application/json");
        send(&self.control_plane, req, Some(object))
            .await
            .map_err(|e| anyhow::anyhow!(kube_message(&e)))?;
        Ok(())
    }

    /// What the control plane's interpreter (its customizations and webhooks, then the
    /// shipped and built-in ones) says the object depends on.
    async fn dependencies(&self, object: &Value) -> anyhow::Result<Vec<DependentObjectReference>> {
        let interpreter =
            ResourceInterpreter::new(Some(self.control_plane.clone()), lua::Limits::default());
        let customizations: Api<ResourceInterpreterCustomization> =
            Api::all(self.control_plane.clone());
        let webhooks: Api<ResourceInterpreterWebhookConfiguration> =
            Api::all(self.control_plane.clone());
        interpreter.load_customizations(&customizations.list(&ListParams::default()).await?.items);
        interpreter.load_webhooks(&webhooks.list(&ListParams::default()).await?.items);
        Ok(interpreter.get_dependencies(object).await?)
    }

    /// doPromoteDeps: each dependency created on the control plane; on a failure the ones
    /// before it are reverted.
    async fn promote_dependencies(&self, object: &Value) -> anyhow::Result<()> {
        let deps = self.dependencies(object).await?;
        let mut done: Vec<(ServedResource, Value)> = Vec::new();
        for dep in deps {
            match self.promote_dependency(&dep).await {
                Ok(Some(promoted)) => done.push(promoted),
                Ok(None) => {
                    self.revert(&done).await;
                    return Ok(());
                }
                Err(e) => {
                    self.revert(&done).await;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// One dependency; `None` when the control plane already has it (karmadactl stops
    /// promoting dependencies then, and goes on with the object).
    async fn promote_dependency(
        &self,
        dep: &DependentObjectReference,
    ) -> anyhow::Result<Option<(ServedResource, Value)>> {
        if dep.name.is_empty() {
            bail!(
                "the dependency {} of kind {} is selected by labels; promote those objects one by one",
                dep.api_version,
                dep.kind
            );
        }
        let (_, mut object) = self
            .member_object(&dep.kind, &dep.name)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "failed to get dependency {:?}({}/{}) in cluster({}): {e}",
                    dep.kind,
                    dep.namespace,
                    dep.name,
                    self.args.cluster
                )
            })?;
        let resource = self.control_plane_resource(&object)?;
        preprocess(&mut object);
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let shown = format!("{:?}({namespace}/{})", gvr(&resource), dep.name);
        if self.exists(&resource, &namespace, &dep.name).await? {
            eprintln!(
                "Dependency resource {shown} already exist in karmada control plane, you can edit PropagationPolicy and OverridePolicy to propagate it"
            );
            return Ok(None);
        }
        self.create(&resource, &object).await.with_context(|| {
            format!("failed to create dependency resource {shown} in control plane")
        })?;
        println!("Dependency resource {shown} is promoted successfully");
        Ok(Some((resource, object)))
    }

    /// revertPromotedDeps: the member's copies lose Karmada's labels and the control plane's
    /// copies are deleted.
    async fn revert(&self, done: &[(ServedResource, Value)]) {
        for (resource, object) in done {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            let path = resource_path(resource, Some(namespace), Some(name));
            let labels: serde_json::Map<String, Value> = PROPAGATION_LABELS
                .iter()
                .map(|l| (l.to_string(), Value::Null))
                .collect();
            let unlabel = json!({"metadata": {"labels": labels}});
            let steps = async {
                let patch = http::Request::patch(&path)
                    .header(http::header::CONTENT_TYPE, "application/merge-patch+json");
                send(&self.member, patch, Some(&unlabel)).await?;
                send(&self.control_plane, http::Request::delete(&path), None).await?;
                anyhow::Ok(())
            };
            match steps.await {
                Ok(()) => println!(
                    "Dependency resource {:?}({namespace}/{name}) is reverted successfully",
                    gvr(resource)
                ),
                Err(e) => {
                    eprintln!(
                        "reverting the dependency {:?}({namespace}/{name}) failed: {e}",
                        gvr(resource)
                    );
                    return;
                }
            }
        }
    }
}

async fn promote(args: PromoteArgs) -> anyhow::Result<()> {
    let [kind, name] = args.args.as_slice() else {
        bail!("incorrect command format, please use correct command format");
    };
    if args.cluster.is_empty() {
        bail!("the cluster cannot be empty");
    }
    let output = match args.output.as_str() {
        "" => None,
        "json" | "yaml" => Some(Output::parse(&args.output)?),
        _ => bail!("invalid output format: supported formats are json and yaml"),
    };
    let fleet = Fleet::connect(&args.karmada).await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| fleet.default_namespace().to_owned());
    let member = match &args.cluster_kubeconfig {
        Some(path) => {
            let flags = KarmadaFlags {
                kubeconfig: Some(path.clone()),
                karmada_context: Some(
                    args.cluster_context
                        .clone()
                        .unwrap_or_else(|| args.cluster.clone()),
                ),
            };
            Fleet::connect(&flags).await?.client
        }
        None => {
            fleet.clusters().get(&args.cluster).await.map_err(|e| {
                anyhow::anyhow!(
                    "failed to get Factory of the member cluster. err: {}",
                    kube_message(&e)
                )
            })?;
            fleet.member(&args.cluster)?
        }
    };
    let in_cluster = |e: anyhow::Error| {
        anyhow::anyhow!(
            "failed to get resource in cluster({}). err: {e:#}",
            args.cluster
        )
    };
    let member_served = served_resources(&member)
        .await
        .map_err(|e| in_cluster(e.into()))?;
    let cp_served = served_resources(&fleet.client).await?;
    let p = Promotion {
        args: &args,
        namespace,
        control_plane: fleet.client.clone(),
        cp_served,
        member,
        member_served,
    };
    let (_, mut object) = p.member_object(kind, name).await.map_err(in_cluster)?;
    let resource = p.control_plane_resource(&object)?;
    let object_ns = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if args.dependencies && !args.dry_run {
        p.promote_dependencies(&object).await.map_err(|e| {
            anyhow::anyhow!(
                "failed to promote dependencies of resource {:?}({}/{name}) automatically: {e:#}",
                gvr(&resource),
                p.namespace
            )
        })?;
    }
    preprocess(&mut object);
    let policy_name = if args.policy_name.is_empty() {
        let ns = if object_ns.is_empty() {
            ""
        } else {
            p.namespace.as_str()
        };
        karmada_api::names::policy_name(ns, name, &gvk(&object))
    } else {
        args.policy_name.clone()
    };
    let policy = policy(
        &resource,
        &object,
        &policy_name,
        &args.cluster,
        args.dependencies,
    );
    if let Some(output) = &output {
        let mut text = print_object(output, &object)?;
        if args.auto_create_policy {
            if *output == Output::Yaml {
                text.push_str("---\n");
            }
            text.push_str(&print_object(output, &policy)?);
        }
        print!("{text}");
        return Ok(());
    }
    if args.dry_run {
        return Ok(());
    }
    let shown = if object_ns.is_empty() {
        format!("{:?}({name})", gvr(&resource))
    } else {
        format!("{:?}({object_ns}/{name})", gvr(&resource))
    };
    if p.exists(&resource, &object_ns, name)
        .await
        .with_context(|| format!("failed to get resource {shown} in control plane"))?
    {
        eprintln!(
            "Resource {shown} already exist in karmada control plane, you can edit PropagationPolicy and OverridePolicy to propagate it"
        );
        return Ok(());
    }
    p.create(&resource, &object)
        .await
        .with_context(|| format!("failed to create resource {shown} in control plane"))?;
    println!(
        "ResourceTemplate ({}/{name}) is created successfully",
        p.namespace
    );
    if args.auto_create_policy {
        let policy_resource = p
            .cp_served
            .iter()
            .find(|r| {
                r.group == "policy.karmada.io" && Some(r.kind.as_str()) == policy["kind"].as_str()
            })
            .cloned()
            .context("the control plane serves no policy.karmada.io propagation policies")?;
        let kind = policy["kind"].as_str().unwrap_or_default();
        let policy_shown = if object_ns.is_empty() {
            policy_name.clone()
        } else {
            format!("{object_ns}/{policy_name}")
        };
        if p.exists(&policy_resource, &object_ns, &policy_name)
            .await
            .with_context(|| format!("failed to get {kind}({policy_shown}) in control plane"))?
        {
            bail!("the {kind}({policy_shown}) already exist, please edit it to propagate resource");
        }
        p.create(&policy_resource, &policy).await?;
        if object_ns.is_empty() {
            println!("ClusterPropagationPolicy {policy_name} is created successfully");
        } else {
            println!("PropagationPolicy ({policy_shown}) is created successfully");
        }
    }
    println!("Resource {shown} is promoted successfully");
    Ok(())
}

/// Runs `promote`, with karmadactl's `error: ...` and exit status 1.
pub async fn run(args: PromoteArgs) -> anyhow::Result<()> {
    exit_on_error(promote(args).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promoted_object_loses_its_cluster_fields_and_asks_to_overwrite() {
        let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "9",
                "annotations": {"deployment.kubernetes.io/revision": "3"}},
            "spec": {"replicas": 2}, "status": {"replicas": 2}});
        preprocess(&mut object);
        assert_eq!(
            object,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default",
                    "annotations": {"work.karmada.io/conflict-resolution": "overwrite"}},
                "spec": {"replicas": 2}})
        );
        // A resolution the object names is kept.
        let mut own = json!({"kind": "ConfigMap", "metadata": {"name": "c",
            "annotations": {"work.karmada.io/conflict-resolution": "abort"}}});
        preprocess(&mut own);
        assert_eq!(own["metadata"]["annotations"][CONFLICT_RESOLUTION], "abort");
    }
}
