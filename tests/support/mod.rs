//! End-to-end test support: starts the real `karmada-rs` binary (and, when asked, a real
//! etcd) on free loopback ports in temporary directories, and runs the real `kubectl`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for a condition before failing.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The value of one series (its name with its labels, as written) in a /metrics text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Polls `f` until it returns `Some`, failing the test after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    let mut delay = Duration::from_millis(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

/// Which storage backend a test server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store.
    Embedded,
    /// A real etcd started for the test.
    Etcd,
}

/// A running `karmada-rs serve` process.
pub struct Server {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub kubeconfig: PathBuf,
    cache_dir: PathBuf,
    child: Option<Child>,
    etcd: Option<storage::testing::EtcdProcess>,
    rt: tokio::runtime::Runtime,
    extra_args: Vec<String>,
    bind: String,
    /// When set, the server's stderr goes to this file at debug level (tests grep it).
    log_file: Option<PathBuf>,
}

impl Server {
    /// Starts a control plane on the embedded store.
    pub fn start() -> Server {
        Server::start_with(Backend::Embedded, &[])
    }

    /// Starts a control plane on the given backend with extra command-line arguments.
    pub fn start_with(backend: Backend, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let etcd = match backend {
            Backend::Embedded => None,
            Backend::Etcd => Some(
                rt.block_on(storage::testing::EtcdProcess::start())
                    .expect("start etcd"),
            ),
        };
        let mut s = Server {
            kubeconfig: dir.path().join("karmada.kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            dir,
            url: String::new(),
            child: None,
            etcd,
            rt,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            bind: "127.0.0.1:0".into(),
            log_file: None,
        };
        s.spawn();
        s
    }

    /// Starts a control plane over an etcd the test started (and may have filled), with a data
    /// directory of its own.
    pub fn start_on(etcd: storage::testing::EtcdProcess, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let mut s = Server {
            kubeconfig: dir.path().join("karmada.kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            dir,
            url: String::new(),
            child: None,
            etcd: Some(etcd),
            rt,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            bind: "127.0.0.1:0".into(),
            log_file: None,
        };
        s.spawn();
        s
    }

    /// Stops the server and hands its etcd over (to a server that takes it over).
    pub fn take_etcd(&mut self) -> Option<storage::testing::EtcdProcess> {
        self.stop();
        self.etcd.take()
    }

    /// Starts a control plane on the embedded store whose debug log is kept in
    /// [`Server::log_path`].
    pub fn start_logged(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let mut s = Server {
            kubeconfig: dir.path().join("karmada.kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            log_file: Some(dir.path().join("server.log")),
            dir,
            url: String::new(),
            child: None,
            etcd: None,
            rt,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            bind: "127.0.0.1:0".into(),
        };
        s.spawn();
        s
    }

    /// The server's log file (see [`Server::start_logged`]).
    pub fn log_path(&self) -> Option<&Path> {
        self.log_file.as_deref()
    }

    /// The backend this server runs on.
    pub fn backend(&self) -> Backend {
        if self.etcd.is_some() {
            Backend::Etcd
        } else {
            Backend::Embedded
        }
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(self.dir.path())
            .arg("--bind")
            .arg(&self.bind);
        if let Some(e) = &self.etcd {
            cmd.arg("--etcd-servers").arg(e.endpoints().join(","));
        }
        cmd.args(&self.extra_args);
        cmd.env(
            "KARMADA_RS_LOG",
            std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
        );
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(f) = &self.log_file {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(f)
                .expect("open server log");
            cmd.env("KARMADA_RS_LOG", "debug").stderr(file);
        }
        let (child, url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
        // Restarts reuse the port, so kubeconfigs and clients stay valid.
        self.bind = url.trim_start_matches("https://").to_string();
        self.url = url;
        self.child = Some(child);
        wait_for("the server to be ready", DEADLINE, || {
            let out = self.kubectl(&["get", "--raw", "/readyz"]);
            out.status.success().then_some(())
        });
    }

    /// Stops the process (SIGKILL) and starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Stops the process.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills and restarts this server's etcd (same data and ports).
    pub fn restart_etcd(&mut self) {
        if let Some(e) = self.etcd.as_mut() {
            self.rt.block_on(e.restart()).expect("restart etcd");
        }
    }

    /// The endpoints of this server's etcd, when it runs on one.
    pub fn etcd_endpoints(&self) -> Option<Vec<String>> {
        self.etcd.as_ref().map(|e| e.endpoints())
    }

    /// The process id of this server's etcd, when it runs on one (to pause it).
    pub fn etcd_pid(&self) -> Option<u32> {
        self.etcd.as_ref().and_then(|e| e.pid())
    }

    /// The process id of the running server (for memory measurements).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A kube-rs client with the admin kubeconfig that sees answers as sent (no retries of
    /// 5xx with Retry-After).
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        let mut cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        cfg.default_retry = false;
        kube::Client::try_from(cfg).expect("client")
    }

    /// Runs a future on the test's runtime (for kube-rs clients).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// A `kubectl` command using this server's admin kubeconfig and a private cache.
    pub fn kubectl_cmd(&self) -> Command {
        kubectl_cmd(&self.kubeconfig, &self.cache_dir)
    }

    /// Runs kubectl with arguments.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        run(self.kubectl_cmd().args(args))
    }

    /// Runs kubectl with stdin.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        run_stdin(self.kubectl_cmd().args(args), stdin)
    }

    /// Runs kubectl and returns stdout, failing the test on a non-zero exit.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        stdout_of_success(args, self.kubectl(args))
    }

