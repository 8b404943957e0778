//! Karmada's checks of Cluster objects (pkg/apis/cluster/validation), with its paths and
//! messages — including its quirks, such as reporting zone errors under `spec.Zone`.

use serde_json::Value;

use super::names::{is_valid_label_value, validate_label_name};
use super::url;
use crate::cluster::v1alpha1::{ClusterSpec, LocalSecretReference, ResourceModel};
use crate::field::{FieldError, FieldPath};
use crate::quantity::ParsedQuantity;

/// Checks a ClusterSpec (ValidateClusterSpec). The syncMode checks are done by the caller on
/// the raw value (see `validate_sync_mode`), because an unknown mode cannot be decoded.
pub fn validate_cluster_spec(spec: &ClusterSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !spec.api_endpoint.is_empty() {
        errs.extend(validate_api_endpoint(
            &path.child("apiEndpoint"),
            &spec.api_endpoint,
        ));
    }
    for (name, secret) in [
        ("secretRef", &spec.secret_ref),
        ("impersonatorSecretRef", &spec.impersonator_secret_ref),
    ] {
        if let Some(LocalSecretReference {
            namespace,
            name: secret_name,
        }) = secret
        {
            if namespace.is_empty() {
                errs.push(FieldError::required(
                    path.child(name).child("namespace"),
                    "",
                ));
            }
            if secret_name.is_empty() {
                errs.push(FieldError::required(path.child(name).child("name"), ""));
            }
        }
    }
    if !spec.proxy_url.is_empty() {
        errs.extend(validate_proxy_url(&path.child("proxyURL"), &spec.proxy_url));
    }
    errs.extend(validate_field_selector_fields(spec, path));
    if !spec.taints.is_empty() {
        errs.extend(validate_taints(spec, &path.child("taints")));
    }
    if !spec.resource_models.is_empty()
        && let Some(e) =
            validate_resource_models(&path.child("resourceModels"), &spec.resource_models)
    {
        errs.push(e);
    }
    errs
}

/// The syncMode checks: required, and one of Pull or Push. `raw` is the JSON value found at
/// spec.syncMode, if any.
pub fn validate_sync_mode(raw: Option<&Value>, path: &FieldPath) -> Vec<FieldError> {
    let mode = raw.and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if mode.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if mode != "Pull" && mode != "Push" {
        errs.push(FieldError::not_supported(path, mode, &["Pull", "Push"]));
    }
    errs
}

const ENDPOINT_FORM: &str = "; desired format: hostname, hostname:port, IP or IP:port";

/// Checks an apiEndpoint (ValidateClusterAPIEndpoint without forcing https).
pub fn validate_api_endpoint(path: &FieldPath, endpoint: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match url::parse(endpoint) {
        Err(e) => errs.push(FieldError::invalid(
            path,
            endpoint,
            format!("apiEndpoint must be a valid URL: {e}{ENDPOINT_FORM}"),
        )),
        Ok(u) => {
            if u.host.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.host.as_str(),
                    format!("host must be provided{ENDPOINT_FORM}"),
                ));
            }
            if let Some(user) = &u.user {
                errs.push(FieldError::invalid(
                    path,
                    user.as_str(),
                    "user information is not permitted in the URL",
                ));
            }
            if !u.fragment.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.fragment.as_str(),
                    "fragments are not permitted in the URL",
                ));
            }
            if !u.raw_query.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.raw_query.as_str(),
                    "query parameters are not permitted in the URL",
                ));
            }
        }
    }
    errs
}

/// Checks a proxyURL (ValidateClusterProxyURL).
pub fn validate_proxy_url(path: &FieldPath, proxy: &str) -> Vec<FieldError> {
    match url::parse(proxy) {
        Err(e) => vec![FieldError::invalid(
            path,
            proxy,
            format!("apiEndpoint must be a valid URL: {e}"),
        )],
        Ok(u) if matches!(u.scheme.as_str(), "http" | "https" | "socks5") => Vec::new(),
        Ok(u) => vec![FieldError::invalid(
            path,
            proxy,
            format!(
                "unsupported scheme {}, must be http, https, or socks5",
                crate::field::go_quote(&u.scheme)
            ),
        )],
    }
}

