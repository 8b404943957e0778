//! API Priority and Fairness configured by flowcontrol.apiserver.k8s.io/v1 objects, as
//! kube-apiserver 1.32 does: the bootstrap FlowSchemas and PriorityLevelConfigurations after
//! start, the mandatory ones restored, the suggested ones left alone once their
//! `apf.kubernetes.io/autoupdate-spec` is "false", users' objects routing requests to their
//! own levels, seats lent and borrowed between levels, kube's validation messages and the
//! debugging dump.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Backend, Server, kube_client_without_retries, post_configmap, wait_for};

const WAIT: Duration = Duration::from_secs(30);

fn names(s: &Server, resource: &str) -> Vec<String> {
    let list = s.get_json(&[resource]);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
        .collect();
    names.sort();
    names
}

/// kube 1.32's bootstrap objects (plus Karmada's two suggested schemas), with kube's specs
/// and table columns.
#[test]
fn bootstrap_objects_exist_with_kubes_specs() {
    let s = Server::start();
    assert_eq!(
        names(&s, "prioritylevelconfigurations"),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    assert_eq!(
        names(&s, "flowschemas"),
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "karmada-agents",
            "karmada-controllers",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election"
        ]
    );
    let low = s.get_json(&["prioritylevelconfiguration", "workload-low"]);
    assert_eq!(
        low["spec"],
        serde_json::json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": 100, "lendablePercent": 90,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}})
    );
    assert_eq!(
        low["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    let table = s.kubectl_ok(&["get", "prioritylevelconfigurations"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    let row = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in {table}"))
            .split_whitespace()
            .take(6)
            .map(String::from)
            .collect()
    };
    assert_eq!(
        row("workload-low"),
        ["workload-low", "Limited", "100", "128", "6", "50"]
    );
    assert_eq!(
        row("catch-all"),
        ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        row("exempt"),
        ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    );
    // Every schema names an existing level: the consumer writes Dangling=False.
    let fs_table = wait_for("every FlowSchema's Dangling condition", WAIT, || {
        let t = s.kubectl_ok(&["get", "flowschemas"]);
        t.lines().skip(1).all(|l| l.ends_with("False")).then_some(t)
    });
    let header: Vec<&str> = fs_table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    let exempt: Vec<&str> = fs_table
        .lines()
        .find(|l| l.starts_with("exempt "))
        .expect("exempt")
        .split_whitespace()
        .collect();
    assert_eq!(&exempt[..4], ["exempt", "exempt", "1", "<none>"]);
    let fs = s.get_json(&["flowschema", "global-default"]);
    let dangling = &fs["status"]["conditions"][0];
    assert_eq!(dangling["type"], "Dangling");
    assert_eq!(dangling["reason"], "Found");
    assert_eq!(
        dangling["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"
    );
}

/// Mandatory objects come back when deleted or changed; a suggested one whose annotation
/// says "false" keeps its user's spec; a schema naming a missing level is Dangling.
#[test]
fn the_ensurer_restores_mandatory_objects_and_respects_the_annotation() {
    let s = Server::start();
    s.kubectl_ok(&["delete", "flowschema", "catch-all"]);
    wait_for("catch-all to come back", WAIT, || {
        s.kubectl(&["get", "flowschema", "catch-all"])
            .status
            .success()
            .then_some(())
    });
    s.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "prioritylevelconfiguration",
        "workload-low",
        "apf.kubernetes.io/autoupdate-spec=false",
    ]);
    s.kubectl_ok(&[
        "patch",
        "prioritylevelconfiguration",
        "workload-low",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":200}}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "prioritylevelconfiguration",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"nominalConcurrencyShares":50}}}"#,
    ]);
    wait_for("catch-all's shares restored", WAIT, || {
        let pl = s.get_json(&["prioritylevelconfiguration", "catch-all"]);
        (pl["spec"]["limited"]["nominalConcurrencyShares"] == 5).then_some(())
    });
    // The pass that restored catch-all saw workload-low too, and left it alone.
    let low = s.get_json(&["prioritylevelconfiguration", "workload-low"]);
    assert_eq!(low["spec"]["limited"]["nominalConcurrencyShares"], 200);
    // A schema naming a level that does not exist.
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: lost}\nspec:\n  priorityLevelConfiguration: {name: missing}\n  matchingPrecedence: 300\n  rules:\n  - subjects: [{kind: User, user: {name: nobody}}]\n    nonResourceRules: [{verbs: [get], nonResourceURLs: [/lost]}]\n",
    );
    let fs: Value = wait_for("lost's Dangling condition", WAIT, || {
        let fs = s.get_json(&["flowschema", "lost"]);
        (fs["status"]["conditions"][0]["status"] == "True").then_some(fs)
    });
    assert_eq!(fs["status"]["conditions"][0]["reason"], "NotFound");
    // Defaulting: a level with no shares given gets kube's 30, its queuing kube's numbers.
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: missing}\nspec:\n  type: Limited\n  limited:\n    limitResponse: {type: Queue, queuing: {}}\n",
    );
    let pl = s.get_json(&["prioritylevelconfiguration", "missing"]);
    assert_eq!(
        pl["spec"]["limited"],
        serde_json::json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    wait_for("lost no longer Dangling", WAIT, || {
        let fs = s.get_json(&["flowschema", "lost"]);
        (fs["status"]["conditions"][0]["status"] == "False").then_some(())
    });
}

