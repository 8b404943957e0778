//! Lingering close of a served connection, as Go's net/http (kube-apiserver's HTTP server)
//! ends one whose request body it did not read (server.go's `closeWriteAndWait`).
//!
//! An answer sent before the request body was read (413 past the body limit, 401, 429) ends
//! an HTTP/1.1 connection: hyper stops reading, writes the answer and shuts the stream down.
//! Closing the socket right then, with bytes of the body still unread in its receive buffer,
//! makes the kernel send RST, and a client still writing its request — one that reads only
//! after it wrote everything, as Python's http.client — loses the answer it had not read yet.
//! RFC 9112 §9.6 asks the server to go on reading until the client closes. So once hyper shut
//! the stream down (TLS close_notify, then the TCP write half: a FIN), the socket is kept open
//! and what the client still sends is read and discarded until it closes, up to a byte and a
//! time limit, and only then closed.
//!
//! Go sleeps `rstAvoidanceDelay` (500 ms) without reading, so the kernel's buffers have to
//! hold the rest of the body; reading it instead lets a client finish a body of any size up to
//! [`LINGER_BYTES`], and the 500 ms become the silence after which a client that neither sends
//! nor closes is given up on. A connection whose client closed first (the usual end), or that
//! ended without a clean shutdown, closes at once as before: nothing here runs per request.
//!
//! HTTP/2 needs none of this: an answer before the body ends only its stream, which h2 resets
//! with NO_ERROR after the answer (RFC 9113 §8.1), as Go does.

use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;

/// How long a client that neither sends nor closes is waited for (Go's `rstAvoidanceDelay`).
pub const LINGER_SILENCE: Duration = Duration::from_millis(500);

/// The longest a lingering close lasts, however the client trickles its bytes.
pub const LINGER_MAX: Duration = Duration::from_secs(5);

/// How much a client may still send before the socket is closed under it: more than a whole
/// body at the 3 MiB request limit, so a client refused before any of it was read (401, 429)
/// finishes writing and reads the answer; a 413 has already read 3 MiB of its body. Past this
/// the client sends far more than any request this server takes, and the socket closes under
/// it.
pub const LINGER_BYTES: usize = 4 << 20;

/// A served TLS connection that lingers when hyper shuts it down before the client's end.
pub struct LingeringClose {
    tls: TlsStream<TcpStream>,
    /// hyper shut the stream down: close_notify and the TCP FIN were sent.
    shut_down: bool,
    /// The client's end of the stream was read (close_notify or FIN).
    client_done: bool,
}

impl LingeringClose {
    /// Wraps an accepted TLS connection.
    pub fn new(tls: TlsStream<TcpStream>) -> LingeringClose {
        LingeringClose {
            tls,
            shut_down: false,
            client_done: false,
        }
    }
}

impl AsyncRead for LingeringClose {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.tls).poll_read(cx, buf);
        if room > 0 && matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() == before {
            self.client_done = true;
        }
        polled
    }
}

impl AsyncWrite for LingeringClose {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tls).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tls).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tls.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tls).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.tls).poll_shutdown(cx);
        if matches!(polled, Poll::Ready(Ok(()))) {
            self.shut_down = true;
        }
        polled
    }
}

impl Drop for LingeringClose {
    /// Hands the socket to a task that drains it, when the client may still be sending. The
    /// drain holds a duplicate of the socket's descriptor, so closing this one sends nothing;
    /// it only starts once hyper (or whoever held an upgraded connection) has let go, so no
    /// byte meant for a reader is discarded.
    fn drop(&mut self) {
        if !self.shut_down || self.client_done {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let socket = match self.tls.get_ref().0.as_fd().try_clone_to_owned() {
            Ok(fd) => std::net::TcpStream::from(fd),
            Err(e) => {
                tracing::debug!(error = %e, "cannot keep the socket for a lingering close");
                return;
            }
        };
        runtime.spawn(async move {
            match socket
                .set_nonblocking(true)
                .and_then(|()| TcpStream::from_std(socket))
            {
                Ok(mut socket) => {
                    let ended = drain(&mut socket).await;
                    tracing::debug!(?ended, "lingering close ended");
                }
                Err(e) => tracing::debug!(error = %e, "cannot drain the socket"),
            }
        });
    }
}

/// Why a lingering close ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// The client closed its end: every byte it sent was read.
    ClientClosed,
    /// The client sent [`LINGER_BYTES`] and more.
    ByteLimit,
    /// The client sent nothing for [`LINGER_SILENCE`].
    Silence,
    /// [`LINGER_MAX`] passed.
    MaxTime,
    /// Reading failed (the client reset the connection).
    ReadFailed,
}

/// Reads and discards what the client still sends until it closes, it sent
/// [`LINGER_BYTES`], it was silent for [`LINGER_SILENCE`], or [`LINGER_MAX`] passed; the
/// caller then closes the socket (an RST only if bytes are still arriving).
async fn drain(socket: &mut TcpStream) -> Ended {
    let end = Instant::now() + LINGER_MAX;
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = LINGER_BYTES;
    loop {
        let silence_ends = Instant::now() + LINGER_SILENCE;
        match tokio::time::timeout_at(end.min(silence_ends), socket.read(&mut buf)).await {
            Ok(Ok(0)) => return Ended::ClientClosed,
            Ok(Ok(n)) if n < left => left -= n,
            Ok(Ok(_)) => return Ended::ByteLimit,
            Ok(Err(_)) => return Ended::ReadFailed,
            Err(_) if silence_ends < end => return Ended::Silence,
            Err(_) => return Ended::MaxTime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// A connected pair: the served end and the client's.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (client, served) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (served.expect("accept").0, client.expect("connect"))
    }

    #[tokio::test]
    async fn a_client_that_finishes_its_body_and_closes_is_read_to_the_end() {
        let (mut served, mut client) = pair().await;
        let sending = tokio::spawn(async move {
            client.write_all(&vec![7u8; 3 << 20]).await?;
            client.shutdown().await
        });
        assert_eq!(drain(&mut served).await, Ended::ClientClosed);
        sending
            .await
            .expect("client task")
            .expect("every byte sent");
    }

    #[tokio::test]
    async fn a_silent_client_is_given_up_on() {
        let (mut served, _client) = pair().await;
        let started = Instant::now();
        assert_eq!(drain(&mut served).await, Ended::Silence);
        let waited = started.elapsed();
        assert!(
            waited >= LINGER_SILENCE && waited < LINGER_MAX,
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_client_that_keeps_sending_is_cut_off() {
        let (mut served, mut client) = pair().await;
        const CHUNK: usize = 64 * 1024;
        let sending = tokio::spawn(async move {
            let chunk = vec![7u8; CHUNK];
            let mut sent = 0usize;
            loop {
                if client.write_all(&chunk).await.is_err() {
                    return sent;
                }
                sent += chunk.len();
            }
        });
        assert_eq!(drain(&mut served).await, Ended::ByteLimit);
        drop(served);
        let sent = tokio::time::timeout(Duration::from_secs(30), sending)
            .await
            .expect("the client's writes fail once the socket is closed")
            .expect("client task");
        // The drain read the limit, so the client wrote it (bar the chunk then in flight).
        assert!(sent + CHUNK >= LINGER_BYTES, "{sent}");
    }
}
