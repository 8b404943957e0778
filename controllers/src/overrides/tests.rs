//! Table tests of override policies, including the sample OverridePolicy of issue 5.

use std::collections::BTreeMap;

use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{
    ClusterAffinity, ClusterOverridePolicy, CommandArgsOverrider, FieldOverrider, ImageOverrider,
    ImagePredicate, JsonPatchOperation, LabelAnnotationOverrider, OverridePolicy, OverrideSpec,
    OverriderOperator, Overriders, PlaintextOverrider, ResourceSelector, RuleWithCluster,
    YamlPatchOperation,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;

fn cluster(name: &str) -> Cluster {
    let mut c = Cluster::default();
    c.metadata.name = Some(name.into());
    c
}

fn sample_documents() -> (OverridePolicy, Value) {
    let policy: OverridePolicy =
        serde_yaml::from_str(include_str!("../../../samples/overridepolicy.yaml")).unwrap();
    let deployment =
        serde_yaml::Deserializer::from_str(include_str!("../../../samples/nginx-deployment.yaml"))
            .map(|d| Value::deserialize(d).unwrap())
            .find(|v| v["kind"] == "Deployment")
            .unwrap();
    (policy, deployment)
}

#[test]
fn issue5_sample_override_changes_only_its_target_cluster() {
    let (policy, deployment) = sample_documents();
    let ops = [policy];

    let member1 = apply_overrides(&deployment, &cluster("member1"), &[], &ops).unwrap();
    assert_eq!(member1.object, deployment);
    assert_eq!(member1.applied_overrides, None);
    assert_eq!(member1.applied_cluster_overrides, None);

    let member2 = apply_overrides(&deployment, &cluster("member2"), &[], &ops).unwrap();
    let o = &member2.object;
    assert_eq!(
        o["spec"]["template"]["spec"]["containers"][0]["image"],
        "mirror.example.com/nginx:1.25"
    );
    assert_eq!(
        o["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        8080
    );
    assert_eq!(
        o["metadata"]["labels"],
        json!({"app": "nginx", "region": "backup"})
    );
    assert_eq!(member2.applied_cluster_overrides, None);
    assert_eq!(
        member2.applied_overrides.as_deref(),
        Some(concat!(
            r#"[{"policyName":"nginx-override","overriders":{"#,
            r#""plaintext":[{"path":"/spec/template/spec/containers/0/ports/0/containerPort","operator":"replace","value":8080}],"#,
            r#""imageOverrider":[{"component":"Registry","operator":"replace","value":"mirror.example.com"}],"#,
            r#""labelsOverrider":[{"operator":"add","value":{"region":"backup"}}]}}]"#
        ))
    );
    // Nothing else changed.
    let mut expected = deployment.clone();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("mirror.example.com/nginx:1.25");
    expected["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] =
        json!(8080);
    expected["metadata"]["labels"]["region"] = json!("backup");
    assert_eq!(member2.object, expected);
}

fn selector(name: &str, labels: Option<BTreeMap<String, String>>) -> ResourceSelector {
    ResourceSelector {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: String::new(),
        name: name.into(),
        label_selector: labels.map(|l| {
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some(l),
                ..Default::default()
            }
        }),
    }
}

fn label_rule(key: &str, value: &str, target: Option<ClusterAffinity>) -> RuleWithCluster {
    RuleWithCluster {
        target_cluster: target,
        overriders: Overriders {
            labels_overrider: vec![LabelAnnotationOverrider {
                operator: OverriderOperator::Add,
                value: BTreeMap::from([(key.to_string(), value.to_string())]),
            }],
            ..Default::default()
        },
    }
}

fn cop(
    name: &str,
    selectors: Vec<ResourceSelector>,
    rules: Vec<RuleWithCluster>,
) -> ClusterOverridePolicy {
    let mut p = ClusterOverridePolicy::default();
    p.metadata.name = Some(name.into());
    p.spec = OverrideSpec {
        resource_selectors: selectors,
        override_rules: rules,
        ..Default::default()
    };
    p
}

fn op(
    namespace: &str,
    name: &str,
    selectors: Vec<ResourceSelector>,
    rules: Vec<RuleWithCluster>,
) -> OverridePolicy {
    let mut p = OverridePolicy::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some(namespace.into());
    p.spec = OverrideSpec {
        resource_selectors: selectors,
        override_rules: rules,
        ..Default::default()
    };
    p
}

fn nginx() -> Value {
    sample_documents().1
}

fn policy_names(annotation: &Option<String>) -> Vec<String> {
    let parsed: Vec<Value> = serde_json::from_str(annotation.as_deref().unwrap_or("[]")).unwrap();
    parsed
        .iter()
        .map(|p| p["policyName"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn policies_apply_from_least_to_most_specific() {
    let app = BTreeMap::from([("app".to_string(), "nginx".to_string())]);
    let cops = [
        cop("a-all", vec![], vec![label_rule("tier", "all", None)]),
        cop(
            "b-name",
            vec![selector("nginx", None)],
            vec![label_rule("tier", "name", None)],
        ),
        cop(
            "c-label",
            vec![selector("", Some(app.clone()))],
            vec![label_rule("tier", "label", None)],
        ),
        cop(
            "d-kind",
            vec![selector("", None)],
            vec![label_rule("tier", "kind", None)],
        ),
        cop(
            "e-other",
            vec![selector("other", None)],
            vec![label_rule("tier", "other", None)],
        ),
        cop(
            "f-elsewhere",
            vec![],
            vec![label_rule(
                "tier",
                "elsewhere",
                Some(ClusterAffinity {
                    cluster_names: vec!["member9".into()],
                    ..Default::default()
                }),
            )],
        ),
    ];
    let applied = apply_overrides(&nginx(), &cluster("member1"), &cops, &[]).unwrap();
    assert_eq!(applied.object["metadata"]["labels"]["tier"], "name");
    // The annotation lists what applied, sorted by name.
    assert_eq!(
        policy_names(&applied.applied_cluster_overrides),
        vec!["a-all", "b-name", "c-label", "d-kind"]
    );

    // Namespaced policies come after cluster ones; other namespaces are ignored.
    let ops = [
        op(
            "default",
            "ns-all",
            vec![],
            vec![label_rule("tier", "op", None)],
        ),
        op(
            "other",
            "foreign",
            vec![],
            vec![label_rule("tier", "foreign", None)],
        ),
    ];
    let applied = apply_overrides(&nginx(), &cluster("member1"), &cops, &ops).unwrap();
    assert_eq!(applied.object["metadata"]["labels"]["tier"], "op");
    assert_eq!(policy_names(&applied.applied_overrides), vec!["ns-all"]);

    // Cluster-scoped templates only get ClusterOverridePolicies.
    let mut cluster_scoped = nginx();
    cluster_scoped["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    let applied = apply_overrides(&cluster_scoped, &cluster("member1"), &[], &ops).unwrap();
    assert_eq!(applied.applied_overrides, None);
    assert_eq!(applied.object, cluster_scoped);

    // Equal specificity: by name.
    let cops = [
        cop("z", vec![], vec![label_rule("tier", "z", None)]),
        cop("y", vec![], vec![label_rule("tier", "y", None)]),
    ];
    let applied = apply_overrides(&nginx(), &cluster("member1"), &cops, &[]).unwrap();
    assert_eq!(applied.object["metadata"]["labels"]["tier"], "z");
}

fn rule(overriders: Overriders) -> Vec<RuleWithCluster> {
    vec![RuleWithCluster {
        target_cluster: None,
        overriders,
    }]
}

fn apply_one(object: &Value, overriders: Overriders) -> Result<Value, OverrideError> {
    let cops = [cop("p", vec![], rule(overriders))];
    apply_overrides(object, &cluster("member1"), &cops, &[]).map(|a| a.object)
}

fn image(
    component: ImageComponent,
    operator: OverriderOperator,
    value: &str,
    path: Option<&str>,
) -> ImageOverrider {
    ImageOverrider {
        predicate: path.map(|p| ImagePredicate { path: p.into() }),
        component,
        operator,
        value: value.into(),
    }
}

use karmada_api::policy::v1alpha1::ImageComponent;

#[test]
fn image_overriders() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "docker.io/library/busybox"}],
            "initContainers": [{"name": "i", "image": "alpine:3"}]}});
    let got = apply_one(
        &pod,
        Overriders {
            image_overrider: vec![image(
                ImageComponent::Tag,
                OverriderOperator::Replace,
                "1.26",
                None,
            )],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(got["spec"]["containers"][0]["image"], "nginx:1.26");
    assert_eq!(
        got["spec"]["containers"][1]["image"],
        "docker.io/library/busybox:1.26"
    );
    assert_eq!(
        got["spec"]["initContainers"][0]["image"], "alpine:3",
        "init containers are not auto-detected"
    );

    let got = apply_one(
        &pod,
        Overriders {
            image_overrider: vec![image(
                ImageComponent::Registry,
                OverriderOperator::Replace,
                "registry.local",
                Some("/spec/initContainers/0/image"),
            )],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        got["spec"]["initContainers"][0]["image"],
        "registry.local/alpine:3"
    );
    assert_eq!(got["spec"]["containers"][0]["image"], "nginx:1.25");

    // Kinds without known container paths are left alone unless a predicate says where.
    let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}});
    let got = apply_one(
        &cronjob,
        Overriders {
            image_overrider: vec![image(
                ImageComponent::Tag,
                OverriderOperator::Replace,
                "1",
                None,
            )],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(got, cronjob);

    let err = apply_one(
        &pod,
        Overriders {
            image_overrider: vec![image(
                ImageComponent::Tag,
                OverriderOperator::Replace,
                "1",
                Some("/spec/containers/5/image"),
            )],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.policy, "p");
}

#[test]
fn command_and_args_overriders() {
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "x", "command": ["/bin/app", "--verbose"]},
            {"name": "side", "image": "y"}]}}}});
    let ca = |name: &str, operator, value: &[&str]| CommandArgsOverrider {
        container_name: name.into(),
        operator,
        value: value.iter().map(|v| v.to_string()).collect(),
    };
    let cases: Vec<(Overriders, Value, Value)> = vec![
        (
            Overriders {
                command_overrider: vec![ca("app", OverriderOperator::Add, &["--port=80"])],
                ..Default::default()
            },
            json!(["/bin/app", "--verbose", "--port=80"]),
            Value::Null,
        ),
        (
            Overriders {
                command_overrider: vec![ca("app", OverriderOperator::Remove, &["--verbose"])],
                ..Default::default()
            },
            json!(["/bin/app"]),
            Value::Null,
        ),
        (
            Overriders {
                args_overrider: vec![ca("app", OverriderOperator::Add, &["-a", "-b"])],
                ..Default::default()
            },
            json!(["/bin/app", "--verbose"]),
            json!(["-a", "-b"]),
        ),
        (
            Overriders {
                args_overrider: vec![ca("missing", OverriderOperator::Add, &["-a"])],
                ..Default::default()
            },
            json!(["/bin/app", "--verbose"]),
            Value::Null,
        ),
    ];
    for (i, (overriders, command, args)) in cases.into_iter().enumerate() {
        let got = apply_one(&deploy, overriders).unwrap();
        let c = &got["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"], command, "case {i}");
        assert_eq!(
            c.get("args").cloned().unwrap_or(Value::Null),
            args,
            "case {i}"
        );
    }
}

