//! Push-mode registration of a member cluster, as `karmadactl join` and `karmadactl unjoin`
//! do it (pkg/karmadactl/join, pkg/karmadactl/unjoin, pkg/util/credential.go,
//! pkg/karmadactl/util/cluster.go).
//!
//! Join creates, in the member: namespace `karmada-cluster`, ServiceAccounts `karmada-<name>`
//! (bound to ClusterRole `karmada-controller-manager:karmada-<name>`: every verb on every
//! resource plus `get` on every non-resource URL) and `karmada-impersonator`; and in the
//! control plane: Secrets `karmada-cluster/<name>` (`token`, `caBundle`) and
//! `karmada-cluster/<name>-impersonator` (`token`), owned by the new Cluster. Tokens come from
//! the member's TokenRequest API. A failed join removes whatever it created.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::cluster::v1alpha1::{
    Cluster, ClusterSpec, ClusterSyncMode, LocalSecretReference, SECRET_CA_DATA_KEY,
    SECRET_TOKEN_KEY,
};
use karmada_api::names;
use karmada_api::well_known::{finalizers, labels};
use karmada_api::work::v1alpha1::Work;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::member_clients::brief;

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found())
}

/// Lifetime asked for member tokens: Karmada stores non-expiring legacy tokens, so ask for
/// one that outlives any realistic registration.
pub const DEFAULT_TOKEN_EXPIRATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// The member namespace of the impersonator ServiceAccount and the control-plane namespace
/// of the member secrets.
pub const CLUSTER_NAMESPACE: &str = names::NAMESPACE_KARMADA_CLUSTER;
/// The impersonator ServiceAccount (GenerateServiceAccountName("impersonator")).
pub const IMPERSONATOR_SERVICE_ACCOUNT: &str = "karmada-impersonator";
/// How long one request to a cluster may take during join.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to a cluster may take during join.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why join or unjoin failed.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// A kubeconfig could not be read or used.
    #[error("cannot use kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The cluster name is not valid.
    #[error("invalid cluster name {name:?}: {message}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The member cluster did not answer.
    #[error("cannot reach the member cluster at {endpoint}: {}", brief(error))]
    Unreachable {
        /// The member's API endpoint.
        endpoint: String,
        /// The cause.
        error: kube::Error,
    },
    /// The control plane did not answer.
    #[error("cannot reach the Karmada control plane: {}", brief(.0))]
    ControlPlaneUnreachable(kube::Error),
    /// The name or the member's cluster ID is already registered.
    #[error("the cluster ID {id} or the cluster name {name} has been registered")]
    AlreadyRegistered {
        /// The name.
        name: String,
        /// The member's cluster ID.
        id: String,
    },
    /// Unjoin could not reach the member to clean it up.
    #[error(
        "cannot reach member cluster {cluster} to remove karmada's objects from it: {}; rerun with --force to unjoin without cleaning the member",
        brief(error)
    )]
    MemberUnreachableForUnjoin {
        /// The cluster.
        cluster: String,
        /// The cause.
        error: kube::Error,
    },
    /// A request to the member failed.
    #[error("member cluster {cluster}: {step}: {}", brief(error))]
    Member {
        /// The cluster.
        cluster: String,
        /// What was being done.
        step: String,
        /// The cause.
        error: kube::Error,
    },
    /// The member has no TokenRequest API.
    #[error(
        "member cluster {cluster} cannot mint a token for ServiceAccount {service_account}: {}{}",
        brief(error),
        if is_not_found(error) { " (the member API server does not serve the TokenRequest API)" } else { "" }
    )]
    Token {
        /// The cluster.
        cluster: String,
        /// `namespace/name` of the ServiceAccount.
        service_account: String,
        /// The cause.
        error: kube::Error,
    },
    /// A request to the control plane failed.
    #[error("control plane: {step}: {}", brief(error))]
    ControlPlane {
        /// What was being done.
        step: String,
        /// The cause.
        error: kube::Error,
    },
    /// Unjoin of a cluster that is not registered.
    #[error("no cluster object {0} found in karmada control plane")]
    NotFound(String),
    /// Unregister of a push-mode cluster.
    #[error("cluster {0} is a Push mode member cluster; it is removed with unjoin")]
    PushMode(String),
    /// Unjoin of a pull-mode cluster.
    #[error("cluster {0} is a Pull mode member cluster; it is removed by unregistering its agent")]
    PullMode(String),
    /// The Cluster was not removed in time.
    #[error(
        "cluster {name} was not removed within {waited:?} (its Works or execution space are still being cleaned up); retry with --force to remove it anyway"
    )]
    Timeout {
        /// The cluster.
        name: String,
        /// How long unjoin waited.
        waited: Duration,
    },
}