    /// Runs kubectl with stdin and returns stdout, failing the test on a non-zero exit.
    pub fn kubectl_stdin_ok(&self, args: &[&str], stdin: &str) -> String {
        stdout_of_success(args, self.kubectl_stdin(args, stdin))
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {} unexpectedly succeeded: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `kubectl get ... -o json` parsed.
    pub fn get_json(&self, args: &[&str]) -> serde_json::Value {
        let mut a: Vec<&str> = vec!["get"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&a)).expect("kubectl -o json output")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The stdout of a kubectl run with `args`, failing the test on a non-zero exit.
pub fn stdout_of_success(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl {} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Spawns a `karmada-rs` command whose stdout is piped and waits for the line starting with
/// `prefix` (`karmada-rs control plane serving at `); returns the process and the rest of
/// the line (its URL).
pub fn spawn_serving(cmd: &mut Command, prefix: &'static str) -> (Child, String) {
    let mut child = cmd.spawn().expect("spawn karmada-rs");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix(prefix) {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("karmada-rs did not print {prefix:?}"));
    (child, url)
}

/// A kubectl command for a kubeconfig, with its own discovery/HTTP cache directory.
pub fn kubectl_cmd(kubeconfig: &Path, cache_dir: &Path) -> Command {
    let mut cmd = Command::new("kubectl");
    cmd.env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache_dir)
        .env("HOME", cache_dir.parent().unwrap_or(cache_dir))
        .arg("--cache-dir")
        .arg(cache_dir)
        .arg("--request-timeout=30s");
    cmd
}

/// How long one command a test runs may take. `kubectl delete` waits for finalizers with no
/// bound of its own (a week), so a stuck finalizer would otherwise hang the test binary
/// instead of failing it with the command that hung.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(120);

/// Runs a command to completion.
pub fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    finish(cmd, child)
}

/// Runs a command with stdin.
pub fn run_stdin(cmd: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    finish(cmd, child)
}

/// Collects a spawned command's output, killing it and failing the test when it runs past
/// [`COMMAND_DEADLINE`].
fn finish(cmd: &Command, mut child: Child) -> Output {
    use std::io::Read;
    fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    }
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > COMMAND_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
            panic!(
                "{} {} did not finish in {COMMAND_DEADLINE:?}; stdout: {}; stderr: {}",
                cmd.get_program().to_string_lossy(),
                args.join(" "),
                String::from_utf8_lossy(&stdout.join().unwrap_or_default()),
                String::from_utf8_lossy(&stderr.join().unwrap_or_default()),
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Per-user kubeconfigs (client certificates from the server's CA, bearer tokens, none) and
/// kubectl runs with them.
impl Server {
    /// The server's CA certificate (PEM).
    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pki/ca.crt")).expect("read ca.crt")
    }

    /// The server's CA, able to issue client certificates.
    pub fn ca(&self) -> certs::Ca {
        let key = std::fs::read_to_string(self.dir.path().join("pki/ca.key")).expect("ca.key");
        certs::Ca::from_pem(&self.ca_pem(), &key).expect("load CA")
    }

    fn write_user_kubeconfig(
        &self,
        file: &str,
        credentials: certs::KubeconfigCredentials,
    ) -> PathBuf {
        let path = self
            .dir
            .path()
            .join("users")
            .join(format!("{file}.kubeconfig"));
        let config = certs::Kubeconfig {
            name: "karmada".into(),
            server: self.url.clone(),
            ca_pem: self.ca_pem(),
            credentials,
            namespace: None,
        };
        certs::write_kubeconfig(&path, &config).expect("write kubeconfig");
        path
    }

    /// A kubeconfig authenticating with a client certificate for `user` in `group` (if any),
    /// issued by the server's CA.
    pub fn cert_kubeconfig(&self, user: &str, group: Option<&str>) -> PathBuf {
        let groups: Vec<&str> = group.into_iter().collect();
        let cert = self
            .ca()
            .issue_client(user, &groups)
            .expect("issue client cert");
        self.write_user_kubeconfig(
            &format!("cert-{}", sanitize(user)),
            certs::KubeconfigCredentials::ClientCert {
                cert_pem: cert.cert_pem,
                key_pem: cert.key_pem,
            },
        )
    }

    /// A kubeconfig authenticating with a client certificate issued by a CA the server does
    /// not trust.
    pub fn foreign_cert_kubeconfig(&self, user: &str, group: Option<&str>) -> PathBuf {
        let groups: Vec<&str> = group.into_iter().collect();
        let ca = certs::Ca::generate().expect("foreign CA");
        let cert = ca.issue_client(user, &groups).expect("issue client cert");
        self.write_user_kubeconfig(
            &format!("foreign-{}", sanitize(user)),
            certs::KubeconfigCredentials::ClientCert {
                cert_pem: cert.cert_pem,
                key_pem: cert.key_pem,
            },
        )
    }

    /// A kubeconfig authenticating with a bearer token (`name` names the file).
    pub fn token_kubeconfig(&self, name: &str, token: &str) -> PathBuf {
        self.write_user_kubeconfig(
            &format!("token-{}", sanitize(name)),
            certs::KubeconfigCredentials::Token(token.to_string()),
        )
    }

    /// A kubeconfig for anonymous requests: a basic-auth user name without password, which
    /// keeps kubectl from prompting and which the server (like kube-apiserver) ignores.
    pub fn anonymous_kubeconfig(&self) -> PathBuf {
        use base64::Engine;
        let path = self.dir.path().join("users").join("anonymous.kubeconfig");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("users dir");
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem());
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: karmada\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: anonymous\n  user:\n    username: anonymous\ncontexts:\n- name: karmada\n  context:\n    cluster: karmada\n    user: anonymous\ncurrent-context: karmada\n",
            self.url
        );
        std::fs::write(&path, yaml).expect("write kubeconfig");
        path
    }

