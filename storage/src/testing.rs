//! Test support (feature `testing`): a real etcd server on free loopback ports in a
//! temporary directory, killed when dropped. Needs the `etcd` binary on `PATH` (Debian's
//! `etcd-server` package) or in `$ETCD_BIN`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;

use crate::Error;
use crate::etcd::{EtcdOptions, EtcdStore, EtcdTls};

/// TLS for the test server's client port (PEM).
#[derive(Clone, Debug)]
pub struct EtcdServerTls {
    /// The server certificate (valid for 127.0.0.1).
    pub cert_pem: Vec<u8>,
    /// Its private key.
    pub key_pem: Vec<u8>,
    /// CA that client certificates must chain to (etcd's `--trusted-ca-file`).
    pub client_ca_pem: Vec<u8>,
    /// Require client certificates (etcd's `--client-cert-auth`).
    pub client_cert_auth: bool,
    /// What a client uses to connect: the CA of the server certificate, and a client
    /// certificate when `client_cert_auth` is on.
    pub client: EtcdTls,
}

/// How to start an etcd server for tests.
#[derive(Clone, Debug)]
pub struct EtcdProcessBuilder {
    /// etcd's `--max-request-bytes` (default 8 MiB, enough for the 4 MiB value limit).
    pub max_request_bytes: usize,
    /// etcd's `--experimental-watch-progress-notify-interval`; unset (the default) leaves
    /// etcd's own default (10 minutes), as users run it.
    pub progress_notify_interval: Option<Duration>,
    /// Extra command-line arguments.
    pub extra_args: Vec<String>,
    /// How long to wait for etcd to serve (default 20 s).
    pub start_timeout: Duration,
    /// Serve clients over TLS (`https://`).
    pub tls: Option<EtcdServerTls>,
}

impl Default for EtcdProcessBuilder {
    fn default() -> Self {
        EtcdProcessBuilder {
            max_request_bytes: 8 << 20,
            progress_notify_interval: None,
            extra_args: Vec::new(),
            start_timeout: Duration::from_secs(20),
            tls: None,
        }
    }
}

impl EtcdProcessBuilder {
    /// Sets the progress notification interval (etcd's
    /// `--experimental-watch-progress-notify-interval`).
    pub fn progress_notify_interval(mut self, d: Duration) -> Self {
        self.progress_notify_interval = Some(d);
        self
    }

    /// Serves clients over TLS.
    pub fn tls(mut self, tls: EtcdServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Adds a command-line argument.
    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.extra_args.push(a.into());
        self
    }

    /// Starts etcd on free ports in a new temporary directory.
    pub async fn start(self) -> Result<EtcdProcess, Error> {
        let mut last_err = None;
        // A port picked free may be taken by another test before etcd binds it: retry.
        for _ in 0..3 {
            let client_port = free_port()?;
            let peer_port = free_port()?;
            let mut p = EtcdProcess {
                builder: self.clone(),
                dir: tempfile::Builder::new().prefix("etcd-test-").tempdir()?,
                client_port,
                peer_port,
                name: "test".into(),
                initial_cluster: None,
                child: None,
            };
            match p.spawn_and_wait().await {
                Ok(()) => return Ok(p),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| Error::Unavailable("etcd did not start".into())))
    }
}

/// A running etcd server, killed (SIGKILL) and its data removed on drop.
pub struct EtcdProcess {
    builder: EtcdProcessBuilder,
    dir: TempDir,
    client_port: u16,
    peer_port: u16,
    /// The member name (`--name`).
    name: String,
    /// `--initial-cluster` of a member of a cluster; a single server lists itself.
    initial_cluster: Option<String>,
    child: Option<Child>,
}

impl std::fmt::Debug for EtcdProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdProcess")
            .field("endpoint", &self.endpoint())
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// A loopback port free at the time of the call (another process may take it before it is
/// bound: callers retry).
pub fn free_port() -> Result<u16, Error> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The etcd binary tests run: `$ETCD_BIN`, else `etcd` from `PATH`.
pub fn etcd_binary() -> PathBuf {
    std::env::var_os("ETCD_BIN").map_or_else(|| PathBuf::from("etcd"), PathBuf::from)
}

impl EtcdProcess {
    /// Starts etcd with default settings.
    pub async fn start() -> Result<EtcdProcess, Error> {
        EtcdProcessBuilder::default().start().await
    }

    /// A builder for non-default settings.
    pub fn builder() -> EtcdProcessBuilder {
        EtcdProcessBuilder::default()
    }

    /// The client URL, e.g. `http://127.0.0.1:41234` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.builder.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The client URLs (one).
    pub fn endpoints(&self) -> Vec<String> {
        vec![self.endpoint()]
    }

    /// Options to connect an [`EtcdStore`] to this server (with the client TLS settings).
    pub fn options(&self) -> EtcdOptions {
        EtcdOptions {
            tls: self.builder.tls.as_ref().map(|t| t.client.clone()),
            ..EtcdOptions::new(self.endpoints())
        }
    }

    /// Connects a store to this server.
    pub async fn store(&self) -> Result<Arc<EtcdStore>, Error> {
        EtcdStore::connect(self.options()).await
    }

    /// The temporary directory holding etcd's data and its log (`etcd.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the server is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server (SIGKILL, as a crash) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same ports with the same data.
    pub async fn restart(&mut self) -> Result<(), Error> {
        self.kill();
        self.spawn_and_wait().await
    }

