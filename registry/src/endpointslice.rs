//! discovery.k8s.io/v1 EndpointSlice (pkg/apis/discovery/validation and
//! pkg/apis/discovery/v1/defaults.go).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::core::non_special_ip;
use super::field::{self, Bad, Path};
use super::json::{self, default_nil, default_str};
use super::meta;
use super::names;
use apimachinery::status::Cause;

const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 100;
const MAX_ENDPOINTS: usize = 1000;
const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// SetDefaults_EndpointPort: an unnamed port gets `name: ""`, and protocol TCP.
pub(crate) fn default(obj: &mut Value) {
    json::each_mut(obj, "ports", |p| {
        default_nil(p, "name", json!(""));
        default_str(p, "protocol", "TCP");
    });
}

/// ValidateEndpointSliceCreate / ValidateEndpointSliceUpdate (the deprecated address type
/// `IP` is kept only by objects that already have it; addressType is immutable).
pub(crate) fn validate(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let address_type = json::string(obj, "addressType");
    let supported: Vec<&str> = match old {
        Some(_) => vec!["FQDN", "IP", "IPv4", "IPv6"],
        None => ADDRESS_TYPES.to_vec(),
    };
    if address_type.is_empty() {
        errs.push(field::required(&Path::new("addressType"), ""));
    } else if !supported.contains(&address_type) {
        errs.push(field::not_supported(
            &Path::new("addressType"),
            Bad::str(address_type),
            &supported,
        ));
    }
    validate_endpoints(obj, address_type, errs);
    validate_ports(obj, errs);
    if let Some(old) = old {
        let before = json::string(old, "addressType");
        if before != address_type {
            errs.push(field::immutable(
                &Path::new("addressType"),
                json::field(obj, "addressType"),
            ));
        }
    }
}

fn validate_address(address_type: &str, address: &str, path: &Path, errs: &mut Vec<Cause>) {
    match address_type {
        "IPv4" | "IPv6" | "IP" => {
            let parsed = names::parse_ip(address);
            let (ok, msg) = match address_type {
                "IPv4" => (
                    parsed.is_some_and(|a| a.is_ipv4()),
                    "must be a valid IPv4 address",
                ),
                "IPv6" => (
                    parsed.is_some_and(|a| a.is_ipv6()),
                    "must be a valid IPv6 address",
                ),
                _ => (
                    parsed.is_some(),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ),
            };
            match parsed {
                Some(addr) if ok => {
                    if address_type != "IP" {
                        errs.extend(non_special_ip(addr, address, path));
                    }
                }
                _ => errs.push(field::invalid(path, Bad::str(address), msg)),
            }
        }
        "FQDN" => {
            let fqdn = address.strip_suffix('.').unwrap_or(address);
            if fqdn.is_empty() {
                errs.push(field::required(path, ""));
            } else if !fqdn.contains('.') {
                errs.push(field::invalid(
                    path,
                    Bad::str(address),
                    "should be a domain with at least two segments separated by dots",
                ));
            } else {
                for label in fqdn.split('.') {
                    for m in names::dns1123_label(label) {
                        errs.push(field::invalid(path, Bad::str(address), &m));
                    }
                }
            }
        }
        _ => {}
    }
}

fn validate_endpoints(obj: &Value, address_type: &str, errs: &mut Vec<Cause>) {
    let p = Path::new("endpoints");
    let endpoints = json::list(obj, "endpoints");
    if endpoints.len() > MAX_ENDPOINTS {
        errs.push(field::too_many(&p, endpoints.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, e) in endpoints.iter().enumerate() {
        let ep = p.index(i);
        let ap = ep.child("addresses");
        let addresses = json::list(e, "addresses");
        if addresses.is_empty() {
            errs.push(field::required(&ap, "must contain at least 1 address"));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(field::too_many(&ap, addresses.len(), MAX_ADDRESSES));
        }
        for (j, a) in addresses.iter().enumerate() {
            validate_address(
                address_type,
                a.as_str().unwrap_or_default(),
                &ap.index(j),
                errs,
            );
        }
        let topology = json::string_map(e, "deprecatedTopology");
        let tp = ep.child("topology");
        if let Some(t) = &topology
            && t.len() > MAX_TOPOLOGY_LABELS
        {
            errs.push(field::too_many(&tp, t.len(), MAX_TOPOLOGY_LABELS));
        }
        errs.extend(meta::validate_labels(topology.as_ref(), &tp));
        if let Some(host) = json::opt_str(e, "hostname") {
            for m in names::dns1123_label(host) {
                errs.push(field::invalid(&ep.child("hostname"), Bad::str(host), &m));
            }
        }
    }
}

fn validate_ports(obj: &Value, errs: &mut Vec<Cause>) {
    let p = Path::new("ports");
    let ports = json::list(obj, "ports");
    if ports.len() > MAX_PORTS {
        errs.push(field::too_many(&p, ports.len(), MAX_PORTS));
        return;
    }
    let mut names_seen = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let pp = p.index(i);
        let name = json::string(port, "name");
        if !name.is_empty() {
            for m in names::dns1123_label(name) {
                errs.push(field::invalid(&pp.child("name"), Bad::str(name), &m));
            }
        }
        if !names_seen.insert(name) {
            errs.push(field::duplicate(&pp.child("name"), Bad::str(name)));
        }
        match json::opt_str(port, "protocol") {
            None => errs.push(field::required(&pp.child("protocol"), "")),
            Some(proto) if !PROTOCOLS.contains(&proto) => errs.push(field::not_supported(
                &pp.child("protocol"),
                Bad::str(proto),
                PROTOCOLS,
            )),
            Some(_) => {}
        }
        if let Some(app) = json::opt_str(port, "appProtocol") {
            for m in names::qualified_name(app) {
                errs.push(field::invalid(&pp.child("appProtocol"), Bad::str(app), &m));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(errs: &[Cause]) -> Vec<(&str, &str)> {
        errs.iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn endpoint_slices_are_checked_as_kube_checks_them() {
        let mut s = json!({
            "addressType": "IPv4",
            "endpoints": [{"addresses": []}, {"addresses": ["10.0.0.300", "127.0.0.1"]}],
            "ports": [{"name": "http", "port": 80}, {"name": "http", "protocol": "ICMP"}],
        });
        default(&mut s);
        assert_eq!(s["ports"][0]["protocol"], "TCP");
        let mut errs = Vec::new();
        validate(&s, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [
                (
                    "endpoints[0].addresses",
                    "Required value: must contain at least 1 address"
                ),
                (
                    "endpoints[1].addresses[0]",
                    "Invalid value: \"10.0.0.300\": must be a valid IPv4 address"
                ),
                (
                    "endpoints[1].addresses[1]",
                    "Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"
                ),
                ("ports[1].name", "Duplicate value: \"http\""),
                (
                    "ports[1].protocol",
                    "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
                ),
            ]
        );
        errs.clear();
        let old = json!({"addressType": "IPv6"});
        validate(&json!({"addressType": "IPv4"}), Some(&old), &mut errs);
        assert_eq!(
            fields(&errs),
            [("addressType", "Invalid value: \"IPv4\": field is immutable")]
        );
    }
}
