//! The part of etcd's v3 gRPC API this backend speaks, and a small client for it.
//!
//! The messages are declared with prost's derive, by hand, with the names and field numbers of
//! etcd's `api/etcdserverpb/rpc.proto` and `api/mvccpb/kv.proto` (which are stable: etcd never
//! renumbers a field). Generating them at build time would need `protoc`, a program outside the
//! Rust toolchain, so building the product would need an apt step first; about thirty small
//! messages written out once cost less than that on every machine. Only the fields we send or
//! read are declared: prost skips unknown fields when decoding, as every protobuf decoder must.
//! The end-to-end tests against a real etcd (`storage/tests/etcd*.rs`) check the wire format.
//!
//! The client is tonic's generic [`tonic::client::Grpc`] over one lazily connected channel per
//! endpoint. Calls go to one endpoint at a time; when it cannot be reached or answers
//! `Unavailable`, the next one takes over, and a call that never reached etcd (its connection
//! failed) is retried there at once — as etcd's Go client retries on another member — so a
//! cluster that lost a member keeps serving every request. (A balanced channel kept sending
//! some calls to the dead member.) etcd's authentication token (`Authenticate`, sent as the `token` metadata) refreshed when
//! etcd reports it invalid, as etcd's Go client does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http::uri::PathAndQuery;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Status, Streaming};
use tonic_prost::ProstCodec;

/// `etcdserverpb.ResponseHeader`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    #[prost(int64, tag = "3")]
    pub revision: i64,
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(int64, tag = "4")]
    pub version: i64,
    #[prost(bytes = "bytes", tag = "5")]
    pub value: bytes::Bytes,
    #[prost(int64, tag = "6")]
    pub lease: i64,
}

/// `mvccpb.Event.EventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    Put = 0,
    Delete = 1,
}

/// `mvccpb.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(enumeration = "EventType", tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub kv: Option<KeyValue>,
    #[prost(message, optional, tag = "3")]
    pub prev_kv: Option<KeyValue>,
}

/// `etcdserverpb.RangeRequest` (sorting and the revision filters are not used).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub limit: i64,
    #[prost(int64, tag = "4")]
    pub revision: i64,
    #[prost(bool, tag = "7")]
    pub serializable: bool,
    #[prost(bool, tag = "8")]
    pub keys_only: bool,
    #[prost(bool, tag = "9")]
    pub count_only: bool,
}

/// `etcdserverpb.RangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// `etcdserverpb.PutRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: bytes::Bytes,
    #[prost(int64, tag = "3")]
    pub lease: i64,
    #[prost(bool, tag = "4")]
    pub prev_kv: bool,
}

/// `etcdserverpb.PutResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, optional, tag = "2")]
    pub prev_kv: Option<KeyValue>,
}

/// `etcdserverpb.DeleteRangeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(bool, tag = "3")]
    pub prev_kv: bool,
}

/// `etcdserverpb.DeleteRangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub deleted: i64,
    #[prost(message, repeated, tag = "3")]
    pub prev_kvs: Vec<KeyValue>,
}

/// `etcdserverpb.RequestOp` (nested transactions are not used).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    #[prost(oneof = "request_op::Request", tags = "1, 2, 3")]
    pub request: Option<request_op::Request>,
}

/// The `request` oneof of [`RequestOp`].
pub mod request_op {
    /// One operation of a transaction branch.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Request {
        #[prost(message, tag = "1")]
        RequestRange(super::RangeRequest),
        #[prost(message, tag = "2")]
        RequestPut(super::PutRequest),
        #[prost(message, tag = "3")]
        RequestDeleteRange(super::DeleteRangeRequest),
    }
}

/// `etcdserverpb.ResponseOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseOp {
    #[prost(oneof = "response_op::Response", tags = "1, 2, 3")]
    pub response: Option<response_op::Response>,
}

