//! The workspace's layering holds: `scripts/module-cycles` finds no cycle spanning two
//! top-level modules in the API server crate or in the crates that already have none, so a
//! change that makes a lower module import a higher one fails here, not in a later review;
//! and the crates README's Layout table says a crate must not depend on are not among its
//! dependencies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

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

/// Crates (package names) a crate must not depend on: `direct` not among its own
/// dependencies, `anywhere` nowhere below it (README's Layout table).
struct Forbidden {
    krate: &'static str,
    direct: &'static [&'static str],
    anywhere: &'static [&'static str],
}

const FORBIDDEN: &[Forbidden] = &[
    Forbidden {
        // k8s.io/apiserver knows no Karmada (the api crate, package `api`) and no
        // kube-controller-manager: the server above registers Karmada's kinds.
        krate: "genericapiserver",
        direct: &[],
        anywhere: &["api", "kube-controller-manager", "apiserver", "controllers"],
    },
    // Nor does anything below it: built-in kinds come from the registry, Karmada's from the
    // layer above, both through the same registration point.
    Forbidden {
        krate: "kube-registry",
        direct: &[],
        anywhere: &["api"],
    },
    Forbidden {
        krate: "apimachinery",
        direct: &[],
        anywhere: &["api"],
    },
    Forbidden {
        krate: "apiextensions-apiserver",
        direct: &[],
        anywhere: &["api"],
    },
    Forbidden {
        krate: "openapi-builder",
        direct: &[],
        anywhere: &["api"],
    },
    Forbidden {
        krate: "storage",
        direct: &[],
        anywhere: &["api"],
    },
];

/// The workspace's crates and their normal (non-dev, non-build) dependencies on each other.
fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

#[test]
fn crates_do_not_depend_on_what_the_layout_forbids() {
    let deps = workspace_dependencies();
    for rule in FORBIDDEN {
        let direct = deps
            .get(rule.krate)
            .unwrap_or_else(|| panic!("{} is a workspace crate", rule.krate));
        for f in rule.direct {
            assert!(!direct.contains(*f), "{} depends on {f}", rule.krate);
        }
        let mut below = BTreeSet::new();
        let mut todo: Vec<&String> = direct.iter().collect();
        while let Some(d) = todo.pop() {
            if below.insert(d.clone()) {
                todo.extend(deps.get(d).into_iter().flatten());
            }
        }
        for f in rule.anywhere {
            assert!(!below.contains(*f), "{} depends on {f}", rule.krate);
        }
    }
}
