//! `karmada-rs get` (karmadactl's pkg/karmadactl/get): objects of the control plane and of
//! member clusters in one listing. Tables come from each server (`as=Table`), with karmadactl's
//! `CLUSTER` column after the name and `ADOPTION` last (`Y` when the member's object carries
//! `karmada.io/managed=true`, `N` when not, `-` for the control plane's own).

use anyhow::bail;
use clap::Args;
use controllers::runtime::discovery::{ServedResource, served_resources};
use futures::future::join_all;
use serde_json::{Value, json};

use crate::cmd::fleet::{
    Fleet, KarmadaFlags, OperationScope, exit_on_error, fail_on, kube_message,
};
use crate::cmd::printer::{self, Column, Output, Table, TableOptions};

/// The label karmada puts on what it creates in members (util.ManagedByKarmadaLabel).
const MANAGED_BY_KARMADA: &str = "karmada.io/managed";

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// karmadactl's chunk size for lists.
const CHUNK: u32 = 500;

/// `karmada-rs get TYPE[,TYPE...] [NAME...] | TYPE/NAME...`.
#[derive(Args, Clone, Debug)]
pub struct GetArgs {
    /// `TYPE [NAME...]`, `TYPE,TYPE`, or `TYPE/NAME...`.
    pub args: Vec<String>,
    /// Output format: wide, json, yaml, name, or jsonpath=TEMPLATE.
    #[arg(short = 'o', long, env = "KARMADA_RS_OUTPUT", default_value = "")]
    pub output: String,
    /// Where to look: karmada (the control plane), members, or all.
    #[arg(
        short = 's',
        long,
        env = "KARMADA_RS_OPERATION_SCOPE",
        value_enum,
        default_value_t
    )]
    pub operation_scope: OperationScope,
    /// Member clusters to look in (with --operation-scope members or all); every registered
    /// one by default.
    #[arg(short = 'C', long, env = "KARMADA_RS_CLUSTERS", value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// The namespace; the kubeconfig context's by default.
    #[arg(short = 'n', long, env = "KARMADA_RS_NAMESPACE")]
    pub namespace: Option<String>,
    /// List the objects of every namespace.
    #[arg(short = 'A', long, env = "KARMADA_RS_ALL_NAMESPACES")]
    pub all_namespaces: bool,
    /// Label selector (`-l key=value`).
    #[arg(short = 'l', long, env = "KARMADA_RS_LABELS")]
    pub labels: Option<String>,
    /// Exit successfully when a named object does not exist.
    #[arg(long, env = "KARMADA_RS_IGNORE_NOT_FOUND")]
    pub ignore_not_found: bool,
    /// Print the labels as the last column.
    #[arg(long, env = "KARMADA_RS_SHOW_LABELS")]
    pub show_labels: bool,
    /// Print tables without their header.
    #[arg(long, env = "KARMADA_RS_NO_HEADERS")]
    pub no_headers: bool,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// One resource to read, with the names asked for (none: a list).
#[derive(Clone, Debug)]
struct Request {
    resource: ServedResource,
    names: Vec<String>,
}

/// What one server answered for one request.
struct Answer {
    cluster: String,
    control_plane: bool,
    resource: ServedResource,
    body: Answered,
}

enum Answered {
    Table(Table),
    Objects(Vec<Value>),
}

/// The argument forms of kubectl's ResourceTypeOrNameArgs: types with names, or TYPE/NAME.
fn split_args(args: &[String]) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let Some(first) = args.first() else {
        bail!(
            "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'"
        );
    };
    if args.iter().any(|a| a.contains('/')) {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for a in args {
            let Some((kind, name)) = a
                .split_once('/')
                .filter(|(k, n)| !k.is_empty() && !n.is_empty())
            else {
                if !a.contains('/') {
                    bail!(
                        "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'karmada-rs get resource/<resource_name>' instead of 'karmada-rs get resource resource/<resource_name>'"
                    );
                }
                bail!("arguments in resource/name form must have a single resource and name");
            };
            match out.iter_mut().find(|(k, _)| k == kind) {
                Some((_, names)) => names.push(name.to_owned()),
                None => out.push((kind.to_owned(), vec![name.to_owned()])),
            }
        }
        return Ok(out);
    }
    let names = args[1..].to_vec();
    if first.contains(',') && !names.is_empty() {
        bail!(
            "arguments in resource/name form may not have more than one slash, and names cannot be given for several types: {first}"
        );
    }
    Ok(first
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| (t.to_owned(), names.clone()))
        .collect())
}