/// The `response` oneof of [`ResponseOp`].
pub mod response_op {
    /// The result of one operation of a transaction branch.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Response {
        #[prost(message, tag = "1")]
        ResponseRange(super::RangeResponse),
        #[prost(message, tag = "2")]
        ResponsePut(super::PutResponse),
        #[prost(message, tag = "3")]
        ResponseDeleteRange(super::DeleteRangeResponse),
    }
}

/// `etcdserverpb.Compare.CompareResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareResult {
    Equal = 0,
    Greater = 1,
    Less = 2,
    NotEqual = 3,
}

/// `etcdserverpb.Compare.CompareTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareTarget {
    Version = 0,
    Create = 1,
    Mod = 2,
    Value = 3,
    Lease = 4,
}

/// `etcdserverpb.Compare`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    #[prost(enumeration = "CompareResult", tag = "1")]
    pub result: i32,
    #[prost(enumeration = "CompareTarget", tag = "2")]
    pub target: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    #[prost(oneof = "compare::TargetUnion", tags = "4, 5, 6")]
    pub target_union: Option<compare::TargetUnion>,
}

/// The `target_union` oneof of [`Compare`].
pub mod compare {
    /// The value compared with.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum TargetUnion {
        #[prost(int64, tag = "4")]
        Version(i64),
        #[prost(int64, tag = "5")]
        CreateRevision(i64),
        #[prost(int64, tag = "6")]
        ModRevision(i64),
    }
}

impl Compare {
    /// `mod_revision(key) == rev` (0: the key does not exist).
    pub fn mod_revision_equals(key: &[u8], rev: i64) -> Compare {
        Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Mod as i32,
            key: key.to_vec(),
            target_union: Some(compare::TargetUnion::ModRevision(rev)),
        }
    }
}

/// `etcdserverpb.TxnRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// `etcdserverpb.TxnResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// `etcdserverpb.StatusRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {}

/// `etcdserverpb.StatusResponse` (the member's version and database size; the rest is not
/// read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(int64, tag = "3")]
    pub db_size: i64,
}

/// `etcdserverpb.CompactionRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionRequest {
    #[prost(int64, tag = "1")]
    pub revision: i64,
    #[prost(bool, tag = "2")]
    pub physical: bool,
}

/// `etcdserverpb.CompactionResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `etcdserverpb.WatchRequest` (creation and progress requests: a watch is ended by dropping
/// its stream).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchRequest {
    #[prost(oneof = "watch_request::RequestUnion", tags = "1, 3")]
    pub request_union: Option<watch_request::RequestUnion>,
}

/// The `request_union` oneof of [`WatchRequest`].
pub mod watch_request {
    /// What the watch request asks.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum RequestUnion {
        #[prost(message, tag = "1")]
        CreateRequest(super::WatchCreateRequest),
        #[prost(message, tag = "3")]
        ProgressRequest(super::WatchProgressRequest),
    }
}

/// `etcdserverpb.WatchProgressRequest`: asks for a progress notification of the stream's
/// watches (etcd's `RequestProgress`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchProgressRequest {}

/// `etcdserverpb.WatchCreateRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchCreateRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    #[prost(bool, tag = "4")]
    pub progress_notify: bool,
    #[prost(bool, tag = "6")]
    pub prev_kv: bool,
}

/// `etcdserverpb.WatchResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    #[prost(bool, tag = "3")]
    pub created: bool,
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    #[prost(bool, tag = "7")]
    pub fragment: bool,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

/// `etcdserverpb.AuthenticateRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthenticateRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `etcdserverpb.AuthenticateResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthenticateResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(string, tag = "2")]
    pub token: String,
}

/// `etcdserverpb.AuthEnableRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthEnableRequest {}

/// `etcdserverpb.AuthUserAddRequest` (`options` and `hashedPassword` are not used).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthUserAddRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `etcdserverpb.AuthUserGrantRoleRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthUserGrantRoleRequest {
    #[prost(string, tag = "1")]
    pub user: String,
    #[prost(string, tag = "2")]
    pub role: String,
}