/// How to reach a member cluster: an admin client plus what the control plane stores.
#[derive(Clone)]
pub struct MemberAccess {
    /// A client with rights to create namespaces, ServiceAccounts and RBAC objects.
    pub client: kube::Client,
    /// The API server URL recorded as the Cluster's apiEndpoint.
    pub api_endpoint: String,
    /// PEM of the CA that signed the member's serving certificate (the `caBundle`).
    pub ca_bundle: Vec<u8>,
    /// Whether the kubeconfig skips TLS verification.
    pub insecure: bool,
    /// The kubeconfig's proxy URL, if any.
    pub proxy_url: String,
}

impl std::fmt::Debug for MemberAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberAccess")
            .field("api_endpoint", &self.api_endpoint)
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

/// The cluster a kubeconfig context points at: its name, server, CA bundle (empty when the
/// kubeconfig names none) and whether TLS verification is off.
pub struct KubeconfigCluster {
    /// The cluster entry's name.
    pub name: String,
    /// Its `server`.
    pub server: Option<String>,
    /// `certificate-authority-data`, or the file `certificate-authority` names (relative to the
    /// kubeconfig's directory, as kubectl resolves it).
    pub ca_bundle: Vec<u8>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `proxy-url`.
    pub proxy_url: Option<String>,
}

/// Resolves `context` (else the current context) of a kubeconfig read from `path` (`None`: the
/// default location) to its cluster entry; errors are messages naming what is missing.
pub fn kubeconfig_cluster(
    kubeconfig: &kube::config::Kubeconfig,
    path: Option<&Path>,
    context: Option<&str>,
) -> Result<KubeconfigCluster, String> {
    let context_name = context
        .map(str::to_owned)
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| "no context given and no current-context".to_string())?;
    let cluster_name = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| format!("context {context_name:?} not found"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| format!("cluster {cluster_name:?} not found"))?;
    let ca_bundle = if let Some(data) = &cluster.certificate_authority_data {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("certificate-authority-data is not base64: {e}"))?
    } else if let Some(file) = &cluster.certificate_authority {
        let file = Path::new(file);
        let file = match path.and_then(Path::parent) {
            Some(dir) if file.is_relative() => dir.join(file),
            _ => file.to_owned(),
        };
        std::fs::read(&file)
            .map_err(|e| format!("reading certificate-authority {}: {e}", file.display()))?
    } else {
        Vec::new()
    };
    Ok(KubeconfigCluster {
        name: cluster_name,
        server: cluster.server,
        ca_bundle,
        insecure: cluster.insecure_skip_tls_verify.unwrap_or(false),
        proxy_url: cluster.proxy_url,
    })
}

impl MemberAccess {
    /// Reads a member kubeconfig (the given context or its current one).
    pub async fn from_kubeconfig(
        path: &Path,
        context: Option<&str>,
    ) -> Result<MemberAccess, JoinError> {
        Self::load(path, context, None).await
    }

    /// Reads the kubeconfig of the member registered, or to be registered, as Cluster
    /// `cluster` in `control_plane`: when the kubeconfig names a proxy and the Cluster names
    /// the same one, the client's connections carry the Cluster's `proxyHeader` as it is when
    /// each is made, or as it was last once the Cluster is deleted (a rejoin, or an unjoin, of
    /// a member whose proxy requires it).
    pub async fn of_cluster(
        path: &Path,
        context: Option<&str>,
        control_plane: &kube::Client,
        cluster: &str,
    ) -> Result<MemberAccess, JoinError> {
        Self::load(path, context, Some((control_plane, cluster))).await
    }

    async fn load(
        path: &Path,
        context: Option<&str>,
        cluster: Option<(&kube::Client, &str)>,
    ) -> Result<MemberAccess, JoinError> {
        let (kubeconfig, client) = load_kubeconfig(Some(path), context, cluster).await?;
        let bad = |message: String| JoinError::Kubeconfig {
            path: path.to_owned(),
            message,
        };
        let KubeconfigCluster {
            name: cluster_name,
            server,
            ca_bundle,
            insecure,
            proxy_url,
        } = kubeconfig_cluster(&kubeconfig, Some(path), context).map_err(bad)?;
        let api_endpoint = server
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad(format!("cluster {cluster_name:?} has no server")))?;
        if ca_bundle.is_empty() && !insecure {
            return Err(bad(format!(
                "cluster {cluster_name:?} has no certificate authority (the control plane needs it as caBundle)"
            )));
        }
        Ok(MemberAccess {
            client,
            api_endpoint,
            ca_bundle,
            insecure,
            proxy_url: proxy_url.unwrap_or_default(),
        })
    }
}