/// kubectl's RESTMapper lookup: plural, singular, short name or kind, optionally
/// `.group` or `.version.group` qualified; a category (such as `all`) names its members.
pub(crate) fn resolve(served: &[ServedResource], arg: &str) -> anyhow::Result<Vec<ServedResource>> {
    let arg_l = arg.to_lowercase();
    let names_match = |r: &ServedResource, name: &str| {
        r.plural == name
            || r.singular == name
            || r.kind.to_lowercase() == name
            || r.short_names.iter().any(|s| s == name)
    };
    // Unqualified first, then `name.group`, then `name.version.group`.
    let mut found: Vec<&ServedResource> =
        served.iter().filter(|r| names_match(r, &arg_l)).collect();
    if let (true, Some((name, rest))) = (found.is_empty(), arg_l.split_once('.')) {
        found = served
            .iter()
            .filter(|r| names_match(r, name))
            .filter(|r| {
                r.group == rest
                    || rest
                        .split_once('.')
                        .is_some_and(|(v, g)| r.version == v && r.group == g)
            })
            .collect();
    }
    if found.is_empty() {
        let category: Vec<ServedResource> = served
            .iter()
            .filter(|r| r.categories.contains(&arg_l))
            .cloned()
            .collect();
        if !category.is_empty() {
            return Ok(category);
        }
        bail!("the server doesn't have a resource type \"{arg}\"");
    }
    // The same name in several groups: kube's priority puts the core and kube groups first;
    // the first served is taken, as the discovery order gives it.
    Ok(vec![found[0].clone()])
}

pub(crate) fn resource_path(
    r: &ServedResource,
    namespace: Option<&str>,
    name: Option<&str>,
) -> String {
    let mut path = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    if let (true, Some(ns)) = (r.namespaced, namespace) {
        path.push_str(&format!("/namespaces/{ns}"));
    }
    path.push('/');
    path.push_str(&r.plural);
    if let Some(n) = name {
        path.push('/');
        path.push_str(n);
    }
    path
}

/// `group/version, Resource=plural`, the order karmadactl sorts kinds in.
fn gvr_string(r: &ServedResource) -> String {
    format!("{}/{}, Resource={}", r.group, r.version, r.plural)
}

/// `plural.group` as the server's NotFound message names a resource.
pub(crate) fn group_resource(r: &ServedResource) -> String {
    if r.group.is_empty() {
        r.plural.clone()
    } else {
        format!("{}.{}", r.plural, r.group)
    }
}

/// `kind.group` lowercased, as printed before names when kinds are mixed.
fn kind_group(r: &ServedResource) -> String {
    if r.group.is_empty() {
        r.kind.to_lowercase()
    } else {
        format!("{}.{}", r.kind, r.group).to_lowercase()
    }
}

struct Query<'a> {
    args: &'a GetArgs,
    output: &'a Output,
    namespace: String,
}