#[test]
fn label_and_annotation_overriders() {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "labels": {"keep": "1", "drop": "2"}}});
    let la = |operator, pairs: &[(&str, &str)]| LabelAnnotationOverrider {
        operator,
        value: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let got = apply_one(
        &obj,
        Overriders {
            labels_overrider: vec![
                la(OverriderOperator::Remove, &[("drop", ""), ("absent", "")]),
                la(
                    OverriderOperator::Replace,
                    &[("keep", "one"), ("absent", "x")],
                ),
                la(OverriderOperator::Add, &[("app.kubernetes.io/name", "web")]),
            ],
            annotations_overrider: vec![la(
                OverriderOperator::Add,
                &[("example.com/owner", "team-a")],
            )],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        got["metadata"]["labels"],
        json!({"keep": "one", "app.kubernetes.io/name": "web"})
    );
    assert_eq!(
        got["metadata"]["annotations"],
        json!({"example.com/owner": "team-a"})
    );
}

#[test]
fn field_overriders() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
    "data": {
        "config.json": r#"{"zeta":1,"db":{"host":"a","port":5432}}"#,
        "config.yaml": "db:\n  host: a\n  port: 5432\nname: x\n"
    }});
    let json_op = |path: &str, operator, value: Option<Value>| JsonPatchOperation {
        sub_path: path.into(),
        operator,
        value,
    };
    let yaml_op = |path: &str, operator, value: Option<Value>| YamlPatchOperation {
        sub_path: path.into(),
        operator,
        value,
    };
    let got = apply_one(
        &cm,
        Overriders {
            field_overrider: vec![
                FieldOverrider {
                    field_path: "/data/config.json".into(),
                    json: vec![
                        json_op("/db/host", OverriderOperator::Replace, Some(json!("b<&>"))),
                        json_op("/db/tls", OverriderOperator::Add, Some(json!(true))),
                    ],
                    yaml: vec![],
                },
                FieldOverrider {
                    field_path: "/data/config.yaml".into(),
                    json: vec![],
                    yaml: vec![
                        yaml_op("/db/host", OverriderOperator::Replace, Some(json!("b"))),
                        yaml_op("/name", OverriderOperator::Remove, None),
                    ],
                },
            ],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        got["data"]["config.json"],
        r#"{"zeta":1,"db":{"host":"b\u003c\u0026\u003e","port":5432,"tls":true}}"#
    );
    assert_eq!(got["data"]["config.yaml"], "db:\n  host: b\n  port: 5432\n");

    let err = apply_one(
        &cm,
        Overriders {
            field_overrider: vec![FieldOverrider {
                field_path: "/metadata".into(),
                json: vec![json_op("/x", OverriderOperator::Add, Some(json!(1)))],
                yaml: vec![],
            }],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.message.contains("is not string"), "{err}");
}

#[test]
fn plaintext_overriders_and_annotation_form() {
    let deploy = nginx();
    let pt = |path: &str, operator, value: Option<Value>| PlaintextOverrider {
        path: path.into(),
        operator,
        value,
    };
    let overriders = Overriders {
        plaintext: vec![
            pt("/spec/replicas", OverriderOperator::Replace, Some(json!(1))),
            pt(
                "/spec/template/spec/containers/0/envFrom",
                OverriderOperator::Remove,
                None,
            ),
            pt("/spec/paused", OverriderOperator::Add, Some(json!(true))),
        ],
        ..Default::default()
    };
    let cops = [cop("p", vec![], rule(overriders.clone()))];
    let applied = apply_overrides(&deploy, &cluster("member1"), &cops, &[]).unwrap();
    assert_eq!(applied.object["spec"]["replicas"], 1);
    assert_eq!(applied.object["spec"]["paused"], true);
    assert!(
        applied.object["spec"]["template"]["spec"]["containers"][0]
            .get("envFrom")
            .is_none()
    );
    assert_eq!(
        applied.applied_cluster_overrides.as_deref(),
        Some(concat!(
            r#"[{"policyName":"p","overriders":{"plaintext":["#,
            r#"{"path":"/spec/replicas","operator":"replace","value":1},"#,
            r#"{"path":"/spec/template/spec/containers/0/envFrom","operator":"remove","value":null},"#,
            r#"{"path":"/spec/paused","operator":"add","value":true}]}}]"#
        ))
    );
    let err = apply_one(
        &deploy,
        Overriders {
            plaintext: vec![pt(
                "/spec/missing/field",
                OverriderOperator::Replace,
                Some(json!(1)),
            )],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.policy, "p");

    // A matching policy whose rule has no overriders is still recorded.
    let cops = [cop("empty", vec![], rule(Overriders::default()))];
    let applied = apply_overrides(&deploy, &cluster("member1"), &cops, &[]).unwrap();
    assert_eq!(
        applied.applied_cluster_overrides.as_deref(),
        Some(r#"[{"policyName":"empty","overriders":{}}]"#)
    );
}

#[test]
fn deprecated_top_level_overriders() {
    let mut p = OverridePolicy::default();
    p.metadata.name = Some("legacy".into());
    p.metadata.namespace = Some("default".into());
    p.spec.target_cluster = Some(ClusterAffinity {
        cluster_names: vec!["member2".into()],
        ..Default::default()
    });
    p.spec.overriders = label_rule("legacy", "yes", None).overriders;
    let ops = [p];
    let m1 = apply_overrides(&nginx(), &cluster("member1"), &[], &ops).unwrap();
    assert!(m1.object["metadata"]["labels"].get("legacy").is_none());
    let m2 = apply_overrides(&nginx(), &cluster("member2"), &[], &ops).unwrap();
    assert_eq!(m2.object["metadata"]["labels"]["legacy"], "yes");
    assert_eq!(policy_names(&m2.applied_overrides), vec!["legacy"]);
}