/// A client for a kubeconfig: the given file, or `$KUBECONFIG` / `~/.kube/config`.
pub async fn client_from_kubeconfig(
    path: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, JoinError> {
    Ok(load_kubeconfig(path, context, None).await?.1)
}

/// Reads a kubeconfig and builds its client; `cluster` is the Cluster (and the control plane
/// holding it) whose `proxyHeader` goes with the kubeconfig's proxy.
async fn load_kubeconfig(
    path: Option<&Path>,
    context: Option<&str>,
    cluster: Option<(&kube::Client, &str)>,
) -> Result<(kube::config::Kubeconfig, kube::Client), JoinError> {
    let shown = path.map_or_else(|| PathBuf::from("$KUBECONFIG"), Path::to_owned);
    let bad = |message: String| JoinError::Kubeconfig {
        path: shown.clone(),
        message,
    };
    let kubeconfig = match path {
        Some(p) => kube::config::Kubeconfig::read_from(p),
        None => kube::config::Kubeconfig::read(),
    }
    .map_err(|e| bad(e.to_string()))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
        .await
        .map_err(|e| bad(e.to_string()))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(REQUEST_TIMEOUT);
    // A `proxy-url` (http, https or socks5) is honoured, and recorded as the Cluster's
    // proxyURL, as karmadactl join does.
    let proxy = match cluster {
        Some((control_plane, name)) => {
            crate::member_clients::take_member_proxy(&mut config, control_plane, name)
        }
        None => crate::member_clients::take_proxy(&mut config).map(Into::into),
    }
    .map_err(|e| bad(e.to_string()))?;
    let client = crate::member_clients::kube_client(config, proxy).map_err(|e| bad(brief(&e)))?;
    Ok((kubeconfig, client))
}

/// What to register.
#[derive(Clone, Debug)]
pub struct JoinOptions {
    /// The Cluster name.
    pub name: String,
    /// Provider recorded on the Cluster.
    pub provider: String,
    /// Region recorded on the Cluster.
    pub region: String,
    /// Zones recorded on the Cluster.
    pub zones: Vec<String>,
    /// Labels put on the Cluster.
    pub labels: BTreeMap<String, String>,
    /// Lifetime asked for the member tokens.
    pub token_expiration: Duration,
    /// Accept a Cluster of the same name and cluster ID and refresh its credentials and
    /// endpoint instead of failing (a restarted quick start rejoins its members).
    pub rejoin: bool,
}

impl JoinOptions {
    /// Options for a plain join of `name`.
    pub fn new(name: impl Into<String>) -> JoinOptions {
        JoinOptions {
            name: name.into(),
            provider: String::new(),
            region: String::new(),
            zones: Vec::new(),
            labels: BTreeMap::new(),
            token_expiration: DEFAULT_TOKEN_EXPIRATION,
            rejoin: false,
        }
    }
}

/// Objects join created, removed again if a later step fails.
#[derive(Default)]
struct Created {
    member: Vec<Undo>,
    control_plane: Vec<Undo>,
}

/// One object to delete on rollback.
enum Undo {
    Namespace(String),
    ServiceAccount(String, String),
    ClusterRole(String),
    ClusterRoleBinding(String),
    Secret(String, String),
    Cluster(String),
}

impl Undo {
    async fn run(&self, client: &kube::Client) -> Result<(), kube::Error> {
        let dp = DeleteParams::default();
        let result = match self {
            Undo::Namespace(n) => Api::<Namespace>::all(client.clone())
                .delete(n, &dp)
                .await
                .map(|_| ()),
            Undo::ServiceAccount(ns, n) => Api::<ServiceAccount>::namespaced(client.clone(), ns)
                .delete(n, &dp)
                .await
                .map(|_| ()),
            Undo::ClusterRole(n) => Api::<ClusterRole>::all(client.clone())
                .delete(n, &dp)
                .await
                .map(|_| ()),
            Undo::ClusterRoleBinding(n) => Api::<ClusterRoleBinding>::all(client.clone())
                .delete(n, &dp)
                .await
                .map(|_| ()),
            Undo::Secret(ns, n) => Api::<Secret>::namespaced(client.clone(), ns)
                .delete(n, &dp)
                .await
                .map(|_| ()),
            Undo::Cluster(n) => Api::<Cluster>::all(client.clone())
                .delete(n, &dp)
                .await
                .map(|_| ()),
        };
        match result {
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            other => other,
        }
    }
}

impl Created {
    /// Deletes everything recorded, newest first, logging what could not be deleted.
    async fn roll_back(self, control_plane: &kube::Client, member: &kube::Client) {
        for undo in self.control_plane.iter().rev() {
            if let Err(e) = undo.run(control_plane).await {
                tracing::warn!(error = %e, "join rollback: control-plane object left behind");
            }
        }
        for undo in self.member.iter().rev() {
            if let Err(e) = undo.run(member).await {
                tracing::warn!(error = %e, "join rollback: member object left behind");
            }
        }
    }
}

/// Registers a member cluster in push mode and returns the created (or refreshed) Cluster.
pub async fn join(
    control_plane: &kube::Client,
    member: &MemberAccess,
    opts: &JoinOptions,
) -> Result<Cluster, JoinError> {
    let problems = karmada_api::validation::names::validate_cluster_name(&opts.name);
    if !problems.is_empty() {
        return Err(JoinError::InvalidName {
            name: opts.name.clone(),
            message: problems.join("; "),
        });
    }
    // ObtainClusterID: the kube-system namespace's UID; this is also the reachability check.
    let kube_system = Api::<Namespace>::all(member.client.clone())
        .get("kube-system")
        .await
        .map_err(|source| JoinError::Unreachable {
            endpoint: member.api_endpoint.clone(),
            error: source,
        })?;
    let cluster_id = kube_system.metadata.uid.clone().unwrap_or_default();

    // ClusterRegisterOption.Validate: neither the name nor the cluster ID may be in use.
    let clusters = Api::<Cluster>::all(control_plane.clone());
    let existing = clusters
        .list(&ListParams::default())
        .await
        .map_err(JoinError::ControlPlaneUnreachable)?;
    let mut same = None;
    for c in &existing.items {
        let name_used = c.name_any() == opts.name;
        let id_used = !cluster_id.is_empty() && c.spec.id == cluster_id;
        if name_used && id_used && opts.rejoin {
            same = Some(c.clone());
        } else if name_used || id_used {
            return Err(JoinError::AlreadyRegistered {
                name: opts.name.clone(),
                id: cluster_id,
            });
        }
    }

    let mut created = Created::default();
    let result = register(control_plane, member, opts, &cluster_id, same, &mut created).await;
    if result.is_err() {
        created.roll_back(control_plane, &member.client).await;
    }
    result
}

async fn register(
    control_plane: &kube::Client,
    member: &MemberAccess,
    opts: &JoinOptions,
    cluster_id: &str,
    existing: Option<Cluster>,
    created: &mut Created,
) -> Result<Cluster, JoinError> {
    let name = opts.name.as_str();
    let (token, impersonator_token) = obtain_credentials(member, opts, created).await?;

    let cp = |step: &str| {
        let step = step.to_owned();
        move |error| JoinError::ControlPlane { step, error }
    };
    if ensure_namespace(control_plane, CLUSTER_NAMESPACE)
        .await
        .map_err(cp("creating namespace karmada-cluster"))?
    {
        created
            .control_plane
            .push(Undo::Namespace(CLUSTER_NAMESPACE.to_owned()));
    }
    let secrets = Api::<Secret>::namespaced(control_plane.clone(), CLUSTER_NAMESPACE);
    let impersonator_secret_name = names::impersonation_secret_name(name);
    let secret = system_secret(
        name,
        [
            (SECRET_CA_DATA_KEY, member.ca_bundle.clone()),
            (SECRET_TOKEN_KEY, token.into_bytes()),
        ],
    );
    let impersonator_secret = system_secret(
        &impersonator_secret_name,
        [(SECRET_TOKEN_KEY, impersonator_token.into_bytes())],
    );
    for s in [secret, impersonator_secret] {
        let secret_name = s.name_any();
        if upsert(&secrets, &s)
            .await
            .map_err(cp(&format!("writing secret karmada-cluster/{secret_name}")))?
        {
            created.control_plane.push(Undo::Secret(
                CLUSTER_NAMESPACE.to_owned(),
                secret_name.clone(),
            ));
        }
    }

    let clusters = Api::<Cluster>::all(control_plane.clone());
    let spec = ClusterSpec {
        id: cluster_id.to_owned(),
        sync_mode: ClusterSyncMode::Push,
        api_endpoint: member.api_endpoint.clone(),
        secret_ref: Some(LocalSecretReference {
            namespace: CLUSTER_NAMESPACE.to_owned(),
            name: name.to_owned(),
        }),
        impersonator_secret_ref: Some(LocalSecretReference {
            namespace: CLUSTER_NAMESPACE.to_owned(),
            name: impersonator_secret_name.clone(),
        }),
        insecure_skip_tls_verification: member.insecure,
        proxy_url: member.proxy_url.clone(),
        provider: opts.provider.clone(),
        region: opts.region.clone(),
        zones: opts.zones.clone(),
        ..Default::default()
    };
    let cluster = match existing {
        Some(mut current) => {
            let mut attempt = 0;
            loop {
                // A rejoin keeps what the cluster controller and users added (taints, models,
                // finalizers) and refreshes how the member is reached.
                current.spec.api_endpoint = spec.api_endpoint.clone();
                current.spec.secret_ref = spec.secret_ref.clone();
                current.spec.impersonator_secret_ref = spec.impersonator_secret_ref.clone();
                current.spec.insecure_skip_tls_verification = spec.insecure_skip_tls_verification;
                current.spec.proxy_url = spec.proxy_url.clone();
                current
                    .metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .extend(opts.labels.clone());
                match clusters
                    .replace(name, &PostParams::default(), &current)
                    .await
                {
                    Ok(updated) => break updated,
                    // The cluster controller writes the Cluster too (its finalizer, taints):
                    // read it again and redo the change on what it wrote.
                    Err(kube::Error::Api(s)) if s.code == 409 && attempt < 4 => {
                        attempt += 1;
                        current = clusters
                            .get(name)
                            .await
                            .map_err(cp(&format!("reading cluster {name}")))?;
                    }
                    Err(e) => return Err(cp(&format!("updating cluster {name}"))(e)),
                }
            }
        }
        None => {
            let cluster = Cluster {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    labels: (!opts.labels.is_empty()).then(|| opts.labels.clone()),
                    ..Default::default()
                },
                spec,
                status: Default::default(),
            };
            let made = clusters
                .create(&PostParams::default(), &cluster)
                .await
                .map_err(cp(&format!("creating cluster {name}")))?;
            created.control_plane.push(Undo::Cluster(name.to_owned()));
            made
        }
    };

    // The secrets belong to the Cluster, so garbage collection removes them with it.
    let owner = OwnerReference {
        api_version: Cluster::api_version(&()).into_owned(),
        kind: Cluster::kind(&()).into_owned(),
        name: name.to_owned(),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let patch = json!({"metadata": {"ownerReferences": [owner]}});
    for secret_name in [name, impersonator_secret_name.as_str()] {
        secrets
            .patch(secret_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(cp(&format!("setting the owner of secret {secret_name}")))?;
    }
    Ok(cluster)
}

/// ObtainCredentialsFromMemberCluster: the member-side objects and the two tokens.
async fn obtain_credentials(
    member: &MemberAccess,
    opts: &JoinOptions,
    created: &mut Created,
) -> Result<(String, String), JoinError> {
    let name = opts.name.as_str();
    let client = &member.client;
    let m = |step: String| {
        let cluster = name.to_owned();
        move |source| JoinError::Member {
            cluster,
            step,
            error: source,
        }
    };
    if ensure_namespace(client, CLUSTER_NAMESPACE)
        .await
        .map_err(m(format!("creating namespace {CLUSTER_NAMESPACE}")))?
    {
        created
            .member
            .push(Undo::Namespace(CLUSTER_NAMESPACE.to_owned()));
    }
    let service_accounts = Api::<ServiceAccount>::namespaced(client.clone(), CLUSTER_NAMESPACE);
    let sa_name = names::service_account_name(name);
    for sa in [IMPERSONATOR_SERVICE_ACCOUNT, sa_name.as_str()] {
        let obj = ServiceAccount {
            metadata: system_meta(sa),
            ..Default::default()
        };
        if create_if_absent(&service_accounts, &obj)
            .await
            .map_err(m(format!(
                "creating ServiceAccount {CLUSTER_NAMESPACE}/{sa}"
            )))?
        {
            created.member.push(Undo::ServiceAccount(
                CLUSTER_NAMESPACE.to_owned(),
                sa.to_owned(),
            ));
        }
    }

    let role_name = names::role_name(&sa_name);
    let role = ClusterRole {
        metadata: system_meta(&role_name),
        rules: Some(cluster_policy_rules()),
        ..Default::default()
    };
    if create_if_absent(&Api::all(client.clone()), &role)
        .await
        .map_err(m(format!("creating ClusterRole {role_name}")))?
    {
        created.member.push(Undo::ClusterRole(role_name.clone()));
    }
    let binding = ClusterRoleBinding {
        metadata: system_meta(&role_name),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role_name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: sa_name.clone(),
            namespace: Some(CLUSTER_NAMESPACE.into()),
            ..Default::default()
        }]),
    };
    if create_if_absent(&Api::all(client.clone()), &binding)
        .await
        .map_err(m(format!("creating ClusterRoleBinding {role_name}")))?
    {
        created
            .member
            .push(Undo::ClusterRoleBinding(role_name.clone()));
    }

    let impersonator = mint_token(
        &service_accounts,
        name,
        IMPERSONATOR_SERVICE_ACCOUNT,
        opts.token_expiration,
    )
    .await?;
    let token = mint_token(&service_accounts, name, &sa_name, opts.token_expiration).await?;
    Ok((token, impersonator))
}

