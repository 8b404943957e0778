//! End-to-end: OpenAPI v3 (kubectl's default field validation and `kubectl explain`) and
//! CustomResourceDefinitions served dynamically, with the real binary and the real kubectl.

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;

use support::{DEADLINE, Server, kubectl_cmd, wait_for};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
";

const POLICY: &str = "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: NAME
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [member1]
";

fn named(manifest: &str, name: &str) -> String {
    manifest.replace("NAME", name)
}

/// Adds an unknown field under `spec`.
fn with_unknown_spec_field(manifest: &str) -> String {
    manifest.replacen("spec:\n", "spec:\n  foo: bar\n", 1)
}

#[test]
fn builtin_and_karmada_kinds_validate_and_explain() {
    let s = Server::start();

    // Default validation (Strict, on the server) accepts valid manifests.
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &named(DEPLOYMENT, "web"));
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &named(POLICY, "web"));
    assert!(
        out.contains("propagationpolicy.policy.karmada.io/web created"),
        "{out}"
    );

    // Unknown fields: refused by default, warned about with --validate=warn.
    for (manifest, kind) in [(DEPLOYMENT, "Deployment"), (POLICY, "PropagationPolicy")] {
        let bad = with_unknown_spec_field(&named(manifest, "strict"));
        let out = s.kubectl_stdin(&["create", "-f", "-"], &bad);
        assert!(!out.status.success());
        let err = stderr_of(&out);
        assert!(
            err.contains(&format!(
                "cannot be handled as a {kind}: strict decoding error: unknown field \"spec.foo\""
            )),
            "{err}"
        );
        let out = s.kubectl_stdin(&["create", "--validate=warn", "-f", "-"], &bad);
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("Warning: unknown field \"spec.foo\""),
            "{}",
            stderr_of(&out)
        );
        let lower = kind.to_lowercase();
        let stored = s.get_json(&[&lower, "strict"]);
        assert!(stored["spec"].get("foo").is_none(), "{stored}");
    }

    // A patch that adds an unknown field is refused too (kubectl apply of an existing object).
    let bad = with_unknown_spec_field(&named(DEPLOYMENT, "web"));
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &bad);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("strict decoding error: unknown field \"spec.foo\""),
        "{}",
        stderr_of(&out)
    );

    let explain = s.kubectl_ok(&["explain", "deployment.spec.replicas"]);
    assert!(explain.contains("KIND:       Deployment"), "{explain}");
    assert!(explain.contains("FIELD: replicas <integer>"), "{explain}");
    let explain = s.kubectl_ok(&["explain", "propagationpolicy.spec.placement"]);
    assert!(
        explain.contains("GROUP:      policy.karmada.io"),
        "{explain}"
    );
    assert!(explain.contains("clusterAffinity"), "{explain}");
    let explain = s.kubectl_ok(&["explain", "work.spec"]);
    assert!(explain.contains("KIND:       Work"), "{explain}");
    assert!(explain.contains("FIELD: spec <Object>"), "{explain}");

    let root: serde_json::Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/openapi/v3"])).expect("json");
    let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{root}");
    let doc: serde_json::Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &url])).expect("json");
    assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object());
    let v2: serde_json::Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/openapi/v2"])).expect("json");
    assert_eq!(v2["swagger"], "2.0");
    assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Schedule
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
                description: The schedule in cron format.
              replicas:
                type: integer
                minimum: 0
                default: 1
              mode:
                type: string
                enum: [Fast, Slow]
                default: Fast
          status:
            type: object
            properties:
              replicas: {type: integer}
";

fn crontab(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: \"*/5 * * * *\"\n{extra}"
    )
}

fn establish(s: &Server) {
    s.kubectl_stdin_ok(&["apply", "-f", "-"], CRD);
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);
}