#[test]
fn invalid_objects_get_kubes_messages() {
    let s = Server::start();
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: bad}\nspec:\n  priorityLevelConfiguration: {name: global-default}\n  matchingPrecedence: 1\n  distinguisherMethod: {type: ByGroup}\n  rules:\n  - subjects: []\n    resourceRules: [{verbs: ['*', get], apiGroups: ['*'], resources: ['*'], clusterScope: true}]\n",
        );
    assert!(!err.status.success());
    let err = String::from_utf8_lossy(&err.stderr);
    for part in [
        "The FlowSchema \"bad\" is invalid:",
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
        "spec.distinguisherMethod.type: Unsupported value: \"ByGroup\": supported values: \"ByNamespace\", \"ByUser\"",
        "spec.rules[0].subjects: Required value: subjects must contain at least one value",
        "spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs",
    ] {
        assert!(err.contains(part), "{part} not in {err}");
    }
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: bad}\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 1\n    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 5, queueLengthLimit: 1}}\n",
        );
    assert!(!err.status.success());
    let err = String::from_utf8_lossy(&err.stderr);
    assert!(
        err.contains("The PriorityLevelConfiguration \"bad\" is invalid: spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)"),
        "{err}"
    );
    let err = s.kubectl_err(&[
        "patch",
        "prioritylevelconfiguration",
        "exempt",
        "--type=merge",
        "-p",
        r#"{"spec":{"type":"Limited","exempt":null,"limited":{"limitResponse":{"type":"Reject"}}}}"#,
    ]);
    assert!(
        err.contains("spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'"),
        "{err}"
    );
}

/// A user's FlowSchema of higher precedence sends one user to a level of one seat and one
/// queue of one request: that user's excess requests get 429 with Retry-After, while another
/// user's requests are all served; the dump lists the new level and the metrics name it.
#[test]
fn a_users_flow_schema_limits_its_user_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "greedy-token,greedy,1001\nother-token,other,1002\nnobody-token,nobody,1003\n",
    )
    .expect("tokens");
    // 2 seats in all: tiny gets ceil(2 × 1 / 246) = 1.
    let s = Server::start_with(
        Backend::Embedded,
        &[
            "--token-auth-file",
            tokens.to_str().expect("path"),
            "--max-requests-inflight",
            "1",
            "--max-mutating-requests-inflight",
            "1",
        ],
    );
    for u in ["greedy", "other"] {
        s.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            u,
            "--clusterrole=cluster-admin",
            &format!("--user={u}"),
        ]);
    }
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: tiny}\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 1\n    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 1}}\n---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: greedy}\nspec:\n  priorityLevelConfiguration: {name: tiny}\n  matchingPrecedence: 500\n  distinguisherMethod: {type: ByUser}\n  rules:\n  - subjects: [{kind: User, user: {name: greedy}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true}]\n    nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['*']}]\n",
    );
    // The consumer has taken the objects once it has written the schema's condition.
    wait_for("greedy taken up", WAIT, || {
        let fs = s.get_json(&["flowschema", "greedy"]);
        (fs["status"]["conditions"][0]["status"] == "False").then_some(())
    });
    let client = |kc: std::path::PathBuf| async move { kube_client_without_retries(&kc).await };
    let (greedy_client, other_client) = s.block_on(async {
        let g = client(s.token_kubeconfig("greedy", "greedy-token")).await;
        let o = client(s.token_kubeconfig("other", "other-token")).await;
        // Connected before the bursts, so what is measured is the admission.
        assert_eq!(
            post_configmap(g.clone(), "greedy-first".into()).await.0,
            201
        );
        assert_eq!(post_configmap(o.clone(), "other-first".into()).await.0, 201);
        (g, o)
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut round = 0;
    let (rejected, others) = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no burst of greedy's got a 429"
        );
        round += 1;
        let answers = s.block_on(async {
            let greedy: Vec<_> = (0..40)
                .map(|i| {
                    tokio::spawn(post_configmap(
                        greedy_client.clone(),
                        format!("greedy-{round}-{i}"),
                    ))
                })
                .collect();
            let other: Vec<_> = (0..3)
                .map(|i| {
                    tokio::spawn(post_configmap(
                        other_client.clone(),
                        format!("other-{round}-{i}"),
                    ))
                })
                .collect();
            let mut g = Vec::new();
            for t in greedy {
                g.push(t.await.expect("task"));
            }
            let mut o = Vec::new();
            for t in other {
                o.push(t.await.expect("task"));
            }
            (g, o)
        });
        let (greedy, other) = answers;
        assert!(
            greedy.iter().all(|(c, _)| *c == 201 || *c == 429),
            "greedy: only 201 and 429: {greedy:?}"
        );
        assert!(
            other.iter().all(|(c, _)| *c == 201),
            "the other user is unaffected: {other:?}"
        );
        let rejected: Vec<_> = greedy.into_iter().filter(|(c, _)| *c == 429).collect();
        if !rejected.is_empty() {
            break (rejected, other);
        }
    };
    assert!(
        rejected.iter().all(|(_, retry_after)| *retry_after),
        "429 without Retry-After"
    );
    assert_eq!(others.len(), 3);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"greedy\",priority_level=\"tiny\",reason=\"queue-full\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"tiny\"} 1"),
        "{metrics}"
    );
    let dump = s.kubectl_ok(&[
        "get",
        "--raw",
        "/debug/api_priority_and_fairness/dump_priority_levels",
    ]);
    let header: Vec<&str> = dump
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
            "DispatchedRequests",
            "RejectedRequests",
            "TimedoutRequests",
            "CancelledRequests"
        ]
    );
    let tiny: Vec<&str> = dump
        .lines()
        .find(|l| l.starts_with("tiny,"))
        .unwrap_or_else(|| panic!("tiny in {dump}"))
        .split(',')
        .map(str::trim)
        .collect();
    assert!(
        tiny[7].parse::<u64>().expect("rejected count") >= 1,
        "{dump}"
    );
    for level in ["exempt,", "catch-all,", "global-default,", "workload-low,"] {
        assert!(
            dump.lines().any(|l| l.starts_with(level)),
            "{level} in {dump}"
        );
    }
    // kube authorizes the dump as a non-resource URL: a user without that permission is
    // refused.
    let nobody_kc = s.token_kubeconfig("nobody", "nobody-token");
    let refused = s
        .raw_as(
            Some(&nobody_kc),
            "GET",
            "/debug/api_priority_and_fairness/dump_priority_levels",
            None,
            b"",
        )
        .expect("an answer");
    assert_eq!(refused.status, 403, "{}", refused.body);
}