/// Asks the member's TokenRequest API for a token of a ServiceAccount.
async fn mint_token(
    service_accounts: &Api<ServiceAccount>,
    cluster: &str,
    sa: &str,
    expiration: Duration,
) -> Result<String, JoinError> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(i64::try_from(expiration.as_secs()).unwrap_or(i64::MAX)),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = |source| JoinError::Token {
        cluster: cluster.to_owned(),
        service_account: format!("{CLUSTER_NAMESPACE}/{sa}"),
        error: source,
    };
    let answer = service_accounts
        .create_token_request(sa, &PostParams::default(), &request)
        .await
        .map_err(err)?;
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| JoinError::Token {
            cluster: cluster.to_owned(),
            service_account: format!("{CLUSTER_NAMESPACE}/{sa}"),
            error: kube::Error::Api(
                kube::core::Status::failure("the TokenRequest answer holds no token", "").boxed(),
            ),
        })
}

/// ClusterPolicyRules: everything on every resource, and `get` on every non-resource URL.
pub(crate) fn cluster_policy_rules() -> Vec<PolicyRule> {
    vec![
        PolicyRule {
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            verbs: vec!["*".into()],
            ..Default::default()
        },
        PolicyRule {
            non_resource_urls: Some(vec!["*".into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        },
    ]
}

/// Metadata of an object labelled as Karmada's (`karmada.io/system: "true"`).
fn system_meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(BTreeMap::from([(
            labels::KARMADA_SYSTEM.to_owned(),
            "true".to_owned(),
        )])),
        ..Default::default()
    }
}