impl Query<'_> {
    fn namespace(&self) -> Option<&str> {
        (!self.args.all_namespaces).then_some(self.namespace.as_str())
    }

    async fn send(&self, client: &kube::Client, path: String) -> Result<Value, kube::Error> {
        let accept = if self.output.is_table() {
            TABLE_ACCEPT
        } else {
            "application/json"
        };
        let req = http::Request::get(path).header(http::header::ACCEPT, accept);
        crate::cmd::fleet::send(client, req, None).await
    }

    /// Reads every request from one server; errors name the cluster as karmadactl's do.
    async fn read(
        &self,
        client: kube::Client,
        cluster: String,
        control_plane: bool,
        args: &[(String, Vec<String>)],
    ) -> (Vec<Answer>, Vec<String>) {
        let mut errors = Vec::new();
        if !control_plane {
            let probe = http::Request::get("/api").body(Vec::new());
            let probed = match probe {
                Ok(req) => client.request_text(req).await.map(|_| ()),
                Err(e) => Err(kube::Error::HttpError(e)),
            };
            if let Err(e) = probed {
                errors.push(format!(
                    "basic connection test to cluster({cluster}) failed, please check authorization or network: {}",
                    kube_message(&e)
                ));
                return (Vec::new(), errors);
            }
        }
        let served = match served_resources(&client).await {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("cluster({cluster}): {e}"));
                return (Vec::new(), errors);
            }
        };
        let mut requests = Vec::new();
        for (kind, names) in args {
            match resolve(&served, kind) {
                Ok(rs) => requests.extend(rs.into_iter().map(|resource| Request {
                    resource,
                    names: names.clone(),
                })),
                Err(e) => {
                    errors.push(format!("cluster({cluster}): {e}"));
                    return (Vec::new(), errors);
                }
            }
        }
        let mut answers = Vec::new();
        for req in requests {
            let body = if req.names.is_empty() {
                self.list(&client, &req.resource).await
            } else {
                self.get_named(&client, &req).await
            };
            match body {
                Ok(body) => answers.push(Answer {
                    cluster: cluster.clone(),
                    control_plane,
                    resource: req.resource,
                    body,
                }),
                Err(e) => errors.push(format!("cluster({cluster}): {e}")),
            }
        }
        (answers, errors)
    }

    async fn list(&self, client: &kube::Client, r: &ServedResource) -> anyhow::Result<Answered> {
        let mut table: Option<Table> = None;
        let mut objects = Vec::new();
        let mut continue_token = String::new();
        loop {
            let mut query = vec![format!("limit={CHUNK}")];
            if let Some(l) = &self.args.labels {
                query.push(format!("labelSelector={}", encode(l)));
            }
            if !continue_token.is_empty() {
                query.push(format!("continue={}", encode(&continue_token)));
            }
            let path = format!(
                "{}?{}",
                resource_path(r, self.namespace(), None),
                query.join("&")
            );
            let page = self
                .send(client, path)
                .await
                .map_err(|e| anyhow::anyhow!(kube_message(&e)))?;
            continue_token = page["metadata"]["continue"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if self.output.is_table() {
                add_rows(&mut table, &page)?;
            } else {
                objects.extend(printer::list_items(&page));
            }
            if continue_token.is_empty() {
                break;
            }
        }
        Ok(match table {
            Some(t) => Answered::Table(t),
            None => Answered::Objects(objects),
        })
    }

    async fn get_named(&self, client: &kube::Client, req: &Request) -> anyhow::Result<Answered> {
        let mut table: Option<Table> = None;
        let mut objects = Vec::new();
        let mut missing = Vec::new();
        for name in &req.names {
            let path = resource_path(&req.resource, Some(&self.namespace), Some(name));
            let answer = match self.send(client, path).await {
                Ok(a) => a,
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    if !self.args.ignore_not_found {
                        missing.push(format!(
                            "{} \"{name}\" not found",
                            group_resource(&req.resource)
                        ));
                    }
                    continue;
                }
                Err(e) => bail!(kube_message(&e)),
            };
            if self.output.is_table() {
                add_rows(&mut table, &answer)?;
            } else {
                objects.push(answer);
            }
        }
        if !missing.is_empty() {
            bail!(missing.join("\n"));
        }
        Ok(match table {
            Some(t) => Answered::Table(t),
            None if self.output.is_table() => Answered::Table(Table::default()),
            None => Answered::Objects(objects),
        })
    }
}

