//! Karmada's naming rules and Kubernetes' name and label validators.

use api::names::*;
use api::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    validate_cluster_name,
};

#[test]
fn execution_spaces() {
    assert_eq!(execution_space_name("member1"), "karmada-es-member1");
    let cases = [
        ("karmada-es-member1", Ok("member1")),
        ("karmada-es-", Ok("")),
        ("default", Err(NotExecutionSpace)),
        ("karmada-member1", Err(NotExecutionSpace)),
    ];
    for (ns, expected) in cases {
        assert_eq!(cluster_name_from_execution_space(ns), expected, "{ns}");
    }
    assert_eq!(
        NotExecutionSpace.to_string(),
        "the execution space name is in wrong format"
    );
}

#[test]
fn reserved_namespaces() {
    for (ns, reserved) in [
        ("karmada-system", true),
        ("karmada-cluster", true),
        ("karmada-es-member1", true),
        ("default", false),
        ("kube-system", false),
        ("karmada-systems", false),
    ] {
        assert_eq!(is_reserved_namespace(ns), reserved, "{ns}");
    }
}

#[test]
fn binding_names() {
    for (kind, name, expected) in [
        ("Deployment", "nginx", "nginx-deployment"),
        ("Pod", "Pod", "pod-pod"),
        (
            "Role",
            "system:controller:tom",
            "system.controller.tom-role",
        ),
        ("ClusterRole", "system::tom", "system..tom-clusterrole"),
        (
            "RoleBinding",
            "system::tt:tom",
            "system..tt.tom-rolebinding",
        ),
        (
            "ClusterRoleBinding",
            "system:tt:tom",
            "system.tt.tom-clusterrolebinding",
        ),
    ] {
        assert_eq!(binding_name(kind, name), expected, "{kind} {name}");
    }
}

/// The expected names were computed independently (FNV-1a of the lower-cased
/// "<namespace>-<name>-<kind>", decimal, mapped onto "bcdfghjklmnpqrstvwxz2456789").
#[test]
fn work_names() {
    for (kind, name, namespace, expected) in [
        ("Deployment", "nginx", "default", "nginx-687f7fb96f"),
        (
            "ClusterRole",
            "system:controller:tom",
            "",
            "system.controller.tom-656877dbcf",
        ),
        ("Namespace", "shop", "", "shop-55c4c4674c"),
        ("Service", "My:Svc", "prod", "my.svc-58564dbf7f"),
    ] {
        assert_eq!(
            work_name(kind, name, namespace),
            expected,
            "{kind} {namespace}/{name}"
        );
    }
}

#[test]
fn hash_helpers() {
    // FNV-1a reference values.
    assert_eq!(fnv32a(b""), 0x811c_9dc5);
    assert_eq!(fnv32a(b"a"), 0xe40c_292c);
    assert_eq!(fnv32a(b"default-nginx-deployment"), 2_439_396_529);
    // '0' is byte 48 and 48 % 27 = 21, the alphabet's '4'; '6' wraps round to 'b'.
    assert_eq!(safe_encode_string("0123456789"), "456789bcdf");
    assert_eq!(
        binding_reference_key("default", "nginx-deployment"),
        "5bdc5c4dcf"
    );
    assert_eq!(binding_reference_key("", "crb"), "7cfb59cc78");
    assert_eq!(
        policy_name("default", "nginx", "apps/v1, Kind=Deployment"),
        "nginx-6d7f8d5f5b"
    );
}

#[test]
fn other_generated_names() {
    assert_eq!(service_account_name("member1"), "karmada-member1");
    assert_eq!(
        role_name("karmada-member1"),
        "karmada-controller-manager:karmada-member1"
    );
    assert_eq!(impersonation_secret_name("member1"), "member1-impersonator");
    assert_eq!(
        endpoint_slice_name("web-abc", "member1"),
        "imported-member1-web-abc"
    );
    assert_eq!(derived_service_name("web"), "derived-web");
    assert_eq!(namespaced_key("ns", "n"), "ns/n");
    assert_eq!(namespaced_key("", "n"), "n");
}

const LABEL_REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_PART_REGEX: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn dns1123_label() {
    let long = "a".repeat(64);
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("my-name", vec![]),
        ("123-abc", vec![]),
        ("a", vec![]),
        ("", vec![LABEL_REGEX.into()]),
        ("-a", vec![LABEL_REGEX.into()]),
        ("a-", vec![LABEL_REGEX.into()]),
        ("My-Name", vec![LABEL_REGEX.into()]),
        ("a.b", vec!["must not contain dots".into()]),
        (&long, vec!["must be no more than 63 characters".into()]),
    ];
    for (value, expected) in cases {
        assert_eq!(is_dns1123_label(value), expected, "{value:?}");
    }
}

