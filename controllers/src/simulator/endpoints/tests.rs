use super::*;

fn svc(selector: &[(&str, &str)], ports: Vec<ServicePort>) -> Svc {
    Svc {
        uid: "uid-1".into(),
        selector: selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ports,
        labels: BTreeMap::from([("team".to_string(), "a".to_string())]),
    }
}

fn port(name: &str, target: Target) -> ServicePort {
    ServicePort {
        name: name.into(),
        protocol: "TCP".into(),
        app_protocol: None,
        target,
    }
}

fn deployment(name: &str, app: &str, replicas: i64, ready: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicas": replicas, "template": {
            "metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        }},
        "status": {"readyReplicas": ready},
    }))
    .unwrap()
}

fn nodes() -> Vec<String> {
    vec!["n1".into(), "n2".into()]
}

#[test]
fn a_deployments_virtual_pods_become_endpoints() {
    let mut st = State::new("10.1.0.0/16".parse().unwrap());
    st.workload(
        "Deployment",
        &deployment("web", "web", 3, 2),
        &nodes(),
        false,
    );
    st.workload("Deployment", &deployment("db", "db", 1, 1), &nodes(), false);
    let s = svc(
        &[("app", "web")],
        vec![
            port("http", Target::Name("http".into())),
            port("admin", Target::Number(9000)),
        ],
    );
    let d = desired("ns", "web", &s, &st.backends["ns"]);
    assert_eq!(d.slices.len(), 1);
    let (name, slice) = &d.slices[0];
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert_eq!(slice["metadata"]["labels"][SERVICE_NAME_LABEL], "web");
    assert_eq!(slice["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
    assert_eq!(slice["metadata"]["labels"]["team"], "a");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    let eps = slice["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    let ready: Vec<bool> = eps
        .iter()
        .map(|e| e["conditions"]["ready"].as_bool().unwrap())
        .collect();
    assert_eq!(ready.iter().filter(|r| **r).count(), 2);
    for e in eps {
        let ip: std::net::Ipv4Addr = e["addresses"][0].as_str().unwrap().parse().unwrap();
        assert!(
            ip >= std::net::Ipv4Addr::new(10, 1, 128, 0),
            "upper half: {ip}"
        );
        assert!(e["targetRef"]["name"].as_str().unwrap().starts_with("web-"));
    }
    assert_eq!(
        slice["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "admin", "port": 9000, "protocol": "TCP"}])
    );
    let subsets = d.endpoints["subsets"].as_array().unwrap();
    assert_eq!(subsets.len(), 1);
    assert_eq!(subsets[0]["addresses"].as_array().unwrap().len(), 2);
    assert_eq!(subsets[0]["notReadyAddresses"].as_array().unwrap().len(), 1);
    assert_eq!(
        d.endpoints["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
}

#[test]
fn scaling_keeps_addresses_and_releases_the_removed_ones() {
    let mut st = State::new("10.1.0.0/16".parse().unwrap());
    st.workload(
        "Deployment",
        &deployment("web", "web", 3, 3),
        &nodes(),
        false,
    );
    let before: Vec<String> = st.backends["ns"][&("Deployment".to_string(), "web".to_string())]
        .pods
        .iter()
        .map(|p| p.ip.clone())
        .collect();
    st.workload(
        "Deployment",
        &deployment("web", "web", 2, 2),
        &nodes(),
        false,
    );
    let after: Vec<String> = st.backends["ns"][&("Deployment".to_string(), "web".to_string())]
        .pods
        .iter()
        .map(|p| p.ip.clone())
        .collect();
    assert_eq!(after, before[..2]);
    // The released address goes to the next new pod.
    st.workload(
        "Deployment",
        &deployment("api", "api", 1, 1),
        &nodes(),
        false,
    );
    assert_eq!(
        st.backends["ns"][&("Deployment".to_string(), "api".to_string())].pods[0].ip,
        before[2]
    );
    st.workload(
        "Deployment",
        &deployment("web", "web", 2, 2),
        &nodes(),
        true,
    );
    assert!(!st.backends["ns"].contains_key(&("Deployment".to_string(), "web".to_string())));
}

#[test]
fn unresolvable_named_ports_and_replica_sets_of_deployments() {
    let mut st = State::new("10.1.0.0/16".parse().unwrap());
    st.workload(
        "Deployment",
        &deployment("web", "web", 1, 1),
        &nodes(),
        false,
    );
    let mut rs = deployment("web-abc", "web", 5, 5);
    rs.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "u".into(),
            ..Default::default()
        },
    ]);
    st.workload("ReplicaSet", &rs, &nodes(), false);
    let s = svc(
        &[("app", "web")],
        vec![port("grpc", Target::Name("grpc".into()))],
    );
    let d = desired("ns", "web", &s, &st.backends["ns"]);
    // The ReplicaSet's pods are the Deployment's; the named port resolves nowhere: the
    // endpoint is listed without ports in its slice, and the Endpoints API leaves it out.
    assert_eq!(d.slices.len(), 1);
    assert_eq!(d.slices[0].1["endpoints"].as_array().unwrap().len(), 1);
    assert_eq!(d.slices[0].1["ports"], json!([]));
    assert_eq!(d.endpoints["subsets"], json!([]));
}

#[test]
fn large_services_are_split_into_slices_of_100() {
    let mut st = State::new("10.1.0.0/16".parse().unwrap());
    st.workload(
        "Deployment",
        &deployment("web", "web", 250, 250),
        &nodes(),
        false,
    );
    let s = svc(&[("app", "web")], vec![port("", Target::Number(80))]);
    let d = desired("ns", "web", &s, &st.backends["ns"]);
    let sizes: Vec<usize> = d
        .slices
        .iter()
        .map(|(_, s)| s["endpoints"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![100, 100, 50]);
    let names: HashSet<&String> = d.slices.iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 3);
    // An unnamed port: "" in a slice, absent in Endpoints.
    assert_eq!(d.slices[0].1["ports"][0]["name"], "");
    assert!(d.endpoints["subsets"][0]["ports"][0].get("name").is_none());
}

#[test]
fn a_pass_writes_only_what_changed() {
    let mut st = State::new("10.1.0.0/16".parse().unwrap());
    st.services.insert(
        ("ns".into(), "web".into()),
        svc(&[("app", "web")], vec![port("", Target::Number(80))]),
    );
    st.workload(
        "Deployment",
        &deployment("web", "web", 2, 2),
        &nodes(),
        false,
    );
    let first = st.pass();
    assert_eq!(first.len(), 2, "one slice and the Endpoints");
    st.touch("ns");
    assert!(st.pass().is_empty(), "nothing changed");
    st.workload(
        "Deployment",
        &deployment("web", "web", 2, 1),
        &nodes(),
        false,
    );
    assert_eq!(st.pass().len(), 2);
}