#[test]
fn custom_resources_follow_their_definition() {
    let s = Server::start();
    establish(&s);
    let crd = s.get_json(&["crd", "crontabs.stable.example.com"]);
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    let names_accepted = crd["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "NamesAccepted"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(names_accepted["status"], "True", "{crd}");

    // Create with default validation; defaults come from the schema.
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &crontab("first", ""));
    assert!(
        out.contains("crontab.stable.example.com/first created"),
        "{out}"
    );
    let first = s.get_json(&["ct", "first"]);
    assert_eq!(first["spec"]["replicas"], 1);
    assert_eq!(first["spec"]["mode"], "Fast");

    // Watch sees objects created later.
    let mut watch = s
        .kubectl_cmd()
        .args(["get", "crontabs", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    let stdout = watch.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    s.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &crontab("second", "  replicas: 2\n"),
    );
    let mut seen = Vec::new();
    wait_for("the watch to report the second CronTab", DEADLINE, || {
        seen.extend(rx.try_iter());
        seen.iter()
            .any(|l| l == "crontab.stable.example.com/second")
            .then_some(())
    });
    let _ = watch.kill();
    let _ = watch.wait();

    // Printer columns.
    let table = s.kubectl_ok(&["get", "ct"]);
    assert!(
        table.contains("SCHEDULE") && table.contains("REPLICAS"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("second") && l.contains("*/5 * * * *") && l.contains(" 2")),
        "{table}"
    );

    // Schema validation: 422 with kube's causes.
    let bad =
        crontab("bad", "  replicas: three\n  mode: Medium\n").replace("\"*/5 * * * *\"", "nope");
    let out = s.kubectl_stdin(&["create", "-f", "-"], &bad);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    for want in [
        "The CronTab \"bad\" is invalid",
        "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        "spec.mode: Unsupported value: \"Medium\": supported values: \"Fast\", \"Slow\"",
        "spec.cronSpec: Invalid value: \"nope\": spec.cronSpec in body should match",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    let err = s.kubectl_err(&[
        "patch",
        "ct",
        "first",
        "--type=merge",
        "-p",
        "{\"spec\":{\"replicas\":-1}}",
    ]);
    assert!(
        err.contains("spec.replicas in body should be greater than or equal to 0"),
        "{err}"
    );

    // Unknown fields: Strict refuses, Warn warns and prunes.
    let unknown = crontab("unknown", "  bogus: 1\n");
    let out = s.kubectl_stdin(&["create", "-f", "-"], &unknown);
    assert!(
        stderr_of(&out).contains("strict decoding error: unknown field \"spec.bogus\""),
        "{}",
        stderr_of(&out)
    );
    let out = s.kubectl_stdin(&["create", "--validate=warn", "-f", "-"], &unknown);
    assert!(
        stderr_of(&out).contains("Warning: unknown field \"spec.bogus\""),
        "{}",
        stderr_of(&out)
    );
    assert!(
        s.get_json(&["ct", "unknown"])["spec"]
            .get("bogus")
            .is_none()
    );

    // Status subresource: main writes ignore status, status writes keep spec.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "first",
        "--subresource=status",
        "--type=merge",
        "-p",
        "{\"status\":{\"replicas\":4},\"spec\":{\"replicas\":9}}",
    ]);
    let first = s.get_json(&["ct", "first"]);
    assert_eq!(first["status"]["replicas"], 4);
    assert_eq!(first["spec"]["replicas"], 1);
    s.kubectl_ok(&[
        "patch",
        "ct",
        "first",
        "--type=merge",
        "-p",
        "{\"status\":{\"replicas\":7}}",
    ]);
    assert_eq!(s.get_json(&["ct", "first"])["status"]["replicas"], 4);

    // Scale subresource.
    s.kubectl_ok(&["scale", "ct", "first", "--replicas=3"]);
    assert_eq!(s.get_json(&["ct", "first"])["spec"]["replicas"], 3);
    let scale: serde_json::Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/first/scale",
    ]))
    .expect("scale json");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["replicas"], 4);

    // kubectl explain reads the CRD's schema.
    let explain = s.kubectl_ok(&["explain", "crontab.spec"]);
    assert!(explain.contains("KIND:       CronTab"), "{explain}");
    assert!(
        explain.contains("The schedule in cron format."),
        "{explain}"
    );

    // Deleting the CRD deletes its objects and stops serving the resource.
    let out = s.kubectl_ok(&["delete", "crd", "crontabs.stable.example.com"]);
    assert!(out.contains("deleted"), "{out}");
    let err = s.kubectl_err(&["get", "crd", "crontabs.stable.example.com"]);
    assert!(err.contains("NotFound"), "{err}");
    let fresh = s.dir.path().join("fresh-kubectl-cache");
    let out = support::run(kubectl_cmd(&s.kubeconfig, &fresh).args(["get", "crontabs"]));
    assert!(
        stderr_of(&out).contains("the server doesn't have a resource type \"crontabs\""),
        "{}",
        stderr_of(&out)
    );
    establish(&s);
    let list = s.get_json(&["crontabs", "-A"]);
    assert_eq!(list["items"], serde_json::json!([]), "{list}");
}

