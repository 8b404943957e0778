//! `karmada-rs apply -f FILE [--all-clusters | -C member1,member2]` (karmadactl's
//! pkg/karmadactl/apply over kubectl's client-side apply): each object is created, or
//! changed by a three-way JSON merge patch between its last-applied configuration
//! (`kubectl.kubernetes.io/last-applied-configuration`), the file and the live object, as
//! kubectl's apply does for kinds it has no strategic-merge schema for. With `--all-clusters`
//! or `-C`, each object also gets a generated (Cluster)PropagationPolicy placing it on every
//! member or on those named.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use controllers::runtime::discovery::{ServedResource, served_resources};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::cmd::fleet::{Fleet, KarmadaFlags, exit_on_error, fail_on, kube_message};
use crate::cmd::get::resource_path;
use crate::cmd::printer::object_name;
use crate::cmd::promote::gvk;

/// kubectl's LastAppliedConfigAnnotation.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `karmada-rs apply`.
#[derive(Args, Clone, Debug)]
pub struct ApplyArgs {
    /// Files, directories (their .json, .yaml and .yml files) or `-` for stdin.
    #[arg(short = 'f', long, env = "KARMADA_RS_FILENAME")]
    pub filename: Vec<PathBuf>,
    /// The namespace of objects that name none; the kubeconfig context's by default.
    #[arg(short = 'n', long, env = "KARMADA_RS_NAMESPACE")]
    pub namespace: Option<String>,
    /// Propagate the objects to every member cluster.
    #[arg(long, env = "KARMADA_RS_ALL_CLUSTERS")]
    pub all_clusters: bool,
    /// Propagate the objects to these member clusters.
    #[arg(short = 'C', long, env = "KARMADA_RS_CLUSTER", value_delimiter = ',')]
    pub cluster: Vec<String>,
    /// `none`, `server` (the server checks and answers without storing) or `client` (nothing
    /// is sent).
    #[arg(long, env = "KARMADA_RS_DRY_RUN", default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: String,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// The objects of the files, `List`s expanded, in order.
fn read_objects(paths: &[PathBuf]) -> anyhow::Result<Vec<(String, Value)>> {
    let mut files: Vec<PathBuf> = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.extension()
                        .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                })
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(p.clone());
        }
    }
    let mut out = Vec::new();
    for f in files {
        let (shown, text) = if f == Path::new("-") {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
            ("STDIN".to_owned(), s)
        } else {
            let shown = f.display().to_string();
            let text = std::fs::read_to_string(&f)
                .with_context(|| format!("the path {shown:?} does not exist"))?;
            (shown, text)
        };
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).with_context(|| format!("error parsing {shown}"))?;
            if v.is_null() {
                continue;
            }
            if v["kind"].as_str().is_some_and(|k| k.ends_with("List")) && v["items"].is_array() {
                for item in v["items"].as_array().into_iter().flatten() {
                    out.push((shown.clone(), item.clone()));
                }
            } else {
                out.push((shown.clone(), v));
            }
        }
    }
    Ok(out)
}

/// Whether `have` already carries everything `want` sets (the server's defaults beside it).
fn covers(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| covers(hv, v)) || v.is_null()),
        (Value::Array(h), Value::Array(w)) => {
            h.len() == w.len() && h.iter().zip(w).all(|(a, b)| covers(a, b))
        }
        (h, w) => h == w,
    }
}