/// The answer of the Auth service's administrative calls: only the header.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderOnlyResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// How to reach etcd: endpoints and transport settings.
#[derive(Clone, Debug, Default)]
pub struct ConnectSettings {
    /// Client URLs (`http://` or `https://`).
    pub endpoints: Vec<String>,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// PEM CA bundle of the server certificates (None: the system's roots).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate and key.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The name to verify in the server certificate.
    pub server_name: Option<String>,
    /// User name and password, when etcd's authentication is on.
    pub user: Option<(String, String)>,
    /// Largest response decoded.
    pub max_decoding_message_size: usize,
}

/// A client of etcd's KV, Watch and Auth services. Cheap to clone (one shared channel).
#[derive(Clone)]
pub struct Client {
    /// One channel per endpoint, in the order given.
    channels: Arc<[Channel]>,
    /// The endpoint calls go to.
    current: Arc<AtomicUsize>,
    user: Option<Arc<(String, String)>>,
    token: Arc<RwLock<Option<MetadataValue<Ascii>>>>,
    max_decoding: usize,
}

/// A watch's response stream; the request side stays open as long as it lives.
pub struct WatchStream {
    requests: mpsc::Sender<WatchRequest>,
    responses: Streaming<WatchResponse>,
}

impl WatchStream {
    /// The next response; `Ok(None)` when etcd ended the stream. Cancel-safe.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, Status> {
        self.responses.message().await
    }

    /// Sends a progress request on the stream (etcd answers with a response that has no
    /// events and the revision in its header). A request already queued stands for this one.
    pub fn request_progress(&self) {
        let req = WatchRequest {
            request_union: Some(watch_request::RequestUnion::ProgressRequest(
                WatchProgressRequest {},
            )),
        };
        // Full: one is queued and not sent yet; closed: the stream is ending anyway.
        let _ = self.requests.try_send(req);
    }
}

/// The message etcd answers with when a token expired or the server restarted.
const INVALID_TOKEN: &str = "invalid auth token";

impl Client {
    /// A client over a lazily connected channel balanced over the endpoints. Fails only on
    /// malformed settings; whether etcd answers is found by the first call.
    pub fn new(s: &ConnectSettings) -> Result<Client, String> {
        let mut tls = None;
        let mut endpoints = Vec::with_capacity(s.endpoints.len());
        for url in &s.endpoints {
            let mut ep = Endpoint::from_shared(url.clone())
                .map_err(|e| format!("invalid etcd endpoint {url:?}: {e}"))?
                .connect_timeout(s.connect_timeout)
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .keep_alive_while_idle(true);
            if url.starts_with("https://") {
                if tls.is_none() {
                    tls = Some(tls_config(s)?);
                }
                if let Some(t) = &tls {
                    ep = ep
                        .tls_config(t.clone())
                        .map_err(|e| format!("etcd TLS settings for {url:?}: {e}"))?;
                }
            } else if !url.starts_with("http://") {
                return Err(format!(
                    "invalid etcd endpoint {url:?}: expected http:// or https://"
                ));
            }
            endpoints.push(ep);
        }
        if endpoints.is_empty() {
            return Err("no etcd endpoints".into());
        }
        let channels: Arc<[Channel]> = endpoints.into_iter().map(|e| e.connect_lazy()).collect();
        Ok(Client {
            channels,
            current: Arc::new(AtomicUsize::new(0)),
            user: s.user.clone().map(Arc::new),
            token: Arc::new(RwLock::new(None)),
            max_decoding: s.max_decoding_message_size,
        })
    }

    /// Authenticates (when a user is set) so that later calls carry a token.
    pub async fn authenticate(&self) -> Result<(), Status> {
        let Some(user) = self.user.clone() else {
            return Ok(());
        };
        let req = AuthenticateRequest {
            name: user.0.clone(),
            password: user.1.clone(),
        };
        let resp: AuthenticateResponse = self
            .call_once("/etcdserverpb.Auth/Authenticate", req, false)
            .await?;
        let token = MetadataValue::try_from(resp.token.as_str())
            .map_err(|e| Status::internal(format!("etcd returned an unusable token: {e}")))?;
        if let Ok(mut t) = self.token.write() {
            *t = Some(token);
        }
        Ok(())
    }

