//! karmada-webhook's MultiClusterService webhooks (pkg/webhook/multiclusterservice): the
//! mutating one gives each a permanent id, the validating one checks exposure types (one, and
//! immutable), ports and cluster names; and its MultiClusterIngress webhook
//! (pkg/webhook/multiclusteringress), whose ingress-spec checks are the API server's Ingress
//! validation (see the apiserver's Karmada strategy).

use super::{AdmissionError, Operation, Webhooks, label, permanent_id, set_label};
use crate::field::{FieldError, FieldPath};
use crate::networking::v1alpha1::{
    EXPOSURE_CROSS_CLUSTER, EXPOSURE_LOAD_BALANCER, MultiClusterIngress, MultiClusterService,
    PERMANENT_ID_LABEL,
};
use crate::validation::names::{is_dns1123_label, validate_cluster_name};

const WEBHOOK: &str = "multiclusterservice.karmada.io";

/// Go's `%#v` of a `[]v1alpha1.ExposureType`.
fn go_types(types: &[String]) -> String {
    let quoted: Vec<String> = types
        .iter()
        .map(|t| apimachinery::strconv::go_quote(t))
        .collect();
    format!("[]v1alpha1.ExposureType{{{}}}", quoted.join(", "))
}

/// validateMultiClusterServiceSpec.
pub(crate) fn validate_spec(mcs: &MultiClusterService) -> Vec<FieldError> {
    let spec = FieldPath::new("spec");
    let mut errors = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in mcs.spec.ports.iter().enumerate() {
        let path = spec.child("ports").index(i);
        if !p.name.is_empty() {
            for m in is_dns1123_label(&p.name) {
                errors.push(FieldError::invalid(
                    path.child("name").as_str(),
                    p.name.clone(),
                    m,
                ));
            }
            if names.contains(&p.name.as_str()) {
                errors.push(FieldError::duplicate(
                    path.child("name").as_str(),
                    p.name.clone(),
                ));
            } else {
                names.push(&p.name);
            }
        }
        if !(1..=65535).contains(&p.port) {
            errors.push(FieldError::invalid(
                path.child("port").as_str(),
                p.port,
                "must be between 1 and 65535, inclusive",
            ));
        }
    }
    let mut distinct: Vec<&str> = Vec::new();
    for (i, t) in mcs.spec.types.iter().enumerate() {
        if !distinct.contains(&t.as_str()) {
            distinct.push(t);
        }
        if t != EXPOSURE_CROSS_CLUSTER && t != EXPOSURE_LOAD_BALANCER {
            errors.push(FieldError::invalid(
                spec.child("types").index(i).as_str(),
                t.clone(),
                "ExposureType Error",
            ));
        }
    }
    if distinct.len() > 1 {
        errors.push(
            FieldError::invalid(
                spec.child("types").as_str(),
                serde_json::json!(mcs.spec.types),
                "MultiClusterService types should not contain more than one type",
            )
            .rendered_as(go_types(&mcs.spec.types)),
        );
    }
    // Karmada reports these under spec.range, where the deprecated field was.
    for (field, list) in [
        ("providerClusters", &mcs.spec.provider_clusters),
        ("consumerClusters", &mcs.spec.consumer_clusters),
    ] {
        for (i, c) in list.iter().enumerate() {
            let msgs = validate_cluster_name(&c.name);
            if !msgs.is_empty() {
                errors.push(FieldError::invalid(
                    spec.child("range").child(field).index(i).as_str(),
                    c.name.clone(),
                    msgs.join(","),
                ));
            }
        }
    }
    errors
}

