//! The workspace's layering holds: `scripts/module-cycles` finds no cycle spanning two
//! top-level modules in the API server crate or in the crates that already have none, so a
//! change that makes a lower module import a higher one fails here, not in a later review.

use std::path::Path;
use std::process::Command;

/// Crates whose top-level modules depend on each other one way (README's Layout section).
const ONE_WAY: &[&str] = &[
    "apiserver/src",
    "genericapiserver/src",
    "apimachinery/src",
    "registry/src",
    "apiextensions/src",
    "openapi-builder/src",
    "kube-controller-manager/src",
    "storage/src",
    "encryption/src",
    "flowcontrol/src",
    "leaderelection/src",
    "component-base/src",
    "karmada-metrics/src",
];

#[test]
fn server_and_library_crates_have_no_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ONE_WAY {
        let out = Command::new("python3")
            .arg(root.join("scripts/module-cycles"))
            .arg(root.join(dir))
            .output()
            .expect("python3 runs scripts/module-cycles");
        assert!(
            out.status.success(),
            "{dir}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// build.rs marks the build dirty (for `/version`) when any crate's source changes; a crate
/// added to the workspace but not to its list would leave `gitTreeState` "clean" after edits.
#[test]
fn build_script_watches_every_workspace_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = ["))
        .expect("a one-line workspace members list");
    let build = std::fs::read_to_string(root.join("build.rs")).expect("build.rs");
    for member in members.trim_end_matches(']').split(',') {
        let member = member.trim().trim_matches('"');
        let src = if member == "." {
            "\"src\"".to_string()
        } else {
            format!("\"{member}/src\"")
        };
        assert!(build.contains(&src), "build.rs SOURCES lacks {src}");
    }
}