fn system_secret<const N: usize>(name: &str, data: [(&str, Vec<u8>); N]) -> Secret {
    let mut meta = system_meta(name);
    meta.namespace = Some(CLUSTER_NAMESPACE.to_owned());
    Secret {
        metadata: meta,
        data: Some(
            data.into_iter()
                .map(|(k, v)| (k.to_owned(), ByteString(v)))
                .collect(),
        ),
        ..Default::default()
    }
}

/// Creates a namespace labelled as Karmada's unless it exists; true when created.
async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<bool, kube::Error> {
    let ns = Namespace {
        metadata: system_meta(name),
        ..Default::default()
    };
    create_if_absent(&Api::all(client.clone()), &ns).await
}

/// Creates an object unless one of that name exists; true when created.
pub(crate) async fn create_if_absent<K>(api: &Api<K>, obj: &K) -> Result<bool, kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates a secret, or replaces the data of an existing one; true when created.
async fn upsert(api: &Api<Secret>, secret: &Secret) -> Result<bool, kube::Error> {
    match api.create(&PostParams::default(), secret).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_already_exists() => {
            let patch =
                json!({"data": secret.data, "metadata": {"labels": secret.metadata.labels}});
            api.patch(
                &secret.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// How to remove a member cluster.
#[derive(Clone, Debug)]
pub struct UnjoinOptions {
    /// The Cluster name.
    pub name: String,
    /// Finish even when cleanup cannot complete: after `wait`, strip the finalizers of the
    /// Works, the execution space and the Cluster; ignore member-side failures.
    pub force: bool,
    /// How long to wait for the Cluster to be removed.
    pub wait: Duration,
}

/// What unjoin did not remove.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnjoinReport {
    /// Whether finalizers had to be stripped.
    pub forced: bool,
    /// Member-side objects that could not be removed (only with `force`).
    pub member_leftovers: Vec<String>,
}

/// Removes a push-mode member: deletes the Cluster and waits for the cluster controller to
/// clean up its Works and execution space, deletes its secrets, then (when `member` is given)
/// the member-side ServiceAccounts, RBAC and namespace.
pub async fn unjoin(
    control_plane: &kube::Client,
    member: Option<&kube::Client>,
    opts: &UnjoinOptions,
) -> Result<UnjoinReport, JoinError> {
    remove_cluster(control_plane, member, opts, ClusterSyncMode::Push).await
}

/// Removes a pull-mode member (`unregister`): deletes the Cluster and waits for its Works
/// (whose member objects its agent removes while it runs) and execution space to go, as
/// unjoin does; its agent's RBAC is the caller's to remove.
pub async fn unregister(
    control_plane: &kube::Client,
    opts: &UnjoinOptions,
) -> Result<UnjoinReport, JoinError> {
    remove_cluster(control_plane, None, opts, ClusterSyncMode::Pull).await
}

async fn remove_cluster(
    control_plane: &kube::Client,
    member: Option<&kube::Client>,
    opts: &UnjoinOptions,
    mode: ClusterSyncMode,
) -> Result<UnjoinReport, JoinError> {
    let name = opts.name.as_str();
    let clusters = Api::<Cluster>::all(control_plane.clone());
    let cluster = clusters
        .get_opt(name)
        .await
        .map_err(JoinError::ControlPlaneUnreachable)?
        .ok_or_else(|| JoinError::NotFound(name.to_owned()))?;
    if cluster.spec.sync_mode != mode {
        return Err(match mode {
            ClusterSyncMode::Push => JoinError::PullMode(name.to_owned()),
            _ => JoinError::PushMode(name.to_owned()),
        });
    }
    let cp = |step: String| move |error| JoinError::ControlPlane { step, error };
    let mut report = UnjoinReport::default();

    // Without --force the member must be cleanable: check it answers before removing anything,
    // so that an unreachable member never leaves the unjoin half done.
    if let Some(member) = member
        && !opts.force
        && let Err(error) = member.apiserver_version().await
    {
        return Err(JoinError::MemberUnreachableForUnjoin {
            cluster: name.to_owned(),
            error,
        });
    }

    match clusters.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => {}
        Err(e) => return Err(cp(format!("deleting cluster {name}"))(e)),
    }
    let deadline = Instant::now() + opts.wait;
    let mut gone = false;
    while Instant::now() < deadline {
        if clusters
            .get_opt(name)
            .await
            .map_err(cp(format!("reading cluster {name}")))?
            .is_none()
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !gone {
        if !opts.force {
            return Err(JoinError::Timeout {
                name: name.to_owned(),
                waited: opts.wait,
            });
        }
        tracing::warn!(
            cluster = name,
            "cluster not removed in time; forcing its removal"
        );
        force_remove(control_plane, name).await?;
        report.forced = true;
    }

    // Garbage collection removes the secrets through their owner reference; delete them here
    // too so unjoin does not depend on it.
    for s in [
        cluster.spec.secret_ref.as_ref(),
        cluster.spec.impersonator_secret_ref.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        let api = Api::<Secret>::namespaced(control_plane.clone(), &s.namespace);
        ignore_not_found(
            api.delete(&s.name, &DeleteParams::default())
                .await
                .map(|_| ()),
        )
        .map_err(cp(format!("deleting secret {}/{}", s.namespace, s.name)))?;
    }

    if let Some(member) = member {
        remove_member_objects(member, name, opts.force, &mut report).await?;
    }
    Ok(report)
}

/// Strips the finalizers that keep a Cluster (Works, execution space, Cluster), as
/// karmadactl's forced deletion does.
async fn force_remove(control_plane: &kube::Client, name: &str) -> Result<(), JoinError> {
    let cp = |step: String| move |error| JoinError::ControlPlane { step, error };
    let space = names::execution_space_name(name);
    let works = Api::<Work>::namespaced(control_plane.clone(), &space);
    let list = works
        .list(&ListParams::default())
        .await
        .map_err(cp(format!("listing Works in {space}")))?;
    for work in list.items {
        let kept: Vec<String> = work
            .finalizers()
            .iter()
            .filter(|f| f.as_str() != finalizers::EXECUTION_CONTROLLER)
            .cloned()
            .collect();
        if kept.len() == work.finalizers().len() {
            continue;
        }
        let patch = json!({"metadata": {"finalizers": kept}});
        ignore_not_found(
            works
                .patch(
                    &work.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map(|_| ()),
        )
        .map_err(cp(format!(
            "removing the finalizer of Work {space}/{}",
            work.name_any()
        )))?;
    }
    let namespaces = Api::<Namespace>::all(control_plane.clone());
    // The namespace controller may be updating the namespace at the same time.
    for attempt in 0..5 {
        let Some(mut ns) = namespaces
            .get_opt(&space)
            .await
            .map_err(cp(format!("reading namespace {space}")))?
        else {
            break;
        };
        if let Some(spec) = ns.spec.as_mut() {
            spec.finalizers = None;
        }
        match namespaces
            .replace_subresource("finalize", &space, &PostParams::default(), &ns)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.is_not_found() => break,
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 4 => continue,
            Err(e) => return Err(cp(format!("finalizing namespace {space}"))(e)),
        }
    }
    let clusters = Api::<Cluster>::all(control_plane.clone());
    if let Some(cluster) = clusters
        .get_opt(name)
        .await
        .map_err(cp(format!("reading cluster {name}")))?
    {
        let kept: Vec<String> = cluster
            .finalizers()
            .iter()
            .filter(|f| f.as_str() != finalizers::CLUSTER_CONTROLLER)
            .cloned()
            .collect();
        let patch = json!({"metadata": {"finalizers": kept}});
        ignore_not_found(
            clusters
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ()),
        )
        .map_err(cp(format!("removing the finalizer of cluster {name}")))?;
    }
    Ok(())
}

/// Deletes the member-side objects join created (deleteRBACResources, deleteServiceAccount,
/// deleteNamespace); with `force`, failures are reported instead of returned.
async fn remove_member_objects(
    member: &kube::Client,
    name: &str,
    force: bool,
    report: &mut UnjoinReport,
) -> Result<(), JoinError> {
    let sa_name = names::service_account_name(name);
    let role_name = names::role_name(&sa_name);
    let dp = DeleteParams::default();
    let steps: Vec<(String, Result<(), kube::Error>)> = vec![
        (
            format!("ClusterRoleBinding {role_name}"),
            Api::<ClusterRoleBinding>::all(member.clone())
                .delete(&role_name, &dp)
                .await
                .map(|_| ()),
        ),
        (
            format!("ClusterRole {role_name}"),
            Api::<ClusterRole>::all(member.clone())
                .delete(&role_name, &dp)
                .await
                .map(|_| ()),
        ),
        (
            format!("ServiceAccount {CLUSTER_NAMESPACE}/{sa_name}"),
            Api::<ServiceAccount>::namespaced(member.clone(), CLUSTER_NAMESPACE)
                .delete(&sa_name, &dp)
                .await
                .map(|_| ()),
        ),
        (
            format!("Namespace {CLUSTER_NAMESPACE}"),
            Api::<Namespace>::all(member.clone())
                .delete(CLUSTER_NAMESPACE, &dp)
                .await
                .map(|_| ()),
        ),
    ];
    for (what, result) in steps {
        if let Err(source) = ignore_not_found(result) {
            if !force {
                return Err(JoinError::Member {
                    cluster: name.to_owned(),
                    step: format!("deleting {what}"),
                    error: source,
                });
            }
            tracing::warn!(cluster = name, object = %what, error = %source, "member object left behind");
            report.member_leftovers.push(what);
        }
    }
    Ok(())
}

fn ignore_not_found(r: Result<(), kube::Error>) -> Result<(), kube::Error> {
    match r {
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_rules_match_karmada() {
        let rules = serde_json::to_value(cluster_policy_rules()).unwrap();
        assert_eq!(
            rules,
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["get"]}
            ])
        );
    }

    #[test]
    fn system_objects_carry_the_karmada_label() {
        let s = system_secret("m1", [("token", b"t".to_vec())]);
        assert_eq!(s.metadata.namespace.as_deref(), Some("karmada-cluster"));
        assert_eq!(
            s.metadata
                .labels
                .unwrap()
                .get("karmada.io/system")
                .map(String::as_str),
            Some("true")
        );
    }

    #[tokio::test]
    async fn unreadable_kubeconfig_is_a_clear_error() {
        let dir = tempfile_dir();
        let missing = dir.join("nope.kubeconfig");
        let err = MemberAccess::from_kubeconfig(&missing, None)
            .await
            .unwrap_err();
        assert!(matches!(err, JoinError::Kubeconfig { .. }), "{err}");
        assert!(err.to_string().contains("nope.kubeconfig"), "{err}");

        let garbage = dir.join("garbage.kubeconfig");
        std::fs::write(&garbage, "this: [is not a kubeconfig").unwrap();
        let err = MemberAccess::from_kubeconfig(&garbage, None)
            .await
            .unwrap_err();
        assert!(matches!(err, JoinError::Kubeconfig { .. }), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "karmada-rs-join-test-{}-{}",
            std::process::id(),
            jiff::Timestamp::now().as_nanosecond()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