/// Adds a Table answer's rows to those read so far (the first answer gives the columns).
fn add_rows(table: &mut Option<Table>, answer: &Value) -> anyhow::Result<()> {
    let t = Table::from_json(answer)?;
    match table {
        Some(have) => have.rows.extend(t.rows),
        None => *table = Some(t),
    }
    Ok(())
}

/// Percent-encodes a query value.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `get`: prints what it found, then fails with every cluster's errors.
pub async fn get(args: GetArgs) -> anyhow::Result<()> {
    let output = Output::parse(&args.output)?;
    if args.show_labels && !output.is_table() {
        bail!(
            "--show-labels option cannot be used with {} printer",
            args.output
        );
    }
    let requested = split_args(&args.args)?;
    let fleet = Fleet::connect(&args.karmada).await?;
    let members = if args.operation_scope.has_members() {
        fleet.targets(&args.clusters).await?
    } else {
        Vec::new()
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| fleet.default_namespace().to_owned());
    let query = Query {
        args: &args,
        output: &output,
        namespace,
    };

    let mut targets: Vec<(kube::Client, String, bool)> = Vec::new();
    if args.operation_scope.has_karmada() {
        targets.push((fleet.client.clone(), "Karmada".into(), true));
    }
    for m in &members {
        targets.push((fleet.member(m)?, m.clone(), false));
    }
    let answers = join_all(
        targets
            .into_iter()
            .map(|(client, cluster, cp)| query.read(client, cluster, cp, &requested)),
    )
    .await;
    let mut all = Vec::new();
    let mut errors = Vec::new();
    for (a, e) in answers {
        all.extend(a);
        errors.extend(e);
    }

    let mut stdout = String::new();
    if output.is_table() {
        stdout = print_tables(&query, &mut all);
        if stdout.is_empty() && errors.is_empty() && !args.ignore_not_found {
            if !args.operation_scope.has_karmada() && members.is_empty() {
                eprintln!("No member Clusters found in Karmada control plane");
            } else if !args.all_namespaces && all.iter().all(|a| a.resource.namespaced) {
                eprintln!("No resources found in {} namespace.", query.namespace);
            } else {
                eprintln!("No resources found");
            }
        }
    } else {
        let single =
            requested.len() == 1 && requested[0].1.len() == 1 && !args.args[0].contains(',');
        let mut by_cluster: Vec<(String, Vec<Value>)> = Vec::new();
        for a in all {
            let Answered::Objects(objs) = a.body else {
                continue;
            };
            match by_cluster.iter_mut().find(|(c, _)| *c == a.cluster) {
                Some((_, have)) => have.extend(objs),
                None => by_cluster.push((a.cluster, objs)),
            }
        }
        for (_, objs) in by_cluster {
            let printed = match objs.as_slice() {
                [one] if single => printer::print_object(&output, one)?,
                [] if args.ignore_not_found => continue,
                _ => printer::print_object(
                    &output,
                    &json!({"apiVersion": "v1", "kind": "List", "items": objs,
                        "metadata": {"resourceVersion": "", "selfLink": ""}}),
                )?,
            };
            stdout.push_str(&printed);
        }
    }
    print!("{stdout}");
    fail_on(&errors)
}

