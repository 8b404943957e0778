//! Records the build for `/version` and `--version` (git commit and tree state, build date,
//! compiler), and lays out the release binary's code so that what runs at start and at idle
//! sits together.
//!
//! The kernel maps a binary's code 64 KiB around each first touch, so the few MB of functions
//! a starting server runs, scattered over about 32 MB of text, made about 20 MiB of its idle
//! RSS. `startup.symbols` lists those functions (recorded by `scripts/symbol-order`); the
//! linker places them first. A name that no longer exists (code changed since the recording)
//! is skipped, so a stale list only costs memory, never correctness.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The sources whose changes make the tree dirty (cargo rescans directories recursively):
/// every workspace member's `src/`, read from the manifest's `members` list so a new crate is
/// never missed, and the manifest and lock file.
fn sources(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map_or("", |(list, _)| list);
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| {
            if m == "." {
                root.join("src")
            } else {
                root.join(m).join("src")
            }
        })
        .chain([root.join("Cargo.toml"), root.join("Cargo.lock")])
        .collect()
}

fn main() {
    record_build();
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("startup.symbols");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if release && order.exists() && links_with_lld() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // Names of code changed since the recording are expected; lld would warn per name.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Rust links x86_64 Linux binaries with its bundled lld from 1.90 on; the option is lld's.
fn links_with_lld() -> bool {
    if std::env::var("TARGET").ok().as_deref() != Some("x86_64-unknown-linux-gnu") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (...)"
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}

/// Sets `KARMADA_RS_GIT_COMMIT`, `KARMADA_RS_GIT_TREE_STATE`, `KARMADA_RS_BUILD_DATE` and
/// `KARMADA_RS_RUSTC_VERSION` for the binary. Without git or a repository (a source tarball,
/// a Docker context without `.git`) the git fields are empty: nothing here is required.
fn record_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for s in sources(root) {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--verify", "HEAD"])
        .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_default();
    let tree_state = if commit.is_empty() {
        String::new()
    } else {
        // --no-optional-locks: no index refresh written behind the user's back.
        match git(&[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ]) {
            Some(changes) if changes.is_empty() => "clean".into(),
            Some(_) => "dirty".into(),
            None => String::new(),
        }
    };
    if !commit.is_empty() {
        // A new commit or checkout changes HEAD, the branch's ref or packed-refs. (Not the
        // index: every `git status` may rewrite it.)
        let mut watched = vec!["HEAD".to_string(), "packed-refs".into()];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(branch);
        }
        // Only files that exist: cargo treats a missing watched file as changed, which
        // would run this script, and so compile and link the binary again, on every build
        // (a checkout without packed-refs has none until git packs its refs).
        for w in watched {
            if let Some(path) = git(&["rev-parse", "--git-path", &w]) {
                let path = root.join(path);
                if path.exists() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiler = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=KARMADA_RS_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=KARMADA_RS_GIT_TREE_STATE={tree_state}");
    println!("cargo:rustc-env=KARMADA_RS_BUILD_DATE={}", rfc3339(epoch));
    println!("cargo:rustc-env=KARMADA_RS_RUSTC_VERSION={compiler}");
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (the civil-from-days algorithm of
/// H. Hinnant's date library).
fn rfc3339(epoch: i64) -> String {
    let (days, secs) = (epoch.div_euclid(86_400), epoch.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}
