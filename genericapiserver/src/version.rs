//! `/version`: kube-apiserver's version.Info. `major`/`minor` say 1.32, the Kubernetes API
//! this server implements (kubectl picks its behaviour by them); the other fields describe the
//! real build, which the binary records at build time ([`set_build`]).

use std::sync::OnceLock;

use serde_json::{Value, json};

/// The Kubernetes major version served.
pub const KUBE_MAJOR: &str = "1";
/// The Kubernetes minor version served.
pub const KUBE_MINOR: &str = "32";
/// The Kubernetes release `gitVersion` starts with.
pub const KUBE_RELEASE: &str = "v1.32.0";

/// What a build records about itself (empty strings: unknown, e.g. built without git).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildInfo {
    /// The karmada-rs version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The commit built (40 hex digits).
    pub git_commit: String,
    /// `clean` or `dirty` (uncommitted changes in the source).
    pub git_tree_state: String,
    /// When it was built, RFC 3339 in UTC (`2024-12-11T21:04:22Z`, kube's form).
    pub build_date: String,
    /// The compiler's version (`rustc 1.89.0 (29483883e 2025-08-04)`).
    pub compiler_version: String,
}

static BUILD: OnceLock<BuildInfo> = OnceLock::new();

/// Records the build of the running binary; the first call wins.
pub fn set_build(info: BuildInfo) {
    let _ = BUILD.set(info);
}

/// The recorded build, or what this crate knows of it when no binary recorded one.
pub fn build() -> BuildInfo {
    BUILD.get().cloned().unwrap_or_else(|| BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        ..Default::default()
    })
}

/// `gitVersion`: the Kubernetes release with our build as semver build metadata, e.g.
/// `v1.32.0+karmada-rs-0.1.0-g0123456789ab-dirty` (kubectl parses it as 1.32.0).
pub fn git_version(b: &BuildInfo) -> String {
    let mut v = format!("{KUBE_RELEASE}+karmada-rs-{}", b.version);
    if let Some(short) = b.git_commit.get(..12) {
        v.push_str("-g");
        v.push_str(short);
    }
    if b.git_tree_state == "dirty" {
        v.push_str("-dirty");
    }
    v
}

/// The target platform in Go's `GOOS/GOARCH` words, as kube reports it (`linux/amd64`).
pub fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        "riscv64" => "riscv64",
        "s390x" => "s390x",
        other => other,
    };
    format!("{os}/{arch}")
}

/// The `/version` document.
pub fn info() -> Value {
    let b = build();
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": git_version(&b),
        "gitCommit": b.git_commit,
        "gitTreeState": b.git_tree_state,
        "buildDate": b.build_date,
        // kube's field names; the values are the Rust toolchain's.
        "goVersion": b.compiler_version,
        "compiler": "rustc",
        "platform": platform(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_version_carries_the_build() {
        let mut b = BuildInfo {
            version: "0.1.0".into(),
            ..Default::default()
        };
        assert_eq!(git_version(&b), "v1.32.0+karmada-rs-0.1.0");
        b.git_commit = "0123456789abcdef0123456789abcdef01234567".into();
        b.git_tree_state = "clean".into();
        assert_eq!(git_version(&b), "v1.32.0+karmada-rs-0.1.0-g0123456789ab");
        b.git_tree_state = "dirty".into();
        assert_eq!(
            git_version(&b),
            "v1.32.0+karmada-rs-0.1.0-g0123456789ab-dirty"
        );
    }

    #[test]
    fn platform_names_the_target_as_go_does() {
        let p = platform();
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(p, "linux/amd64");
        #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
        assert_eq!(p, "linux/arm64");
        assert!(p.contains('/'), "{p}");
    }

    #[test]
    fn document_keeps_kubectls_version_and_reports_the_build() {
        let v = info();
        assert_eq!(
            (v["major"].as_str(), v["minor"].as_str()),
            (Some("1"), Some("32"))
        );
        assert_eq!(v["compiler"], "rustc");
        assert!(
            v["gitVersion"]
                .as_str()
                .is_some_and(|g| g.starts_with("v1.32.0+karmada-rs-")),
            "{v}"
        );
        assert_eq!(v["platform"], platform());
    }
}