impl Webhooks for MultiClusterService {
    fn mutates(op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutate(&mut self, _op: Operation) -> Result<(), AdmissionError> {
        if label(&self.metadata, PERMANENT_ID_LABEL).is_empty() {
            set_label(&mut self.metadata, PERMANENT_ID_LABEL, permanent_id());
        }
        Ok(())
    }

    const VALIDATES: bool = true;

    fn validate(&self, old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let mut errors = Vec::new();
        if let Some(old) = old
            && old.spec.types != self.spec.types
        {
            errors.push(
                FieldError::invalid(
                    "spec.types",
                    serde_json::json!(old.spec.types),
                    "MultiClusterService types are immutable",
                )
                .rendered_as(go_types(&old.spec.types)),
            );
        }
        errors.extend(validate_spec(self));
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(WEBHOOK, errors))
        }
    }
}

/// The MultiClusterIngress webhook's checks of the ingress spec are kube's Ingress
/// validation, which the API server runs on the object; the CRD schema does the rest.
impl Webhooks for MultiClusterIngress {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::networking::v1alpha1::{ClusterSelector, ExposurePort, MultiClusterServiceSpec};

    fn mcs(types: &[&str], ports: &[(&str, i32)], providers: &[&str]) -> MultiClusterService {
        MultiClusterService {
            spec: MultiClusterServiceSpec {
                types: types.iter().map(|t| t.to_string()).collect(),
                ports: ports
                    .iter()
                    .map(|(n, p)| ExposurePort {
                        name: n.to_string(),
                        port: *p,
                    })
                    .collect(),
                provider_clusters: providers
                    .iter()
                    .map(|n| ClusterSelector {
                        name: n.to_string(),
                    })
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn messages(m: &MultiClusterService) -> Vec<String> {
        validate_spec(m).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn karmadas_rules() {
        let cases: &[(MultiClusterService, &[&str])] = &[
            (mcs(&["CrossCluster"], &[("http", 80)], &["member1"]), &[]),
            (
                mcs(&["CrossCluster", "LoadBalancer"], &[], &[]),
                &[
                    "spec.types: Invalid value: []v1alpha1.ExposureType{\"CrossCluster\", \"LoadBalancer\"}: MultiClusterService types should not contain more than one type",
                ],
            ),
            (
                mcs(&["NodePort"], &[], &[]),
                &["spec.types[0]: Invalid value: \"NodePort\": ExposureType Error"],
            ),
            (
                mcs(&["CrossCluster"], &[("http", 80), ("http", 0)], &[]),
                &[
                    "spec.ports[1].name: Duplicate value: \"http\"",
                    "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                ],
            ),
            (
                mcs(&["CrossCluster"], &[("Http", 80)], &[]),
                &[
                    "spec.ports[0].name: Invalid value: \"Http\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
        ];
        for (m, want) in cases {
            assert_eq!(messages(m), *want, "{:?}", m.spec);
        }
        let bad_cluster = messages(&mcs(&["CrossCluster"], &[], &["Member_1"]));
        assert_eq!(bad_cluster.len(), 1);
        assert!(
            bad_cluster[0]
                .starts_with("spec.range.providerClusters[0]: Invalid value: \"Member_1\": "),
            "{bad_cluster:?}"
        );
    }

    #[test]
    fn types_are_immutable_and_ids_are_given() {
        let old = mcs(&["CrossCluster"], &[], &[]);
        let new = mcs(&["LoadBalancer"], &[], &[]);
        let err = new.validate(Some(&old), Operation::Update).unwrap_err();
        assert_eq!(
            err.to_string(),
            "admission webhook \"multiclusterservice.karmada.io\" denied the request: spec.types: Invalid value: []v1alpha1.ExposureType{\"CrossCluster\"}: MultiClusterService types are immutable"
        );
        let mut m = mcs(&["CrossCluster"], &[], &[]);
        m.mutate(Operation::Create).unwrap();
        let id = label(&m.metadata, PERMANENT_ID_LABEL).to_owned();
        assert_eq!(id.len(), 36, "{id}");
        m.mutate(Operation::Update).unwrap();
        assert_eq!(label(&m.metadata, PERMANENT_ID_LABEL), id, "kept on update");
    }
}
