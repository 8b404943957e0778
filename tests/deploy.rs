//! deploy/: every manifest passes `kubectl apply --dry-run=client` (and the server-side dry
//! run, which decodes strictly and validates), the pieces fit together (Deployment ↔ Service ↔
//! APIService ↔ RBAC), and the Dockerfile and systemd unit are well formed.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::Server;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .expect("deploy/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The objects of every manifest, as `kubectl apply --dry-run=client -o json` prints them.
fn objects(server: &Server) -> Vec<Value> {
    let mut all = Vec::new();
    for f in manifests() {
        let out = server.kubectl_ok(&[
            "apply",
            "--dry-run=client",
            "-o",
            "json",
            "-f",
            f.to_str().expect("path"),
        ]);
        let v: Value = serde_json::from_str(&out).expect("kubectl JSON");
        match v["kind"].as_str() {
            Some("List") => all.extend(v["items"].as_array().cloned().unwrap_or_default()),
            _ => all.push(v),
        }
    }
    all
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/"))
}

#[test]
fn manifests_validate_with_kubectl_dry_runs() {
    let server = Server::start();
    let files = manifests();
    assert!(files.len() >= 5, "{files:?}");
    for f in &files {
        let path = f.to_str().expect("path");
        let out = server.kubectl_ok(&["apply", "--dry-run=client", "-f", path]);
        assert!(out.contains("(dry run)"), "{path}: {out}");
        let out = server.kubectl_ok(&["apply", "--dry-run=server", "-f", path]);
        assert!(out.contains("(server dry run)"), "{path}: {out}");
    }
    // The dry runs are real checks: a misspelt field is refused.
    let broken = std::fs::read_to_string(deploy_dir().join("aggregated-apiserver.yaml"))
        .expect("read")
        .replace("replicas: 2", "replicaz: 2");
    let out = server.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &broken);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown field \"spec.replicaz\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn manifests_fit_together() {
    let server = Server::start();
    let objs = objects(&server);

    let deploy = find(&objs, "Deployment", "karmada-aggregated-apiserver");
    assert_eq!(deploy["metadata"]["namespace"], "karmada-system");
    assert_eq!(deploy["spec"]["replicas"], 2);
    let pod = &deploy["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("arg"))
        .collect();
    assert_eq!(args[0], "serve");
    assert!(args.contains(&"--aggregated"), "{args:?}");
    assert!(
        args.iter().any(|a| a.starts_with("--etcd-servers=")),
        "two replicas need shared storage: {args:?}"
    );
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    for k in ["cpu", "memory"] {
        assert!(c["resources"]["requests"][k].is_string(), "requests.{k}");
    }
    assert!(c["resources"]["limits"]["memory"].is_string());
    // The flags the Deployment passes are flags of this binary.
    let bin = env!("CARGO_BIN_EXE_karmada-rs");
    let help = std::process::Command::new(bin)
        .args(["serve", "--help"])
        .output()
        .expect("karmada-rs serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for a in &args[1..] {
        let flag = a.split('=').next().expect("flag");
        assert!(help.contains(flag), "serve has no flag {flag}");
    }
    let sa = pod["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName");
    find(&objs, "ServiceAccount", sa);

    // Service → Deployment pods, APIService → Service.
    let svc = find(&objs, "Service", "karmada-aggregated-apiserver");
    let labels = &deploy["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&labels[k], v, "selector {k}");
    }
    let port = &svc["spec"]["ports"][0];
    assert_eq!(port["port"], 443);
    assert_eq!(port["targetPort"], c["ports"][0]["name"]);
    let api = find(&objs, "APIService", "v1alpha1.cluster.karmada.io");
    assert_eq!(api["spec"]["group"], "cluster.karmada.io");
    assert_eq!(api["spec"]["version"], "v1alpha1");
    assert_eq!(api["spec"]["groupPriorityMinimum"], 2000);
    assert_eq!(api["spec"]["versionPriority"], 10);
    assert_eq!(api["spec"]["service"]["name"], svc["metadata"]["name"]);
    assert_eq!(
        api["spec"]["service"]["namespace"],
        svc["metadata"]["namespace"]
    );
    assert_eq!(api["spec"]["service"]["port"], 443);
    assert!(api["spec"]["caBundle"].is_string(), "caBundle placeholder");

    // Delegated authentication and authorization for the ServiceAccount.
    let subject_is_sa = |b: &Value| {
        b["subjects"].as_array().is_some_and(|s| {
            s.iter().any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == sa
                    && s["namespace"] == "karmada-system"
            })
        })
    };
    let reader = objs
        .iter()
        .find(|o| {
            o["kind"] == "RoleBinding"
                && o["metadata"]["namespace"] == "kube-system"
                && o["roleRef"]["kind"] == "Role"
                && o["roleRef"]["name"] == "extension-apiserver-authentication-reader"
        })
        .expect("extension-apiserver-authentication-reader RoleBinding");
    assert!(subject_is_sa(reader));
    let delegator = objs
        .iter()
        .find(|o| {
            o["kind"] == "ClusterRoleBinding"
                && o["roleRef"]["kind"] == "ClusterRole"
                && o["roleRef"]["name"] == "system:auth-delegator"
        })
        .expect("system:auth-delegator ClusterRoleBinding");
    assert!(subject_is_sa(delegator));
    for ns in ["karmada-system", "karmada-cluster"] {
        find(&objs, "Namespace", ns);
    }
}

