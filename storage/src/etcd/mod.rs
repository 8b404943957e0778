//! The etcd backend: the storage contract over an etcd v3 cluster, through etcd's gRPC API
//! (`rpc.rs`).
//!
//! Compare-and-swap writes are transactions comparing the key's mod_revision, with a Get
//! in the else branch so a lost race reports the current value, as kube-apiserver's
//! etcd3 store (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`) does.

pub mod rpc;
mod watch;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tonic::Status;

use rpc::request_op::Request as Op;
use rpc::response_op::Response as OpResponse;
use rpc::{Client, Compare, ConnectSettings, RangeRequest as EtcdRange, TxnRequest, TxnResponse};

use crate::Error;
use crate::store::{
    KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision, Store, WatchStream,
};

/// Largest response the client decodes: lists of many large objects must fit.
const MAX_DECODING_MESSAGE: usize = i32::MAX as usize;

/// TLS material for talking to etcd (PEM).
#[derive(Clone, Debug, Default)]
pub struct EtcdTls {
    /// CA bundle that signed the etcd server certificates (None: the system roots).
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate, for etcd's `--client-cert-auth`.
    pub cert_pem: Option<Vec<u8>>,
    /// The client certificate's private key.
    pub key_pem: Option<Vec<u8>>,
    /// The name to verify in the server certificate, when it differs from the endpoint host.
    pub server_name: Option<String>,
}

impl EtcdTls {
    /// Reads the CA, client certificate and key from files (as kube-apiserver's
    /// `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`).
    pub fn from_files(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<EtcdTls, Error> {
        let read = |p: Option<&Path>| -> Result<Option<Vec<u8>>, Error> {
            p.map(|p| {
                std::fs::read(p).map_err(|e| {
                    Error::InvalidArgument(format!("cannot read {}: {e}", p.display()))
                })
            })
            .transpose()
        };
        Ok(EtcdTls {
            ca_pem: read(ca)?,
            cert_pem: read(cert)?,
            key_pem: read(key)?,
            server_name: None,
        })
    }
}

/// How to reach etcd.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs, e.g. `http://127.0.0.1:2379` or `https://etcd-0:2379` (with `tls`).
    pub endpoints: Vec<String>,
    /// TLS settings; required for `https://` endpoints with a private CA or client certs.
    pub tls: Option<EtcdTls>,
    /// User name and password, when etcd's authentication is enabled.
    pub user: Option<(String, String)>,
    /// How long `connect` waits for etcd to answer (default 10 s).
    pub connect_timeout: Duration,
    /// Deadline of each request (default 30 s).
    pub request_timeout: Duration,
    /// Largest value accepted; bigger ones fail with [`Error::TooLarge`] before reaching
    /// etcd (default 4 MiB). etcd's own `--max-request-bytes` must be at least this plus
    /// the key and some overhead.
    pub max_value_bytes: usize,
    /// How long a broken watch keeps trying to reconnect before its stream ends with
    /// [`Error::Unavailable`] (default 60 s).
    pub watch_retry_timeout: Duration,
}

impl EtcdOptions {
    /// Options for these endpoints with default settings.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> EtcdOptions {
        EtcdOptions {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..EtcdOptions::default()
        }
    }
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            tls: None,
            user: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_value_bytes: 4 << 20,
            watch_retry_timeout: Duration::from_secs(60),
        }
    }
}

/// The etcd-backed store. Connect with [`EtcdStore::connect`].
#[derive(Clone)]
pub struct EtcdStore {
    client: Client,
    opts: Arc<EtcdOptions>,
    /// Every endpoint runs an etcd that answers progress requests in order with events
    /// ([`answers_progress_requests`]); found out at connect.
    progress_requests: bool,
}

/// Whether an etcd of this version (as its Status reports it, e.g. `3.5.16`) answers a watch
/// stream's progress request only once every event up to the revision it reports was sent.
/// Earlier versions answer at once with the current revision, ahead of events still pending
/// (etcd-io/etcd#15220); kube-apiserver's storage feature checker draws the same line for
/// `RequestWatchProgress`: 3.4.31, 3.5.13, and every 3.6 or later.
pub fn answers_progress_requests(version: &str) -> bool {
    let mut parts = version
        .trim()
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("endpoints", &self.opts.endpoints)
            .finish_non_exhaustive()
    }
}

/// How an etcd failure maps onto the contract, before revision numbers are filled in.
enum Failure {
    Compacted,
    Future,
    Other(Error),
}