    /// Starts the server again after [`EtcdProcess::kill`].
    pub async fn start_again(&mut self) -> Result<(), Error> {
        if self.child.is_some() {
            return Ok(());
        }
        self.spawn_and_wait().await
    }

    async fn spawn_and_wait(&mut self) -> Result<(), Error> {
        self.spawn()?;
        self.wait_serving().await
    }

    fn spawn(&mut self) -> Result<(), Error> {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("etcd.log"))?;
        let mut cmd = Command::new(etcd_binary());
        let initial_cluster = self
            .initial_cluster
            .clone()
            .unwrap_or_else(|| format!("{}={peer}", self.name));
        cmd.arg("--name")
            .arg(&self.name)
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .arg("--listen-client-urls")
            .arg(&client)
            .arg("--advertise-client-urls")
            .arg(&client)
            .arg("--listen-peer-urls")
            .arg(&peer)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer)
            .arg("--initial-cluster")
            .arg(initial_cluster)
            .arg("--max-request-bytes")
            .arg(self.builder.max_request_bytes.to_string())
            .args(self.builder.progress_notify_interval.iter().flat_map(|d| {
                [
                    "--experimental-watch-progress-notify-interval".to_string(),
                    format!("{}ms", d.as_millis()),
                ]
            }))
            .arg("--logger")
            .arg("zap")
            .arg("--log-level")
            .arg("warn")
            .args(self.tls_args()?)
            .args(&self.builder.extra_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd.spawn().map_err(|e| {
            Error::Unavailable(format!(
                "cannot run {} (install Debian's etcd-server): {e}",
                etcd_binary().display()
            ))
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the server answers clients (a cluster member: once the cluster has a
    /// quorum).
    async fn wait_serving(&mut self) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + self.builder.start_timeout;
        let addr = SocketAddr::from(([127, 0, 0, 1], self.client_port));
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                let log =
                    std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
                return Err(Error::Unavailable(format!(
                    "etcd exited with {status}: {}",
                    log.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
                )));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                let opts = EtcdOptions {
                    connect_timeout: Duration::from_secs(2),
                    ..self.options()
                };
                if Box::pin(EtcdStore::connect(opts)).await.is_ok() {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                self.kill();
                return Err(Error::Unavailable(format!(
                    "etcd did not serve on {addr} within {:?}",
                    self.builder.start_timeout
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl EtcdProcess {
    /// Writes the TLS files and returns the flags that use them.
    fn tls_args(&self) -> Result<Vec<String>, Error> {
        let Some(tls) = &self.builder.tls else {
            return Ok(Vec::new());
        };
        let file = |name: &str, pem: &[u8]| -> Result<String, Error> {
            let path = self.dir.path().join(name);
            std::fs::write(&path, pem)?;
            Ok(path.display().to_string())
        };
        let mut args = vec![
            "--cert-file".to_string(),
            file("server.crt", &tls.cert_pem)?,
            "--key-file".to_string(),
            file("server.key", &tls.key_pem)?,
            "--trusted-ca-file".to_string(),
            file("client-ca.crt", &tls.client_ca_pem)?,
        ];
        if tls.client_cert_auth {
            args.push("--client-cert-auth".to_string());
        }
        Ok(args)
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A cluster of etcd members on loopback (the production shape: three members, a quorum of
/// two), each killed and started again on its own to test the loss of members.
pub struct EtcdCluster {
    members: Vec<EtcdProcess>,
}

impl EtcdCluster {
    /// Starts `n` members on free ports and waits until every one serves.
    pub async fn start(n: usize) -> Result<EtcdCluster, Error> {
        let mut last_err = None;
        // Ports picked free may be taken before etcd binds them: retry with new ones.
        for _ in 0..3 {
            let mut members = Vec::with_capacity(n);
            for i in 0..n {
                members.push(EtcdProcess {
                    builder: EtcdProcessBuilder::default(),
                    dir: tempfile::Builder::new().prefix("etcd-member-").tempdir()?,
                    client_port: free_port()?,
                    peer_port: free_port()?,
                    name: format!("m{i}"),
                    initial_cluster: None,
                    child: None,
                });
            }
            let initial: Vec<String> = members
                .iter()
                .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
                .collect();
            let initial = initial.join(",");
            let mut c = EtcdCluster { members };
            let mut started = Ok(());
            // Every member must run before any can serve: spawn all, then wait.
            for m in &mut c.members {
                m.initial_cluster = Some(initial.clone());
                started = started.and_then(|()| m.spawn());
            }
            for m in &mut c.members {
                if started.is_ok() {
                    started = m.wait_serving().await;
                }
            }
            match started {
                Ok(()) => return Ok(c),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| Error::Unavailable("etcd cluster did not start".into())))
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(EtcdProcess::endpoint).collect()
    }

    /// Options to connect an [`EtcdStore`] to the whole cluster.
    pub fn options(&self) -> EtcdOptions {
        EtcdOptions::new(self.endpoints())
    }

    /// Member `i`, to kill and start again.
    pub fn member(&mut self, i: usize) -> &mut EtcdProcess {
        &mut self.members[i]
    }
}

/// `len` bytes without repetition (xorshift64 from `seed`): values that do not pack
/// ([`crate::packed`]), for tests that measure memory.
pub fn incompressible(len: usize, seed: u64) -> bytes::Bytes {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}
