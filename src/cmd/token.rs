//! `karmada-rs token create|list|delete`: bootstrap tokens for pull-mode registration, as
//! `karmadactl token` (and kubeadm) manage them: Secrets `kube-system/bootstrap-token-<id>`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use certs::bootstrap_token::{self as bt, BootstrapToken};
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

use super::parse_duration;

/// `token` subcommands.
#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a bootstrap token and print the `register` command that uses it.
    Create(CreateArgs),
    /// List bootstrap tokens.
    List(CommonArgs),
    /// Delete bootstrap tokens (by ID or by token).
    Delete(DeleteArgs),
}

/// Options every token command takes.
#[derive(Args, Clone, Debug)]
pub struct CommonArgs {
    /// Kubeconfig of the Karmada control plane; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
}

/// Options of `token create`.
#[derive(Args, Clone, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// How long the token is valid; 0 never expires.
    #[arg(long, env = "KARMADA_RS_TTL", value_parser = parse_duration, default_value = "24h")]
    pub ttl: Duration,
    /// A human-readable description of the token.
    #[arg(long, env = "KARMADA_RS_DESCRIPTION", default_value = "")]
    pub description: String,
    /// Print the full `karmada-rs register` command (with the CA certificate hash) instead of
    /// the token only.
    #[arg(long, env = "KARMADA_RS_PRINT_REGISTER_COMMAND", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub print_register_command: bool,
}

/// Options of `token delete`.
#[derive(Args, Clone, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Token IDs or whole tokens.
    #[arg(required = true)]
    pub tokens: Vec<String>,
}

/// Runs a token command.
pub async fn run(cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create(a) => create(a).await,
        TokenCommand::List(a) => list(a).await,
        TokenCommand::Delete(a) => delete(a).await,
    }
}

async fn secrets(common: &CommonArgs) -> anyhow::Result<Api<Secret>> {
    let client = controllers::join::client_from_kubeconfig(
        common.kubeconfig.as_deref(),
        common.karmada_context.as_deref(),
    )
    .await?;
    Ok(Api::namespaced(client, bt::SECRET_NAMESPACE))
}

/// The control plane's address and CA hash from the kubeconfig (what `register` needs).
pub fn discovery_target(common: &CommonArgs) -> anyhow::Result<(String, String)> {
    let kubeconfig = match &common.kubeconfig {
        Some(p) => kube::config::Kubeconfig::read_from(p),
        None => kube::config::Kubeconfig::read(),
    }
    .context("reading the kubeconfig")?;
    let cluster = controllers::join::kubeconfig_cluster(
        &kubeconfig,
        common.kubeconfig.as_deref(),
        common.karmada_context.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    let server = cluster.server.unwrap_or_default();
    let addr = server
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    if cluster.ca_bundle.is_empty() {
        anyhow::bail!("the kubeconfig names no certificate authority for {server}");
    }
    let ca_pem = String::from_utf8(cluster.ca_bundle)?;
    let der = bt::pem_certificates(&ca_pem);
    let first = der
        .first()
        .context("the kubeconfig's certificate authority holds no certificate")?;
    Ok((addr, bt::ca_cert_hash(first)?))
}

async fn create(args: CreateArgs) -> anyhow::Result<()> {
    let api = secrets(&args.common).await?;
    let token = new_token(&api, args.ttl, &args.description).await?;
    if args.print_register_command {
        let (addr, hash) = discovery_target(&args.common)?;
        println!(
            "karmada-rs register {addr} --token {token} --discovery-token-ca-cert-hash {hash} --cluster-name <CLUSTER_NAME>"
        );
    } else {
        println!("{token}");
    }
    Ok(())
}

/// Stores a new registration token valid for `ttl` (0: forever) and returns it.
pub async fn new_token(
    api: &Api<Secret>,
    ttl: Duration,
    description: &str,
) -> anyhow::Result<BootstrapToken> {
    let token = BootstrapToken::generate()?;
    let expiration = (!ttl.is_zero())
        .then(|| {
            let now = jiff::Timestamp::now();
            let d = jiff::SignedDuration::try_from(ttl).ok()?;
            now.checked_add(d)
                .ok()
                .map(|t| t.round(jiff::Unit::Second).unwrap_or(t).to_string())
        })
        .flatten();
    if !ttl.is_zero() && expiration.is_none() {
        anyhow::bail!("--ttl {ttl:?} is too long");
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(token.secret_name()),
            namespace: Some(bt::SECRET_NAMESPACE.to_owned()),
            ..Default::default()
        },
        type_: Some(bt::SECRET_TYPE.to_owned()),
        string_data: Some(token.secret_data(
            expiration.as_deref(),
            description,
            &[bt::KARMADA_TOKEN_GROUP],
        )),
        ..Default::default()
    };
    api.create(&PostParams::default(), &secret)
        .await
        .context("creating the bootstrap token Secret")?;
    Ok(token)
}

