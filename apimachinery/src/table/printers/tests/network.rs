use super::*;

fn service(name: &str, spec: Value, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(name, 86400), "spec": spec, "status": status})
}

#[test]
fn service_cells() {
    check(
        "",
        "Service",
        vec![
            (
                "cluster IP",
                service(
                    "web",
                    json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "fd00::a"],
                           "selector": {"app": "web", "tier": "fe"},
                           "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080},
                                     {"name": "dns", "port": 53, "protocol": "UDP"}]}),
                    json!({}),
                ),
                json!([
                    "web",
                    "ClusterIP",
                    "10.96.0.10",
                    "<none>",
                    "80/TCP,53/UDP",
                    "24h",
                    "app=web,tier=fe"
                ]),
            ),
            (
                "defaults: type and protocol, clusterIP only",
                service(
                    "bare",
                    json!({"clusterIP": "10.96.0.11", "ports": [{"port": 443}]}),
                    json!({}),
                ),
                json!([
                    "bare",
                    "ClusterIP",
                    "10.96.0.11",
                    "<none>",
                    "443/TCP",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "cluster IP with external IPs",
                service(
                    "ext",
                    json!({"type": "ClusterIP", "clusterIPs": ["10.96.0.12"], "externalIPs": ["1.1.1.1", "2.2.2.2"],
                           "ports": [{"port": 80, "protocol": "TCP"}]}),
                    json!({}),
                ),
                json!([
                    "ext",
                    "ClusterIP",
                    "10.96.0.12",
                    "1.1.1.1,2.2.2.2",
                    "80/TCP",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "headless",
                service(
                    "db",
                    json!({"clusterIP": "None", "clusterIPs": ["None"], "selector": {"app": "db"}}),
                    json!({}),
                ),
                json!([
                    "db",
                    "ClusterIP",
                    "None",
                    "<none>",
                    "<none>",
                    "24h",
                    "app=db"
                ]),
            ),
            (
                "node port",
                service(
                    "np",
                    json!({"type": "NodePort", "clusterIPs": ["10.96.1.1"],
                           "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
                    json!({}),
                ),
                json!([
                    "np",
                    "NodePort",
                    "10.96.1.1",
                    "<none>",
                    "80:30080/TCP",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "load balancer still pending",
                service(
                    "lb",
                    json!({"type": "LoadBalancer", "clusterIPs": ["10.96.2.2"],
                           "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
                    json!({"loadBalancer": {}}),
                ),
                json!([
                    "lb",
                    "LoadBalancer",
                    "10.96.2.2",
                    "<pending>",
                    "443:31443/TCP",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "load balancer with addresses (sorted, unique, never clipped)",
                service(
                    "lb2",
                    json!({"type": "LoadBalancer", "clusterIPs": ["10.96.2.3"], "ports": [{"port": 80, "protocol": "TCP"}]}),
                    json!({"loadBalancer": {"ingress": [
                        {"ip": "5.6.7.8"}, {"ip": "1.2.3.4", "hostname": "ignored.example.com"},
                        {"hostname": "a-very-long-load-balancer-name.elb.example.com"}, {"ip": "5.6.7.8"}, {}
                    ]}}),
                ),
                json!([
                    "lb2",
                    "LoadBalancer",
                    "10.96.2.3",
                    "1.2.3.4,5.6.7.8,a-very-long-load-balancer-name.elb.example.com",
                    "80/TCP",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "load balancer plus external IPs",
                service(
                    "lb3",
                    json!({"type": "LoadBalancer", "clusterIPs": ["10.96.2.4"], "externalIPs": ["9.9.9.9"]}),
                    json!({"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}),
                ),
                json!([
                    "lb3",
                    "LoadBalancer",
                    "10.96.2.4",
                    "5.6.7.8,9.9.9.9",
                    "<none>",
                    "24h",
                    "<none>"
                ]),
            ),
            (
                "external name",
                service(
                    "alias",
                    json!({"type": "ExternalName", "externalName": "db.example.com"}),
                    json!({}),
                ),
                json!([
                    "alias",
                    "ExternalName",
                    "<none>",
                    "db.example.com",
                    "<none>",
                    "24h",
                    "<none>"
                ]),
            ),
        ],
    );
}

#[test]
fn endpoints_cells() {
    let addrs = |ips: &[&str]| ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
    check(
        "",
        "Endpoints",
        vec![
            (
                "two addresses",
                json!({"metadata": meta("web", 60),
                       "subsets": [{"addresses": addrs(&["10.0.0.1", "10.0.0.2"]), "ports": [{"port": 8080}]}]}),
                json!(["web", "10.0.0.1:8080,10.0.0.2:8080", "60s"]),
            ),
            (
                "more than three",
                json!({"metadata": meta("big", 60),
                       "subsets": [{"addresses": addrs(&["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]),
                                    "ports": [{"port": 80}]}]}),
                json!([
                    "big",
                    "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more...",
                    "60s"
                ]),
            ),
            (
                "several ports",
                json!({"metadata": meta("multi", 60),
                       "subsets": [{"addresses": addrs(&["10.0.0.1", "10.0.0.2"]),
                                    "ports": [{"port": 80}, {"port": 443}]}]}),
                json!([
                    "multi",
                    "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
                    "60s"
                ]),
            ),
            (
                "headless without ports, IPv6",
                json!({"metadata": meta("hl", 60), "subsets": [{"addresses": addrs(&["fd00::1"])}]}),
                json!(["hl", "fd00::1", "60s"]),
            ),
            (
                "IPv6 with port",
                json!({"metadata": meta("v6", 60),
                       "subsets": [{"addresses": addrs(&["fd00::1"]), "ports": [{"port": 8080}]}]}),
                json!(["v6", "[fd00::1]:8080", "60s"]),
            ),
            (
                "no subsets",
                json!({"metadata": meta("none", 60)}),
                json!(["none", "<none>", "60s"]),
            ),
            (
                "only not-ready addresses",
                json!({"metadata": meta("nr", 60),
                       "subsets": [{"notReadyAddresses": addrs(&["10.0.0.9"]), "ports": [{"port": 80}]}]}),
                json!(["nr", "", "60s"]),
            ),
        ],
    );
}

#[test]
fn ingress_cells() {
    let rule = |host: &str| json!({"host": host, "http": {"paths": []}});
    check(
        "networking.k8s.io",
        "Ingress",
        vec![
            (
                "class, hosts, address, tls",
                json!({"metadata": meta("site", 3600),
                       "spec": {"ingressClassName": "nginx", "rules": [rule("a.example.com"), rule("b.example.com")],
                                "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}]},
                       "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}),
                json!([
                    "site",
                    "nginx",
                    "a.example.com,b.example.com",
                    "203.0.113.7",
                    "80, 443",
                    "60m"
                ]),
            ),
            (
                "default backend only",
                json!({"metadata": meta("catch", 3600), "spec": {"defaultBackend": {"service": {"name": "web"}}}}),
                json!(["catch", "<none>", "*", "", "80", "60m"]),
            ),
            (
                "more than three hosts, one rule without host",
                json!({"metadata": meta("many", 3600),
                       "spec": {"rules": [rule(""), rule("a.io"), rule("b.io"), rule("c.io"), rule("d.io")]}}),
                json!([
                    "many",
                    "<none>",
                    "a.io,b.io,c.io + 2 more...",
                    "",
                    "80",
                    "60m"
                ]),
            ),
        ],
    );
}
