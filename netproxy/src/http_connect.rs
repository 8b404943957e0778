//! HTTP `CONNECT` tunnels (RFC 9110 §9.3.6), as Go's transport opens them through a proxy.

use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest `CONNECT` response head accepted from a proxy.
const MAX_RESPONSE_HEAD: usize = 16 * 1024;

/// Asks the proxy at the other end of `conn` for a tunnel to `host:port`, sending `headers`;
/// on success `conn` carries the tunnel.
pub(crate) async fn tunnel<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut S,
    headers: &HeaderMap,
    host: &str,
    port: u16,
) -> std::io::Result<()> {
    let target = super::authority(host, port);
    let mut req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    for (k, v) in headers {
        // Header values were validated when the proxy was parsed; they are visible ASCII.
        if let Ok(v) = v.to_str() {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    req.push_str("\r\n");
    conn.write_all(req.as_bytes()).await?;
    conn.flush().await?;
    // Read byte by byte up to the end of the head: nothing after it may be consumed, it
    // belongs to the tunnelled stream.
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_RESPONSE_HEAD {
            return Err(std::io::Error::other(format!(
                "proxy CONNECT to {target}: response head larger than {MAX_RESPONSE_HEAD} bytes"
            )));
        }
        let n = conn.read(&mut byte).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("proxy closed the connection during CONNECT to {target}"),
            ));
        }
        head.push(byte[0]);
    }
    let status_line = head
        .split(|b| *b == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).trim().to_string())
        .unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or("");
    if !(status_line.starts_with("HTTP/") && code.len() == 3 && code.starts_with('2')) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("proxy refused CONNECT to {target}: {status_line}"),
        ));
    }
    Ok(())
}
