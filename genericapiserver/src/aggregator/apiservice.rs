//! APIService objects (`apiregistration.k8s.io/v1`) as the aggregator reads them, and the
//! Service resolution kube's `ResolveCluster` (k8s.io/apiserver/pkg/util/proxy) performs.

use base64::Engine;
use serde_json::Value;

/// The `Available` condition type.
pub const AVAILABLE: &str = "Available";

/// Where a remote APIService's backend is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Port (default 443).
    pub port: u16,
}

/// The parts of an APIService the aggregator uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiService {
    /// Object name (`<version>.<group>`).
    pub name: String,
    /// resourceVersion.
    pub version_rv: String,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// The backend Service; `None` for local APIServices.
    pub service: Option<ServiceRef>,
    /// CA bundle verifying the backend (decoded).
    pub ca_bundle: Vec<u8>,
    /// Skip backend certificate verification.
    pub insecure: bool,
    /// `groupPriorityMinimum`.
    pub group_priority: i64,
    /// `versionPriority`.
    pub version_priority: i64,
    /// The current Available condition (status, reason, message, lastTransitionTime).
    pub available: Option<Condition>,
}

/// An APIService condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl Condition {
    /// A condition.
    pub fn new(status: &str, reason: &str, message: impl Into<String>) -> Condition {
        Condition {
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// True when the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

impl ApiService {
    /// Reads an APIService's JSON; `None` when it lacks a group version.
    pub fn from_json(v: &Value) -> Option<ApiService> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let spec = v.get("spec")?;
        let version = spec.get("version").and_then(Value::as_str)?.to_string();
        let group = spec
            .get("group")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let service = spec
            .get("service")
            .filter(|x| !x.is_null())
            .map(|svc| ServiceRef {
                namespace: svc
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: svc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                port: svc
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        let ca_bundle = spec
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let available = v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(AVAILABLE))
            })
            .map(|c| {
                let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                Condition::new(f("status"), f("reason"), f("message"))
            });
        Some(ApiService {
            name: s("/metadata/name").to_string(),
            version_rv: s("/metadata/resourceVersion").to_string(),
            group,
            version,
            service,
            ca_bundle,
            insecure: spec
                .get("insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            group_priority: spec
                .get("groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            version_priority: spec
                .get("versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            available,
        })
    }

    /// The name TLS verifies the backend as (`BuildTransportConfig`): `<svc>.<ns>.svc`.
    pub fn server_name(&self) -> Option<String> {
        self.service
            .as_ref()
            .map(|s| format!("{}.{}.svc", s.name, s.namespace))
    }
}

/// Resolves a Service to `host:port` as kube's `ResolveCluster` does, or explains why it
/// cannot, as the availability controller reports it (reason, message).
pub fn resolve(svc_ref: &ServiceRef, service: Option<&Value>) -> Result<(String, u16), Condition> {
    let Some(svc) = service else {
        return Err(Condition::new(
            "False",
            "ServiceNotFound",
            format!(
                "service/{} in \"{}\" is not present",
                svc_ref.name, svc_ref.namespace
            ),
        ));
    };
    let spec = svc.get("spec").cloned().unwrap_or(Value::Null);
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let port_error = || {
        Condition::new(
            "False",
            "ServicePortError",
            format!(
                "service/{} in \"{}\" is not listening on port {}",
                svc_ref.name, svc_ref.namespace, svc_ref.port
            ),
        )
    };
    match ty {
        "ClusterIP" | "NodePort" | "LoadBalancer" => {
            let ip = spec
                .get("clusterIP")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if ip.is_empty() || ip == "None" {
                return Err(Condition::new(
                    "False",
                    "ServiceError",
                    format!("cannot route to service with ClusterIP {ip:?}"),
                ));
            }
            let listens = spec
                .get("ports")
                .and_then(Value::as_array)
                .is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p.get("port").and_then(Value::as_u64) == Some(u64::from(svc_ref.port))
                    })
                });
            if !listens {
                return Err(port_error());
            }
            Ok((ip.to_string(), svc_ref.port))
        }
        "ExternalName" => {
            let host = spec
                .get("externalName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if host.is_empty() {
                return Err(Condition::new(
                    "False",
                    "ServiceError",
                    "service has no externalName",
                ));
            }
            Ok((host.to_string(), svc_ref.port))
        }
        other => Err(Condition::new(
            "False",
            "ServiceError",
            format!("unsupported service type {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse() {
        let v = json!({
            "metadata": {"name": "v1alpha1.cluster.karmada.io", "resourceVersion": "7"},
            "spec": {
                "group": "cluster.karmada.io", "version": "v1alpha1",
                "service": {"namespace": "karmada-system", "name": "agg"},
                "caBundle": "Q0E=", "groupPriorityMinimum": 2000, "versionPriority": 10,
            },
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "X", "message": "m"}]},
        });
        let a = ApiService::from_json(&v).unwrap();
        assert_eq!(a.service.as_ref().unwrap().port, 443);
        assert_eq!(a.ca_bundle, b"CA");
        assert_eq!(a.server_name().unwrap(), "agg.karmada-system.svc");
        assert_eq!(a.available.unwrap(), Condition::new("False", "X", "m"));
        let local = ApiService::from_json(
            &json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1"}}),
        )
        .unwrap();
        assert!(local.service.is_none());
    }

    #[test]
    fn resolution() {
        let r = ServiceRef {
            namespace: "ns".into(),
            name: "svc".into(),
            port: 8443,
        };
        type Case<'a> = (Option<Value>, Result<(&'a str, u16), &'a str>);
        let cases: Vec<Case> = vec![
            (None, Err("ServiceNotFound")),
            (
                Some(json!({"spec": {"type": "ExternalName", "externalName": "agg.example"}})),
                Ok(("agg.example", 8443)),
            ),
            (
                Some(json!({"spec": {"clusterIP": "10.0.0.9", "ports": [{"port": 8443}]}})),
                Ok(("10.0.0.9", 8443)),
            ),
            (
                Some(json!({"spec": {"clusterIP": "10.0.0.9", "ports": [{"port": 443}]}})),
                Err("ServicePortError"),
            ),
            (
                Some(json!({"spec": {"clusterIP": "None", "ports": [{"port": 8443}]}})),
                Err("ServiceError"),
            ),
            (
                Some(json!({"spec": {"type": "Weird"}})),
                Err("ServiceError"),
            ),
        ];
        for (svc, want) in cases {
            let got = resolve(&r, svc.as_ref());
            match (got, want) {
                (Ok((h, p)), Ok((wh, wp))) => assert_eq!((h.as_str(), p), (wh, wp)),
                (Err(c), Err(reason)) => {
                    assert_eq!(c.reason, reason);
                    assert_eq!(c.status, "False");
                }
                (got, want) => panic!("{svc:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