/// The value of a per-level flow-control gauge in a /metrics text.
fn level_gauge(metrics: &str, name: &str, level: &str) -> Option<f64> {
    let prefix = format!("apiserver_flowcontrol_{name}{{priority_level=\"{level}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
}

/// Levels borrow what others lend, as kube 1.32's: an idle level lending all its seats runs on
/// none of them, and one that may borrow half as many again gets more than its nominal seats
/// while the others are idle; the periodic adjustment measures each level's demand.
#[test]
fn idle_levels_lend_their_seats_to_others() {
    let s = Server::start();
    let level = |name: &str, lendable: u32, borrowing: u32| {
        format!(
            "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {{name: {name}}}\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 20\n    lendablePercent: {lendable}\n    borrowingLimitPercent: {borrowing}\n    limitResponse: {{type: Queue, queuing: {{queues: 16, handSize: 4, queueLengthLimit: 50}}}}\n"
        )
    };
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            "{}---\n{}",
            level("lends-all", 100, 0),
            level("borrows", 0, 50)
        ),
    );
    let seats = |metrics: &str, level: &str| {
        [
            "nominal_limit_seats",
            "lower_limit_seats",
            "upper_limit_seats",
            "current_limit_seats",
        ]
        .map(|name| level_gauge(metrics, name, level))
    };
    // 600 seats over 285 shares: 43 nominal seats each. The lender may lend all of them and
    // borrows none; the borrower lends none and may borrow round(43 × 50%) = 22.
    let exempt_average =
        |metrics: &str| level_gauge(metrics, "demand_seats_average", "exempt").unwrap_or(0.0);
    let (lender, borrower, average) = wait_for("both levels in /metrics", WAIT, || {
        let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
        let (l, b) = (seats(&metrics, "lends-all"), seats(&metrics, "borrows"));
        (l[0].is_some() && b[0].is_some()).then(|| (l, b, exempt_average(&metrics)))
    });
    assert_eq!(lender, [Some(43.0), Some(0.0), Some(43.0), Some(0.0)]);
    assert_eq!(borrower[..3], [Some(43.0), Some(43.0), Some(65.0)]);
    let current = borrower[3].expect("the borrower's current limit");
    assert!(
        current > 43.0 && current <= 65.0,
        "the borrower runs on lent seats: {current}"
    );
    // The configuration taken, only the periodic adjustment (every 10 s) measures demand
    // again: this test's own requests are exempt (the admin is in system:masters), so the
    // exempt level's average demand over the next period is another one, above zero.
    wait_for("the periodic adjustment", WAIT, || {
        let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
        let now = exempt_average(&metrics);
        (now > 0.0 && now != average).then_some(())
    });
}
