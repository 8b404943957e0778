//! Service, Endpoints, Ingress, IngressClass and discovery.k8s.io's EndpointSlice.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::{
    AGE, ColumnDefinition, NAME, age, array_at, cells, col, get, int_at, name, str_at, wide,
};
use crate::table::column::Row;
use crate::table::format::format_labels;

pub(super) static SERVICE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Type",
        "string",
        "How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.",
    ),
    col(
        "Cluster-IP",
        "string",
        "Virtual IP of the service inside the cluster.",
    ),
    col(
        "External-IP",
        "string",
        "Addresses the service is reachable at from outside the cluster.",
    ),
    col(
        "Port(s)",
        "string",
        "Ports of the service, with node ports and protocols.",
    ),
    AGE,
    wide(
        "Selector",
        "string",
        "Labels of the pods the service routes to.",
    ),
];

/// `loadBalancerStatusStringer` in wide mode: unique IPs (or hostnames), sorted.
fn load_balancer_addresses(ingress: &[Value]) -> String {
    let addresses: BTreeSet<&str> = ingress
        .iter()
        .filter_map(|i| {
            let ip = str_at(i, "/ip");
            let host = str_at(i, "/hostname");
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    addresses.into_iter().collect::<Vec<_>>().join(",")
}

fn strings(values: &[Value]) -> Vec<&str> {
    values
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// `getServiceExternalIP`.
fn service_external_ip(obj: &Value, type_: &str) -> String {
    let external_ips = strings(array_at(obj, "/spec/externalIPs"));
    match type_ {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_addresses(array_at(obj, "/status/loadBalancer/ingress"));
            if !external_ips.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').collect()
                };
                all.extend(external_ips);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => str_at(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// `makePortString`.
fn service_ports(obj: &Value) -> String {
    let ports: Vec<String> = array_at(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = match str_at(p, "/protocol") {
                "" => "TCP",
                proto => proto,
            };
            let port = int_at(p, "/port");
            match int_at(p, "/nodePort") {
                node_port if node_port > 0 => format!("{port}:{node_port}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    }
}

/// `printService`.
pub(super) fn service(obj: &Value, now: Timestamp) -> Row {
    let type_ = match str_at(obj, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = array_at(obj, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .or_else(|| Some(str_at(obj, "/spec/clusterIP")).filter(|ip| !ip.is_empty()))
        .unwrap_or("<none>");
    cells![
        name(obj),
        type_,
        cluster_ip,
        service_external_ip(obj, type_),
        service_ports(obj),
        age(obj, now),
        format_labels(get(obj, "/spec/selector")),
    ]
}

pub(super) static ENDPOINTS_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "Up to three ready addresses with their ports.",
    ),
    AGE,
];

/// Go's `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints` with all ports.
fn format_endpoints(obj: &Value) -> String {
    const MAX: usize = 3;
    let subsets = array_at(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0;
    for subset in subsets {
        let addresses = array_at(subset, "/addresses");
        let ports = array_at(subset, "/ports");
        if ports.is_empty() {
            // Headless services may have no ports.
            count += addresses.len();
            for address in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(address, "/ip").to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for address in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(
                    str_at(address, "/ip"),
                    int_at(port, "/port"),
                ));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

/// `printEndpoints`.
pub(super) fn endpoints(obj: &Value, now: Timestamp) -> Row {
    cells![name(obj), format_endpoints(obj), age(obj, now)]
}

pub(super) static INGRESS_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Class",
        "string",
        "IngressClass that implements the ingress.",
    ),
    col("Hosts", "string", "Hosts the ingress rules match."),
    col(
        "Address",
        "string",
        "Addresses of the load balancer serving the ingress.",
    ),
    col(
        "Ports",
        "string",
        "Ports the ingress listens on (443 when TLS is configured).",
    ),
    AGE,
];

/// `formatHosts`: up to three hosts, `*` when no rule names one.
fn ingress_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(rule, "/host");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

/// `printIngress`.
pub(super) fn ingress(obj: &Value, now: Timestamp) -> Row {
    let class = get(obj, "/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if array_at(obj, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    cells![
        name(obj),
        class,
        ingress_hosts(array_at(obj, "/spec/rules")),
        load_balancer_addresses(array_at(obj, "/status/loadBalancer/ingress")),
        ports,
        age(obj, now),
    ]
}

pub(super) static ENDPOINT_SLICE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "Type of the addresses of the slice.",
    ),
    col("Ports", "string", "Up to three ports of the slice."),
    col("Endpoints", "string", "Up to three addresses of the slice."),
    AGE,
];

/// `listWithMoreString`.
fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let joined = list.join(",");
    if count > max {
        format!("{joined} + {} more...", count - max)
    } else if joined.is_empty() {
        "<unset>".to_string()
    } else {
        joined
    }
}

/// `printEndpointSlice` (`formatDiscoveryPorts`, `formatDiscoveryEndpoints`).
pub(super) fn endpoint_slice(obj: &Value, now: Timestamp) -> Row {
    const MAX: usize = 3;
    let ports = array_at(obj, "/ports");
    let port_list: Vec<String> = ports
        .iter()
        .take(MAX)
        .map(|p| match (get(p, "/port"), get(p, "/name")) {
            (Some(n), _) => n.to_string(),
            (None, Some(Value::String(name))) => name.clone(),
            _ => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = array_at(obj, "/endpoints")
        .iter()
        .flat_map(|e| array_at(e, "/addresses"))
        .map(|a| a.as_str().unwrap_or_default().to_string())
        .collect();
    cells![
        name(obj),
        str_at(obj, "/addressType"),
        list_with_more(&port_list, ports.len(), MAX),
        list_with_more(&addresses[..addresses.len().min(MAX)], addresses.len(), MAX),
        age(obj, now),
    ]
}

pub(super) static INGRESS_CLASS_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that implements the class.",
    ),
    col(
        "Parameters",
        "string",
        "The resource holding the class's parameters.",
    ),
    AGE,
];

/// `printIngressClass`.
pub(super) fn ingress_class(obj: &Value, now: Timestamp) -> Row {
    let parameters = match get(obj, "/spec/parameters") {
        None => "<none>".to_string(),
        Some(p) => {
            let mut s = str_at(p, "/kind").to_string();
            if let Some(Value::String(group)) = get(p, "/apiGroup") {
                s = format!("{s}.{group}");
            }
            format!("{s}/{}", str_at(p, "/name"))
        }
    };
    cells![
        name(obj),
        str_at(obj, "/spec/controller"),
        parameters,
        age(obj, now)
    ]
}
