//! `karmada-rs interpret` as `karmadactl interpret`: `--check` reports every rule of every
//! customization in a file, and `--operation` runs one rule on local objects and prints its
//! results as YAML documents.

use std::path::Path;
use std::process::{Command, Output};

const CUSTOMIZATIONS: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: workloads}
spec:
  target: {apiVersion: apps.example.io/v1, kind: Workload}
  customizations:
    replicaResource:
      luaScript: |
        local kube = require("kube")
        function GetReplicas(obj)
          return obj.spec.size, kube.accuratePodRequirements(obj.spec.template)
        end
    componentResource:
      luaScript: |
        function GetComponents(obj)
          return {{name = "main", replicas = obj.spec.size}}
        end
    replicaRevision:
      luaScript: |
        function ReviseReplica(obj, n)
          obj.spec.size = n
          return obj
        end
    retention:
      luaScript: |
        function Retain(desired, observed)
          desired.spec.paused = observed.spec.paused
          return desired
        end
    statusReflection:
      luaScript: |
        function ReflectStatus(obj)
          return {ready = obj.status.ready}
        end
    statusAggregation:
      luaScript: |
        function AggregateStatus(obj, items)
          local ready = 0
          for i = 1, #items do
            ready = ready + items[i].status.ready
          end
          obj.status = {ready = ready}
          return obj
        end
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          return obj.status.ready >= obj.spec.size
        end
    dependencyInterpretation:
      luaScript: |
        local kube = require("kube")
        function GetDependencies(obj)
          return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
        end
"#;

const BROKEN: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: broken}
spec:
  target: {apiVersion: apps.example.io/v1, kind: Other}
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          return obj.status.phase ==
        end
"#;

const DESIRED: &str = "apiVersion: apps.example.io/v1
kind: Workload
metadata: {name: w, namespace: prod}
spec:
  size: 4
  template:
    spec:
      serviceAccountName: runner
      containers:
      - name: c
        image: nginx
        resources: {requests: {cpu: 250m, memory: 1Gi}}
";

const OBSERVED: &str = "apiVersion: apps.example.io/v1
kind: Workload
metadata: {name: w, namespace: prod}
spec: {size: 2, paused: true}
status: {ready: 1}
";

const STATUS: &str = "clusterName: member1
status: {ready: 2}
applied: true
---
clusterName: member2
status: {ready: 3}
applied: true
";

fn interpret(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .current_dir(dir)
        .arg("interpret")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run karmada-rs interpret")
}

fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in [
        ("customizations.yaml", CUSTOMIZATIONS),
        ("broken.yaml", BROKEN),
        ("desired.yaml", DESIRED),
        ("observed.yaml", OBSERVED),
        ("status.yaml", STATUS),
    ] {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_reports_every_rule() {
    let dir = files();
    let out = interpret(dir.path(), &["-f", "customizations.yaml", "--check"]);
    assert_eq!(
        stdout(&out),
        "-----------------------------------
SOURCE: workloads
TARGET: apps.example.io/v1 Workload   
RULERS:
    Retain:                PASS
    InterpretReplica:      PASS
    InterpretComponent:    PASS
    ReviseReplica:         PASS
    InterpretStatus:       PASS
    AggregateStatus:       PASS
    InterpretHealth:       PASS
    InterpretDependency:   PASS
"
    );
    let out = interpret(
        dir.path(),
        &["-f", "customizations.yaml", "-f", "broken.yaml", "--check"],
    );
    assert_eq!(out.status.code(), Some(1), "a failed check exits 1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("SOURCE: broken\nTARGET: apps.example.io/v1 Other   \n"),
        "{text}"
    );
    assert!(
        text.contains(
            "    InterpretHealth:       ERROR: <string>:3: unexpected symbol near 'end'   \n"
        ),
        "{text}"
    );
    assert!(
        text.contains("    Retain:                UNSET\n"),
        "{text}"
    );
}

#[test]
fn the_shipped_customizations_pass_the_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("controllers/src/interpreter/thirdparty/customizations");
    let out = interpret(&dir, &["-f", ".", "--check"]);
    let text = stdout(&out);
    assert_eq!(text.matches("SOURCE: ").count(), 5, "{text}");
    assert!(!text.contains("ERROR"), "{text}");
}

#[test]
fn operations_print_their_results() {
    let dir = files();
    let run = |args: &[&str]| {
        let mut all = vec!["-f", "customizations.yaml"];
        all.extend_from_slice(args);
        stdout(&interpret(dir.path(), &all))
    };
    assert_eq!(
        run(&[
            "--operation",
            "interpretReplica",
            "--desired-file",
            "desired.yaml"
        ]),
        "---
# [1/2] replica:
4
---
# [2/2] requires:
resourceRequest:
  cpu: 250m
  memory: 1Gi
"
    );
    assert_eq!(
        run(&[
            "--operation",
            "InterpretComponent",
            "--desired-file",
            "desired.yaml"
        ]),
        "---\n# [1/1] components:\n- name: main\n  replicas: 4\n"
    );
    let revised = run(&[
        "--operation",
        "ReviseReplica",
        "--desired-file",
        "desired.yaml",
        "--desired-replica",
        "2",
    ]);
    assert!(
        revised.starts_with("---\n# [1/1] revised:\napiVersion: apps.example.io/v1\n"),
        "{revised}"
    );
    assert!(revised.contains("\nspec:\n  size: 2\n"), "{revised}");
    let retained = run(&[
        "--operation",
        "retain",
        "--desired-file",
        "desired.yaml",
        "--observed-file",
        "observed.yaml",
    ]);
    assert!(
        retained.contains("\nspec:\n  paused: true\n  size: 4\n"),
        "{retained}"
    );
    assert_eq!(
        run(&[
            "--operation",
            "InterpretStatus",
            "--observed-file",
            "observed.yaml"
        ]),
        "---\n# [1/1] status:\nready: 1\n"
    );
    assert_eq!(
        run(&[
            "--operation",
            "InterpretHealth",
            "--observed-file",
            "observed.yaml"
        ]),
        "---\n# [1/1] healthy:\nfalse\n"
    );
    let aggregated = run(&[
        "--operation",
        "AggregateStatus",
        "--desired-file",
        "desired.yaml",
        "--status-file",
        "status.yaml",
    ]);
    assert!(
        aggregated.starts_with("---\n# [1/1] aggregatedStatus:\n"),
        "{aggregated}"
    );
    assert!(
        aggregated.ends_with("status:\n  ready: 5\n"),
        "{aggregated}"
    );
    assert_eq!(
        run(&[
            "--operation",
            "InterpretDependency",
            "--desired-file",
            "desired.yaml"
        ]),
        "---
# [1/1] dependencies:
- apiVersion: v1
  kind: ServiceAccount
  name: runner
  namespace: prod
"
    );
}

