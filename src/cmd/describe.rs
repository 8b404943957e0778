//! `karmada-rs describe` (karmadactl's pkg/karmadactl/describe over kubectl's
//! pkg/describe): objects of the control plane, or of a member through the cluster proxy,
//! laid out by kubectl's generic describer (the one kubectl uses for custom resources and
//! Karmada's kinds) with their Events. A resource template on the control plane also shows
//! where Karmada placed it: its policy, its binding, and each cluster's replicas and state.

use anyhow::bail;
use clap::Args;
use controllers::runtime::discovery::{ServedResource, served_resources};
use serde_json::Value;

use crate::cmd::fleet::{
    Fleet, KarmadaFlags, OperationScope, exit_on_error, fail_on, kube_message,
};
use crate::cmd::get::{group_resource, resolve, resource_path};
use crate::cmd::printer::{list_items, tabwriter_with};

/// `karmada-rs describe TYPE [NAME_PREFIX] | TYPE/NAME`.
#[derive(Args, Clone, Debug)]
pub struct DescribeArgs {
    /// `TYPE [NAME_PREFIX]` or `TYPE/NAME`.
    pub args: Vec<String>,
    /// Where to look: karmada (the control plane) or members (with --cluster).
    #[arg(
        short = 's',
        long,
        env = "KARMADA_RS_OPERATION_SCOPE",
        value_enum,
        default_value_t
    )]
    pub operation_scope: OperationScope,
    /// The member cluster, with --operation-scope members.
    #[arg(short = 'C', long, env = "KARMADA_RS_CLUSTER")]
    pub cluster: Option<String>,
    /// The namespace; the kubeconfig context's by default.
    #[arg(short = 'n', long, env = "KARMADA_RS_NAMESPACE")]
    pub namespace: Option<String>,
    /// Describe the objects of every namespace.
    #[arg(short = 'A', long, env = "KARMADA_RS_ALL_NAMESPACES")]
    pub all_namespaces: bool,
    /// Label selector (`-l key=value`).
    #[arg(short = 'l', long, env = "KARMADA_RS_SELECTOR")]
    pub selector: Option<String>,
    /// Show the objects' Events.
    #[arg(long, env = "KARMADA_RS_SHOW_EVENTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub show_events: bool,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// fatih/camelcase's Split: runs of lower case, upper case, digits and anything else, an
/// upper-case letter before lower case starting the next word.
fn camel_split(s: &str) -> Vec<String> {
    let class = |c: char| {
        if c.is_lowercase() {
            1
        } else if c.is_uppercase() {
            2
        } else if c.is_numeric() {
            3
        } else {
            4
        }
    };
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last = 0;
    for c in s.chars() {
        let k = class(c);
        match runs.last_mut() {
            Some(run) if k == last => run.push(c),
            _ => runs.push(vec![c]),
        }
        last = k;
    }
    for i in 0..runs.len().saturating_sub(1) {
        if runs[i][0].is_uppercase()
            && runs[i + 1][0].is_lowercase()
            && let Some(c) = runs[i].pop()
        {
            runs[i + 1].insert(0, c);
        }
    }
    runs.into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.into_iter().collect())
        .collect()
}

/// smartLabelFor: `creationTimestamp` → `Creation Timestamp`, `apiVersion` → `API Version`.
fn smart_label(field: &str) -> String {
    if field.chars().any(|c| !c.is_alphabetic() && c != '-') {
        return field.to_owned();
    }
    const ACRONYMS: [&str; 5] = ["API", "URL", "UID", "OSB", "GUID"];
    camel_split(field)
        .into_iter()
        .filter(|p| p != "_")
        .map(|p| {
            let upper = p.to_uppercase();
            if ACRONYMS.contains(&upper.as_str()) {
                upper
            } else {
                let mut c = p.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect())
                    .unwrap_or_default()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Go's `%v` of a JSON scalar.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            // %v of a float64 is %g: exponents from 1e21 and below 1e-4.
            if f != 0.0 && (f.abs() >= 1e21 || f.abs() < 1e-4) {
                format!("{f:e}").replace('e', "e+").replace("e+-", "e-")
            } else {
                f.to_string()
            }
        }
        other => other.to_string(),
    }
}

