//! SOCKS5 `CONNECT` (RFC 1928) with optional user/password authentication (RFC 1929), as
//! golang.org/x/net/internal/socks dials for Go's transport: the target's host name goes to
//! the proxy, which resolves it.

use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0x00;
const USER_PASSWORD: u8 = 0x02;
const NO_ACCEPTABLE: u8 = 0xff;
const CMD_CONNECT: u8 = 1;
const ATYP_IPV4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_IPV6: u8 = 4;

fn err(proxy: &str, what: String) -> std::io::Error {
    std::io::Error::other(format!("SOCKS5 proxy {proxy}: {what}"))
}

/// The text of a reply code (RFC 1928 §6).
fn reply_text(code: u8) -> &'static str {
    match code {
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unknown error",
    }
}

/// Asks the SOCKS5 proxy at the other end of `conn` (`proxy` names it in errors) to connect
/// to `host:port`; on success `conn` carries the connection.
pub(crate) async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut S,
    proxy: &str,
    auth: Option<&(String, String)>,
    host: &str,
    port: u16,
) -> std::io::Result<()> {
    let methods: &[u8] = if auth.is_some() {
        &[NO_AUTH, USER_PASSWORD]
    } else {
        &[NO_AUTH]
    };
    let mut greeting = vec![VERSION, methods.len() as u8];
    greeting.extend_from_slice(methods);
    conn.write_all(&greeting).await?;
    let mut choice = [0u8; 2];
    conn.read_exact(&mut choice).await?;
    if choice[0] != VERSION {
        return Err(err(
            proxy,
            format!("unexpected protocol version {}", choice[0]),
        ));
    }
    match (choice[1], auth) {
        (NO_AUTH, _) => {}
        (USER_PASSWORD, Some((user, password))) => {
            if user.len() > 255 || password.len() > 255 {
                return Err(err(
                    proxy,
                    "user name or password longer than 255 bytes".into(),
                ));
            }
            let mut req = vec![1, user.len() as u8];
            req.extend_from_slice(user.as_bytes());
            req.push(password.len() as u8);
            req.extend_from_slice(password.as_bytes());
            conn.write_all(&req).await?;
            let mut status = [0u8; 2];
            conn.read_exact(&mut status).await?;
            if status[1] != 0 {
                return Err(err(
                    proxy,
                    "user name/password authentication failed".into(),
                ));
            }
        }
        (NO_ACCEPTABLE, _) => {
            return Err(err(proxy, "no acceptable authentication methods".into()));
        }
        (other, _) => {
            return Err(err(
                proxy,
                format!("unsupported authentication method {other}"),
            ));
        }
    }

    let mut req = vec![VERSION, CMD_CONNECT, 0];
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            req.push(ATYP_IPV4);
            req.extend_from_slice(&ip.octets());
        }
        Ok(IpAddr::V6(ip)) => {
            req.push(ATYP_IPV6);
            req.extend_from_slice(&ip.octets());
        }
        Err(_) => {
            if host.is_empty() || host.len() > 255 {
                return Err(err(proxy, format!("host name {host:?} cannot be sent")));
            }
            req.push(ATYP_DOMAIN);
            req.push(host.len() as u8);
            req.extend_from_slice(host.as_bytes());
        }
    }
    req.extend_from_slice(&port.to_be_bytes());
    conn.write_all(&req).await?;

    let mut reply = [0u8; 4];
    conn.read_exact(&mut reply).await?;
    if reply[0] != VERSION {
        return Err(err(
            proxy,
            format!("unexpected protocol version {}", reply[0]),
        ));
    }
    if reply[1] != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!(
                "SOCKS5 proxy {proxy}: connect to {}: {}",
                super::authority(host, port),
                reply_text(reply[1])
            ),
        ));
    }
    // The bound address and port are not needed; they are read off the stream.
    let len = match reply[3] {
        ATYP_IPV4 => 4,
        ATYP_IPV6 => 16,
        ATYP_DOMAIN => {
            let mut n = [0u8; 1];
            conn.read_exact(&mut n).await?;
            usize::from(n[0])
        }
        other => return Err(err(proxy, format!("unknown address type {other} in reply"))),
    };
    let mut bound = vec![0u8; len + 2];
    conn.read_exact(&mut bound).await?;
    Ok(())
}
