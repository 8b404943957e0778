//! Fields karmada-rs accepts without effect: a write that sets one succeeds, and kubectl
//! prints a `Warning:` naming each such field (the `Warning` response header, 299 code, as
//! kube-apiserver relays admission warnings); README lists every one.

mod support;

use support::Server;

const POLICY: &str = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: everything
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
      labelSelector:
        matchLabels: {app: web}
  propagateDeps: true
  preemption: Always
  activationPreference: Lazy
  schedulePriority:
    priorityClassSource: KubePriorityClass
    priorityClassName: high
  placement:
    clusterAffinity:
      clusterNames: [member1]
    workloadAffinity:
      affinity:
        groupByLabelKey: app
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 60
"#;

/// The `Warning:` lines kubectl printed.
fn warnings(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("Warning: ").map(str::to_owned))
        .collect()
}

fn fields(warnings: &[String]) -> Vec<&str> {
    warnings
        .iter()
        .map(|w| w.split(':').next().unwrap_or_default())
        .collect()
}

#[test]
fn apply_warns_about_each_field_without_effect() {
    let s = Server::start();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], POLICY);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created = warnings(&out.stderr);
    assert_eq!(
        fields(&created),
        [
            "spec.preemption",
            "spec.placement.workloadAffinity",
            "spec.resourceSelectors[0].labelSelector",
        ],
        "{created:#?}"
    );
    assert!(
        created.contains(
            &"spec.preemption: has no effect unless the control plane runs with --feature-gates=PropagationPolicyPreemption=true (Alpha, off by default, as in Karmada): without it templates claimed by another policy are not taken over".to_string()
        ),
        "{created:#?}"
    );
    // The object is stored as written.
    let pp = s.get_json(&["pp", "everything"]);
    assert_eq!(pp["spec"]["preemption"], "Always");
    assert_eq!(pp["spec"]["activationPreference"], "Lazy");

    // An update (kubectl apply patches) warns again; so do server-side apply and dry runs.
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &POLICY.replace("tolerationSeconds: 60", "tolerationSeconds: 90"),
    );
    assert!(out.status.success());
    assert_eq!(warnings(&out.stderr), created);
    let out = s.kubectl_stdin(
        &["apply", "--server-side", "-f", "-"],
        &POLICY.replace("everything", "applied"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(warnings(&out.stderr), created);
    let out = s.kubectl_stdin(
        &["create", "--dry-run=server", "-f", "-"],
        &POLICY
            .replace("everything", "dry")
            .replace("kind: PropagationPolicy", "kind: ClusterPropagationPolicy")
            .replace("  namespace: default\n", ""),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(warnings(&out.stderr), created);

    // Only the fields with no effect: a policy using implemented features (Lazy activation
    // among them) is quiet, and Never is the default.
    let plain = POLICY
        .replace("preemption: Always", "preemption: Never")
        .replace("activationPreference: Lazy", "activationPreference: Lazy\n  conflictResolution: Overwrite")
        .replace(
            "  schedulePriority:\n    priorityClassSource: KubePriorityClass\n    priorityClassName: high\n",
            "",
        )
        .replace("    workloadAffinity:\n      affinity:\n        groupByLabelKey: app\n", "")
        .replace(
            "  failover:\n    application:\n      decisionConditions:\n        tolerationSeconds: 60\n",
            "",
        )
        .replace("      labelSelector:\n        matchLabels: {app: web}\n", "")
        .replace("everything", "plain");
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &plain);
    assert!(out.status.success());
    assert_eq!(warnings(&out.stderr), Vec::<String>::new());

    // Other kinds: an OverridePolicy's selector, a Cluster's proxyHeader without a proxy.
    let op = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: selective, namespace: default}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web, labelSelector: {matchLabels: {app: web}}}
  overrideRules:
    - overriders:
        labelsOverrider: [{operator: add, value: {tier: gold}}]
"#;
    let out = s.kubectl_stdin(&["apply", "-f", "-"], op);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        warnings(&out.stderr),
        ["spec.resourceSelectors[0].labelSelector: has no effect because name is set"]
    );
    let cluster = r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: lonely}
spec:
  syncMode: Push
  apiEndpoint: https://127.0.0.1:1
  proxyHeader: {X-Tenant: a}
"#;
    let out = s.kubectl_stdin(&["apply", "-f", "-"], cluster);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        warnings(&out.stderr),
        ["spec.proxyHeader: has no effect without proxyURL"]
    );
}

#[test]
fn readme_lists_every_field_without_effect() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for entry in karmada_api::ineffective::table() {
        let field = format!("`{}`", entry.field);
        assert!(
            readme.contains(&field),
            "README does not list {field} ({})",
            entry.kinds.join(", ")
        );
    }
}
