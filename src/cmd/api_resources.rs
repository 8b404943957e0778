//! `karmada-rs api-resources` and `api-versions` (karmadactl's pkg/karmadactl/apiresources,
//! which runs kubectl's pkg/cmd/apiresources against the control plane or, with
//! `--operation-scope members --cluster NAME`, a member through the cluster proxy).

use anyhow::bail;
use clap::Args;
use controllers::runtime::discovery::{ServedResource, served_resources};
use serde_json::Value;

use crate::cmd::fleet::{Fleet, KarmadaFlags, OperationScope, exit_on_error};
use crate::cmd::printer::tabulate;

/// Where the discovery comes from.
#[derive(Args, Clone, Debug)]
pub struct ScopeFlags {
    /// Where to look: karmada (the control plane) or members (with --cluster).
    #[arg(
        short = 's',
        long,
        env = "KARMADA_RS_OPERATION_SCOPE",
        value_enum,
        default_value_t
    )]
    pub operation_scope: OperationScope,
    /// The member cluster to ask, with --operation-scope members.
    #[arg(long, env = "KARMADA_RS_CLUSTER")]
    pub cluster: Option<String>,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

impl ScopeFlags {
    /// The client of the server asked, checked as karmadactl's Validate checks the flags.
    async fn client(&self) -> anyhow::Result<kube::Client> {
        let fleet = Fleet::connect(&self.karmada).await?;
        match (self.operation_scope, &self.cluster) {
            (OperationScope::All, _) => bail!("not support operation scope: all"),
            (OperationScope::Members, None) => bail!("must specify a member cluster"),
            (OperationScope::Members, Some(c)) => {
                fleet.targets(std::slice::from_ref(c)).await?;
                fleet.member(c)
            }
            (OperationScope::Karmada, _) => Ok(fleet.client),
        }
    }
}

/// `karmada-rs api-resources`.
#[derive(Args, Clone, Debug)]
pub struct ApiResourcesArgs {
    /// Output format: wide or name.
    #[arg(short = 'o', long, env = "KARMADA_RS_OUTPUT", default_value = "")]
    pub output: String,
    /// Print without the header.
    #[arg(long, env = "KARMADA_RS_NO_HEADERS")]
    pub no_headers: bool,
    /// Limit to resources in the specified API group.
    #[arg(long, env = "KARMADA_RS_API_GROUP")]
    pub api_group: Option<String>,
    /// If false, non-namespaced resources will be returned, otherwise namespaced ones.
    #[arg(long, env = "KARMADA_RS_NAMESPACED", num_args = 0..=1, default_missing_value = "true")]
    pub namespaced: Option<bool>,
    /// Limit to resources that support the specified verbs.
    #[arg(long, env = "KARMADA_RS_VERBS", value_delimiter = ',')]
    pub verbs: Vec<String>,
    /// Sort by `name` or `kind`.
    #[arg(long, env = "KARMADA_RS_SORT_BY", default_value = "")]
    pub sort_by: String,
    /// Use the cached list of resources if available (none is kept: the server is always
    /// asked).
    #[arg(long, env = "KARMADA_RS_CACHED")]
    pub cached: bool,
    /// Limit to resources that belong to the specified categories.
    #[arg(long, env = "KARMADA_RS_CATEGORIES", value_delimiter = ',')]
    pub categories: Vec<String>,
    #[command(flatten)]
    pub scope: ScopeFlags,
}

/// The resources kubectl's RunAPIResources prints, filtered and sorted as it does.
fn select(mut served: Vec<ServedResource>, args: &ApiResourcesArgs) -> Vec<ServedResource> {
    served.retain(|r| {
        !r.verbs.is_empty()
            && args.api_group.as_ref().is_none_or(|g| *g == r.group)
            && args.namespaced.is_none_or(|n| n == r.namespaced)
            && args.verbs.iter().all(|v| r.verbs.contains(v))
            && args.categories.iter().all(|c| r.categories.contains(c))
    });
    // sort.Stable on the chosen field, the name breaking ties.
    served.sort_by(|a, b| {
        let (x, y) = match args.sort_by.as_str() {
            "name" => (&a.plural, &b.plural),
            "kind" => (&a.kind, &b.kind),
            _ => (&a.group, &b.group),
        };
        x.cmp(y).then_with(|| a.plural.cmp(&b.plural))
    });
    served
}

