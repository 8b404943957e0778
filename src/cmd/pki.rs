//! The keys a group of `serve` replicas must share, so that any replica verifies what another
//! issued: the cluster CA (client certificates, including those signed for pull-mode agents),
//! the service-account signing key (tokens) and the front-proxy CA (the aggregator's client
//! certificate). `karmada-rs certs --dir DIR` creates them; `serve --shared-pki-dir DIR` (a
//! mounted Secret, read-only) copies them into its own `DATA_DIR/pki`, where it then issues
//! its own serving and admin certificates from them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

/// The shared files, as `DATA_DIR/pki` names them.
pub const SHARED: &[&str] = &[
    "ca.crt",
    "ca.key",
    "sa.key",
    "front-proxy-ca.crt",
    "front-proxy-ca.key",
];

/// What each replica issues for itself from the shared CAs; issued again when a CA changes.
const ISSUED: &[&str] = &[
    "apiserver.crt",
    "apiserver.key",
    "apiserver.sans",
    "admin.crt",
    "admin.key",
    "front-proxy-client.crt",
    "front-proxy-client.key",
];

/// `karmada-rs certs`.
#[derive(Args, Debug)]
pub struct CertsArgs {
    /// Directory to write the shared CA, service-account key and front-proxy CA into (kept
    /// when they already exist there).
    #[arg(long, env = "KARMADA_RS_DIR")]
    pub dir: PathBuf,
}

/// Creates the shared keys in `args.dir` (keeping those already there) and lists them.
pub fn certs(args: &CertsArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    // The CAs are made where a replica makes them, beside what they issue for one replica;
    // only the shared files end up in the directory. Starting from what the directory holds
    // makes a second run change nothing.
    let work = args.dir.join(".karmada-rs-certs");
    let made = (|| {
        copy_present(&args.dir, &work)?;
        certs::Pki::ensure(&work, &certs::PkiOptions::default())
            .context("creating the certificate authority")?;
        apiserver::aggregator::front_proxy::ensure(&work).context("creating the front-proxy CA")?;
        for name in SHARED {
            copy_file(&work.join(name), &args.dir.join(name))?;
        }
        anyhow::Ok(())
    })();
    let _ = std::fs::remove_dir_all(&work);
    made?;
    for name in SHARED {
        println!("{}", args.dir.join(name).display());
    }
    Ok(())
}

/// Copies the shared keys from `shared` into `pki` (a replica's `DATA_DIR/pki`). Every one of
/// them must be there: a replica that made up a missing key would not be trusted by the
/// others. When a CA changes, what this replica issued from the old one is removed, to be
/// issued again.
pub fn seed(shared: &Path, pki: &Path) -> anyhow::Result<()> {
    let missing: Vec<&str> = SHARED
        .iter()
        .copied()
        .filter(|name| !shared.join(name).is_file())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "--shared-pki-dir {}: missing {} (create them with `karmada-rs certs --dir DIR`)",
            shared.display(),
            missing.join(", ")
        );
    }
    std::fs::create_dir_all(pki).with_context(|| format!("creating {}", pki.display()))?;
    let mut changed = false;
    for name in SHARED {
        let from = std::fs::read(shared.join(name))
            .with_context(|| format!("reading {}", shared.join(name).display()))?;
        let to = pki.join(name);
        if std::fs::read(&to).ok().as_deref() != Some(from.as_slice()) {
            write_file(&to, &from)?;
            changed = true;
        }
    }
    if changed {
        for name in ISSUED {
            match std::fs::remove_file(pki.join(name)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("removing {}", pki.join(name).display()));
                }
            }
        }
    }
    Ok(())
}

fn copy_present(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for name in SHARED {
        if from.join(name).is_file() {
            copy_file(&from.join(name), &to.join(name))?;
        }
    }
    Ok(())
}

/// Copies one file.
fn copy_file(from: &Path, to: &Path) -> anyhow::Result<()> {
    let data = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    write_file(to, &data)
}

/// Writes one file; keys are readable by their owner only.
fn write_file(to: &Path, data: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // A mounted Secret's files may be read-only: replace rather than write over.
    let _ = std::fs::remove_file(to);
    std::fs::write(to, data).with_context(|| format!("writing {}", to.display()))?;
    let mode = if to.extension().is_some_and(|e| e == "key") {
        0o600
    } else {
        0o644
    };
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", to.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_seeded_from_one_directory_share_their_keys() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        certs(&CertsArgs {
            dir: shared.clone(),
        })
        .unwrap();
        let first = std::fs::read(shared.join("ca.key")).unwrap();
        // A second run keeps what is there.
        certs(&CertsArgs {
            dir: shared.clone(),
        })
        .unwrap();
        assert_eq!(std::fs::read(shared.join("ca.key")).unwrap(), first);

        let (a, b) = (dir.path().join("a/pki"), dir.path().join("b/pki"));
        seed(&shared, &a).unwrap();
        seed(&shared, &b).unwrap();
        let pa = certs::Pki::ensure(&a, &certs::PkiOptions::default()).unwrap();
        let pb = certs::Pki::ensure(&b, &certs::PkiOptions::default()).unwrap();
        assert_eq!(pa.ca.cert_pem(), pb.ca.cert_pem());
        assert_eq!(pa.service_account_key_pem, pb.service_account_key_pem);

        // A replica seeded from another CA issues its own certificates again.
        let other = dir.path().join("other");
        certs(&CertsArgs { dir: other.clone() }).unwrap();
        let old_serving = std::fs::read(a.join("apiserver.crt")).unwrap();
        seed(&other, &a).unwrap();
        assert!(
            !a.join("apiserver.crt").exists(),
            "stale serving certificate kept"
        );
        let again = certs::Pki::ensure(&a, &certs::PkiOptions::default()).unwrap();
        assert_ne!(again.serving.cert_pem.as_bytes(), old_serving.as_slice());
        assert_eq!(
            again.ca.cert_pem(),
            std::fs::read_to_string(other.join("ca.crt")).unwrap()
        );
    }

    #[test]
    fn a_shared_directory_missing_a_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        certs(&CertsArgs {
            dir: shared.clone(),
        })
        .unwrap();
        std::fs::remove_file(shared.join("sa.key")).unwrap();
        let err = seed(&shared, &dir.path().join("pki"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing sa.key"), "{err}");
    }
}