/// karmadactl's printObjs: one table per resource (sorted by group, version and resource),
/// the control plane's rows first, a blank line between tables.
fn print_tables(query: &Query, answers: &mut [Answer]) -> String {
    answers.sort_by_key(|a| gvr_string(&a.resource));
    let with_kind = {
        let first = answers
            .first()
            .map(|a| (&a.resource.group, &a.resource.kind));
        answers
            .iter()
            .any(|a| Some((&a.resource.group, &a.resource.kind)) != first)
    };
    let mut out = String::new();
    // karmadactl turns ADOPTION into a wide-only column once it has printed pods, and it
    // stays so for the kinds after them.
    let mut adoption_priority = 0;
    let mut i = 0;
    while i < answers.len() {
        let resource = answers[i].resource.clone();
        let mut j = i;
        let mut merged = Table::default();
        while j < answers.len() && answers[j].resource == resource {
            if let Answered::Table(t) = &answers[j].body {
                if merged.columns.is_empty() {
                    merged.columns = t.columns.clone();
                }
                for row in &t.rows {
                    let mut row = row.clone();
                    let at = usize::from(!row.cells.is_empty());
                    row.cells.insert(at, json!(answers[j].cluster));
                    let adoption = if answers[j].control_plane {
                        "-"
                    } else if row.object["metadata"]["labels"][MANAGED_BY_KARMADA] == "true" {
                        "Y"
                    } else {
                        "N"
                    };
                    row.cells.push(json!(adoption));
                    merged.rows.push(row);
                }
            }
            j += 1;
        }
        if resource.plural == "pods" && resource.group.is_empty() {
            adoption_priority = 1;
        }
        if !merged.columns.is_empty() {
            let at = usize::from(!merged.columns.is_empty());
            merged.columns.insert(
                at,
                Column {
                    name: "CLUSTER".into(),
                    priority: 0,
                },
            );
            merged.columns.push(Column {
                name: "ADOPTION".into(),
                priority: adoption_priority,
            });
        }
        if !merged.rows.is_empty() {
            let options = TableOptions {
                wide: matches!(query.output, Output::Table { wide: true }),
                no_headers: query.args.no_headers,
                with_namespace: query.args.all_namespaces && resource.namespaced,
                show_labels: query.args.show_labels,
                with_kind: with_kind.then(|| kind_group(&resource)),
            };
            if !out.is_empty() && !query.args.no_headers {
                out.push('\n');
            }
            out.push_str(&printer::tabulate(&printer::table_rows(&merged, &options)));
        }
        i = j;
    }
    out
}

/// Runs `get`, printing errors as karmadactl does (`error: ...`, exit status 1).
pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    exit_on_error(get(args).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(plural: &str, group: &str, kind: &str, short: &[&str]) -> ServedResource {
        ServedResource {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            verbs: vec!["get".into(), "list".into()],
            status_subresource: false,
            singular: kind.to_lowercase(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: vec!["all".into()],
        }
    }

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn resource_arguments_take_kubectls_forms() {
        let one = |a: &[&str]| split_args(&strings(a)).expect("valid");
        assert_eq!(
            one(&["deploy", "a", "b"]),
            [("deploy".into(), strings(&["a", "b"]))]
        );
        assert_eq!(
            one(&["deploy,svc"]),
            [("deploy".into(), vec![]), ("svc".into(), vec![])]
        );
        assert_eq!(
            one(&["deploy/a", "svc/b", "deploy/c"]),
            [
                ("deploy".into(), strings(&["a", "c"])),
                ("svc".into(), strings(&["b"]))
            ]
        );
        assert!(split_args(&strings(&["deploy", "svc/b"])).is_err());
        assert!(
            split_args(&[])
                .expect_err("empty")
                .to_string()
                .starts_with("You must provide one or more resources")
        );
    }

    #[test]
    fn types_resolve_as_kubectls_rest_mapper_resolves_them() {
        let served = vec![
            served("deployments", "apps", "Deployment", &["deploy"]),
            served("pods", "", "Pod", &["po"]),
        ];
        let plural = |a: &str| -> Vec<String> {
            resolve(&served, a)
                .expect(a)
                .into_iter()
                .map(|r| r.plural)
                .collect()
        };
        for arg in [
            "deploy",
            "deployment",
            "deployments",
            "Deployment",
            "deployments.apps",
            "deploy.v1.apps",
        ] {
            assert_eq!(plural(arg), ["deployments"], "{arg}");
        }
        assert_eq!(plural("all"), ["deployments", "pods"]);
        assert_eq!(
            resolve(&served, "widgets")
                .expect_err("unknown")
                .to_string(),
            "the server doesn't have a resource type \"widgets\""
        );
        assert!(resolve(&served, "deployments.batch").is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
    }
}
