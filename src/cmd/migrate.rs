//! `karmada-rs migrate check`: before taking over a Karmada control plane's etcd, what this
//! server would serve from it, what it cannot (and why), and what it would rewrite or move;
//! read-only.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

/// `karmada-rs migrate ...`.
#[derive(Subcommand)]
pub enum MigrateCommand {
    /// Read every object of an etcd as `serve` would and report, per resource, what would be
    /// served, what cannot be (with why), and what would be rewritten or moved. Writes
    /// nothing. Exits 0 when everything can be served, 1 when something cannot, 2 when the
    /// check itself failed (etcd unreachable, a bad flag value).
    Check(CheckArgs),
}

/// Options of `migrate check`.
#[derive(Args, Clone, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    etcd: super::EtcdFlags,
    /// The EncryptionConfiguration the control plane's kube-apiserver encrypts with
    /// (`--encryption-provider-config`), to read encrypted values.
    #[arg(long, env = "KARMADA_RS_ENCRYPTION_PROVIDER_CONFIG")]
    encryption_provider_config: Option<PathBuf>,
}

/// Runs a migrate command; `Ok(false)` when something cannot be served.
pub async fn run(cmd: MigrateCommand) -> anyhow::Result<bool> {
    match cmd {
        MigrateCommand::Check(a) => check(a).await,
    }
}

async fn check(args: CheckArgs) -> anyhow::Result<bool> {
    // What would be rewritten depends on how the server would write.
    apiserver::storage_codec::set_media_type(args.etcd.storage_media_type);
    let options = args
        .etcd
        .options()?
        .context("--etcd-servers is required: the etcd of the control plane to check")?;
    let encryption = args
        .encryption_provider_config
        .as_deref()
        .map(encryption::Encryption::load)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let endpoints = options.endpoints.join(",");
    let store = storage::etcd::EtcdStore::connect(options)
        .await
        .with_context(|| format!("connecting to etcd at {endpoints}"))?;
    let report = apiserver::migrate::check(store, &args.etcd.etcd_prefix, encryption)
        .await
        .context("reading etcd")?;
    print!("{}", report.render());
    Ok(report.ok())
}