fn render(resources: &[ServedResource], args: &ApiResourcesArgs) -> String {
    if args.output == "name" {
        return resources
            .iter()
            .map(|r| match r.group.as_str() {
                "" => format!("{}\n", r.plural),
                g => format!("{}.{g}\n", r.plural),
            })
            .collect();
    }
    let wide = args.output == "wide";
    let mut rows = Vec::new();
    if !args.no_headers {
        let mut header = vec!["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"];
        if wide {
            header.extend(["VERBS", "CATEGORIES"]);
        }
        rows.push(header.into_iter().map(str::to_owned).collect());
    }
    for r in resources {
        let mut row = vec![
            r.plural.clone(),
            r.short_names.join(","),
            r.api_version(),
            r.namespaced.to_string(),
            r.kind.clone(),
        ];
        if wide {
            row.push(r.verbs.join(","));
            row.push(r.categories.join(","));
        }
        rows.push(row);
    }
    tabulate(&rows)
}

async fn api_resources(args: ApiResourcesArgs) -> anyhow::Result<()> {
    if !["", "wide", "name"].contains(&args.output.as_str()) {
        bail!("--output {} is not available", args.output);
    }
    if !["", "name", "kind"].contains(&args.sort_by.as_str()) {
        bail!("--sort-by accepts only name or kind");
    }
    let client = args.scope.client().await?;
    let served = served_resources(&client).await?;
    print!("{}", render(&select(served, &args), &args));
    Ok(())
}

/// `karmada-rs api-versions`.
#[derive(Args, Clone, Debug)]
pub struct ApiVersionsArgs {
    #[command(flatten)]
    pub scope: ScopeFlags,
}

/// Every group/version the server serves, sorted (metav1.ExtractGroupVersions).
async fn api_versions(args: ApiVersionsArgs) -> anyhow::Result<()> {
    let client = args.scope.client().await?;
    let get = |path: &'static str| {
        let client = client.clone();
        async move {
            let req = http::Request::get(path).body(Vec::new())?;
            anyhow::Ok(client.request::<Value>(req).await?)
        }
    };
    let fetched = async {
        let (core, groups) = futures::try_join!(get("/api"), get("/apis"))?;
        let mut versions: Vec<String> = core["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        for g in groups["groups"].as_array().into_iter().flatten() {
            for v in g["versions"].as_array().into_iter().flatten() {
                if let Some(gv) = v["groupVersion"].as_str() {
                    versions.push(gv.to_owned());
                }
            }
        }
        anyhow::Ok(versions)
    };
    let mut versions = fetched
        .await
        .map_err(|e| anyhow::anyhow!("couldn't get available api versions from server: {e}"))?;
    versions.sort();
    for v in versions {
        println!("{v}");
    }
    Ok(())
}

/// Runs `api-resources`, with karmadactl's `error: ...` and exit status 1.
pub async fn run_resources(args: ApiResourcesArgs) -> anyhow::Result<()> {
    exit_on_error(api_resources(args).await)
}

/// Runs `api-versions`.
pub async fn run_versions(args: ApiVersionsArgs) -> anyhow::Result<()> {
    exit_on_error(api_versions(args).await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ApiResourcesArgs,
    }

    fn args(a: &[&str]) -> ApiResourcesArgs {
        Cli::parse_from(std::iter::once("api-resources").chain(a.iter().copied())).args
    }

    fn served(plural: &str, group: &str, kind: &str, namespaced: bool) -> ServedResource {
        ServedResource {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            verbs: vec!["get".into(), "list".into()],
            status_subresource: false,
            singular: String::new(),
            short_names: vec![],
            categories: vec![],
        }
    }

    #[test]
    fn resources_are_filtered_sorted_and_printed_as_kubectl_does() {
        let all = vec![
            served("deployments", "apps", "Deployment", true),
            served("pods", "", "Pod", true),
            served("namespaces", "", "Namespace", false),
        ];
        let names = |a: &[&str]| -> Vec<String> {
            select(all.clone(), &args(a))
                .into_iter()
                .map(|r| r.plural)
                .collect()
        };
        assert_eq!(names(&[]), ["namespaces", "pods", "deployments"]);
        assert_eq!(names(&["--namespaced=false"]), ["namespaces"]);
        assert_eq!(names(&["--namespaced"]), ["pods", "deployments"]);
        assert_eq!(names(&["--api-group", "apps"]), ["deployments"]);
        assert_eq!(names(&["--api-group="]), ["namespaces", "pods"]);
        assert_eq!(
            names(&["--sort-by", "kind"]),
            ["deployments", "namespaces", "pods"]
        );
        assert!(names(&["--verbs", "delete"]).is_empty());
        let a = args(&["-o", "name"]);
        assert_eq!(
            render(&select(all.clone(), &a), &a),
            "namespaces\npods\ndeployments.apps\n"
        );
        let a = args(&[]);
        let text = render(&select(all, &a), &a);
        assert_eq!(
            text.lines().next(),
            Some("NAME          SHORTNAMES   APIVERSION   NAMESPACED   KIND")
        );
        assert!(
            text.contains("\ndeployments                apps/v1      true         Deployment\n"),
            "{text}"
        );
    }
}