    /// `KV.Range`.
    pub async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Status> {
        self.call("/etcdserverpb.KV/Range", req).await
    }

    /// `KV.Txn`.
    pub async fn txn(&self, req: TxnRequest) -> Result<TxnResponse, Status> {
        self.call("/etcdserverpb.KV/Txn", req).await
    }

    /// `KV.Compact`.
    pub async fn compact(&self, req: CompactionRequest) -> Result<CompactionResponse, Status> {
        self.call("/etcdserverpb.KV/Compact", req).await
    }

    /// `Maintenance.Status` of the member the client talks to.
    pub async fn status(&self) -> Result<StatusResponse, Status> {
        self.call("/etcdserverpb.Maintenance/Status", StatusRequest {})
            .await
    }

    /// How many endpoints the client was given.
    pub fn endpoints(&self) -> usize {
        self.channels.len()
    }

    /// `Maintenance.Status` of endpoint `at` (in the order given), whichever endpoint calls
    /// go to now.
    pub async fn status_of(&self, at: usize) -> Result<StatusResponse, Status> {
        let channel = self
            .channels
            .get(at)
            .cloned()
            .ok_or_else(|| Status::invalid_argument(format!("no etcd endpoint {at}")))?;
        let mut grpc =
            tonic::client::Grpc::new(channel).max_decoding_message_size(self.max_decoding);
        grpc.ready().await.map_err(|e| connection_failed(&e))?;
        let mut request = tonic::Request::new(StatusRequest {});
        self.add_token(request.metadata_mut());
        grpc.unary(
            request,
            PathAndQuery::from_static("/etcdserverpb.Maintenance/Status"),
            ProstCodec::<StatusRequest, StatusResponse>::default(),
        )
        .await
        .map(tonic::Response::into_inner)
    }

    /// `Auth.UserAdd`.
    pub async fn user_add(&self, name: &str, password: &str) -> Result<(), Status> {
        let req = AuthUserAddRequest {
            name: name.into(),
            password: password.into(),
        };
        self.call::<_, HeaderOnlyResponse>("/etcdserverpb.Auth/UserAdd", req)
            .await
            .map(drop)
    }

    /// `Auth.UserGrantRole`.
    pub async fn user_grant_role(&self, user: &str, role: &str) -> Result<(), Status> {
        let req = AuthUserGrantRoleRequest {
            user: user.into(),
            role: role.into(),
        };
        self.call::<_, HeaderOnlyResponse>("/etcdserverpb.Auth/UserGrantRole", req)
            .await
            .map(drop)
    }

    /// `Auth.AuthEnable`.
    pub async fn auth_enable(&self) -> Result<(), Status> {
        self.call::<_, HeaderOnlyResponse>("/etcdserverpb.Auth/AuthEnable", AuthEnableRequest {})
            .await
            .map(drop)
    }

    /// `Watch.Watch` with one create request; the first response is etcd's "created". Opening
    /// a watch writes nothing, so it is tried on every endpoint in turn.
    pub async fn watch(&self, create: WatchCreateRequest) -> Result<WatchStream, Status> {
        let first = WatchRequest {
            request_union: Some(watch_request::RequestUnion::CreateRequest(create)),
        };
        let mut attempt = 1;
        let opened = loop {
            match self.open_watch(first.clone()).await {
                Err(s) if s.code() == tonic::Code::Unavailable && attempt < self.channels.len() => {
                    attempt += 1;
                }
                other => break other,
            }
        };
        match opened {
            Err(s) if self.token_expired(&s) => {
                self.authenticate().await?;
                self.open_watch(first).await
            }
            other => other,
        }
    }

