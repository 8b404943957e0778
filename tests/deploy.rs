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
    // etcd speaks TLS and wants a client certificate: the replicas present theirs.
    let flag = |args: &[&str], name: &str| {
        let prefix = format!("--{name}=");
        args.iter()
            .find_map(|a| a.strip_prefix(prefix.as_str()))
            .map(str::to_string)
    };
    assert_eq!(
        flag(&args, "etcd-servers").as_deref(),
        Some("https://karmada-rs-etcd-0.karmada-rs-etcd.karmada-system.svc:2379")
    );
    let mount = |pod: &Value, c: &Value, name: &str| {
        let path = c["volumeMounts"]
            .as_array()
            .expect("volumeMounts")
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no mount {name}"))["mountPath"]
            .as_str()
            .expect("mountPath")
            .to_string();
        let secret = pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no volume {name}"))["secret"]["secretName"]
            .as_str()
            .expect("a Secret volume")
            .to_string();
        (path, secret)
    };
    let (dir, secret) = mount(pod, c, "etcd-certs");
    assert_eq!(secret, "karmada-rs-etcd-client");
    for (name, file) in [
        ("etcd-cafile", "ca.crt"),
        ("etcd-certfile", "tls.crt"),
        ("etcd-keyfile", "tls.key"),
    ] {
        assert_eq!(flag(&args, name), Some(format!("{dir}/{file}")), "--{name}");
    }
    let etcd = find(&objs, "StatefulSet", "karmada-rs-etcd");
    let etcd_pod = &etcd["spec"]["template"]["spec"];
    let etcd_c = &etcd_pod["containers"][0];
    let command: Vec<&str> = etcd_c["command"]
        .as_array()
        .expect("command")
        .iter()
        .map(|a| a.as_str().expect("arg"))
        .collect();
    let (pki, secret) = mount(etcd_pod, etcd_c, "certs");
    assert_eq!(secret, "karmada-rs-etcd-server");
    for (name, value) in [
        ("listen-client-urls", "https://0.0.0.0:2379".to_string()),
        ("listen-peer-urls", "https://0.0.0.0:2380".to_string()),
        ("client-cert-auth", "true".to_string()),
        ("peer-client-cert-auth", "true".to_string()),
        ("cert-file", format!("{pki}/server.crt")),
        ("key-file", format!("{pki}/server.key")),
        ("trusted-ca-file", format!("{pki}/ca.crt")),
        ("peer-cert-file", format!("{pki}/peer.crt")),
        ("peer-key-file", format!("{pki}/peer.key")),
        ("peer-trusted-ca-file", format!("{pki}/ca.crt")),
    ] {
        assert_eq!(flag(&command, name), Some(value), "etcd --{name}");
    }
    // The probe reaches the plain-HTTP metrics listener, not the client port.
    assert_eq!(
        flag(&command, "listen-metrics-urls").as_deref(),
        Some("http://0.0.0.0:2381")
    );
    assert_eq!(etcd_c["readinessProbe"]["httpGet"]["port"], "metrics");
    assert!(
        etcd_c["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .any(|p| p["name"] == "metrics" && p["containerPort"] == 2381)
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

/// The unit's static checks: it runs the installed binary's `serve`, and every environment
/// variable it sets names a flag `serve` reads.
#[test]
fn systemd_unit_names_real_flags() {
    let unit =
        std::fs::read_to_string(deploy_dir().join("systemd/karmada-rs.service")).expect("unit");
    assert!(unit.contains("ExecStart=/usr/local/bin/karmada-rs serve"));
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["serve", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    let vars: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|l| l.split('=').next().expect("var"))
        .collect();
    assert!(
        !vars.is_empty(),
        "the unit sets its flags through the environment"
    );
    for var in vars {
        if var != "KARMADA_RS_LOG" {
            assert!(
                help.contains(&format!("env: {var}=")),
                "serve reads no {var}"
            );
        }
    }
}

/// `systemd-analyze verify` accepts the unit, without a warning. systemd-analyze is required
/// (`scripts/test` installs it): a missing tool fails the test rather than passing it unchecked.
#[test]
fn systemd_unit_verifies() {
    let unit =
        std::fs::read_to_string(deploy_dir().join("systemd/karmada-rs.service")).expect("unit");
    let probe = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .expect("systemd-analyze is required (apt-get install systemd; scripts/test does)");
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
}

/// The subcommands of `karmada-rs [path...] --help`, from its `Commands:` section.
fn subcommands(path: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(path)
        .arg("--help")
        .output()
        .expect("help");
    assert!(out.status.success(), "{path:?} --help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The flags of one `--help` text and the environment variable each names (`None`: none).
fn flags_and_env(help: &str) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        // A flag's first line: `-s, --flag ...` or `--flag ...`, indented as an option (its
        // description is indented further).
        if (2..=6).contains(&indent)
            && t.starts_with('-')
            && let Some(at) = t.find("--")
        {
            let name: String = t[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.push((name, None));
        }
        if let Some((_, rest)) = line.split_once("[env: ")
            && let Some(last) = out.last_mut()
        {
            last.1 = rest.split('=').next().map(str::to_string);
        }
    }
    out
}

/// Every flag of every subcommand can be given as an environment variable, named
/// `KARMADA_RS_` and the flag in upper case (README's promise), found by walking `--help`.
#[test]
fn every_flag_has_an_environment_variable() {
    let mut commands: Vec<Vec<String>> = subcommands(&[]).into_iter().map(|c| vec![c]).collect();
    assert!(
        commands.len() >= 5,
        "serve, member, join, unjoin, up: {commands:?}"
    );
    let mut checked = 0;
    let mut missing = Vec::new();
    while let Some(path) = commands.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in subcommands(&args) {
            let mut p = path.clone();
            p.push(sub);
            commands.push(p);
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(&args)
            .arg("--help")
            .output()
            .expect("help");
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        for (flag, env) in flags_and_env(&help) {
            if flag == "help" || flag == "version" {
                continue;
            }
            checked += 1;
            let want = format!("KARMADA_RS_{}", flag.to_uppercase().replace('-', "_"));
            if env.as_deref() != Some(want.as_str()) {
                missing.push(format!("{} --{flag}: {env:?}, want {want}", path.join(" ")));
            }
        }
    }
    assert!(
        checked > 40,
        "only {checked} flags found: the help parsing is off"
    );
    assert!(
        missing.is_empty(),
        "flags without their variable:\n{}",
        missing.join("\n")
    );
}