/// No container runtime on the test machines: the Dockerfile is checked for its structure and
/// its default command is run against the binary it copies.
#[test]
fn dockerfile_builds_the_binary_and_runs_serve() {
    let text = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    let instructions: Vec<(String, String)> = text
        .replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (i, rest) = l.split_once(' ').unwrap_or((l, ""));
            (i.to_uppercase(), rest.trim().to_string())
        })
        .collect();
    const KNOWN: &[&str] = &[
        "FROM",
        "WORKDIR",
        "COPY",
        "RUN",
        "USER",
        "EXPOSE",
        "ENTRYPOINT",
        "CMD",
        "ENV",
        "ARG",
        "LABEL",
    ];
    for (i, _) in &instructions {
        assert!(KNOWN.contains(&i.as_str()), "unknown instruction {i}");
    }
    let froms: Vec<&String> = instructions
        .iter()
        .filter(|(i, _)| i == "FROM")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime stage");
    let build_stage = froms[0]
        .split_whitespace()
        .last()
        .expect("stage name")
        .to_string();
    let run = instructions
        .iter()
        .find(|(i, r)| i == "RUN" && r.contains("cargo build"))
        .expect("cargo build");
    assert!(run.1.contains("--release") && run.1.contains("--bin karmada-rs"));
    assert!(
        instructions.iter().any(|(i, r)| i == "COPY"
            && r.starts_with(&format!("--from={build_stage} "))
            && r.ends_with("/usr/local/bin/karmada-rs")),
        "the runtime stage copies the binary"
    );
    let entry = instructions
        .iter()
        .find(|(i, _)| i == "ENTRYPOINT")
        .expect("ENTRYPOINT");
    let entry: Vec<String> = serde_json::from_str(&entry.1).expect("exec-form ENTRYPOINT");
    assert_eq!(entry, vec!["/usr/local/bin/karmada-rs"]);
    let cmd = instructions.iter().find(|(i, _)| i == "CMD").expect("CMD");
    let cmd: Vec<String> = serde_json::from_str(&cmd.1).expect("exec-form CMD");
    assert_eq!(cmd[0], "serve");
    // The default command is accepted by the binary.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(&cmd)
        .arg("--help")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Build outputs stay out of the context.
    let ignore = std::fs::read_to_string(deploy_dir().join("Dockerfile.dockerignore"))
        .expect("Dockerfile.dockerignore");
    assert!(ignore.lines().any(|l| l.trim() == "target"));
}

#[test]
fn systemd_unit_verifies() {
    let unit =
        std::fs::read_to_string(deploy_dir().join("systemd/karmada-rs.service")).expect("unit");
    assert!(unit.contains("ExecStart=/usr/local/bin/karmada-rs serve"));
    let Ok(probe) = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
    else {
        eprintln!("systemd-analyze is not installed; only the static checks ran");
        return;
    };
    assert!(probe.status.success());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("karmada-rs.service");
    std::fs::write(
        &path,
        unit.replace(
            "/usr/local/bin/karmada-rs",
            env!("CARGO_BIN_EXE_karmada-rs"),
        ),
    )
    .expect("write unit");
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze verify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "warnings: {stderr}");
    // The unit's environment names flags the binary reads.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["serve", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    for line in unit.lines().filter_map(|l| l.strip_prefix("Environment=")) {
        let var = line.split('=').next().expect("var");
        if var != "KARMADA_RS_LOG" {
            assert!(
                help.contains(&format!("env: {var}=")),
                "serve reads no {var}"
            );
        }
    }
}
