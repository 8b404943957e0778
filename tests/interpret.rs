//! `karmada-rs interpret` as `karmadactl interpret`: `--check` reports every rule of every
//! customization in a file, and `--operation` runs one rule on local objects and prints its
//! results as YAML documents.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::Server;

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
    let shipped = std::fs::read_dir(&dir)
        .expect("customizations")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        })
        .count();
    assert!(shipped >= 20, "{shipped} shipped customizations");
    let out = interpret(&dir, &["-f", ".", "--check"]);
    let text = stdout(&out);
    assert_eq!(text.matches("SOURCE: ").count(), shipped, "{text}");
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

const KRUISE_STATEFULSET: &str = "apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata: {name: web, namespace: shop, generation: 3}
spec:
  replicas: 5
  template:
    spec:
      containers:
      - name: c
        image: nginx
        resources: {requests: {cpu: 500m}}
";

const KRUISE_STATUS: &str = "clusterName: member1
status: {replicas: 2, readyReplicas: 2, updateRevision: web-7}
---
clusterName: member2
status: {replicas: 3, readyReplicas: 1}
";

/// A stored customization overriding the bundled InterpretReplica of Kruise's StatefulSet.
const STORED_OVERRIDE: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: statefulset-replicas}
spec:
  target: {apiVersion: apps.kruise.io/v1beta1, kind: StatefulSet}
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          return obj.spec.replicas * 10
        end
"#;

fn object_files() -> tempfile::TempDir {
    let dir = files();
    for (name, text) in [
        ("statefulset.yaml", KRUISE_STATEFULSET),
        ("kruise-status.yaml", KRUISE_STATUS),
        ("override.yaml", STORED_OVERRIDE),
        (
            "deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: shop}\n\
             spec:\n  replicas: 3\n  template: {spec: {containers: [{name: c, image: nginx}]}}\n",
        ),
    ] {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

#[test]
fn without_customization_files_the_bundled_and_built_in_interpreters_answer() {
    let dir = object_files();
    let run = |args: &[&str]| stdout(&interpret(dir.path(), args));
    assert_eq!(
        run(&[
            "--operation",
            "InterpretReplica",
            "--desired-file",
            "statefulset.yaml"
        ]),
        "---\n# [1/2] replica:\n5\n---\n# [2/2] requires:\nresourceRequest:\n  cpu: 500m\n"
    );
    let aggregated = run(&[
        "--operation",
        "AggregateStatus",
        "--desired-file",
        "statefulset.yaml",
        "--status-file",
        "kruise-status.yaml",
    ]);
    assert!(
        aggregated
            .starts_with("---\n# [1/1] aggregatedStatus:\napiVersion: apps.kruise.io/v1beta1\n"),
        "{aggregated}"
    );
    assert!(aggregated.contains("\n  replicas: 5\n"), "{aggregated}");
    assert!(
        aggregated.contains("\n  readyReplicas: 3\n"),
        "{aggregated}"
    );
    assert!(
        aggregated.contains("\n  updateRevision: web-7\n"),
        "{aggregated}"
    );
    // A built-in kind: the built-in interpreter.
    assert_eq!(
        run(&[
            "--operation",
            "ReviseReplica",
            "--desired-file",
            "deployment.yaml",
            "--desired-replica",
            "1"
        ])
        .lines()
        .filter(|l| l.starts_with("  replicas:"))
        .collect::<Vec<_>>(),
        ["  replicas: 1"]
    );
    // Nothing interprets the health of an unknown kind.
    let out = interpret(
        dir.path(),
        &[
            "--operation",
            "InterpretHealth",
            "--observed-file",
            "desired.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: no customization interprets InterpretHealth for apps.example.io/v1 Workload: none \
         is stored in the control plane or bundled, and the built-in interpreter has no rule for it\n"
    );
    let out = interpret(dir.path(), &["--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("name it with -f"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With -f, the file's customizations alone run; --kubeconfig is not read.
    let out = interpret(
        dir.path(),
        &[
            "-f",
            "customizations.yaml",
            "--kubeconfig",
            "missing",
            "--operation",
            "InterpretReplica",
            "--desired-file",
            "statefulset.yaml",
        ],
    );
    assert_eq!(stdout(&out), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Execute InterpretReplica error: rule is not enabled\n"
    );
}

#[test]
fn customizations_stored_in_the_control_plane_override_the_bundled_ones() {
    let server = Server::start();
    let dir = object_files();
    let kubeconfig = server.kubeconfig.to_string_lossy().into_owned();
    let replicas = || {
        stdout(&interpret(
            dir.path(),
            &[
                "--kubeconfig",
                &kubeconfig,
                "--operation",
                "InterpretReplica",
                "--desired-file",
                "statefulset.yaml",
            ],
        ))
    };
    assert!(
        replicas().starts_with("---\n# [1/2] replica:\n5\n"),
        "the bundled one first"
    );
    server.kubectl_ok(&[
        "apply",
        "-f",
        &dir.path().join("override.yaml").to_string_lossy(),
    ]);
    assert_eq!(
        replicas(),
        "---\n# [1/2] replica:\n50\n---\n# [2/2] requires:\nnull\n",
        "the stored one wins"
    );
    // Operations the stored customization does not script are still the bundled ones'.
    let revised = stdout(&interpret(
        dir.path(),
        &[
            "--kubeconfig",
            &kubeconfig,
            "--operation",
            "ReviseReplica",
            "--desired-file",
            "statefulset.yaml",
            "--desired-replica",
            "2",
        ],
    ));
    assert!(revised.contains("\n  replicas: 2\n"), "{revised}");
    // An unreachable control plane is an error, not a silent fallback.
    let bad = dir.path().join("missing-kubeconfig");
    let out = interpret(
        dir.path(),
        &[
            "--kubeconfig",
            &bad.to_string_lossy(),
            "--operation",
            "InterpretReplica",
            "--desired-file",
            "statefulset.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("reading the kubeconfig"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