fn text(s: &Secret, key: &str) -> String {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|v| String::from_utf8(v.0.clone()).ok())
        .unwrap_or_default()
}

async fn list(args: CommonArgs) -> anyhow::Result<()> {
    let api = secrets(&args).await?;
    let mut rows = vec![[
        "TOKEN".to_owned(),
        "TTL".to_owned(),
        "EXPIRES".to_owned(),
        "USAGES".to_owned(),
        "DESCRIPTION".to_owned(),
        "EXTRA GROUPS".to_owned(),
    ]];
    let now = jiff::Timestamp::now();
    for s in api.list(&Default::default()).await?.items {
        if s.type_.as_deref() != Some(bt::SECRET_TYPE) {
            continue;
        }
        let id = text(&s, bt::KEY_ID);
        let secret = text(&s, bt::KEY_SECRET);
        let Ok(token) = BootstrapToken::parse(&format!("{id}.{secret}")) else {
            continue;
        };
        let expiration = text(&s, bt::KEY_EXPIRATION);
        let (ttl, expires) = match expiration.parse::<jiff::Timestamp>() {
            Ok(t) if t <= now => ("<invalid>".to_owned(), expiration.clone()),
            Ok(t) => {
                let left = now.duration_until(t);
                (human(left), expiration.clone())
            }
            Err(_) => ("<forever>".to_owned(), "<never>".to_owned()),
        };
        let data: BTreeMap<String, String> = s
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
            .collect();
        let usages: Vec<&str> = data
            .iter()
            .filter(|(k, v)| k.starts_with("usage-bootstrap-") && v.as_str() == "true")
            .map(|(k, _)| k.trim_start_matches("usage-bootstrap-"))
            .collect();
        let description = text(&s, bt::KEY_DESCRIPTION);
        let groups = text(&s, bt::KEY_EXTRA_GROUPS);
        rows.push([
            token.to_string(),
            ttl,
            expires,
            usages.join(","),
            if description.is_empty() {
                "<none>".into()
            } else {
                description
            },
            groups,
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", line.join("   ").trim_end());
    }
    Ok(())
}

/// A duration as kubectl prints one (`23h`, `59m`).
fn human(d: jiff::SignedDuration) -> String {
    let s = d.as_secs();
    if s >= 48 * 3600 {
        format!("{}d", s / 86400)
    } else if s >= 3600 {
        format!("{}h", s / 3600)
    } else if s >= 60 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let api = secrets(&args.common).await?;
    for t in &args.tokens {
        let id = match t.split_once('.') {
            Some(_) => BootstrapToken::parse(t)?.id,
            None if bt::valid_id(t) => t.clone(),
            None => anyhow::bail!(
                "given token {t:?} didn't match the pattern \"[a-z0-9]{{6}}\" (a token ID) or \"[a-z0-9]{{6}}.[a-z0-9]{{16}}\" (a token)"
            ),
        };
        let name = format!("{}{id}", bt::SECRET_PREFIX);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => println!("bootstrap token {id:?} deleted"),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                anyhow::bail!("bootstrap token {id:?} not found")
            }
            Err(e) => return Err(e).context(format!("deleting bootstrap token {id:?}")),
        }
    }
    Ok(())
}
