//! core/v1 validation of Services, ConfigMaps, Secrets, Namespaces and
//! PersistentVolumeClaims (pkg/apis/core/validation).

use std::collections::BTreeSet;

use base64::Engine;
use serde_json::Value;

use super::field::{self, Bad, Path, go_quote};
use super::json;
use super::meta;
use super::names;
use super::pod;
use apimachinery::quantity::Quantity;
use apimachinery::status::Cause;

/// core.MaxSecretSize.
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const KUBELET_PORT: i64 = 10250;

fn spec(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

fn cluster_ips(s: &Value) -> Vec<String> {
    json::string_list(s, "clusterIPs").unwrap_or_default()
}

fn is_headless(s: &Value) -> bool {
    let ips = cluster_ips(s);
    ips.len() == 1 && ips[0] == "None"
}

fn go_service_port(p: &Value) -> String {
    format!(
        "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        go_quote(json::string(p, "protocol")),
        json::int(p, "port").unwrap_or(0)
    )
}

/// ValidateService (create form) plus the single-stack cluster's family check.
fn validate_service_spec(obj: &Value, errs: &mut Vec<Cause>) {
    let s = spec(obj);
    let sp = Path::new("spec");
    let svc_type = json::string(s, "type");
    let ports = json::list(s, "ports");
    let headless = is_headless(s);
    if ports.is_empty() && !headless && svc_type != "ExternalName" {
        errs.push(field::required(&sp.child("ports"), ""));
    }
    match svc_type {
        "LoadBalancer" => {
            for (i, p) in ports.iter().enumerate() {
                if json::int(p, "port") == Some(KUBELET_PORT) {
                    errs.push(field::invalid(
                        &sp.child("ports").index(i),
                        Bad::Int(KUBELET_PORT),
                        "may not expose port 10250 externally since it is used by kubelet",
                    ));
                }
            }
            if headless {
                errs.push(field::invalid(
                    &sp.child("clusterIPs").index(0),
                    Bad::str("None"),
                    "may not be set to 'None' for LoadBalancer services",
                ));
            }
        }
        "NodePort" if headless => errs.push(field::invalid(
            &sp.child("clusterIPs").index(0),
            Bad::str("None"),
            "may not be set to 'None' for NodePort services",
        )),
        "ExternalName" => {
            if !cluster_ips(s).is_empty() {
                errs.push(field::forbidden(
                    &sp.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if !json::list(s, "ipFamilies").is_empty() {
                errs.push(field::forbidden(
                    &sp.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if json::field(s, "ipFamilyPolicy").is_some() {
                errs.push(field::forbidden(
                    &sp.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = json::string(s, "externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(field::required(&sp.child("externalName"), ""));
            } else {
                for m in names::dns1123_subdomain(cname) {
                    errs.push(field::invalid(
                        &sp.child("externalName"),
                        Bad::str(cname),
                        &m,
                    ));
                }
            }
        }
        _ => {}
    }
    let mut port_names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = sp.child("ports").index(i);
        let name = json::string(p, "name");
        if ports.len() > 1 && name.is_empty() {
            errs.push(field::required(&pp.child("name"), ""));
        } else if !name.is_empty() {
            for m in names::dns1123_label(name) {
                errs.push(field::invalid(&pp.child("name"), Bad::str(name), &m));
            }
            if !port_names.insert(name.to_string()) {
                errs.push(field::duplicate(&pp.child("name"), Bad::str(name)));
            }
        }
        let port = json::int(p, "port").unwrap_or(0);
        for m in names::port_num(port) {
            errs.push(field::invalid(&pp.child("port"), Bad::Int(port), &m));
        }
        errs.extend(pod::validate_protocol(p, &pp));
        errs.extend(pod::validate_port_num_or_name(
            p.get("targetPort"),
            &pp.child("targetPort"),
        ));
        if let Some(ap) = json::opt_str(p, "appProtocol") {
            for m in names::qualified_name(ap) {
                errs.push(field::invalid(&pp.child("appProtocol"), Bad::str(ap), &m));
            }
        }
    }
    if json::field(s, "selector").is_some() {
        errs.extend(meta::validate_labels(
            json::string_map(s, "selector").as_ref(),
            &sp.child("selector"),
        ));
    }
    match json::string(s, "sessionAffinity") {
        "" => errs.push(field::required(&sp.child("sessionAffinity"), "")),
        "ClientIP" => {
            let cp = sp.child("sessionAffinityConfig");
            match json::field(s, "sessionAffinityConfig") {
                None => errs.push(field::required(
                    &cp,
                    "when session affinity type is ClientIP",
                )),
                Some(c) => match json::field(c, "clientIP") {
                    None => errs.push(field::required(
                        &cp.child("clientIP"),
                        "when session affinity type is ClientIP",
                    )),
                    Some(ip) => match json::int(ip, "timeoutSeconds") {
                        None => errs.push(field::required(
                            &cp.children(&["clientIP", "timeoutSeconds"]),
                            "when session affinity type is ClientIP",
                        )),
                        Some(t) if t <= 0 || t > 86400 => errs.push(field::invalid(
                            &cp.children(&["clientIP", "timeoutSeconds"]),
                            Bad::Int(t),
                            "must be greater than 0 and less than 86400",
                        )),
                        _ => {}
                    },
                },
            }
        }
        "None" => {
            if json::field(s, "sessionAffinityConfig").is_some() {
                errs.push(field::forbidden(
                    &sp.child("sessionAffinityConfig"),
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => errs.push(field::not_supported(
            &sp.child("sessionAffinity"),
            Bad::str(other),
            &["ClientIP", "None"],
        )),
    }
    if svc_type != "ExternalName" {
        validate_cluster_ips(s, &sp, errs);
    }
    for (i, ip) in json::list(s, "externalIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        let p = sp.child("externalIPs").index(i);
        match names::parse_ip(ip) {
            None => errs.push(field::invalid(
                &p,
                Bad::str(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )),
            Some(addr) => errs.extend(non_special_ip(addr, ip, &p)),
        }
    }
    match svc_type {
        "" => errs.push(field::required(&sp.child("type"), "")),
        "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName" => {}
        other => errs.push(field::not_supported(
            &sp.child("type"),
            Bad::str(other),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    if svc_type == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if json::int(p, "nodePort").unwrap_or(0) != 0 {
                errs.push(field::forbidden(
                    &sp.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    let mut seen_ports = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let proto = json::string(p, "protocol").to_string();
        let np = json::int(p, "nodePort").unwrap_or(0);
        if np != 0 && !node_ports.insert((proto.clone(), np)) {
            errs.push(field::duplicate(
                &sp.child("ports").index(i).child("nodePort"),
                Bad::Int(np),
            ));
        }
        if !seen_ports.insert((proto, json::int(p, "port").unwrap_or(0))) {
            errs.push(field::duplicate(
                &sp.child("ports").index(i),
                Bad::Raw(go_service_port(p)),
            ));
        }
    }
    if !json::list(s, "loadBalancerSourceRanges").is_empty() {
        let fp = sp.child("LoadBalancerSourceRanges");
        if svc_type != "LoadBalancer" {
            errs.push(field::forbidden(
                &fp,
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
        for (i, r) in json::list(s, "loadBalancerSourceRanges").iter().enumerate() {
            let r = r.as_str().unwrap_or("").trim();
            if !names::is_cidr(r) {
                errs.push(field::invalid(
                    &fp.index(i),
                    Bad::str(r),
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                ));
            }
        }
    }
    if json::field(s, "allocateLoadBalancerNodePorts").is_some() && svc_type != "LoadBalancer" {
        errs.push(field::forbidden(
            &sp.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if svc_type == "LoadBalancer" && json::field(s, "allocateLoadBalancerNodePorts").is_none() {
        errs.push(field::required(
            &Path::new("allocateLoadBalancerNodePorts"),
            "",
        ));
    }
    match (
        svc_type == "LoadBalancer",
        json::opt_str(s, "loadBalancerClass"),
    ) {
        (true, Some(c)) => {
            for m in names::qualified_name(c) {
                errs.push(field::invalid(
                    &sp.child("loadBalancerClass"),
                    Bad::str(c),
                    &m,
                ));
            }
        }
        (false, Some(_)) => errs.push(field::forbidden(
            &sp.child("loadBalancerClass"),
            "may only be used when `type` is 'LoadBalancer'",
        )),
        _ => {}
    }
    let externally_accessible = matches!(svc_type, "LoadBalancer" | "NodePort")
        || (svc_type == "ClusterIP" && !json::list(s, "externalIPs").is_empty());
    let etp = json::string(s, "externalTrafficPolicy");
    if !externally_accessible {
        if !etp.is_empty() {
            errs.push(field::invalid(
                &sp.child("externalTrafficPolicy"),
                Bad::str(etp),
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        errs.push(field::required(&sp.child("externalTrafficPolicy"), ""));
    } else if !matches!(etp, "Cluster" | "Local") {
        errs.push(field::not_supported(
            &sp.child("externalTrafficPolicy"),
            Bad::str(etp),
            &["Cluster", "Local"],
        ));
    }
    let hc = json::int(s, "healthCheckNodePort").unwrap_or(0);
    if svc_type == "LoadBalancer" && etp == "Local" {
        if hc != 0 {
            for m in names::port_num(hc) {
                errs.push(field::invalid(
                    &sp.child("healthCheckNodePort"),
                    Bad::Int(hc),
                    &m,
                ));
            }
        }
    } else if hc != 0 {
        errs.push(field::invalid(
            &sp.child("healthCheckNodePort"),
            Bad::Int(hc),
            "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ));
    }
    match json::opt_str(s, "internalTrafficPolicy") {
        None if matches!(svc_type, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            errs.push(field::required(&sp.child("internalTrafficPolicy"), ""))
        }
        Some(p) if !matches!(p, "Cluster" | "Local") => errs.push(field::not_supported(
            &sp.child("internalTrafficPolicy"),
            Bad::str(p),
            &["Cluster", "Local"],
        )),
        _ => {}
    }
    if let Some(td) = json::opt_str(s, "trafficDistribution")
        && td != "PreferClose"
    {
        errs.push(field::not_supported(
            &sp.child("trafficDistribution"),
            Bad::str(td),
            &["PreferClose"],
        ));
    }
}

pub(crate) fn non_special_ip(addr: std::net::IpAddr, ip: &str, path: &Path) -> Vec<Cause> {
    let msg = if addr.is_unspecified() {
        Some("may not be unspecified (0.0.0.0)")
    } else if addr.is_loopback() {
        Some("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    } else {
        match addr {
            std::net::IpAddr::V4(a) if a.is_link_local() => {
                Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
            }
            std::net::IpAddr::V4(a) if a.octets()[..3] == [224, 0, 0] => {
                Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
            }
            std::net::IpAddr::V6(a) if (a.segments()[0] & 0xffc0) == 0xfe80 => {
                Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
            }
            std::net::IpAddr::V6(a) if (a.segments()[0] & 0xff0f) == 0xff02 => {
                Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
            }
            _ => None,
        }
    };
    msg.map(|m| field::invalid(path, Bad::str(ip), m))
        .into_iter()
        .collect()
}

/// ValidateServiceClusterIPsRelatedFields.
fn validate_cluster_ips(s: &Value, sp: &Path, errs: &mut Vec<Cause>) {
    let ips = cluster_ips(s);
    let ips_path = sp.child("clusterIPs");
    let render_ips = || {
        Bad::Raw(field::go_string_slice(
            json::string_list(s, "clusterIPs").as_deref(),
        ))
    };
    let cluster_ip = json::string(s, "clusterIP");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(field::required(&ips_path, ""));
        } else if ips[0] != cluster_ip {
            errs.push(field::invalid(
                &ips_path,
                render_ips(),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(field::invalid(
            &ips_path,
            render_ips(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, fam) in json::string_list(s, "ipFamilies")
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = sp.child("ipFamilies").index(i);
        if !matches!(fam.as_str(), "IPv4" | "IPv6") {
            errs.push(field::not_supported(&p, Bad::str(fam), &["IPv4", "IPv6"]));
        }
        if !seen.insert(fam.clone()) {
            errs.push(field::duplicate(&p, Bad::str(fam)));
        }
    }
    if let Some(policy) = json::opt_str(s, "ipFamilyPolicy") {
        if !matches!(
            policy,
            "SingleStack" | "PreferDualStack" | "RequireDualStack"
        ) {
            errs.push(field::not_supported(
                &sp.child("ipFamilyPolicy"),
                Bad::str(policy),
                &["PreferDualStack", "RequireDualStack", "SingleStack"],
            ));
        } else if policy == "RequireDualStack"
            && !(is_headless(s) && json::is_empty(s.get("selector")))
        {
            // The registry's allocator: this cluster serves a single IPv4 family.
            errs.push(field::invalid(
                &sp.child("ipFamilyPolicy"),
                Bad::str(policy),
                "this cluster is not configured for dual-stack services",
            ));
        }
    }
    let mut bad_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                errs.push(field::invalid(
                    &ips_path,
                    render_ips(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if names::parse_ip(ip).is_none() {
            bad_ips = true;
            errs.push(field::invalid(
                &ips_path.index(i),
                Bad::str(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if ips.len() > 2 {
        errs.push(field::invalid(
            &ips_path,
            render_ips(),
            "may only hold up to 2 values",
        ));
    }
    if bad_ips {
        return;
    }
    if ips.len() > 1 {
        let v4 = ips.iter().filter(|ip| !ip.contains(':')).count();
        if v4 != 1 {
            errs.push(field::invalid(
                &ips_path,
                render_ips(),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(s) {
        let families = json::string_list(s, "ipFamilies").unwrap_or_default();
        for (i, ip) in ips.iter().enumerate().take(families.len()) {
            let v6 = ip.contains(':');
            if families[i] == "IPv4" && v6 {
                errs.push(field::invalid(
                    &ips_path.index(i),
                    Bad::str(ip),
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if families[i] == "IPv6" && !v6 {
                errs.push(field::invalid(
                    &ips_path.index(i),
                    Bad::str(ip),
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
}

/// ValidateServiceUpdate's checks beyond ValidateService.
fn validate_service_update(new: &Value, old: &Value, errs: &mut Vec<Cause>) {
    let (s, os) = (spec(new), spec(old));
    let (nt, ot) = (json::string(s, "type"), json::string(os, "type"));
    let render = |v: &Value| {
        Bad::Raw(field::go_string_slice(
            json::string_list(v, "clusterIPs").as_deref(),
        ))
    };
    if nt != "ExternalName" && ot != "ExternalName" && !(is_headless(s) && is_headless(os)) {
        let (ni, oi) = (cluster_ips(s), cluster_ips(os));
        let ip_path = Path::new("spec").child("clusterIPs");
        if ni.len() == oi.len() {
            for (i, ip) in oi.iter().enumerate() {
                if *ip != ni[i] {
                    errs.push(field::invalid(
                        &ip_path.index(i),
                        render(s),
                        "may not change once set",
                    ));
                }
            }
        } else if oi.len() > ni.len() {
            if ni.is_empty() {
                errs.push(field::invalid(
                    &ip_path.index(0),
                    render(s),
                    "primary clusterIP can not be unset",
                ));
            }
            if !oi.is_empty() && !ni.is_empty() && ni[0] != oi[0] {
                errs.push(field::invalid(
                    &ip_path.index(0),
                    render(s),
                    "may not change once set",
                ));
            }
            if ni.len() == 1 && json::string(s, "ipFamilyPolicy") != "SingleStack" {
                errs.push(field::invalid(
                    &Path::new("spec").child("ipFamilyPolicy"),
                    json::opt_str(s, "ipFamilyPolicy").map_or(Bad::Raw("null".into()), Bad::str),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        } else if !oi.is_empty() && ni[0] != oi[0] {
            errs.push(field::invalid(
                &ip_path.index(0),
                render(s),
                "may not change once set",
            ));
        }
    }
    if nt == "ExternalName" || ot == "ExternalName" || is_headless(s) || is_headless(os) {
        // Families of headless services, and of services moving to or from ExternalName, may change.
    } else {
        let (nf, of) = (
            json::string_list(s, "ipFamilies").unwrap_or_default(),
            json::string_list(os, "ipFamilies").unwrap_or_default(),
        );
        let fp = Path::new("spec").child("ipFamilies").index(0);
        let render_f = Bad::Raw(field::go_named_string_slice("core.IPFamily", Some(&nf)));
        if nf.len() == of.len() && nf != of {
            errs.push(field::invalid(&fp, render_f, "may not change once set"));
        } else if nf.len() != of.len() && !nf.is_empty() && !of.is_empty() && nf[0] != of[0] {
            errs.push(field::invalid(&fp, render(s), "may not change once set"));
        }
    }
    if nt == "LoadBalancer" && ot == "LoadBalancer" {
        let (nc, oc) = (
            json::opt_str(s, "loadBalancerClass"),
            json::opt_str(os, "loadBalancerClass"),
        );
        if nc != oc {
            errs.push(field::invalid(
                &Path::new("spec").child("loadBalancerClass"),
                nc.map_or(Bad::Raw("null".into()), Bad::str),
                "may not change once set",
            ));
        }
    }
    let needs_hc = |v: &Value| {
        json::string(v, "type") == "LoadBalancer"
            && json::string(v, "externalTrafficPolicy") == "Local"
    };
    if needs_hc(s)
        && needs_hc(os)
        && json::int(s, "healthCheckNodePort") != json::int(os, "healthCheckNodePort")
    {
        errs.push(field::forbidden(
            &Path::new("spec").child("healthCheckNodePort"),
            "field is immutable",
        ));
    }
}

/// Validates a Service; `old` adds update rules.
pub(crate) fn validate_service(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    if let Some(old) = old {
        validate_service_update(obj, old, errs);
    }
    validate_service_spec(obj, errs);
}

/// Secret `data` values are base64; size counts decoded bytes.
fn decoded_len(v: &Value) -> usize {
    let s = v.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_or(s.len(), |b| b.len())
}

/// ValidateConfigMap (+ ValidateConfigMapUpdate).
pub(crate) fn validate_config_map(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    if let Some(old) = old
        && json::boolean(old, "immutable") == Some(true)
    {
        if json::boolean(obj, "immutable") != Some(true) {
            errs.push(field::forbidden(
                &Path::new("immutable"),
                "field is immutable when `immutable` is set",
            ));
        }
        for key in ["data", "binaryData"] {
            if !json::semantic_eq(json::field(obj, key), json::field(old, key)) {
                errs.push(field::forbidden(
                    &Path::new(key),
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    let data = json::object(obj, "data");
    let binary = json::object(obj, "binaryData");
    let mut total = 0;
    for (k, v) in data.into_iter().flatten() {
        let p = Path::new("data").key(k);
        for m in names::config_map_key(k) {
            errs.push(field::invalid(&p, Bad::str(k), &m));
        }
        if binary.is_some_and(|b| b.contains_key(k)) {
            errs.push(field::invalid(
                &p,
                Bad::str(k),
                "duplicate of key present in binaryData",
            ));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in binary.into_iter().flatten() {
        for m in names::config_map_key(k) {
            errs.push(field::invalid(
                &Path::new("binaryData").key(k),
                Bad::str(k),
                &m,
            ));
        }
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(field::too_long(&Path::new(""), MAX_SECRET_SIZE));
    }
}

/// ValidateSecret (+ ValidateSecretUpdate).
pub(crate) fn validate_secret(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let secret_type = json::string(obj, "type");
    if let Some(old) = old {
        let old_type = json::string(old, "type");
        if secret_type != old_type {
            errs.push(field::invalid(
                &Path::new("type"),
                Bad::str(secret_type),
                "field is immutable",
            ));
        }
        if json::boolean(old, "immutable") == Some(true) {
            if json::boolean(obj, "immutable") != Some(true) {
                errs.push(field::forbidden(
                    &Path::new("immutable"),
                    "field is immutable when `immutable` is set",
                ));
            }
            if !json::semantic_eq(json::field(obj, "data"), json::field(old, "data")) {
                errs.push(field::forbidden(
                    &Path::new("data"),
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    let data = json::object(obj, "data");
    let data_path = Path::new("data");
    let mut total = 0;
    for (k, v) in data.into_iter().flatten() {
        for m in names::config_map_key(k) {
            errs.push(field::invalid(&data_path.key(k), Bad::str(k), &m));
        }
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(field::too_long(&data_path, MAX_SECRET_SIZE));
    }
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let decoded = |k: &str| {
        data.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    match secret_type {
        "kubernetes.io/service-account-token" => {
            let ann = json::at(
                obj,
                &[
                    "metadata",
                    "annotations",
                    "kubernetes.io/service-account.name",
                ],
            )
            .and_then(Value::as_str)
            .unwrap_or("");
            if ann.is_empty() {
                errs.push(field::required(
                    &Path::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
            let key = if secret_type == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            if !has(key) {
                errs.push(field::required(&data_path.key(key), ""));
            } else if let Some(bytes) = decoded(key)
                && let Err(e) = serde_json::from_slice::<serde_json::Map<String, Value>>(&bytes)
            {
                errs.push(field::invalid(
                    &data_path.key(key),
                    Bad::str("<secret contents redacted>"),
                    &e.to_string(),
                ));
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(field::required(&data_path.key("username"), ""));
            errs.push(field::required(&data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if decoded("ssh-privatekey").is_none_or(|b| b.is_empty()) => {
            errs.push(field::required(&data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errs.push(field::required(&data_path.key(key), ""));
                }
            }
        }
        _ => {}
    }
}

/// ValidateNamespace: spec.finalizers are standard or qualified names.
pub(crate) fn validate_namespace(obj: &Value, errs: &mut Vec<Cause>) {
    let p = Path::new("spec").child("finalizers");
    for f in json::at(obj, &["spec"])
        .and_then(|s| json::string_list(s, "finalizers"))
        .unwrap_or_default()
    {
        for m in names::qualified_name(&f) {
            errs.push(field::invalid(&p, Bad::str(&f), &m));
        }
        if !f.contains('/') && !matches!(f.as_str(), "kubernetes" | "orphan" | "foregroundDeletion")
        {
            errs.push(field::invalid(
                &p,
                Bad::str(&f),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

/// ValidatePersistentVolumeClaimSpec.
pub(crate) fn validate_pvc_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    let modes = json::string_list(s, "accessModes").unwrap_or_default();
    if modes.is_empty() {
        errs.push(field::required(
            &path.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = json::field(s, "selector") {
        errs.extend(meta::validate_label_selector(
            Some(sel),
            &path.child("selector"),
        ));
    }
    let supported = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let (mut rwop, mut other) = (false, false);
    for m in &modes {
        if !supported.contains(&m.as_str()) {
            errs.push(field::not_supported(
                &path.child("accessModes"),
                Bad::str(m),
                &supported,
            ));
        } else if m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(field::forbidden(
            &path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let storage_path = path.child("resources").key("storage");
    match json::at(s, &["resources", "requests", "storage"]) {
        None => errs.push(field::required(&storage_path, "")),
        Some(v) => match Quantity::from_json(v) {
            Some(Ok(q)) => {
                if q.signum() <= 0 {
                    errs.push(field::invalid(
                        &storage_path,
                        Bad::Str(q.canonical()),
                        "must be greater than zero",
                    ));
                }
            }
            _ => errs.push(field::invalid(
                &storage_path,
                Bad::Raw(v.to_string()),
                apimachinery::quantity::FORMAT_ERROR,
            )),
        },
    }
    if let Some(sc) = json::opt_str(s, "storageClassName").filter(|c| !c.is_empty()) {
        for m in names::dns1123_subdomain(sc) {
            errs.push(field::invalid(
                &path.child("storageClassName"),
                Bad::str(sc),
                &m,
            ));
        }
    }
    if let Some(vm) = json::opt_str(s, "volumeMode")
        && !matches!(vm, "Block" | "Filesystem")
    {
        errs.push(field::not_supported(
            &path.child("volumeMode"),
            Bad::str(vm),
            &["Block", "Filesystem"],
        ));
    }
}

/// ValidatePersistentVolumeClaim (+ ValidatePersistentVolumeClaimUpdate).
pub(crate) fn validate_pvc(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let s = spec(obj);
    validate_pvc_spec(s, &Path::new("spec"), errs);
    let Some(old) = old else {
        return;
    };
    let os = spec(old);
    let bound = json::at(obj, &["status", "phase"]).and_then(Value::as_str) == Some("Bound");
    let mut new_clone = s.clone();
    let mut old_clone = os.clone();
    if json::string(os, "volumeName").is_empty()
        && let (Some(n), Some(o)) = (new_clone.as_object_mut(), old_clone.as_object_mut())
    {
        match n.get("volumeName") {
            Some(v) => {
                o.insert("volumeName".into(), v.clone());
            }
            None => {
                o.remove("volumeName");
            }
        }
    }
    // The storage class may be set once on a claim created without one.
    if json::field(os, "storageClassName").is_none()
        && json::field(s, "storageClassName").is_some()
        && let (Some(n), Some(o)) = (new_clone.as_object(), old_clone.as_object_mut())
        && let Some(v) = n.get("storageClassName")
    {
        o.insert("storageClassName".into(), v.clone());
    }
    if bound {
        if let Some(storage) = json::at(os, &["resources", "requests", "storage"]).cloned()
            && let Some(req) = new_clone
                .get_mut("resources")
                .and_then(|r| r.get_mut("requests"))
                .and_then(Value::as_object_mut)
        {
            req.insert("storage".into(), storage);
        }
        if let (Some(n), Some(o)) = (new_clone.as_object_mut(), old_clone.as_object()) {
            match o.get("volumeAttributesClassName") {
                Some(v) => {
                    n.insert("volumeAttributesClassName".into(), v.clone());
                }
                None => {
                    n.remove("volumeAttributesClassName");
                }
            }
        }
    }
    if !json::semantic_eq(Some(&new_clone), Some(&old_clone)) {
        errs.push(field::forbidden(
            &Path::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |v: &Value| {
        json::at(v, &["resources", "requests", "storage"])
            .and_then(Quantity::from_json)
            .and_then(Result::ok)
    };
    if let (Some(ns), Some(osz)) = (size(s), size(os))
        && ns.cmp(&osz) == std::cmp::Ordering::Less
    {
        // RecoverVolumeExpansionFailure (beta, on in 1.32): shrinking stops at status.capacity.
        let capacity = json::at(old, &["status", "capacity", "storage"])
            .and_then(Quantity::from_json)
            .and_then(Result::ok);
        let at_or_below_capacity = match capacity {
            Some(c) => ns.cmp(&c) != std::cmp::Ordering::Greater,
            None => ns.signum() <= 0,
        };
        if at_or_below_capacity {
            errs.push(field::forbidden(
                &Path::new("spec").children(&["resources", "requests", "storage"]),
                "field can not be less than status.capacity",
            ));
        }
    }
    if !json::semantic_eq(json::field(s, "volumeMode"), json::field(os, "volumeMode")) {
        errs.push(field::invalid(
            &Path::new("volumeMode"),
            json::opt_str(s, "volumeMode").map_or(Bad::Raw("null".into()), Bad::str),
            "field is immutable",
        ));
    }
}