    async fn open_watch(&self, first: WatchRequest) -> Result<WatchStream, Status> {
        let (tx, rx) = mpsc::channel(1);
        tx.send(first)
            .await
            .map_err(|_| Status::internal("watch request channel closed"))?;
        let mut request = tonic::Request::new(ReceiverStream::new(rx));
        self.add_token(request.metadata_mut());
        let (mut grpc, at) = self.grpc().await?;
        let responses = grpc
            .streaming(
                request,
                PathAndQuery::from_static("/etcdserverpb.Watch/Watch"),
                ProstCodec::<WatchRequest, WatchResponse>::default(),
            )
            .await
            .map_err(|s| self.failed(at, s))?
            .into_inner();
        Ok(WatchStream {
            requests: tx,
            responses,
        })
    }

    /// A unary call, re-authenticating once when etcd says the token is no longer valid.
    async fn call<Req, Resp>(&self, path: &'static str, req: Req) -> Result<Resp, Status>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        match self.call_once(path, req.clone(), true).await {
            Err(s) if self.token_expired(&s) => {
                self.authenticate().await?;
                self.call_once(path, req, true).await
            }
            other => other,
        }
    }

    fn token_expired(&self, s: &Status) -> bool {
        self.user.is_some() && s.message().contains(INVALID_TOKEN)
    }

    async fn call_once<Req, Resp>(
        &self,
        path: &'static str,
        req: Req,
        with_token: bool,
    ) -> Result<Resp, Status>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut attempt = 1;
        loop {
            let mut request = tonic::Request::new(req.clone());
            if with_token {
                self.add_token(request.metadata_mut());
            }
            let (mut grpc, at) = self.grpc().await?;
            let res = grpc
                .unary(
                    request,
                    PathAndQuery::from_static(path),
                    ProstCodec::<Req, Resp>::default(),
                )
                .await;
            match res {
                Ok(resp) => return Ok(resp.into_inner()),
                Err(s) => {
                    let s = self.failed(at, s);
                    // Only a call that never left is sent again: a write that reached etcd may
                    // have been applied even though its answer was lost.
                    if !never_sent(&s) || attempt >= self.channels.len() {
                        return Err(s);
                    }
                    attempt += 1;
                }
            }
        }
    }

    /// Moves calls off endpoint `at` when it answered `Unavailable` (down, or cut off from its
    /// cluster's quorum), unless another call already did.
    fn failed(&self, at: usize, s: Status) -> Status {
        if s.code() == tonic::Code::Unavailable {
            self.fail_over(at);
        }
        s
    }

    /// Sends later calls to the endpoint after `at`.
    pub fn fail_over(&self, at: usize) {
        let next = (at + 1) % self.channels.len();
        let _ = self
            .current
            .compare_exchange(at, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The endpoint calls go to now (for [`Client::fail_over`] after a call timed out).
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed) % self.channels.len()
    }

    fn add_token(&self, md: &mut tonic::metadata::MetadataMap) {
        let token = self.token.read().ok().and_then(|t| t.clone());
        if let Some(token) = token {
            md.insert("token", token);
        }
    }

    /// A gRPC client on the current endpoint, and that endpoint's index.
    async fn grpc(&self) -> Result<(tonic::client::Grpc<Channel>, usize), Status> {
        let at = self.current();
        let mut grpc = tonic::client::Grpc::new(self.channels[at].clone())
            .max_decoding_message_size(self.max_decoding)
            .max_encoding_message_size(usize::MAX);
        grpc.ready()
            .await
            .map_err(|e| self.failed(at, connection_failed(&e)))?;
        Ok((grpc, at))
    }
}

/// An error and its causes, each once ("transport error: ...: received fatal alert: ...").
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// Whether a connection error is a TLS handshake one side refused (no or a wrong client
/// certificate, a server certificate the CA does not sign): a setting to fix, not an outage to
/// wait out.
pub(crate) fn is_tls_refusal(chain: &str) -> bool {
    ["received fatal alert", "invalid peer certificate"]
        .iter()
        .any(|m| chain.contains(m))
}

