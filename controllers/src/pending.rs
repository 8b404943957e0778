//! TEMPORARY SHIM — a stand-in for `member_clients`, which the members helper is writing, with
//! the interface agreed in CONTROLLERS.md. It is replaced by the real module when that lands on
//! main.

/// Stand-in for `crate::member_clients`.
pub mod member_clients {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::Secret;
    use karmada_api::cluster::v1alpha1::Cluster;
    use kube::{Api, Client};

    /// A member client could not be built.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct MemberError(pub String);

    /// Clients of member clusters, built from Cluster objects and their secrets, cached.
    #[derive(Clone)]
    pub struct MemberClients {
        control_plane: Client,
        cache: Arc<Mutex<HashMap<String, Client>>>,
    }

    impl MemberClients {
        /// Clients built through the control plane.
        pub fn new(control_plane: Client) -> Self {
            MemberClients {
                control_plane,
                cache: Arc::new(Mutex::new(HashMap::new())),
            }
        }

        /// The client of a cluster.
        pub async fn get(&self, cluster: &str) -> Result<Client, MemberError> {
            if let Some(c) = self
                .cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(cluster)
            {
                return Ok(c.clone());
            }
            let err = |e: &dyn std::fmt::Display| MemberError(format!("cluster {cluster}: {e}"));
            let c: Cluster = Api::all(self.control_plane.clone())
                .get(cluster)
                .await
                .map_err(|e| err(&e))?;
            let sref = c
                .spec
                .secret_ref
                .clone()
                .ok_or_else(|| MemberError(format!("cluster {cluster} has no secretRef")))?;
            let secret: Secret = Api::namespaced(self.control_plane.clone(), &sref.namespace)
                .get(&sref.name)
                .await
                .map_err(|e| err(&e))?;
            let data = secret.data.unwrap_or_default();
            let url: http::Uri = c.spec.api_endpoint.parse().map_err(|e| err(&e))?;
            let mut cfg = kube::Config::new(url);
            cfg.accept_invalid_certs = c.spec.insecure_skip_tls_verification;
            if let Some(ca) = data.get("caBundle") {
                let pem = String::from_utf8_lossy(&ca.0).to_string();
                let der: Vec<Vec<u8>> = pem_to_der(&pem);
                if !der.is_empty() {
                    cfg.root_cert = Some(der);
                }
            }
            if let Some(t) = data.get("token") {
                cfg.auth_info.token = Some(String::from_utf8_lossy(&t.0).to_string().into());
            }
            // Shim only: client certificates until member API servers accept tokens.
            if let (Some(cert), Some(key)) = (data.get("clientCert"), data.get("clientKey")) {
                use base64_shim::encode;
                cfg.auth_info.client_certificate_data = Some(encode(&cert.0));
                cfg.auth_info.client_key_data = Some(encode(&key.0).into());
            }
            let client = Client::try_from(cfg).map_err(|e| err(&e))?;
            self.cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(cluster.to_owned(), client.clone());
            Ok(client)
        }

        /// Drops a cached client.
        pub fn invalidate(&self, cluster: &str) {
            self.cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(cluster);
        }
    }

    fn pem_to_der(pem: &str) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut inside = false;
        for line in pem.lines() {
            if line.starts_with("-----BEGIN") {
                inside = true;
                cur.clear();
            } else if line.starts_with("-----END") {
                inside = false;
                if let Some(d) = base64_shim::decode(&cur) {
                    out.push(d);
                }
            } else if inside {
                cur.push_str(line.trim());
            }
        }
        out
    }

    mod base64_shim {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        pub fn encode(b: &[u8]) -> String {
            let mut s = String::new();
            for c in b.chunks(3) {
                let n = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                for i in 0..4 {
                    if i <= c.len() {
                        s.push(char::from(T[((n >> (18 - 6 * i)) & 63) as usize]));
                    } else {
                        s.push('=');
                    }
                }
            }
            s
        }
        pub fn decode(s: &str) -> Option<Vec<u8>> {
            let mut out = Vec::new();
            let mut buf = 0u32;
            let mut bits = 0;
            for ch in s.bytes() {
                if ch == b'=' {
                    break;
                }
                let v = T.iter().position(|&t| t == ch)? as u32;
                buf = (buf << 6) | v;
                bits += 6;
                if bits >= 8 {
                    bits -= 8;
                    out.push((buf >> bits) as u8);
                    buf &= (1 << bits) - 1;
                }
            }
            Some(out)
        }
    }
}