    /// A kubectl command for another kubeconfig, with its own cache directory.
    pub fn kubectl_as_cmd(&self, kubeconfig: &Path) -> Command {
        let stem = kubeconfig
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let cache = self.dir.path().join("caches").join(stem).join("cache");
        kubectl_cmd(kubeconfig, &cache)
    }

    /// Runs kubectl with another kubeconfig.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        run(self.kubectl_as_cmd(kubeconfig).args(args))
    }

    /// Runs kubectl with another kubeconfig, failing the test on a non-zero exit.
    pub fn kubectl_as_ok(&self, kubeconfig: &Path, args: &[&str]) -> String {
        let out = self.kubectl_as(kubeconfig, args);
        assert!(
            out.status.success(),
            "kubectl {} ({}) failed: {}{}",
            args.join(" "),
            kubeconfig.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The path of a file in the server's data directory.
    pub fn data_path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Server {
    /// Sends one request with no credentials at all (as an anonymous client would) through
    /// kube-rs; returns the HTTP status and the body or error message.
    pub fn anonymous_request(&self, method: &str, path: &str) -> (u16, String) {
        let url: http::Uri = self.url.parse().expect("server URL");
        let ca = pem_to_der(&self.ca_pem());
        self.rt.block_on(async move {
            let mut config = kube::Config::new(url);
            config.root_cert = Some(vec![ca]);
            let client = kube::Client::try_from(config).expect("client");
            let req = http::Request::builder()
                .method(method)
                .uri(path)
                .body(Vec::new())
                .expect("request");
            match client.request_text(req).await {
                Ok(text) => (200, text),
                Err(kube::Error::Api(s)) => (s.code, s.message),
                Err(e) => panic!("anonymous {method} {path}: {e}"),
            }
        })
    }
}

/// A kube-rs client for a kubeconfig (the admin's is [`Server::kubeconfig`]).
pub async fn kube_client(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(cfg).expect("client")
}

/// A kube-rs client that answers as sent: no client-side retries of 429 (priority and
/// fairness tests count them).
pub async fn kube_client_without_retries(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let mut cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    cfg.default_retry = false;
    kube::Client::try_from(cfg).expect("client")
}

/// POSTs a ConfigMap `name` to `default`: the status code and whether `Retry-After` came.
pub async fn post_configmap(c: kube::Client, name: String) -> (u16, bool) {
    let body =
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).expect("json"))
        .expect("request");
    let resp = c.send(req.map(Into::into)).await.expect("an answer");
    (
        resp.status().as_u16(),
        resp.headers().contains_key("retry-after"),
    )
}