/// RFC 7386 diff: the merge patch turning `from` into `to`. A list `from` already covers
/// (the file's items with the server's defaults added) is no change; any other list is
/// replaced whole, as a JSON merge patch replaces lists.
fn merge_diff(from: &Value, to: &Value) -> Value {
    let (Value::Object(a), Value::Object(b)) = (from, to) else {
        return to.clone();
    };
    let mut patch = Map::new();
    for (k, v) in b {
        match a.get(k) {
            Some(old) if old == v => {}
            Some(old) if old.is_array() && covers(old, v) => {}
            Some(old) if old.is_object() && v.is_object() => {
                patch.insert(k.clone(), merge_diff(old, v));
            }
            _ => {
                patch.insert(k.clone(), v.clone());
            }
        }
    }
    for k in a.keys() {
        if !b.contains_key(k) {
            patch.insert(k.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

/// keepOrDeleteNullInObj: the patch's deletions only (`keep_nulls`) or everything else.
fn filter_nulls(patch: &Value, keep_nulls: bool) -> Value {
    let Value::Object(map) = patch else {
        return patch.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        match v {
            Value::Null if keep_nulls => {
                out.insert(k.clone(), Value::Null);
            }
            Value::Null => {}
            Value::Object(_) => {
                let inner = filter_nulls(v, keep_nulls);
                // An emptied map stays only when it was a change (to an empty map).
                if inner.as_object().is_some_and(|m| !m.is_empty())
                    || (!keep_nulls && v.as_object().is_some_and(|m| m.is_empty()))
                {
                    out.insert(k.clone(), inner);
                }
            }
            other if !keep_nulls => {
                out.insert(k.clone(), other.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// Merges patch `b` into patch `a` (both maps).
fn merge_patches(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(have) if have.is_object() && v.is_object() => merge_patches(have, v),
                    _ => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (a, b) => *a = b.clone(),
    }
}

/// CreateThreeWayJSONMergePatch: additions and changes from the live object to the file,
/// deletions of what the last apply set and the file no longer has.
fn three_way(original: Option<&Value>, modified: &Value, current: &Value) -> Value {
    let mut patch = filter_nulls(&merge_diff(current, modified), false);
    if let Some(original) = original {
        let deletions = filter_nulls(&merge_diff(original, modified), true);
        merge_patches(&mut patch, &deletions);
    }
    patch
}

/// GetModifiedConfiguration: the object with the last-applied annotation set to the object
/// as given (without that annotation), as the annotation's text and the object to send.
fn with_last_applied(object: &Value) -> anyhow::Result<(String, Value)> {
    // kubectl writes the annotations as an empty map when there are no others.
    let mut bare = object.clone();
    if !bare["metadata"]["annotations"].is_object() {
        bare["metadata"]["annotations"] = json!({});
    }
    if let Some(a) = bare["metadata"]["annotations"].as_object_mut() {
        a.remove(LAST_APPLIED);
    }
    let text = serde_json::to_string(&bare)? + "\n";
    let mut modified = object.clone();
    if !modified["metadata"]["annotations"].is_object() {
        modified["metadata"]["annotations"] = json!({});
    }
    modified["metadata"]["annotations"][LAST_APPLIED] = json!(text);
    Ok((text, modified))
}

/// generatePropagationObject: a policy selecting the object, for every member or the ones named.
fn propagation_policy(object: &Value, namespaced: bool, clusters: &[String]) -> Value {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let policy_name = karmada_api::names::policy_name(namespace, name, &gvk(object));
    let mut selector =
        json!({"apiVersion": object["apiVersion"], "kind": object["kind"], "name": name});
    if !namespace.is_empty() {
        selector["namespace"] = json!(namespace);
    }
    let affinity = if clusters.is_empty() {
        json!({})
    } else {
        json!({"clusterNames": clusters})
    };
    let spec = json!({"resourceSelectors": [selector], "placement": {"clusterAffinity": affinity}});
    if namespaced {
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": policy_name, "namespace": namespace}, "spec": spec})
    } else {
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
            "metadata": {"name": policy_name}, "spec": spec})
    }
}

struct Applier<'a> {
    client: kube::Client,
    served: Vec<ServedResource>,
    namespace: String,
    explicit_namespace: bool,
    dry_run: &'a str,
}

impl Applier<'_> {
    /// The resource of an object's kind, and the object with its namespace settled.
    fn place(&self, source: &str, mut object: Value) -> anyhow::Result<(ServedResource, Value)> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        if api_version.is_empty() || kind.is_empty() {
            bail!("error validating {source:?}: apiVersion and kind must be set");
        }
        if object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            bail!(
                "error when retrieving current configuration of {kind} from {source}: resource name may not be empty"
            );
        }
        let group = api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        let version = api_version.rsplit('/').next().unwrap_or_default();
        let mut resource = self
            .served
            .iter()
            .find(|r| r.group == group && r.kind == kind)
            .cloned()
            .with_context(|| {
                format!("resource mapping not found for name: {:?} namespace: {:?} from {source:?}: no matches for kind {kind:?} in version {api_version:?}\nensure CRDs are installed first",
                    object["metadata"]["name"].as_str().unwrap_or_default(),
                    object["metadata"]["namespace"].as_str().unwrap_or_default())
            })?;
        // Every version of a kind is served under the same plural and scope.
        resource.version = version.to_owned();
        if resource.namespaced {
            match object["metadata"]["namespace"].as_str() {
                Some(ns) if !ns.is_empty() => {
                    if self.explicit_namespace && ns != self.namespace {
                        bail!(
                            "the namespace from the provided object {ns:?} does not match the namespace {:?}. You must pass '--namespace={ns}' to perform this operation.",
                            self.namespace
                        );
                    }
                }
                _ => object["metadata"]["namespace"] = json!(self.namespace),
            }
        } else if let Some(m) = object["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        Ok((resource, object))
    }

    async fn send(
        &self,
        req: http::request::Builder,
        body: Option<&Value>,
    ) -> Result<Value, kube::Error> {
        crate::cmd::fleet::send(&self.client, req, body).await
    }

    /// Applies one object; returns what kubectl prints for it.
    async fn apply(&self, resource: &ServedResource, object: &Value) -> anyhow::Result<String> {
        let namespace = object["metadata"]["namespace"].as_str();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let shown = object_name(object);
        let suffix = match self.dry_run {
            "client" => " (dry run)",
            "server" => " (server dry run)",
            _ => "",
        };
        let dry = if self.dry_run == "server" {
            "?dryRun=All"
        } else {
            ""
        };
        let path = resource_path(resource, namespace, Some(name));
        let (_, modified) = with_last_applied(object)?;
        let current = match self.send(http::Request::get(&path), None).await {
            Ok(c) => Some(c),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => bail!(
                "error when retrieving current configuration of:\nResource: {:?}, GroupVersionKind: \"{}, Kind={}\"\nName: {name:?}, Namespace: {:?}\nfrom server for: {:?}: {}",
                format!(
                    "{}/{}, Resource={}",
                    resource.group, resource.version, resource.plural
                ),
                resource.api_version(),
                resource.kind,
                namespace.unwrap_or_default(),
                shown,
                kube_message(&e)
            ),
        };
        let Some(current) = current else {
            if self.dry_run != "client" {
                let collection = format!("{}{dry}", resource_path(resource, namespace, None));
                self.send(
                    http::Request::post(collection)
                        .header(http::header::CONTENT_TYPE, "application/json"),
                    Some(&modified),
                )
                .await
                .map_err(|e| {
                    anyhow::anyhow!("error when creating {shown:?}: {}", kube_message(&e))
                })?;
            }
            return Ok(format!("{shown} created{suffix}"));
        };
        let original: Option<Value> = current["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok());
        let patch = three_way(original.as_ref(), &modified, &current);
        if patch.as_object().is_some_and(Map::is_empty) {
            return Ok(format!("{shown} unchanged{suffix}"));
        }
        if self.dry_run != "client" {
            self.send(
                http::Request::patch(format!("{path}{dry}"))
                    .header(http::header::CONTENT_TYPE, "application/merge-patch+json"),
                Some(&patch),
            )
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "error when applying patch:\n{patch}\nto:\n{shown}\nfor: {shown:?}: {}",
                    kube_message(&e)
                )
            })?;
        }
        Ok(format!("{shown} configured{suffix}"))
    }
}

async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    if args.filename.is_empty() {
        bail!("must specify one of -f and -k");
    }
    if !["none", "server", "client"].contains(&args.dry_run.as_str()) {
        bail!(
            "Invalid dry-run value ({}). Must be \"none\", \"server\", or \"client\".",
            args.dry_run
        );
    }
    if args.all_clusters && !args.cluster.is_empty() {
        bail!("--all-clusters and --cluster cannot be used together");
    }
    let fleet = Fleet::connect(&args.karmada).await?;
    if !args.cluster.is_empty() {
        let registered = fleet.cluster_names().await?;
        let missing: Vec<String> = args
            .cluster
            .iter()
            .filter(|c| !registered.contains(c))
            .map(|c| format!("cluster {c} does not exist"))
            .collect();
        fail_on(&missing)?;
    }
    let objects = read_objects(&args.filename)?;
    if objects.is_empty() {
        bail!("no objects passed to apply");
    }
    let applier = Applier {
        served: served_resources(&fleet.client).await?,
        client: fleet.client.clone(),
        namespace: args
            .namespace
            .clone()
            .unwrap_or_else(|| fleet.default_namespace().to_owned()),
        explicit_namespace: args.namespace.is_some(),
        dry_run: &args.dry_run,
    };
    let propagate = args.all_clusters || !args.cluster.is_empty();
    let mut errors = Vec::new();
    for (source, object) in objects {
        let result = async {
            let (resource, object) = applier.place(&source, object)?;
            println!("{}", applier.apply(&resource, &object).await?);
            if propagate {
                let policy = propagation_policy(&object, resource.namespaced, &args.cluster);
                let (policy_resource, policy) = applier.place(&source, policy)?;
                println!("{}", applier.apply(&policy_resource, &policy).await?);
            }
            anyhow::Ok(())
        };
        if let Err(e) = result.await {
            errors.push(format!("{e:#}"));
        }
    }
    fail_on(&errors)
}