/// prefixWriter: two spaces per level.
fn write(out: &mut String, level: usize, text: &str) {
    out.push_str(&"  ".repeat(level));
    out.push_str(text);
}

/// printUnstructuredContent: fields sorted, maps and lists nested one level deeper.
fn content(
    out: &mut String,
    level: usize,
    map: &serde_json::Map<String, Value>,
    prefix: &str,
    skip: &[&str],
) {
    let mut fields: Vec<&String> = map.keys().collect();
    fields.sort();
    for field in fields {
        let path = format!("{prefix}.{field}");
        if skip.contains(&path.as_str()) {
            continue;
        }
        match &map[field] {
            Value::Object(inner) => {
                write(out, level, &format!("{}:\n", smart_label(field)));
                content(out, level + 1, inner, &path, skip);
            }
            Value::Array(items) => {
                write(out, level, &format!("{}:\n", smart_label(field)));
                for item in items {
                    match item {
                        Value::Object(inner) => content(out, level + 1, inner, &path, skip),
                        other => write(out, level + 1, &format!("{}\n", go_value(other))),
                    }
                }
            }
            scalar => write(
                out,
                level,
                &format!("{}:\t{}\n", smart_label(field), go_value(scalar)),
            ),
        }
    }
}

/// printLabelsMultiline.
fn labels(out: &mut String, title: &str, map: Option<&serde_json::Map<String, Value>>) {
    write(out, 0, &format!("{title}:\t"));
    let mut keys: Vec<&String> = map.map(|m| m.keys().collect()).unwrap_or_default();
    if keys.is_empty() {
        out.push_str("<none>\n");
        return;
    }
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i != 0 {
            out.push('\t');
        }
        let v = map.and_then(|m| m[*k].as_str()).unwrap_or_default();
        out.push_str(&format!("{k}={v}\n"));
    }
}

/// kubectl's maxAnnotationLen.
const MAX_ANNOTATION_LEN: usize = 140;

/// printAnnotationsMultiline: the last-applied configuration left out, long or multi-line
/// values on lines of their own, cut at the maximum length.
fn annotations(out: &mut String, map: Option<&serde_json::Map<String, Value>>) {
    write(out, 0, "Annotations:\t");
    let mut keys: Vec<&String> = map
        .map(|m| {
            m.keys()
                .filter(|k| *k != "kubectl.kubernetes.io/last-applied-configuration")
                .collect()
        })
        .unwrap_or_default();
    if keys.is_empty() {
        out.push_str("<none>\n");
        return;
    }
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i != 0 {
            out.push('\t');
        }
        let raw = map.and_then(|m| m[*k].as_str()).unwrap_or_default();
        let value = raw.strip_suffix('\n').unwrap_or(raw);
        if value.len() + k.len() + 2 > MAX_ANNOTATION_LEN || value.contains('\n') {
            out.push_str(&format!("{k}:\n"));
            for line in value.split('\n') {
                let shown = match line.char_indices().nth(MAX_ANNOTATION_LEN - 2) {
                    Some((at, _)) => format!("{}...", &line[..at]),
                    None => line.to_owned(),
                };
                out.push_str(&format!("\t  {shown}\n"));
            }
        } else {
            out.push_str(&format!("{k}: {value}\n"));
        }
    }
}

fn age(timestamp: Option<&str>, now: jiff::Timestamp) -> String {
    match timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) {
        Some(t) => apimachinery::table::duration::human_duration(now.duration_since(t)),
        None => "<unknown>".into(),
    }
}