/// The DER bytes of the first certificate of a PEM bundle.
pub fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let b64: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("PEM base64")
}

/// An answer as the server sent it.
#[derive(Debug)]
pub struct RawAnswer {
    /// HTTP status.
    pub status: u16,
    /// The `Retry-After` header.
    pub retry_after: Option<String>,
    /// The body read within two seconds (all of it unless the body is a stream).
    pub body: String,
    /// Whether the body ended within those two seconds (a watch stays open).
    pub ended: bool,
}

impl Server {
    /// Sends one request with the admin's certificate (`admin`) or no credentials at all, as
    /// curl would; `Err` when no answer came (a dropped connection, a timeout).
    pub fn raw(
        &self,
        admin: bool,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<RawAnswer, String> {
        let kubeconfig = admin.then_some(self.kubeconfig.as_path());
        self.raw_as(kubeconfig, method, path, content_type, body)
    }

    /// [`Server::raw`] with the credentials of `kubeconfig` (none at all without one).
    pub fn raw_as(
        &self,
        kubeconfig: Option<&Path>,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<RawAnswer, String> {
        self.rt.block_on(raw_request(
            &self.url,
            &self.ca_pem(),
            kubeconfig,
            (method, path, content_type, body),
        ))
    }
}

/// One request to the server at `url` (trusting `ca_pem`) with the credentials of
/// `kubeconfig`, or none at all without one, as curl would; `Err` when no answer came (a
/// dropped connection, a timeout).
pub async fn raw_request(
    url: &str,
    ca_pem: &str,
    kubeconfig: Option<&Path>,
    (method, path, content_type, body): (&str, &str, Option<&str>, &[u8]),
) -> Result<RawAnswer, String> {
    let url: http::Uri = url.parse().expect("server URL");
    let mut config = if let Some(kubeconfig) = kubeconfig {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
        kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .map_err(|e| e.to_string())?
    } else {
        let mut c = kube::Config::new(url);
        c.root_cert = Some(vec![pem_to_der(ca_pem)]);
        c
    };
    // Answers as sent: no client-side retries.
    config.default_retry = false;
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let req = req.body(body.to_vec().into()).map_err(|e| e.to_string())?;
    let resp = tokio::time::timeout(Duration::from_secs(20), client.send(req))
        .await
        .map_err(|_| format!("{method} {path}: no answer within 20 s"))?
        .map_err(|e| format!("{method} {path}: no answer: {e}"))?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let mut stream = resp.into_body();
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    let ended = loop {
        match tokio::time::timeout_at(deadline, http_body_util::BodyExt::frame(&mut stream)).await {
            Err(_) => break false,
            Ok(None) => break true,
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            Ok(Some(Err(e))) => return Err(format!("{method} {path}: body: {e}")),
        }
    };
    Ok(RawAnswer {
        status,
        retry_after,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        ended,
    })
}

/// A running `karmada-rs member serve` (a simulated member cluster's API server).
pub struct MemberServer {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub kubeconfig: PathBuf,
    cache_dir: PathBuf,
    child: Option<Child>,
}

impl MemberServer {
    /// Starts a member named `name` and waits until it is ready.
    pub fn start(name: &str) -> MemberServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.args(["member", "serve", "--name", name, "--data-dir"])
            .arg(dir.path())
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let (child, url) = spawn_serving(&mut cmd, "karmada-rs member serving at ");
        let m = MemberServer {
            kubeconfig: dir.path().join("kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            dir,
            url,
            child: Some(child),
        };
        wait_for("the member to be ready", DEADLINE, || {
            m.kubectl(&["get", "--raw", "/readyz"])
                .status
                .success()
                .then_some(())
        });
        m
    }

    /// A `kubectl` command using the member's kubeconfig and a private cache.
    pub fn kubectl_cmd(&self) -> Command {
        kubectl_cmd(&self.kubeconfig, &self.cache_dir)
    }

    /// Runs kubectl with arguments.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        run(self.kubectl_cmd().args(args))
    }
}

impl MemberServer {
    /// `karmada-rs join NAME` of this member to the control plane of `kubeconfig` (Push mode).
    pub fn join(&self, name: &str, kubeconfig: &Path) {
        let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["join", name, "--cluster-kubeconfig"])
            .arg(&self.kubeconfig)
            .arg("--kubeconfig")
            .arg(kubeconfig));
        assert!(
            out.status.success(),
            "join {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for MemberServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A TLS acceptor serving `cert` over HTTP/1.1, for servers a test runs in place of a webhook
/// or a member.
pub fn https_acceptor(cert: &certs::IssuedCert) -> tokio_rustls::TlsAcceptor {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("cert");
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("server config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config))
}

/// An etcd that serves TLS and requires client certificates (kubeadm's flags), with the
/// client's CA, certificate and key written to files as `serve` and `migrate check` take them.
pub struct TlsEtcd {
    pub etcd: storage::testing::EtcdProcess,
    /// `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`.
    pub ca_file: String,
    pub cert_file: String,
    pub key_file: String,
    /// Where the files are (a directory for more of the test's files).
    pub files: tempfile::TempDir,
}

impl TlsEtcd {
    pub fn start(rt: &tokio::runtime::Runtime) -> TlsEtcd {
        use storage::etcd::EtcdTls;
        use storage::testing::{EtcdProcess, EtcdServerTls};
        let ca = certs::Ca::generate().expect("CA");
        let serving = ca
            .issue_serving("etcd", &["127.0.0.1".into(), "localhost".into()])
            .expect("serving cert");
        let client = ca.issue_client("karmada-rs", &[]).expect("client cert");
        let etcd = rt
            .block_on(
                EtcdProcess::builder()
                    .tls(EtcdServerTls {
                        cert_pem: serving.cert_pem.clone().into_bytes(),
                        key_pem: serving.key_pem.clone().into_bytes(),
                        client_ca_pem: ca.cert_pem().as_bytes().to_vec(),
                        client_cert_auth: true,
                        client: EtcdTls {
                            ca_pem: Some(ca.cert_pem().as_bytes().to_vec()),
                            cert_pem: Some(client.cert_pem.clone().into_bytes()),
                            key_pem: Some(client.key_pem.clone().into_bytes()),
                            server_name: None,
                        },
                    })
                    .start(),
            )
            .expect("start etcd with TLS");
        let files = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, pem: &str| {
            let p = files.path().join(name);
            std::fs::write(&p, pem).expect("write PEM");
            p.display().to_string()
        };
        TlsEtcd {
            ca_file: write("ca.crt", ca.cert_pem()),
            cert_file: write("client.crt", &client.cert_pem),
            key_file: write("client.key", &client.key_pem),
            etcd,
            files,
        }
    }

    pub fn endpoint(&self) -> String {
        self.etcd.endpoint()
    }
}
