//! The exact bodies kubectl 1.32.4 sent (captured from `kubectl` against a logging HTTP stub),
//! decoded and compared with the JSON kubectl itself prints for the same object with
//! `--dry-run=client -o json`. Review and whoami bodies have no dry-run form; their expected
//! JSON follows the Go types' json tags.

use serde_json::Value;

use crate::protobuf::decode;

macro_rules! fixtures {
    ($($name:ident),* $(,)?) => {
        pub(super) const FIXTURES: &[(&str, &[u8], &str)] = &[$(
            (
                stringify!($name),
                include_bytes!(concat!("kubectl/", stringify!($name), ".pb")),
                include_str!(concat!("kubectl/", stringify!($name), ".json")),
            ),
        )*];
    };
}

fixtures![
    auth_can_i,
    auth_can_i_list,
    auth_whoami,
    create_clusterrole,
    create_clusterrolebinding,
    create_configmap,
    create_cronjob,
    create_deployment,
    create_ingress,
    create_job,
    create_namespace,
    create_pdb,
    create_priorityclass,
    create_quota,
    create_role,
    create_rolebinding,
    create_secret,
    create_service,
    create_serviceaccount,
    create_token,
];

#[test]
fn kubectl_bodies_decode_to_kubectl_json() {
    let mut failures = Vec::new();
    for (name, body, expected) in FIXTURES {
        let expected: Value = serde_json::from_str(expected).unwrap();
        match decode(body) {
            Ok(got) if got == expected => {}
            Ok(got) => failures.push(format!(
                "{name}:\n got {}\nwant {}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&expected).unwrap()
            )),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