/// Runs `apply`, with kubectl's `error: ...` and exit status 1.
pub async fn run(args: ApplyArgs) -> anyhow::Result<()> {
    exit_on_error(apply(args).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_is_kubectls_three_way_json_merge_patch() {
        let original = json!({"metadata": {"labels": {"a": "1", "gone": "x"}},
            "spec": {"replicas": 2, "paused": false}});
        let modified = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"replicas": 2}});
        let current = json!({"metadata": {"labels": {"a": "1", "gone": "x", "other": "kept"}},
            "spec": {"replicas": 5, "paused": false, "minReadySeconds": 3}});
        // Changes to what the file sets, deletions of what the last apply set; what others
        // set (the `other` label, minReadySeconds) is left alone.
        assert_eq!(
            three_way(Some(&original), &modified, &current),
            json!({"metadata": {"labels": {"a": "2", "gone": null}},
                "spec": {"replicas": 2, "paused": null}})
        );
        assert_eq!(
            three_way(
                Some(&modified),
                &modified,
                &json!({"metadata": {"labels": {"a": "2"}}, "spec": {"replicas": 2, "x": 1}})
            ),
            json!({})
        );
        // Lists are replaced whole, unless the live list already has what the file sets.
        assert_eq!(
            three_way(None, &json!({"l": [1, 2]}), &json!({"l": [1]})),
            json!({"l": [1, 2]})
        );
        let file = json!({"containers": [{"name": "c", "image": "nginx"}]});
        let live =
            json!({"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always"}]});
        assert_eq!(three_way(Some(&file), &file, &live), json!({}));
        let changed = json!({"containers": [{"name": "c", "image": "nginx:2"}]});
        assert_eq!(three_way(Some(&file), &changed, &live), changed);
    }

    #[test]
    fn the_last_applied_configuration_is_the_object_as_kubectl_writes_it() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let (text, modified) = with_last_applied(&object).expect("annotated");
        assert_eq!(
            text,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c\"}}\n"
        );
        assert_eq!(
            modified["metadata"]["annotations"][LAST_APPLIED],
            json!(text)
        );
        // Applying the annotated object again gives the same annotation.
        assert_eq!(with_last_applied(&modified).expect("again").0, text);
    }

    #[test]
    fn generated_policies_select_the_object_as_karmadactls_do() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default"}});
        let p = propagation_policy(&object, true, &[]);
        assert_eq!(p["kind"], "PropagationPolicy");
        assert_eq!(
            p["metadata"]["name"],
            karmada_api::names::policy_name("default", "nginx", "apps/v1, Kind=Deployment")
        );
        assert_eq!(p["spec"]["placement"]["clusterAffinity"], json!({}));
        assert_eq!(
            p["spec"]["resourceSelectors"][0],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"})
        );
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        let p = propagation_policy(&ns, false, &["member1".to_owned()]);
        assert_eq!(p["kind"], "ClusterPropagationPolicy");
        assert_eq!(
            p["spec"]["placement"]["clusterAffinity"]["clusterNames"],
            json!(["member1"])
        );
    }
}
