//! What the fleet commands talk to (karmadactl's pkg/karmadactl/options and util/factory.go):
//! the control plane from a kubeconfig, and each member cluster through the control plane's
//! cluster proxy (`/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy`) with the same
//! credentials, chosen by `--operation-scope` and `--clusters`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

/// Kubeconfig flags of the commands that talk to the control plane.
#[derive(Args, Clone, Debug)]
pub struct KarmadaFlags {
    /// Kubeconfig of the Karmada control plane; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the control-plane kubeconfig.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
}

/// karmadactl's OperationScope: where a command looks.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OperationScope {
    /// The Karmada control plane.
    #[default]
    Karmada,
    /// Member clusters.
    Members,
    /// The control plane and member clusters.
    All,
}

impl OperationScope {
    pub fn has_karmada(self) -> bool {
        matches!(self, OperationScope::Karmada | OperationScope::All)
    }

    pub fn has_members(self) -> bool {
        matches!(self, OperationScope::Members | OperationScope::All)
    }
}

/// The Cluster resource of `cluster.karmada.io/v1alpha1`.
pub fn cluster_resource() -> ApiResource {
    ApiResource {
        group: "cluster.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "cluster.karmada.io/v1alpha1".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    }
}

/// The control plane's client configuration and the clients built from it.
#[derive(Clone)]
pub struct Fleet {
    config: kube::Config,
    pub client: kube::Client,
}

impl Fleet {
    /// Reads the kubeconfig the flags name.
    pub async fn connect(flags: &KarmadaFlags) -> anyhow::Result<Fleet> {
        let shown = flags
            .kubeconfig
            .as_ref()
            .map_or_else(|| "$KUBECONFIG".to_owned(), |p| p.display().to_string());
        let kubeconfig = match &flags.kubeconfig {
            Some(p) => kube::config::Kubeconfig::read_from(p),
            None => kube::config::Kubeconfig::read(),
        }
        .with_context(|| format!("reading the kubeconfig {shown}"))?;
        let options = kube::config::KubeConfigOptions {
            context: flags.karmada_context.clone(),
            ..Default::default()
        };
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .with_context(|| format!("the kubeconfig {shown}"))?;
        let client = kube::Client::try_from(config.clone())?;
        Ok(Fleet { config, client })
    }

    /// The namespace of the kubeconfig's context (`default` without one).
    pub fn default_namespace(&self) -> &str {
        &self.config.default_namespace
    }

    pub fn clusters(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &cluster_resource())
    }

    /// The names of the registered Clusters (LoadRegisteredClusters).
    pub async fn cluster_names(&self) -> anyhow::Result<Vec<String>> {
        let list = self
            .clusters()
            .list(&ListParams::default())
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "failed to list all member clusters in control plane, err: {}",
                    kube_message(&e)
                )
            })?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect())
    }

    /// The member clusters a command acts on: those named (which must exist, as
    /// VerifyClustersExist checks), or every registered one.
    pub async fn targets(&self, named: &[String]) -> anyhow::Result<Vec<String>> {
        let registered = self.cluster_names().await?;
        if named.is_empty() {
            return Ok(registered);
        }
        let missing: Vec<&str> = named
            .iter()
            .filter(|n| !registered.contains(n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            bail!("clusters don't exist: {}", missing.join(","));
        }
        Ok(named.to_vec())
    }

    /// A client for a member cluster through the control plane's cluster proxy, with the
    /// control plane's credentials (FactoryForMemberCluster).
    pub fn member(&self, cluster: &str) -> anyhow::Result<kube::Client> {
        let mut config = self.config.clone();
        let base = config.cluster_url.to_string();
        let url = format!(
            "{}/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy",
            base.trim_end_matches('/')
        );
        config.cluster_url = url
            .parse()
            .with_context(|| format!("the proxy address of cluster {cluster}"))?;
        Ok(kube::Client::try_from(config)?)
    }
}

/// The message a person acts on: the server's Status message where there is one.
pub fn kube_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// kubectl's CheckErr: `error: MESSAGE` on stderr, exit status 1.
pub fn exit_on_error(result: anyhow::Result<()>) -> anyhow::Result<()> {
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
    Ok(())
}

/// utilerrors.NewAggregate's message: one error as it is, several in brackets.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Fails with the aggregate of the errors, if there are any.
pub fn fail_on(errors: &[String]) -> anyhow::Result<()> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(aggregate(errors)))
    }
}

/// Sends a request (with `body` as JSON) and reads the JSON answer: the raw calls of the fleet
/// commands, whose paths and media types come from discovery rather than from typed kinds.
pub async fn send(
    client: &kube::Client,
    req: http::request::Builder,
    body: Option<&serde_json::Value>,
) -> Result<serde_json::Value, kube::Error> {
    let body = match body {
        Some(b) => serde_json::to_vec(b).map_err(kube::Error::SerdeError)?,
        None => Vec::new(),
    };
    let req = req.body(body).map_err(kube::Error::HttpError)?;
    client.request::<serde_json::Value>(req).await
}
