//! Negotiation cases from kube-apiserver's `negotiate_test.go` and what kubectl, client-go and
//! Kubernetes' metadata clients send.

use super::*;

const BUILT_IN: Endpoint = Endpoint::Resource {
    protobuf: true,
    table: true,
};
const CUSTOM: Endpoint = Endpoint::Resource {
    protobuf: false,
    table: true,
};

fn media(accept: &str, endpoint: Endpoint) -> Option<MediaType> {
    negotiate_media(Some(accept), endpoint).map(|a| a.media)
}

fn target(accept: &str, endpoint: Endpoint) -> Result<Negotiated, u16> {
    negotiate(Some(accept), endpoint, false).map_err(|e| e.code)
}

#[test]
fn kube_negotiate_cases() {
    use MediaType::*;
    for endpoint in [BUILT_IN, Endpoint::Default] {
        assert_eq!(negotiate_media(None, endpoint).unwrap().media, Json);
        assert_eq!(media("", endpoint), Some(Json));
        assert_eq!(media("*/*", endpoint), Some(Json));
        assert_eq!(media("application/*", endpoint), Some(Json));
        assert_eq!(media("application/json", endpoint), Some(Json));
        assert_eq!(
            media("application/vnd.kubernetes.protobuf", endpoint),
            Some(Protobuf)
        );
        assert_eq!(media("application/yaml", endpoint), Some(Yaml));
        let a = negotiate_media(Some("application/json; pretty=1"), endpoint).unwrap();
        assert!(a.pretty);
        let a = negotiate_media(
            Some("unrecognized/stuff,application/json; pretty=1"),
            endpoint,
        )
        .unwrap();
        assert_eq!((a.media, a.pretty), (Json, true));
        assert_eq!(
            media(
                "application/json;as=BOGUS;v=v1beta1;g=meta.k8s.io, application/json",
                endpoint
            ),
            Some(Json)
        );
        assert_eq!(
            media("application/BOGUS, application/json", endpoint),
            Some(Json)
        );
        assert_eq!(media("application", endpoint), None);
        assert_eq!(media("text/html", endpoint), None);
        // Only spaces are trimmed, and nothing is lower-cased.
        assert_eq!(media("Application/JSON", endpoint), None);
        // A whitespace-only header is not empty: no clause, nothing acceptable.
        assert_eq!(media(" ", endpoint), None);
        // q only orders; q=0 still matches.
        assert_eq!(media("application/json;q=0", endpoint), Some(Json));
        assert_eq!(
            media(
                "application/json;q=0.5,application/vnd.kubernetes.protobuf",
                endpoint
            ),
            Some(Protobuf)
        );
    }
}

