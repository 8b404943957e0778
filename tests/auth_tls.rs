//! End-to-end: TLS — a serving certificate and client CA supplied by the user instead of the
//! generated ones, TLS 1.3 preferred, TLS 1.2 accepted, older versions refused.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use support::{DEADLINE, Server, wait_for};

#[test]
fn user_supplied_serving_certificate_and_client_ca() {
    let files = tempfile::tempdir().unwrap();
    let corp = certs::Ca::generate().unwrap();
    let serving = corp
        .issue_serving("corp-apiserver", &["localhost".into(), "127.0.0.1".into()])
        .unwrap();
    let chain = format!("{}{}", serving.cert_pem, corp.cert_pem());
    let (cert_file, key_file) = (files.path().join("tls.crt"), files.path().join("tls.key"));
    std::fs::write(&cert_file, &chain).unwrap();
    std::fs::write(&key_file, &serving.key_pem).unwrap();
    let clients = certs::Ca::generate().unwrap();
    let client_ca_file = files.path().join("clients.crt");
    std::fs::write(&client_ca_file, clients.cert_pem()).unwrap();

    let s = Server::start_with(
        support::Backend::Embedded,
        &[
            "--tls-cert-file",
            cert_file.to_str().unwrap(),
            "--tls-private-key-file",
            key_file.to_str().unwrap(),
            "--client-ca-file",
            client_ca_file.to_str().unwrap(),
        ],
    );
    // A user of the corporate PKI: trusts only the corporate CA, holds a certificate from the
    // client CA.
    let dana = clients.issue_client("dana", &["corp"]).unwrap();
    let kubeconfig = files.path().join("dana.kubeconfig");
    certs::write_kubeconfig(
        &kubeconfig,
        &certs::Kubeconfig {
            name: "corp".into(),
            server: s.url.clone(),
            ca_pem: corp.cert_pem().to_string(),
            credentials: certs::KubeconfigCredentials::ClientCert {
                cert_pem: dana.cert_pem,
                key_pem: dana.key_pem,
            },
            namespace: None,
        },
    )
    .unwrap();
    let who = s.kubectl_as_ok(&kubeconfig, &["auth", "whoami", "-o", "json"]);
    let who: serde_json::Value = serde_json::from_str(&who).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "dana");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["corp", "system:authenticated"])
    );
    // The generated admin kubeconfig still works (its CA data includes the served chain).
    s.kubectl_ok(&["get", "namespaces"]);

    // The generated serving certificate is not served: a client trusting only the server's
    // own CA refuses the connection.
    let out = support::run(
        s.kubectl_as_cmd(&s.token_kubeconfig("own-ca-only", "x"))
            .args(["get", "--raw", "/version"]),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate"), "{err}");
}

fn client_config(
    ca_pem: &str,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            support::pem_to_der(ca_pem),
        ))
        .unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

/// Completes a handshake; returns the negotiated version.
fn handshake(
    addr: &str,
    config: Arc<rustls::ClientConfig>,
) -> Result<rustls::ProtocolVersion, String> {
    let mut conn = rustls::ClientConnection::new(config, "127.0.0.1".try_into().unwrap())
        .map_err(|e| e.to_string())?;
    let mut sock = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(|e| e.to_string())?;
    }
    conn.protocol_version().ok_or_else(|| "no version".into())
}

#[test]
fn tls_versions() {
    let s = Server::start();
    let addr = s.url.trim_start_matches("https://").to_string();
    let ca = s.ca_pem();
    assert_eq!(
        handshake(&addr, client_config(&ca, rustls::ALL_VERSIONS)),
        Ok(rustls::ProtocolVersion::TLSv1_3),
        "TLS 1.3 is preferred"
    );
    assert_eq!(
        handshake(&addr, client_config(&ca, &[&rustls::version::TLS12])),
        Ok(rustls::ProtocolVersion::TLSv1_2),
        "TLS 1.2 is accepted"
    );

    // A TLS 1.1 ClientHello (no supported_versions extension) gets an alert, not a session.
    let mut hello = vec![0x03, 0x02]; // client_version TLS 1.1
    hello.extend_from_slice(&[0x42; 32]); // random
    hello.push(0); // session id
    hello.extend_from_slice(&[0x00, 0x04, 0x00, 0x2f, 0x00, 0x35]); // AES128-SHA, AES256-SHA
    hello.extend_from_slice(&[0x01, 0x00]); // null compression
    let mut handshake_msg = vec![0x01, 0x00];
    handshake_msg.extend_from_slice(&(hello.len() as u16).to_be_bytes());
    handshake_msg.extend_from_slice(&hello);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend_from_slice(&(handshake_msg.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake_msg);
    let mut sock = TcpStream::connect(&addr).unwrap();
    sock.set_read_timeout(Some(DEADLINE)).unwrap();
    sock.write_all(&record).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    wait_for(
        "the server's answer to a TLS 1.1 hello",
        DEADLINE,
        || match sock.read(&mut buf) {
            Ok(0) | Err(_) => Some(()),
            Ok(n) => {
                reply.extend_from_slice(&buf[..n]);
                (reply.len() >= 7).then_some(())
            }
        },
    );
    assert!(
        reply.first() == Some(&0x15) || reply.is_empty(),
        "an alert (or a closed connection), not a ServerHello: {reply:02x?}"
    );
    assert_ne!(reply.first(), Some(&0x16), "no handshake continues");
}
