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
    "admission-policy/src",
    "karmada-metrics/src",
    "scheduler/src",
    "controllers/src",
    "admission-webhook/src",
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