#[test]
fn not_acceptable_status() {
    let e = negotiate(Some("text/html"), BUILT_IN, false).unwrap_err();
    assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
    assert_eq!(
        e.message,
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let e = negotiate_stream(Some("application/yaml"), BUILT_IN).unwrap_err();
    assert_eq!(
        e.message,
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
}

#[test]
fn client_go_protobuf_clients() {
    let client_go = "application/vnd.kubernetes.protobuf, application/json";
    assert_eq!(media(client_go, BUILT_IN), Some(MediaType::Protobuf));
    // Custom resources: JSON when JSON is also acceptable, else nothing.
    assert_eq!(media(client_go, CUSTOM), Some(MediaType::Json));
    assert_eq!(
        target("application/vnd.kubernetes.protobuf", CUSTOM),
        Err(406)
    );
    // Errors have no such restriction: a custom resource's 406 is itself protobuf.
    assert_eq!(
        media("application/vnd.kubernetes.protobuf", Endpoint::Default),
        Some(MediaType::Protobuf)
    );
    assert_eq!(
        negotiate_stream(Some("application/vnd.kubernetes.protobuf"), BUILT_IN),
        Ok(MediaType::Protobuf)
    );
    assert_eq!(
        negotiate_stream(Some("application/vnd.kubernetes.protobuf"), CUSTOM)
            .unwrap_err()
            .code,
        406
    );
    assert_eq!(
        negotiate_stream(
            Some("application/vnd.kubernetes.protobuf;stream=watch"),
            BUILT_IN
        ),
        Ok(MediaType::Protobuf)
    );
}

#[test]
fn tables() {
    let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    assert_eq!(
        target(kubectl, BUILT_IN).unwrap().target,
        Target::Table(TableVersion::V1)
    );
    assert_eq!(
        target("application/json;as=Table;v=v1beta1;g=meta.k8s.io", CUSTOM)
            .unwrap()
            .target,
        Target::Table(TableVersion::V1Beta1)
    );
    // Tables are JSON or YAML only.
    let yaml = target("application/yaml;as=Table;v=v1;g=meta.k8s.io", BUILT_IN).unwrap();
    assert_eq!(
        (yaml.media, yaml.target),
        (MediaType::Yaml, Target::Table(TableVersion::V1))
    );
    assert_eq!(
        target(
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
            BUILT_IN
        ),
        Err(406)
    );
    assert_eq!(
        target(
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
            BUILT_IN
        )
        .unwrap(),
        Negotiated::JSON
    );
    // Unknown versions, groups or kinds are skipped; a bare `g`/`v` asks for a conversion too.
    assert_eq!(
        target(
            "application/json;as=Table;v=v9;g=meta.k8s.io,application/json",
            BUILT_IN
        )
        .unwrap(),
        Negotiated::JSON
    );
    assert_eq!(target("application/json;v=v1", BUILT_IN), Err(406));
    assert_eq!(
        target(
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            Endpoint::Default
        ),
        Err(406)
    );
    // Watch-list requests get no Tables.
    let watch_list = Endpoint::Resource {
        protobuf: true,
        table: false,
    };
    assert_eq!(target(kubectl, watch_list).unwrap(), Negotiated::JSON);
}

#[test]
fn partial_object_metadata() {
    let metadata_client = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    for endpoint in [BUILT_IN, CUSTOM] {
        let n = target(metadata_client, endpoint).unwrap();
        assert_eq!(n.media, MediaType::Protobuf);
        assert_eq!(
            n.target,
            Target::PartialObjectMetadataList(TableVersion::V1)
        );
    }
    let n = target(
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
        BUILT_IN,
    )
    .unwrap();
    assert_eq!(
        n.target,
        Target::PartialObjectMetadata(TableVersion::V1Beta1)
    );
    assert_eq!(
        target(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
            BUILT_IN
        ),
        Err(406)
    );
}

#[test]
fn stream_and_server_version_parameters() {
    // stream=watch needs a stream serializer; another schema is refused.
    assert_eq!(media("application/yaml;stream=watch", BUILT_IN), None);
    assert_eq!(
        media("application/json;stream=watch", BUILT_IN),
        Some(MediaType::Json)
    );
    assert_eq!(media("application/json;stream=other", BUILT_IN), None);
    // sv names the meta.k8s.io version of resources.
    assert_eq!(
        media("application/json;sv=v1", BUILT_IN),
        Some(MediaType::Json)
    );
    assert_eq!(media("application/json;sv=v2", BUILT_IN), None);
    assert_eq!(media("application/json;sv=v1", Endpoint::Default), None);
}

#[test]
fn aggregated_discovery() {
    let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    let a = negotiate_media(Some(kubectl), Endpoint::Discovery).unwrap();
    assert_eq!(a.convert.unwrap().discovery_version(), Some("v2"));
    let a = negotiate_media(
        Some("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
        Endpoint::Discovery,
    )
    .unwrap();
    assert_eq!(a.media, MediaType::Protobuf);
    assert_eq!(a.convert.unwrap().discovery_version(), Some("v2beta1"));
    // Plain JSON is the legacy document.
    assert_eq!(
        negotiate_media(Some("application/json"), Endpoint::Discovery),
        None
    );
}

#[test]
fn pretty() {
    assert!(pretty_requested(Some("pretty=1"), None));
    assert!(pretty_requested(Some("a=b&pretty=true"), None));
    assert!(!pretty_requested(Some("pretty=yes"), Some("curl/8.0")));
    assert!(pretty_requested(Some("prettyish=1"), Some("curl/8.0")));
    assert!(pretty_requested(None, Some("Wget/1.21")));
    assert!(pretty_requested(None, Some("Mozilla/5.0 (X11)")));
    assert!(!pretty_requested(None, Some("kubectl/v1.32.4")));
    // Only JSON has a pretty serializer.
    let n = negotiate(Some("application/yaml;pretty=1"), BUILT_IN, true).unwrap();
    assert!(!n.pretty);
    let n = negotiate(Some("application/json"), BUILT_IN, true).unwrap();
    assert!(n.pretty);
}