#[test]
fn mistakes_are_reported_as_karmadactl_reports_them() {
    let dir = files();
    let out = interpret(
        dir.path(),
        &["-f", "customizations.yaml", "--operation", "Scale"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: operation Scale is not supported. Use one of: Retain, InterpretReplica, InterpretComponent, ReviseReplica, InterpretStatus, AggregateStatus, InterpretHealth, InterpretDependency\n"
    );
    let out = interpret(dir.path(), &["-f", "customizations.yaml"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: operation is not set for executing\n"
    );
    // A rule that fails prints why and, as karmadactl, still exits 0.
    let out = interpret(
        dir.path(),
        &[
            "-f",
            "customizations.yaml",
            "--operation",
            "InterpretHealth",
            "--desired-file",
            "desired.yaml",
            "--observed-file",
            "observed.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Execute InterpretHealth error: you can not specify both desired-file and observed-file options\n"
    );
    let out = interpret(
        dir.path(),
        &[
            "-f",
            "broken.yaml",
            "--operation",
            "InterpretReplica",
            "--desired-file",
            "desired.yaml",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Execute InterpretReplica error: rule is not enabled\n"
    );
    // A script error names the customization, the operation and the Lua error.
    let out = interpret(
        dir.path(),
        &[
            "-f",
            "customizations.yaml",
            "--operation",
            "InterpretHealth",
            "--desired-file",
            "desired.yaml",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("Execute InterpretHealth error: "), "{err}");
    assert!(err.contains("attempt to index"), "{err}");
}

/// An AggregateStatus script that says what `statusItems` it received.
const ECHO_ITEMS: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: echo}
spec:
  target: {apiVersion: apps.example.io/v1, kind: Workload}
  customizations:
    statusAggregation:
      luaScript: |
        function AggregateStatus(obj, statusItems)
          if statusItems == nil then
            obj.status = {items = "nil"}
            return obj
          end
          local seen = {}
          for _, item in ipairs(statusItems) do
            local fields = {}
            for k, v in pairs(item) do
              if type(v) ~= "table" then fields[#fields + 1] = k .. "=" .. tostring(v) else fields[#fields + 1] = k end
            end
            table.sort(fields)
            seen[#seen + 1] = table.concat(fields, " ")
          end
          obj.status = {items = seen, count = #statusItems}
          return obj
        end
"#;

/// `--status-file` is read as karmadactl reads it: each document decoded as Go decodes an
/// AggregatedStatusItem (missing and null fields zero, unknown fields dropped, names in any
/// case, any health), and no file at all is nil to the script.
#[test]
fn status_files_are_decoded_as_karmadactl_decodes_them() {
    let dir = files();
    std::fs::write(dir.path().join("echo.yaml"), ECHO_ITEMS).expect("write");
    let cases: [(&str, Option<&str>, &str); 4] = [
        ("no status file", None, "status:\n  items: nil\n"),
        ("an empty status file", Some(""), "status:\n  count: 0\n"),
        (
            "items without clusterName, with unknown, null and differently cased fields",
            Some(
                "status: {ready: 2}\napplied: true\nextra: {ignored: true}\n---\nClusterName: member2\nhealth: Degraded\nappliedMessage: null\napplied: null\n---\n",
            ),
            "status:\n  count: 2\n  items:\n  - applied=true clusterName= status\n  - clusterName=member2 health=Degraded\n",
        ),
        (
            "a document that is no object",
            Some("- clusterName: member1\n"),
            "",
        ),
    ];
    for (name, file, want) in cases {
        let mut args = vec![
            "-f",
            "echo.yaml",
            "--operation",
            "AggregateStatus",
            "--desired-file",
            "desired.yaml",
        ];
        if let Some(text) = file {
            std::fs::write(dir.path().join("items.yaml"), text).expect("write");
            args.extend(["--status-file", "items.yaml"]);
        }
        let out = interpret(dir.path(), &args);
        if want.is_empty() {
            assert_eq!(out.status.code(), Some(1), "{name}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                "error: fail to get status items: items.yaml: json: cannot unmarshal array into Go value of type v1alpha2.AggregatedStatusItem\n",
                "{name}"
            );
            continue;
        }
        let printed = stdout(&out);
        assert!(printed.ends_with(want), "{name}: {printed}");
    }
}