/// DescribeEvents: oldest first (SortableEvents), with repeats counted.
fn events(out: &mut String, list: &[Value], now: jiff::Timestamp) {
    if list.is_empty() {
        write(out, 0, "Events:\t<none>\n");
        return;
    }
    let mut list: Vec<&Value> = list.iter().collect();
    let last_seen = |e: &Value| {
        e["lastTimestamp"]
            .as_str()
            .or(e["eventTime"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    list.sort_by_cached_key(|e| last_seen(e));
    write(out, 0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n");
    write(out, 1, "----\t------\t----\t----\t-------\n");
    for e in list {
        let first = match e["eventTime"].as_str() {
            Some(t) => age(Some(t), now),
            None => age(e["firstTimestamp"].as_str(), now),
        };
        let count = e["count"].as_i64().unwrap_or(0);
        let interval = if let Some(series) = e["series"].as_object() {
            format!(
                "{} (x{} over {first})",
                age(series.get("lastObservedTime").and_then(Value::as_str), now),
                series.get("count").and_then(Value::as_i64).unwrap_or(0)
            )
        } else if count > 1 {
            format!(
                "{} (x{count} over {first})",
                age(e["lastTimestamp"].as_str(), now)
            )
        } else {
            first
        };
        let source = match e["source"]["component"].as_str() {
            Some(c) if !c.is_empty() => c,
            _ => e["reportingComponent"].as_str().unwrap_or_default(),
        };
        write(
            out,
            1,
            &format!(
                "{}\t{}\t{interval}\t{source}\t{}\n",
                go_value(&e["type"]),
                go_value(&e["reason"]),
                e["message"].as_str().unwrap_or_default().trim()
            ),
        );
    }
}

/// Where Karmada placed a template: its binding's policy, clusters, replicas and state.
fn placement(out: &mut String, binding_kind: &str, binding: &Value) {
    let annotations = &binding["metadata"]["annotations"];
    let policy = match (
        annotations["propagationpolicy.karmada.io/namespace"].as_str(),
        annotations["propagationpolicy.karmada.io/name"].as_str(),
        annotations["clusterpropagationpolicy.karmada.io/name"].as_str(),
    ) {
        (Some(ns), Some(name), _) => format!("PropagationPolicy {ns}/{name}"),
        (_, _, Some(name)) => format!("ClusterPropagationPolicy {name}"),
        _ => "<none>".into(),
    };
    let binding_name = match binding["metadata"]["namespace"].as_str() {
        Some(ns) => format!(
            "{ns}/{}",
            binding["metadata"]["name"].as_str().unwrap_or_default()
        ),
        None => binding["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    };
    write(out, 0, "Placement:\n");
    write(out, 1, &format!("Policy:\t{policy}\n"));
    write(
        out,
        1,
        &format!("Binding:\t{binding_kind} {binding_name}\n"),
    );
    let conditions: Vec<String> = binding["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={}",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let conditions = if conditions.is_empty() {
        "<none>".to_owned()
    } else {
        conditions.join(", ")
    };
    write(out, 1, &format!("Conditions:\t{conditions}\n"));
    let clusters = binding["spec"]["clusters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if clusters.is_empty() {
        write(out, 1, "Clusters:\t<none>\n");
        return;
    }
    write(
        out,
        1,
        "Clusters:\n    Cluster\tReplicas\tApplied\tHealth\tReady\n",
    );
    write(out, 2, "-------\t--------\t-------\t------\t-----\n");
    let aggregated = binding["status"]["aggregatedStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in clusters {
        let name = c["name"].as_str().unwrap_or_default();
        let status = aggregated.iter().find(|a| a["clusterName"] == name);
        let replicas = c["replicas"]
            .as_i64()
            .map_or("-".to_owned(), |r| r.to_string());
        let applied = status.map_or("<unknown>".to_owned(), |s| {
            s["applied"].as_bool().unwrap_or(false).to_string()
        });
        let health = status
            .and_then(|s| s["health"].as_str())
            .unwrap_or("<unknown>");
        let ready = status
            .and_then(|s| s["status"]["readyReplicas"].as_i64())
            .map_or("-".to_owned(), |r| r.to_string());
        write(
            out,
            2,
            &format!("{name}\t{replicas}\t{applied}\t{health}\t{ready}\n"),
        );
    }
}

struct Describer {
    client: kube::Client,
    control_plane: bool,
    now: jiff::Timestamp,
}

impl Describer {
    async fn get(&self, path: String) -> Result<Value, kube::Error> {
        crate::cmd::fleet::send(&self.client, http::Request::get(path), None).await
    }

    /// The Events about the object (searchEvents: by name, namespace, kind and uid).
    async fn events_of(&self, object: &Value) -> Vec<Value> {
        let meta = &object["metadata"];
        let selector = format!(
            "involvedObject.name={},involvedObject.namespace={},involvedObject.kind={},involvedObject.uid={}",
            meta["name"].as_str().unwrap_or_default(),
            meta["namespace"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
            meta["uid"].as_str().unwrap_or_default()
        );
        // A cluster-scoped object's Events are searched in every namespace, as kubectl's
        // client.Events("") does.
        let collection = match meta["namespace"].as_str() {
            Some(ns) if !ns.is_empty() => format!("/api/v1/namespaces/{ns}/events"),
            _ => "/api/v1/events".to_owned(),
        };
        let path = format!(
            "{collection}?fieldSelector={}",
            crate::cmd::get::encode(&selector)
        );
        match self.get(path).await {
            Ok(list) => list["items"].as_array().cloned().unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "listing the Events failed");
                Vec::new()
            }
        }
    }

    /// The template's (Cluster)ResourceBinding, where Karmada made one.
    async fn binding_of(&self, object: &Value) -> Option<(&'static str, Value)> {
        let kind = object["kind"].as_str()?;
        let name = karmada_api::names::binding_name(kind, object["metadata"]["name"].as_str()?);
        let (binding_kind, path) = match object["metadata"]["namespace"].as_str() {
            Some(ns) => (
                "ResourceBinding",
                format!("/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings/{name}"),
            ),
            None => (
                "ClusterResourceBinding",
                format!("/apis/work.karmada.io/v1alpha2/clusterresourcebindings/{name}"),
            ),
        };
        let binding = self.get(path).await.ok()?;
        // Only the binding made for this very object.
        let reference = &binding["spec"]["resource"];
        (reference["kind"] == object["kind"] && reference["name"] == object["metadata"]["name"])
            .then_some((binding_kind, binding))
    }

    async fn describe(&self, object: &Value, show_events: bool) -> String {
        let meta = &object["metadata"];
        let mut out = String::new();
        write(
            &mut out,
            0,
            &format!("Name:\t{}\n", meta["name"].as_str().unwrap_or_default()),
        );
        write(
            &mut out,
            0,
            &format!(
                "Namespace:\t{}\n",
                meta["namespace"].as_str().unwrap_or_default()
            ),
        );
        labels(&mut out, "Labels", meta["labels"].as_object());
        annotations(&mut out, meta["annotations"].as_object());
        if let Some(map) = object.as_object() {
            content(
                &mut out,
                0,
                map,
                "",
                &[
                    ".metadata.managedFields",
                    ".metadata.name",
                    ".metadata.namespace",
                    ".metadata.labels",
                    ".metadata.annotations",
                ],
            );
        }
        if self.control_plane
            && let Some((kind, binding)) = self.binding_of(object).await
        {
            placement(&mut out, kind, &binding);
        }
        if show_events {
            events(&mut out, &self.events_of(object).await, self.now);
        }
        tabwriter_with(&out, 0, 2)
    }
}

async fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    let fleet = Fleet::connect(&args.karmada).await?;
    let client = match (args.operation_scope, &args.cluster) {
        (OperationScope::All, _) => bail!("not support operation scope: all"),
        (OperationScope::Members, None) => bail!("must specify a member cluster"),
        (OperationScope::Members, Some(c)) => {
            fleet.targets(std::slice::from_ref(c)).await?;
            fleet.member(c)?
        }
        (OperationScope::Karmada, _) => fleet.client.clone(),
    };
    let (kind, names): (String, Vec<String>) = match args.args.as_slice() {
        [] => bail!(
            "You must specify the type of resource to describe. Use \"karmada-rs api-resources\" for a complete list of supported resources."
        ),
        [one] if one.contains('/') => {
            let (k, n) = one.split_once('/').unwrap_or_default();
            (k.to_owned(), vec![n.to_owned()])
        }
        [kind, rest @ ..] => (kind.clone(), rest.to_vec()),
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| fleet.default_namespace().to_owned());
    let served = served_resources(&client).await?;
    let resources: Vec<ServedResource> = resolve(&served, &kind)?;
    let describer = Describer {
        client,
        control_plane: args.operation_scope == OperationScope::Karmada,
        now: jiff::Timestamp::now(),
    };
    let ns = (!args.all_namespaces).then_some(namespace.as_str());
    let mut objects: Vec<Value> = Vec::new();
    let mut errors = Vec::new();
    for resource in &resources {
        if names.is_empty() {
            let mut path = resource_path(resource, ns, None);
            if let Some(sel) = &args.selector {
                path.push_str(&format!("?labelSelector={}", crate::cmd::get::encode(sel)));
            }
            let list = describer
                .get(path)
                .await
                .map_err(|e| anyhow::anyhow!(kube_message(&e)))?;
            objects.extend(list_items(&list));
            continue;
        }
        for name in &names {
            match describer
                .get(resource_path(resource, Some(&namespace), Some(name)))
                .await
            {
                Ok(o) => objects.push(o),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    // kubectl describe NAME_PREFIX: every object whose name starts so.
                    let list = describer
                        .get(resource_path(resource, Some(&namespace), None))
                        .await
                        .map_err(|e| anyhow::anyhow!(kube_message(&e)))?;
                    let found: Vec<Value> = list_items(&list)
                        .filter(|o| {
                            o["metadata"]["name"]
                                .as_str()
                                .is_some_and(|n| n.starts_with(name.as_str()))
                        })
                        .collect();
                    if found.is_empty() {
                        let plural = group_resource(resource);
                        errors.push(format!(
                            "Error from server (NotFound): {plural} \"{name}\" not found"
                        ));
                    }
                    objects.extend(found);
                }
                Err(e) => errors.push(kube_message(&e)),
            }
        }
    }
    if objects.is_empty() && errors.is_empty() {
        match ns {
            Some(ns) if resources.iter().all(|r| r.namespaced) => {
                eprintln!("No resources found in {ns} namespace.")
            }
            _ => eprintln!("No resources found"),
        }
    }
    let mut first = true;
    for o in &objects {
        let text = describer.describe(o, args.show_events).await;
        if first {
            print!("{text}");
            first = false;
        } else {
            print!("\n\n{text}");
        }
    }
    fail_on(&errors)
}

/// Runs `describe`, with kubectl's `error: ...` and exit status 1.
pub async fn run(args: DescribeArgs) -> anyhow::Result<()> {
    exit_on_error(describe(args).await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_labels_are_kubectls_smart_labels() {
        assert_eq!(smart_label("creationTimestamp"), "Creation Timestamp");
        assert_eq!(smart_label("apiVersion"), "API Version");
        assert_eq!(smart_label("clusterIP"), "Cluster IP");
        assert_eq!(smart_label("uid"), "UID");
        assert_eq!(smart_label("PDFLoader"), "PDF Loader");
        assert_eq!(smart_label("v1beta1"), "v1beta1");
        assert_eq!(smart_label("foo-bar"), "Foo - Bar");
    }

    #[test]
    fn objects_are_described_as_kubectls_generic_describer_does() {
        let object = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                "labels": {"b": "2", "a": "1"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"},
                "managedFields": [{"manager": "kubectl"}]},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "priority": 0, "placement": {"clusterAffinity": {"clusterNames": ["m1", "m2"]}}}});
        let mut out = String::new();
        write(&mut out, 0, "Name:\tp\n");
        write(&mut out, 0, "Namespace:\tdefault\n");
        labels(&mut out, "Labels", object["metadata"]["labels"].as_object());
        annotations(&mut out, object["metadata"]["annotations"].as_object());
        content(
            &mut out,
            0,
            object.as_object().expect("map"),
            "",
            &[
                ".metadata.managedFields",
                ".metadata.name",
                ".metadata.namespace",
                ".metadata.labels",
                ".metadata.annotations",
            ],
        );
        events(&mut out, &[], jiff::Timestamp::now());
        assert_eq!(
            tabwriter_with(&out, 0, 2),
            "Name:         p
Namespace:    default
Labels:       a=1
              b=2
Annotations:  note: x
API Version:  policy.karmada.io/v1alpha1
Kind:         PropagationPolicy
Metadata:
  UID:  u1
Spec:
  Placement:
    Cluster Affinity:
      Cluster Names:
        m1
        m2
  Priority:  0
  Resource Selectors:
    API Version:  apps/v1
    Kind:         Deployment
Events:           <none>
"
        );
    }

    #[test]
    fn long_annotations_go_on_lines_of_their_own() {
        let long = "x".repeat(200);
        let mut out = String::new();
        annotations(&mut out, json!({"k": long}).as_object());
        assert_eq!(
            out,
            format!("Annotations:\tk:\n\t  {}...\n", "x".repeat(138))
        );
    }
}