fn classify(status: Status) -> Failure {
    let msg = status.message();
    if msg.contains("required revision has been compacted") {
        return Failure::Compacted;
    }
    if msg.contains("required revision is a future revision") {
        return Failure::Future;
    }
    if msg.contains("request is too large") {
        return Failure::Other(Error::Backend(format!(
            "etcd refused the request as too large (raise its --max-request-bytes): {msg}"
        )));
    }
    // tonic reports a broken connection as code 2 (unknown) with a transport source, whose
    // causes say what broke.
    let transport = status.code() == tonic::Code::Unknown
        && (std::error::Error::source(&status).is_some()
            || msg.contains("transport error")
            || msg.contains("h2 protocol error"));
    if transport {
        let why = match std::error::Error::source(&status) {
            Some(source) => rpc::error_chain(source),
            None => msg.to_string(),
        };
        if rpc::is_tls_refusal(&why) {
            return Failure::Other(Error::Backend(format!("etcd TLS handshake failed: {why}")));
        }
        return Failure::Other(Error::Unavailable(format!("etcd connection: {why}")));
    }
    Failure::Other(match status.code() {
        tonic::Code::Cancelled
        | tonic::Code::DeadlineExceeded
        | tonic::Code::Aborted
        | tonic::Code::Unavailable => Error::Unavailable(format!("etcd: {msg}")),
        tonic::Code::InvalidArgument => Error::InvalidArgument(format!("etcd: {msg}")),
        // A TLS handshake refused either way (see rpc's `connection_failed`).
        tonic::Code::PermissionDenied if msg.starts_with("etcd TLS") => Error::Backend(msg.into()),
        _ => Error::Backend(format!("etcd: {status}")),
    })
}

/// Converts an etcd key-value into ours.
fn convert(kv: rpc::KeyValue) -> Result<KeyValue, Error> {
    let key = String::from_utf8(kv.key)
        .map_err(|e| Error::Backend(format!("etcd holds a key that is not UTF-8: {e}")))?;
    Ok(KeyValue {
        key,
        value: kv.value,
        packed: None,
        stale: false,
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
        version: kv.version,
    })
}

/// The end of the key range holding every key that starts with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // No upper bound: etcd reads "\0" as "to the end of the key space".
    vec![0]
}

fn header_rev(h: Option<&rpc::ResponseHeader>) -> Result<Revision, Error> {
    h.map(|h| h.revision)
        .ok_or_else(|| Error::Backend("etcd response without a header".into()))
}

/// The current value from the else branch of a failed compare-and-swap transaction.
fn else_kv(resp: TxnResponse) -> Result<Option<KeyValue>, Error> {
    match resp.responses.into_iter().next().and_then(|r| r.response) {
        Some(OpResponse::ResponseRange(get)) => get.kvs.into_iter().next().map(convert).transpose(),
        _ => Err(Error::Backend(
            "etcd transaction else branch did not return the key".into(),
        )),
    }
}

/// A read of one key (the else branch of compare-and-swap transactions).
fn get_op(key: &str) -> rpc::RequestOp {
    rpc::RequestOp {
        request: Some(Op::RequestRange(EtcdRange {
            key: key.as_bytes().to_vec(),
            ..Default::default()
        })),
    }
}

/// A read that only tells the revision (and fails when `at` is compacted or in the future):
/// a count of one key, cheap whatever the data.
fn revision_probe(at: Revision) -> EtcdRange {
    EtcdRange {
        key: b"compact_rev_key".to_vec(),
        revision: at,
        count_only: true,
        ..Default::default()
    }
}