#[test]
fn dns1123_subdomain() {
    let long = format!("{}.{}", "a".repeat(200), "b".repeat(60));
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("example.com", vec![]),
        ("nginx-deployment", vec![]),
        ("a.b-c.d", vec![]),
        ("", vec![SUBDOMAIN_REGEX.into()]),
        ("a..b", vec![SUBDOMAIN_REGEX.into()]),
        ("a_b", vec![SUBDOMAIN_REGEX.into()]),
        ("system:controller", vec![SUBDOMAIN_REGEX.into()]),
        ("A.com", vec![SUBDOMAIN_REGEX.into()]),
        (&long, vec!["must be no more than 253 characters".into()]),
    ];
    for (value, expected) in cases {
        assert_eq!(is_dns1123_subdomain(value), expected, "{value:?}");
    }
}

#[test]
fn qualified_names() {
    let long_name = "a".repeat(64);
    let long_prefix = format!("{}/a", "b".repeat(254));
    let cases: Vec<(String, Vec<String>)> = vec![
        ("app".into(), vec![]),
        ("App.Name_1".into(), vec![]),
        ("example.com/app".into(), vec![]),
        ("cluster.karmada.io/not-ready".into(), vec![]),
        (
            "".into(),
            vec![
                "name part must be non-empty".into(),
                format!("name part {NAME_PART_REGEX}"),
            ],
        ),
        ("/app".into(), vec!["prefix part must be non-empty".into()]),
        (
            "Example.com/app".into(),
            vec![format!("prefix part {SUBDOMAIN_REGEX}")],
        ),
        (
            "example.com/".into(),
            vec![
                "name part must be non-empty".into(),
                format!("name part {NAME_PART_REGEX}"),
            ],
        ),
        ("a b".into(), vec![format!("name part {NAME_PART_REGEX}")]),
        (
            long_name.clone(),
            vec!["name part must be no more than 63 bytes".into()],
        ),
        (
            long_prefix,
            vec!["prefix part must be no more than 253 bytes".into()],
        ),
        (
            "a/b/c".into(),
            vec![format!(
                "a valid label key {NAME_PART_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )],
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(is_qualified_name(&value), expected, "{value:?}");
    }
}

#[test]
fn label_values() {
    let long = "a".repeat(64);
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("", vec![]),
        ("MyValue", vec![]),
        ("my_value.1", vec![]),
        ("-x", vec![VALUE_REGEX.into()]),
        ("a b", vec![VALUE_REGEX.into()]),
        (&long, vec!["must be no more than 63 bytes".into()]),
    ];
    for (value, expected) in cases {
        assert_eq!(is_valid_label_value(value), expected, "{value:?}");
    }
}

#[test]
fn cluster_names() {
    let at_limit = "a".repeat(48);
    let over = "a".repeat(49);
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("member1", vec![]),
        (&at_limit, vec![]),
        ("", vec!["must be not empty".into()]),
        (&over, vec!["must be no more than 48 characters".into()]),
        ("member.1", vec!["must not contain dots".into()]),
        ("Member1", vec![LABEL_REGEX.into()]),
    ];
    for (value, expected) in cases {
        assert_eq!(validate_cluster_name(value), expected, "{value:?}");
    }
}

#[test]
fn label_and_annotation_maps() {
    use std::collections::BTreeMap;
    let labels = BTreeMap::from([
        ("ok".to_owned(), "fine".to_owned()),
        ("bad key".to_owned(), "-v".to_owned()),
    ]);
    let errs: Vec<String> = api::validation::validate_labels(&labels, "metadata.labels")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        vec![
            format!(r#"metadata.labels: Invalid value: "bad key": name part {NAME_PART_REGEX}"#),
            format!(r#"metadata.labels: Invalid value: "-v": {VALUE_REGEX}"#),
        ]
    );
    let big = BTreeMap::from([("k".to_owned(), "v".repeat(256 * 1024))]);
    let errs: Vec<String> = api::validation::validate_annotations(&big, "metadata.annotations")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
    );
    let upper = BTreeMap::from([("Example.com/Key".to_owned(), String::new())]);
    assert!(api::validation::validate_annotations(&upper, "a").is_empty());
}