fn validate_field_selector_fields(spec: &ClusterSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, value) in [("provider", &spec.provider), ("region", &spec.region)] {
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child(name),
                value.as_str(),
                msgs.join("; "),
            ));
        }
    }
    if !spec.zone.is_empty() && !spec.zones.is_empty() {
        errs.push(
            FieldError::type_invalid(
                path.child("spec"),
                Value::Null,
                "Zone and Zones cannot co-exist",
            )
            .with_struct_value(spec),
        );
        return errs;
    }
    if !spec.zone.is_empty() {
        let msgs = is_valid_label_value(&spec.zone);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child("Zone"),
                spec.zone.as_str(),
                msgs.join("; "),
            ));
        }
        return errs;
    }
    for zone in &spec.zones {
        let msgs = is_valid_label_value(zone);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child("Zones"),
                zone.as_str(),
                msgs.join("; "),
            ));
        }
    }
    errs
}

fn validate_taints(spec: &ClusterSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, taint) in spec.taints.iter().enumerate() {
        let item = path.index(i);
        errs.extend(validate_label_name(&taint.key, item.child("key").as_str()));
        let value = taint.value.as_deref().unwrap_or("");
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                item.child("value"),
                value,
                msgs.join(";"),
            ));
        }
        let effect = taint.effect.as_str();
        if effect.is_empty() {
            errs.push(FieldError::required(item.child("effect"), ""));
        } else if effect != "NoSchedule" && effect != "NoExecute" {
            errs.push(FieldError::not_supported(
                item.child("effect"),
                effect,
                &["NoSchedule", "NoExecute"],
            ));
        }
        if seen.contains(&(effect, taint.key.as_str())) {
            let mut dup = FieldError::duplicate(&item, Value::Null).with_struct_value(taint);
            dup.detail = "taints must be unique by key and effect pair".to_owned();
            errs.push(dup);
            continue;
        }
        seen.push((effect, taint.key.as_str()));
    }
    errs
}

/// Checks resource models (ValidateClusterResourceModels); reports only the first problem.
pub fn validate_resource_models(path: &FieldPath, models: &[ResourceModel]) -> Option<FieldError> {
    let invalid = |msg: &str| Some(FieldError::invalid_struct(path, &models, msg));
    let parse = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
        ParsedQuantity::parse(&q.0).ok()
    };
    for (i, model) in models.iter().enumerate() {
        if i != 0 && model.grade == models[i - 1].grade {
            return invalid("The grade of each models should not be the same");
        }
        if i != 0 && models[i - 1].ranges.len() != model.ranges.len() {
            return invalid("The number of resource types should be the same");
        }
        for (j, range) in model.ranges.iter().enumerate() {
            let (Some(min), Some(max)) = (parse(&range.min), parse(&range.max)) else {
                return invalid("The min and max value of each resource must be valid quantities");
            };
            if max.cmp_value(min).is_le() {
                return invalid(
                    "The max value of each resource must be greater than the min value",
                );
            }
            if i == 0 {
                if !min.is_zero() {
                    return invalid(
                        "The min value of each resource in the first model should be 0",
                    );
                }
            } else {
                let previous = &models[i - 1].ranges[j];
                if previous.name != range.name {
                    return invalid("The resource types of each models should be the same");
                }
                if parse(&previous.max) != Some(min) {
                    return invalid(
                        "Model intervals for resources must be contiguous and non-overlapping",
                    );
                }
            }
            if i == models.len() - 1 && max.value() != i64::MAX {
                return invalid(
                    "The max value of each resource in the last model should be MaxInt64",
                );
            }
        }
    }
    None
}