impl EtcdStore {
    /// Connects to etcd and waits (up to `connect_timeout`) until it answers.
    pub async fn connect(opts: EtcdOptions) -> Result<Arc<EtcdStore>, Error> {
        if opts.endpoints.is_empty() {
            return Err(Error::InvalidArgument("no etcd endpoints".into()));
        }
        let mut settings = ConnectSettings {
            endpoints: opts.endpoints.clone(),
            connect_timeout: opts.connect_timeout,
            user: opts.user.clone(),
            max_decoding_message_size: MAX_DECODING_MESSAGE,
            ..ConnectSettings::default()
        };
        if let Some(tls) = &opts.tls {
            settings.ca_pem = tls.ca_pem.clone();
            settings.server_name = tls.server_name.clone();
            settings.identity = match (&tls.cert_pem, &tls.key_pem) {
                (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
                (None, None) => None,
                _ => {
                    return Err(Error::InvalidArgument(
                        "etcd client certificate and key must be given together".into(),
                    ));
                }
            };
        }
        let client = Client::new(&settings).map_err(Error::InvalidArgument)?;
        let mut store = EtcdStore {
            client,
            opts: Arc::new(opts),
            progress_requests: false,
        };
        // The channel connects lazily: authenticate (when a user is set) and make sure etcd
        // really answers before returning, retrying while it is unreachable.
        let deadline = tokio::time::Instant::now() + store.opts.connect_timeout;
        loop {
            let attempt = match store.call(store.client.authenticate()).await {
                Ok(()) => store.health().await,
                Err(f) => Err(Self::plain(f)),
            };
            match attempt {
                Ok(()) => break,
                Err(Error::Unavailable(e)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(Error::Unavailable(format!(
                            "etcd at {:?} did not answer within {:?}: {e}",
                            store.opts.endpoints, store.opts.connect_timeout
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
        store.progress_requests = store.check_progress_requests().await;
        Ok(Arc::new(store))
    }

    /// Asks every endpoint for its version and decides whether consistent reads can be served
    /// from watch caches kept fresh by progress requests (all endpoints answer them in order)
    /// or must be read from etcd; logs which.
    async fn check_progress_requests(&self) -> bool {
        let mut versions = Vec::with_capacity(self.client.endpoints());
        for (at, endpoint) in self.opts.endpoints.iter().enumerate() {
            let status =
                tokio::time::timeout(self.opts.connect_timeout, self.client.status_of(at)).await;
            let version = match status {
                Ok(Ok(s)) => s.version,
                Ok(Err(e)) => format!("unknown ({})", e.message()),
                Err(_) => "unknown (no answer)".to_string(),
            };
            versions.push((endpoint.as_str(), version));
        }
        let all = versions.iter().all(|(_, v)| answers_progress_requests(v));
        let listed = versions
            .iter()
            .map(|(e, v)| format!("{e} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        if all {
            tracing::info!(etcd = %listed, "consistent reads are served from the watch cache, brought up to date by progress requests on its etcd watch");
        } else {
            tracing::info!(etcd = %listed, "consistent reads are read from etcd (quorum reads): progress requests need etcd 3.4.31, 3.5.13 or 3.6 and later on every endpoint");
        }
        all
    }

    /// Whether this store's watches answer progress requests (see
    /// [`answers_progress_requests`]).
    pub fn answers_progress_requests(&self) -> bool {
        self.progress_requests
    }

    /// The options this store was connected with.
    pub fn options(&self) -> &EtcdOptions {
        &self.opts
    }

    /// Runs one etcd request under the request deadline.
    async fn call<T>(&self, fut: impl Future<Output = Result<T, Status>>) -> Result<T, Failure> {
        let at = self.client.current();
        match tokio::time::timeout(self.opts.request_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(e)),
            // A member that holds calls without answering (cut off from the quorum, frozen)
            // gets no more of them.
            Err(_) => {
                self.client.fail_over(at);
                Err(Failure::Other(Error::Unavailable(format!(
                    "etcd request timed out after {:?}",
                    self.opts.request_timeout
                ))))
            }
        }
    }

    /// Turns a failure into the contract's error for a read or watch at `requested`.
    async fn fail_at(&self, f: Failure, requested: Revision) -> Error {
        match f {
            Failure::Compacted => Error::Compacted {
                requested,
                compacted: self.compacted_revision().await.unwrap_or(requested + 1),
            },
            Failure::Future => Error::FutureRevision {
                requested,
                current: self.current_revision().await.unwrap_or(requested - 1),
            },
            Failure::Other(e) => e,
        }
    }

    fn plain(f: Failure) -> Error {
        match f {
            Failure::Compacted => Error::Backend("etcd: unexpected compaction error".into()),
            Failure::Future => Error::Backend("etcd: unexpected future revision error".into()),
            Failure::Other(e) => e,
        }
    }

    fn check_write(&self, key: &str, value: Option<&Bytes>) -> Result<(), Error> {
        if key.is_empty() {
            return Err(Error::InvalidArgument("empty key".into()));
        }
        if let Some(v) = value
            && v.len() > self.opts.max_value_bytes
        {
            return Err(Error::TooLarge {
                size: v.len(),
                limit: self.opts.max_value_bytes,
            });
        }
        Ok(())
    }

    /// Whether a read at `rev` is still possible (false once compacted away).
    async fn readable_at(&self, rev: Revision) -> Result<bool, Error> {
        match self.call(self.client.range(revision_probe(rev))).await {
            Ok(_) => Ok(true),
            Err(Failure::Compacted) => Ok(false),
            Err(f) => Err(Self::plain(f)),
        }
    }
}

#[async_trait]
impl Store for EtcdStore {
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error> {
        let req = EtcdRange {
            key: key.as_bytes().to_vec(),
            ..Default::default()
        };
        let resp = self
            .call(self.client.range(req))
            .await
            .map_err(Self::plain)?;
        let rev = header_rev(resp.header.as_ref())?;
        let kv = resp.kvs.into_iter().next().map(convert).transpose()?;
        Ok((kv, rev))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error> {
        if req.revision < 0 {
            return Err(Error::InvalidArgument(format!(
                "negative revision {}",
                req.revision
            )));
        }
        let start = match &req.start_after {
            Some(after) => {
                if !after.starts_with(&req.prefix) {
                    return Err(Error::InvalidArgument(format!(
                        "start_after {after:?} is not under prefix {:?}",
                        req.prefix
                    )));
                }
                let mut k = after.as_bytes().to_vec();
                k.push(0);
                k
            }
            None => req.prefix.as_bytes().to_vec(),
        };
        let etcd_req = EtcdRange {
            key: start,
            range_end: prefix_end(req.prefix.as_bytes()),
            revision: req.revision,
            limit: if req.limit > 0 {
                i64::try_from(req.limit).unwrap_or(i64::MAX)
            } else {
                0
            },
            ..Default::default()
        };
        let resp = match self.call(self.client.range(etcd_req)).await {
            Ok(r) => r,
            Err(f) => return Err(self.fail_at(f, req.revision).await),
        };
        let revision = header_rev(resp.header.as_ref())?;
        let count = usize::try_from(resp.count).unwrap_or(0);
        let more = resp.more;
        let kvs = resp
            .kvs
            .into_iter()
            .map(convert)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RangeResponse {
            kvs,
            more,
            count,
            revision,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, Error> {
        self.check_write(key, Some(&value))?;
        let txn = TxnRequest {
            compare: vec![Compare::mod_revision_equals(key.as_bytes(), 0)],
            success: vec![rpc::RequestOp {
                request: Some(Op::RequestPut(rpc::PutRequest {
                    key: key.as_bytes().to_vec(),
                    value: value.clone(),
                    ..Default::default()
                })),
            }],
            failure: vec![get_op(key)],
        };
        let resp = self.call(self.client.txn(txn)).await.map_err(Self::plain)?;
        if resp.succeeded {
            let rev = header_rev(resp.header.as_ref())?;
            return Ok(KeyValue {
                key: key.to_owned(),
                value,
                stale: false,
                packed: None,
                create_revision: rev,
                mod_revision: rev,
                version: 1,
            });
        }
        match else_kv(resp)? {
            Some(current) => Err(Error::AlreadyExists {
                key: key.to_owned(),
                current: Box::new(current),
            }),
            None => Err(Error::Backend(format!(
                "etcd refused to create {key:?} but reports no current value"
            ))),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue, Error> {
        self.check_write(key, Some(&value))?;
        if expected <= 0 {
            return Err(Error::InvalidArgument(format!(
                "update of {key:?} needs the expected mod_revision, not {expected}"
            )));
        }
        let txn = TxnRequest {
            compare: vec![Compare::mod_revision_equals(key.as_bytes(), expected)],
            success: vec![rpc::RequestOp {
                request: Some(Op::RequestPut(rpc::PutRequest {
                    key: key.as_bytes().to_vec(),
                    value: value.clone(),
                    prev_kv: true,
                    ..Default::default()
                })),
            }],
            failure: vec![get_op(key)],
        };
        let resp = self.call(self.client.txn(txn)).await.map_err(Self::plain)?;
        if resp.succeeded {
            let rev = header_rev(resp.header.as_ref())?;
            let prev = match resp.responses.into_iter().next().and_then(|r| r.response) {
                Some(OpResponse::ResponsePut(put)) => put.prev_kv,
                _ => None,
            };
            let Some(prev) = prev else {
                return Err(Error::Backend(format!(
                    "etcd updated {key:?} without reporting its previous value"
                )));
            };
            return Ok(KeyValue {
                key: key.to_owned(),
                stale: false,
                value,
                packed: None,
                create_revision: prev.create_revision,
                mod_revision: rev,
                version: prev.version + 1,
            });
        }
        match else_kv(resp)? {
            Some(current) => Err(Error::Conflict {
                key: key.to_owned(),
                expected,
                current: Box::new(current),
            }),
            None => Err(Error::NotFound {
                key: key.to_owned(),
            }),
        }
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error> {
        self.check_write(key, None)?;
        if expected < 0 {
            return Err(Error::InvalidArgument(format!(
                "negative expected revision {expected}"
            )));
        }
        let compare = if expected == 0 {
            vec![]
        } else {
            vec![Compare::mod_revision_equals(key.as_bytes(), expected)]
        };
        let txn = TxnRequest {
            compare,
            success: vec![rpc::RequestOp {
                request: Some(Op::RequestDeleteRange(rpc::DeleteRangeRequest {
                    key: key.as_bytes().to_vec(),
                    prev_kv: true,
                    ..Default::default()
                })),
            }],
            failure: vec![get_op(key)],
        };
        let resp = self.call(self.client.txn(txn)).await.map_err(Self::plain)?;
        let rev = header_rev(resp.header.as_ref())?;
        if resp.succeeded {
            let prev = match resp.responses.into_iter().next().and_then(|r| r.response) {
                Some(OpResponse::ResponseDeleteRange(del)) => {
                    del.prev_kvs.into_iter().next().map(convert).transpose()?
                }
                _ => None,
            };
            return match prev {
                Some(prev) => Ok((prev, rev)),
                None => Err(Error::NotFound {
                    key: key.to_owned(),
                }),
            };
        }
        match else_kv(resp)? {
            Some(current) => Err(Error::Conflict {
                key: key.to_owned(),
                expected,
                current: Box::new(current),
            }),
            None => Err(Error::NotFound {
                key: key.to_owned(),
            }),
        }
    }

    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
        watch::watch(self, prefix, after).await
    }

    async fn current_revision(&self) -> Result<Revision, Error> {
        let resp = self
            .call(self.client.range(revision_probe(0)))
            .await
            .map_err(Self::plain)?;
        header_rev(resp.header.as_ref())
    }

    async fn compact(&self, revision: Revision) -> Result<(), Error> {
        let req = rpc::CompactionRequest {
            revision,
            physical: false,
        };
        match self.call(self.client.compact(req)).await {
            Ok(_) => Ok(()),
            // Already compacted at or past it: nothing to do.
            Err(Failure::Compacted) => Ok(()),
            Err(f) => Err(self.fail_at(f, revision).await),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, Error> {
        // etcd does not expose its compacted revision; a read at a revision fails exactly
        // when it is older, so search for the oldest readable one.
        if self.readable_at(1).await? {
            return Ok(0);
        }
        let (mut lo, mut hi) = (1, self.current_revision().await?);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.readable_at(mid).await? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    async fn health(&self) -> Result<(), Error> {
        self.current_revision().await.map(|_| ())
    }

    async fn db_size(&self) -> Result<u64, Error> {
        let resp = self.call(self.client.status()).await.map_err(Self::plain)?;
        Ok(u64::try_from(resp.db_size).unwrap_or(0))
    }

    async fn close(&self) -> Result<(), Error> {
        // Every write was acknowledged by etcd's quorum: nothing is pending here.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{answers_progress_requests, prefix_end};

    #[test]
    fn progress_requests_are_answered_in_order_from_kubes_versions_on() {
        for (version, answers) in [
            ("3.4.23", false),
            ("3.4.30", false),
            ("3.4.31", true),
            ("3.4.45", true),
            ("3.5.12", false),
            ("3.5.13", true),
            ("3.5.16", true),
            ("3.6.0", true),
            ("3.6.0-rc.5", true),
            ("v3.6.4", true),
            ("3.3.27", false),
            ("4.0.0", true),
            ("", false),
            ("unknown (no answer)", false),
            ("3.5", false),
        ] {
            assert_eq!(answers_progress_requests(version), answers, "{version}");
        }
    }

    #[test]
    fn prefix_ends() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"/a/b", b"/a/c"),
            (b"/a/", b"/a0"),
            (b"a\xff", b"b"),
            (b"\xff\xff", b"\0"),
            (b"", b"\0"),
        ];
        for (prefix, want) in cases {
            assert_eq!(prefix_end(prefix), *want, "{prefix:?}");
        }
    }
}