#[test]
fn definitions_are_validated_named_and_survive_restarts() {
    let mut s = Server::start();

    // A v1 CRD needs a structural schema.
    let non_structural = CRD.replace(
        "          spec:\n            type: object\n",
        "          spec:\n",
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &non_structural);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(
        err.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"),
        "{err}"
    );

    establish(&s);
    // Another CRD of the group may not take the same names.
    let clash = CRD
        .replace(
            "name: crontabs.stable.example.com",
            "name: crontabs2.stable.example.com",
        )
        .replace("plural: crontabs", "plural: crontabs2")
        .replace("singular: crontab", "singular: crontab2")
        .replace("shortNames: [ct]", "shortNames: [ct2]");
    s.kubectl_stdin_ok(&["create", "-f", "-"], &clash);
    let cond = wait_for(
        "the clashing CRD's NamesAccepted condition",
        DEADLINE,
        || {
            let crd = s.get_json(&["crd", "crontabs2.stable.example.com"]);
            crd["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "NamesAccepted"))
                .cloned()
        },
    );
    assert_eq!(cond["status"], "False", "{cond}");
    assert_eq!(cond["reason"], "ListKindConflict", "{cond}");
    assert_eq!(
        cond["message"], "\"CronTabList\" is already in use",
        "{cond}"
    );

    s.kubectl_stdin_ok(&["create", "-f", "-"], &crontab("kept", ""));
    s.restart();
    let kept = s.get_json(&["ct", "kept"]);
    assert_eq!(kept["spec"]["replicas"], 1);
}

const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: string SIZE_DEFAULT}
";

#[test]
fn versions_read_defaults_and_field_selectors() {
    let s = Server::start();
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &WIDGETS.replace(" SIZE_DEFAULT", ""));
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ]);
    for (name, color) in [("w1", "red"), ("w2", "blue")] {
        s.kubectl_stdin_ok(
            &["create", "-f", "-"],
            &format!(
                "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {{color: {color}}}\n"
            ),
        );
    }

    // The preferred version comes first; other served versions read the same objects.
    let w1 = s.get_json(&["widgets.v1beta1.example.com", "w1"]);
    assert_eq!(w1["apiVersion"], "example.com/v1beta1");
    assert_eq!(w1["spec"]["color"], "red");
    assert_eq!(
        s.get_json(&["widget", "w1"])["apiVersion"],
        "example.com/v1"
    );

    // selectableFields.
    let out = s.kubectl_ok(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.color=blue",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "widget.example.com/w2");
    let err = s.kubectl_err(&["get", "widgets", "--field-selector", "spec.size=M"]);
    // apiextensions' crConverter.ConvertFieldLabel wording.
    assert!(
        err.contains("field label not supported: spec.size"),
        "{err}"
    );

    // A default added to the schema shows on objects stored before.
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &WIDGETS.replace(" SIZE_DEFAULT", ", default: M"),
    );
    wait_for("the new default on an existing object", DEADLINE, || {
        let w = s.get_json(&["widget", "w1"]);
        (w["spec"]["size"] == "M").then_some(())
    });
}