/// Why a connection to etcd could not be made, with the causes tonic's transport error hides
/// behind "transport error"; a refused TLS handshake is `PermissionDenied`, anything else
/// `Unavailable`.
fn connection_failed(e: &(dyn std::error::Error + 'static)) -> Status {
    let chain = error_chain(e);
    if is_tls_refusal(&chain) {
        Status::permission_denied(format!("etcd TLS handshake failed: {chain}"))
    } else {
        Status::unavailable(format!("etcd connection: {chain}"))
    }
}

/// Whether a failed call never reached etcd: its connection could not be made.
fn never_sent(s: &Status) -> bool {
    s.code() == tonic::Code::Unavailable && {
        let m = s.message();
        m.contains("tcp connect error")
            || m.contains("error trying to connect")
            || m.contains("onnection refused")
            || m.starts_with("etcd connection:")
    }
}

fn tls_config(s: &ConnectSettings) -> Result<ClientTlsConfig, String> {
    let mut t = ClientTlsConfig::new();
    match &s.ca_pem {
        Some(ca) => t = t.ca_certificate(Certificate::from_pem(ca)),
        None => t = t.with_native_roots(),
    }
    if let Some((cert, key)) = &s.identity {
        t = t.identity(Identity::from_pem(cert, key));
    }
    if let Some(name) = &s.server_name {
        t = t.domain_name(name.clone());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    /// Bytes as etcd's Go code encodes them, written out from the proto definitions (field
    /// number << 3 | wire type), so a wrong tag in the declarations above fails here too, not
    /// only against a live etcd.
    #[test]
    fn wire_format_matches_the_proto_numbers() {
        let req = RangeRequest {
            key: b"a".to_vec(),
            range_end: b"b".to_vec(),
            limit: 5,
            revision: 7,
            count_only: true,
            ..Default::default()
        };
        assert_eq!(
            req.encode_to_vec(),
            [0x0a, 1, b'a', 0x12, 1, b'b', 0x18, 5, 0x20, 7, 0x48, 1]
        );
        let cmp = Compare::mod_revision_equals(b"k", 9);
        // result EQUAL (0) and target MOD (2): proto3 omits the zero result.
        assert_eq!(cmp.encode_to_vec(), [0x10, 2, 0x1a, 1, b'k', 0x30, 9]);
        let watch = WatchCreateRequest {
            key: b"k".to_vec(),
            start_revision: 3,
            progress_notify: true,
            prev_kv: true,
            ..Default::default()
        };
        assert_eq!(
            watch.encode_to_vec(),
            [0x0a, 1, b'k', 0x18, 3, 0x20, 1, 0x30, 1]
        );
        // progress_request = 3, an empty message.
        let progress = WatchRequest {
            request_union: Some(watch_request::RequestUnion::ProgressRequest(
                WatchProgressRequest {},
            )),
        };
        assert_eq!(progress.encode_to_vec(), [0x1a, 0]);
        // StatusResponse { version: "3.4.23" }
        let status = StatusResponse::decode(&[0x12, 6, b'3', b'.', b'4', b'.', b'2', b'3'][..])
            .expect("decodes");
        assert_eq!(status.version, "3.4.23");
        // A WatchResponse with a header revision, canceled, and one DELETE event.
        let bytes = [
            0x0a, 2, 0x18, 42, // header { revision: 42 }
            0x20, 1, // canceled
            0x28, 17, // compact_revision
            0x5a, 7, 0x08, 1, 0x12, 3, 0x0a, 1,
            b'x', // events [{ type: DELETE, kv { key: "x" } }]
        ];
        let resp = WatchResponse::decode(&bytes[..]).expect("decodes");
        assert_eq!(resp.header.map(|h| h.revision), Some(42));
        assert!(resp.canceled);
        assert_eq!(resp.compact_revision, 17);
        assert_eq!(resp.events.len(), 1);
        assert_eq!(resp.events[0].r#type, EventType::Delete as i32);
        assert_eq!(
            resp.events[0].kv.as_ref().map(|kv| &kv.key[..]),
            Some(&b"x"[..])
        );
    }
}
