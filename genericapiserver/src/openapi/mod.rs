//! OpenAPI as kube-apiserver serves it. v3 (`/openapi/v3`) and per-group-version documents
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/G/V`) as kube-openapi's handler3 serves them:
//! each document's ETag is the SHA-512 of its bytes; the root links every document with its
//! hash; a request naming the current hash may be cached forever, a stale hash is redirected
//! to the current one. `kubectl apply/create/replace/edit` need these to validate fields on
//! the server, `kubectl explain` reads the schemas. v2 (`/openapi/v2`) as kube-openapi's v2
//! handler serves it: one document, as JSON or as gnostic's protobuf (which kubectl asks
//! for), both with the JSON's SHA-512 as ETag; kubectl needs it to validate `kind: List`.
//!
//! What aggregated API servers (APIServices with a service) publish joins both, as
//! kube-aggregator's OpenAPI controllers merge it: their v3 group-version documents are
//! listed and served in place of local ones, their v2 `/apis/` paths and definitions are
//! merged into the v2 document.
//!
//! Documents are built and serialized once per catalog snapshot (built-in and registered
//! group-versions once per process) and shared; v2 is built on its first request after a
//! change of the catalog (a CRD) or of an aggregated server's documents.
//!
//! The documents themselves are built by the openapi-builder crate (`document`, `v2`).

pub use openapi_builder::{document, v2};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::{CatalogSnapshot, ResourceDef};
use apimachinery::openapi::gnostic;
use document::Flavor;

/// One serialized document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The JSON.
    pub bytes: Bytes,
    /// Upper-case hex SHA-512 of `bytes`.
    pub etag: String,
    /// When it was built (Last-Modified).
    pub modified: SystemTime,
}

impl Document {
    fn new(v: &Value) -> Document {
        Document::from_bytes(Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
    }

    /// A document already serialized (one an aggregated API server published).
    pub fn from_bytes(bytes: Bytes) -> Document {
        Document {
            etag: hash(&bytes),
            bytes,
            modified: SystemTime::now(),
        }
    }
}

/// What an aggregated API server (an APIService's backend) publishes, as kube-aggregator
/// downloads it: its `/openapi/v2` document and the `/openapi/v3` document of the
/// APIService's group-version.
#[derive(Debug)]
pub struct Published {
    /// `/openapi/v2`, if it serves one.
    pub v2: Option<Value>,
    /// `/openapi/v3/apis/<group>/<version>`, if it serves one.
    pub v3: Option<Document>,
}

impl Published {
    /// Whether both publish the same documents.
    pub fn same_as(&self, other: &Published) -> bool {
        self.v2 == other.v2
            && self.v3.as_ref().map(|d| &d.bytes) == other.v3.as_ref().map(|d| &d.bytes)
    }
}

/// A group-version an aggregated API server serves, with what it publishes.
#[derive(Debug, Clone)]
pub struct Remote {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Its documents.
    pub published: Arc<Published>,
}

/// Whether two lists of remote documents are the same ones.
fn same_remotes(a: &[Remote], b: &[Remote]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.group == y.group && x.version == y.version && Arc::ptr_eq(&x.published, &y.published)
        })
}

/// kube-openapi's computeETag: `%X` of the SHA-512.
fn hash(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA512, data);
    digest.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

/// Everything served for one catalog snapshot.
#[derive(Debug)]
pub struct Documents {
    /// `/openapi/v3`.
    pub root: Document,
    /// Group-version documents by key (`api/v1`, `apis/apps/v1`).
    pub groups: HashMap<String, Arc<Document>>,
}

/// Remembered variants of a per-group-version value, by the resources they were built from.
type VariantCache<T> = Mutex<HashMap<String, Vec<(Vec<ResourceDef>, Arc<T>)>>>;

/// How many variants of one group-version's document are remembered.
const VARIANTS_KEPT: usize = 4;

/// The value built for a group-version's resources, reused while they stay the same:
/// built-in and Karmada ones never change, a CRD's change only when it does.
fn variant<T>(
    cache: &VariantCache<T>,
    group: &str,
    version: &str,
    defs: &[Arc<ResourceDef>],
    build: impl FnOnce() -> T,
) -> Arc<T> {
    let key = document::gv_key(group, version);
    let plain: Vec<ResourceDef> = defs.iter().map(|d| (**d).clone()).collect();
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    let variants = cache.entry(key).or_default();
    if let Some((_, v)) = variants.iter().find(|(d, _)| *d == plain) {
        return v.clone();
    }
    let v = Arc::new(build());
    variants.push((plain, v.clone()));
    if variants.len() > VARIANTS_KEPT {
        variants.remove(0);
    }
    v
}

/// A registered kind's schema, from the strategy installed for it.
fn registered_schema(def: &ResourceDef) -> Option<&'static Value> {
    crate::kinds::for_resource(def).and_then(|k| k.openapi_schema(def))
}

fn group_document(group: &str, version: &str, defs: &[Arc<ResourceDef>]) -> Arc<Document> {
    static CACHE: OnceLock<VariantCache<Document>> = OnceLock::new();
    variant(
        CACHE.get_or_init(Default::default),
        group,
        version,
        defs,
        || {
            Document::new(&document::group_version_document(
                group,
                version,
                defs,
                Flavor::V3,
                &registered_schema,
            ))
        },
    )
}

/// The resources of each group-version of a snapshot.
fn group_versions(snapshot: &CatalogSnapshot) -> Vec<(String, String, Vec<Arc<ResourceDef>>)> {
    let mut out = Vec::new();
    for (group, versions) in snapshot.groups() {
        for version in versions {
            let defs: Vec<Arc<ResourceDef>> = snapshot
                .resources
                .iter()
                .filter(|r| r.group == group && r.version == version)
                .cloned()
                .collect();
            out.push((group.clone(), version, defs));
        }
    }
    out
}

fn build(snapshot: &CatalogSnapshot) -> Documents {
    let groups: HashMap<String, Arc<Document>> = group_versions(snapshot)
        .into_iter()
        .map(|(group, version, defs)| {
            (
                document::gv_key(&group, &version),
                group_document(&group, &version, &defs),
            )
        })
        .collect();
    Documents {
        root: root_document(&groups),
        groups,
    }
}

/// `/openapi/v3`: every group-version's document with its hash.
fn root_document(groups: &HashMap<String, Arc<Document>>) -> Document {
    let root_paths: serde_json::Map<String, Value> = groups
        .iter()
        .map(|(key, doc)| {
            (
                key.clone(),
                json!({"serverRelativeURL": relative_url(key, &doc.etag)}),
            )
        })
        .collect();
    Document::new(&json!({"paths": root_paths}))
}

fn relative_url(key: &str, etag: &str) -> String {
    format!("/openapi/v3/{key}?hash={etag}")
}

/// Values built for live catalog snapshots.
type SnapshotCache<T> = Mutex<Vec<(Weak<CatalogSnapshot>, Arc<T>)>>;

/// The value built for a catalog snapshot, built on first use and kept while the snapshot
/// lives (the lock is held while building, so concurrent first requests build once).
fn per_snapshot<T>(
    cache: &SnapshotCache<T>,
    snapshot: &Arc<CatalogSnapshot>,
    build: impl FnOnce() -> T,
) -> Arc<T> {
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    cache.retain(|(w, _)| w.strong_count() > 0);
    if let Some((_, v)) = cache
        .iter()
        .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(snapshot)))
    {
        return v.clone();
    }
    let v = Arc::new(build());
    cache.push((Arc::downgrade(snapshot), v.clone()));
    v
}

/// The v3 documents of a catalog snapshot, built on first use and kept while the snapshot
/// lives.
pub fn documents(snapshot: &Arc<CatalogSnapshot>) -> Arc<Documents> {
    static CACHE: OnceLock<SnapshotCache<Documents>> = OnceLock::new();
    per_snapshot(CACHE.get_or_init(Default::default), snapshot, || {
        build(snapshot)
    })
}

/// The serialized `/openapi/v2` document.
#[derive(Debug)]
pub struct SwaggerDocument {
    /// The JSON, its ETag and build time.
    pub json: Document,
    /// gnostic's protobuf encoding of the same document (same ETag, as kube-openapi's).
    pub protobuf: Bytes,
}

/// The v2 document of a catalog snapshot and the aggregated API servers, built on first use
/// and kept while the snapshot lives and the remote documents stay the same.
pub fn swagger(snapshot: &Arc<CatalogSnapshot>, remote: &[Remote]) -> Arc<SwaggerDocument> {
    type Cache = Mutex<Vec<(Weak<CatalogSnapshot>, Vec<Remote>, Arc<SwaggerDocument>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    cache.retain(|(w, _, _)| w.strong_count() > 0);
    if let Some((_, _, doc)) = cache.iter().find(|(w, r, _)| {
        std::ptr::eq(w.as_ptr(), Arc::as_ptr(snapshot)) && same_remotes(r, remote)
    }) {
        return doc.clone();
    }
    // Built whole (not from cached per-group-version parts, as v3 is): it is asked for
    // rarely, and the parts would hold the shared built-in schemas many times over.
    let mut swagger = v2::Swagger::default();
    for (group, version, defs) in group_versions(snapshot) {
        if remote
            .iter()
            .any(|r| r.group == group && r.version == version)
        {
            continue;
        }
        swagger.add(&document::group_version_document(
            &group,
            &version,
            &defs,
            Flavor::V2,
            &registered_schema,
        ));
    }
    for r in remote {
        if let Some(spec) = &r.published.v2 {
            swagger.merge(spec);
        }
    }
    let doc = swagger.finish();
    let built = Arc::new(SwaggerDocument {
        protobuf: Bytes::from(gnostic::encode(&doc)),
        json: Document::new(&doc),
    });
    cache.push((Arc::downgrade(snapshot), remote.to_vec(), built.clone()));
    // A snapshot outlives the documents of remote servers it was combined with.
    if cache.len() > VARIANTS_KEPT {
        cache.remove(0);
    }
    built
}

/// The v3 documents with the aggregated API servers' group-versions in place of local ones.
fn v3_documents(snapshot: &Arc<CatalogSnapshot>, remote: &[Remote]) -> Arc<Documents> {
    type Cache = Mutex<Option<(Arc<Documents>, Vec<Remote>, Arc<Documents>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let local = documents(snapshot);
    if remote.is_empty() {
        return local;
    }
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some((l, r, merged)) = &*cache
        && Arc::ptr_eq(l, &local)
        && same_remotes(r, remote)
    {
        return merged.clone();
    }
    let mut groups = local.groups.clone();
    for r in remote {
        let key = document::gv_key(&r.group, &r.version);
        groups.remove(&key);
        if let Some(doc) = &r.published.v3 {
            groups.insert(key, Arc::new(doc.clone()));
        }
    }
    let merged = Arc::new(Documents {
        root: root_document(&groups),
        groups,
    });
    *cache = Some((local, remote.to_vec(), merged.clone()));
    merged
}

/// Whether the path is one this module answers.
pub fn handles(path: &str) -> bool {
    path == "/openapi/v2" || path == "/openapi/v3" || path.starts_with("/openapi/v3/")
}

/// Which representation an Accept header asks for: JSON is the only one served.
fn accepts_json(accept: Option<&str>) -> bool {
    let accept = accept
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or("*/*");
    accept.split(',').any(|clause| {
        let media = clause.split(';').next().unwrap_or("").trim();
        let (t, sub) = media.split_once('/').unwrap_or((media, ""));
        (t == "application" || t == "*") && (sub == "json" || sub == "*")
    })
}

/// gnostic's protobuf media type (kubectl asks for the older `@` spelling, which is answered
/// with this one, as kube-openapi does).
pub const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The representations of `/openapi/v2`, in kube-openapi's order of preference.
const V2_MEDIA: &[(&str, bool)] = &[
    ("json", false),
    ("com.github.proto-openapi.spec.v2@v1.0+protobuf", true),
    ("com.github.proto-openapi.spec.v2.v1.0+protobuf", true),
];

/// Which v2 representation an Accept header gets (`true`: protobuf), choosing as
/// kube-openapi's handler does: the clauses sorted by quality, then by specificity
/// (goautoneg's ParseAccept), the first clause matching a representation wins.
fn v2_representation(accept: Option<&str>) -> Option<bool> {
    let accept = accept
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or("*/*");
    let mut clauses: Vec<(f64, &str, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let media = parts.next()?.trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            let (t, sub) = media.split_once('/').unwrap_or((media, "*"));
            Some((q, t.trim(), sub.trim()))
        })
        .collect();
    clauses.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then((a.1 == "*").cmp(&(b.1 == "*")))
            .then((a.2 == "*").cmp(&(b.2 == "*")))
    });
    clauses.iter().find_map(|(_, t, sub)| {
        V2_MEDIA.iter().find_map(|(media, protobuf)| {
            ((*t == "application" || *t == "*") && (sub == media || *sub == "*"))
                .then_some(*protobuf)
        })
    })
}

fn http_date(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn set(resp: &mut Response, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

fn parse_http_date(s: &str) -> Option<SystemTime> {
    let tm = jiff::fmt::strtime::parse("%a, %d %b %Y %H:%M:%S GMT", s.trim()).ok()?;
    let ts = tm
        .to_datetime()
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()?;
    Some(SystemTime::from(ts.timestamp()))
}

/// Whether an `If-None-Match` value names the ETag (weak comparison, as Go's ServeContent).
fn etag_matches(if_none_match: &str, quoted: &str) -> bool {
    if_none_match.split(',').any(|t| {
        let t = t.trim();
        t == "*" || t.trim_start_matches("W/") == quoted
    })
}

/// Answers with a document as Go's `http.ServeContent` (which kube-openapi's handlers use):
/// 304 Not Modified when `If-None-Match` names its ETag or, without that header,
/// `If-Modified-Since` is not older than it.
fn respond(
    doc: &Document,
    body: &Bytes,
    content_type: &str,
    parts: &http::request::Parts,
) -> Response {
    let quoted = format!("\"{}\"", doc.etag);
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let modified_secs = doc
        .modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let not_modified = match header(header::IF_NONE_MATCH) {
        Some(v) => etag_matches(v, &quoted),
        None => header(header::IF_MODIFIED_SINCE)
            .and_then(parse_http_date)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .is_some_and(|since| modified_secs <= since.as_secs()),
    };
    let mut resp = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(Body::from(body.clone()));
        set(&mut r, header::CONTENT_TYPE, content_type);
        set(&mut r, header::LAST_MODIFIED, &http_date(doc.modified));
        r
    };
    set(&mut resp, header::ETAG, &quoted);
    resp
}

/// Serves `/openapi/v2`: JSON or gnostic's protobuf by the Accept header, 406 otherwise.
fn serve_v2(
    snapshot: &Arc<CatalogSnapshot>,
    remote: &[Remote],
    parts: &http::request::Parts,
) -> Response {
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let mut resp = match v2_representation(accept) {
        None => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
            r
        }
        Some(protobuf) => {
            let doc = swagger(snapshot, remote);
            if protobuf {
                respond(&doc.json, &doc.protobuf, PROTOBUF_V2, parts)
            } else {
                respond(&doc.json, &doc.json.bytes, "application/json", parts)
            }
        }
    };
    set(&mut resp, header::VARY, "Accept");
    resp
}

/// Serves `/openapi/v2`, `/openapi/v3` and `/openapi/v3/<group-version>` of the catalog and
/// of the group-versions aggregated API servers serve (`remote`), as kube-aggregator merges
/// them.
pub fn serve(
    snapshot: &Arc<CatalogSnapshot>,
    remote: &[Remote],
    path: &str,
    parts: &http::request::Parts,
) -> Result<Response, ApiError> {
    if path == "/openapi/v2" {
        return Ok(serve_v2(snapshot, remote, parts));
    }
    let docs = v3_documents(snapshot, remote);
    let key = path.trim_start_matches("/openapi/v3").trim_matches('/');
    if key.is_empty() {
        return Ok(respond(
            &docs.root,
            &docs.root.bytes,
            "application/json",
            parts,
        ));
    }
    let Some(doc) = docs.groups.get(key) else {
        return Err(ApiError::path_not_found());
    };
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    if !accepts_json(accept) {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::NOT_ACCEPTABLE;
        set(&mut resp, header::VARY, "Accept");
        return Ok(resp);
    }
    let wanted = crate::request_info::parse_query(parts.uri.query())
        .get("hash")
        .and_then(|v| v.first())
        .cloned()
        .filter(|h| !h.is_empty());
    if let Some(h) = &wanted
        && *h != doc.etag
    {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
        set(&mut resp, header::LOCATION, &relative_url(key, &doc.etag));
        return Ok(resp);
    }
    let mut resp = respond(doc, &doc.bytes, "application/json", parts);
    set(&mut resp, header::VARY, "Accept");
    if wanted.is_some() {
        set(&mut resp, header::CACHE_CONTROL, "public, immutable");
        set(
            &mut resp,
            header::EXPIRES,
            &http_date(SystemTime::now() + Duration::from_secs(365 * 24 * 3600)),
        );
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::resources::{Catalog, built_in, registered};

    fn request(uri: &str, accept: Option<&str>) -> http::request::Parts {
        let mut b = http::Request::builder().uri(uri);
        if let Some(a) = accept {
            b = b.header(header::ACCEPT, a);
        }
        b.body(())
            .map(|r| r.into_parts().0)
            .unwrap_or_else(|_| panic!("request"))
    }

    /// A GET of `/openapi/v2`, with `If-None-Match` when given.
    fn v2_request(accept: Option<&str>, if_none_match: Option<&str>) -> http::request::Parts {
        let mut parts = request("/openapi/v2", accept);
        if let Some(v) = if_none_match.and_then(|e| HeaderValue::from_str(e).ok()) {
            parts.headers.insert(header::IF_NONE_MATCH, v);
        }
        parts
    }

    async fn body(resp: Response) -> Bytes {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap_or_default()
    }

    async fn body_json(resp: Response) -> Value {
        serde_json::from_slice(&body(resp).await).unwrap_or(Value::Null)
    }

    #[tokio::test]
    async fn root_hash_redirect_and_negotiation() {
        let catalog = catalog();
        let snapshot = catalog.snapshot();
        let root = serve(&snapshot, &[], "/openapi/v3", &request("/openapi/v3", None)).unwrap();
        assert_eq!(root.status(), StatusCode::OK);
        let root = body_json(root).await;
        let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{url}");
        assert!(root["paths"]["api/v1"].is_object());
        assert!(root["paths"]["apis/policy.karmada.io/v1alpha1"].is_object());
        let hash = url.rsplit('=').next().unwrap_or_default().to_string();
        assert_eq!(hash.len(), 128);

        let ok = serve(
            &snapshot,
            &[],
            "/openapi/v3/apis/apps/v1",
            &request(&url, Some("application/json")),
        )
        .unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()[header::ETAG], format!("\"{hash}\"").as_str());
        assert_eq!(ok.headers()[header::CACHE_CONTROL], "public, immutable");
        assert!(ok.headers().contains_key(header::EXPIRES));

        let stale = serve(
            &snapshot,
            &[],
            "/openapi/v3/apis/apps/v1",
            &request("/openapi/v3/apis/apps/v1?hash=ABC", None),
        )
        .unwrap();
        assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(stale.headers()[header::LOCATION], url.as_str());

        let plain = serve(
            &snapshot,
            &[],
            "/openapi/v3/apis/apps/v1",
            &request("/openapi/v3/apis/apps/v1", None),
        )
        .unwrap();
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(!plain.headers().contains_key(header::CACHE_CONTROL));

        let pb = serve(
            &snapshot,
            &[],
            "/openapi/v3/apis/apps/v1",
            &request(
                "/openapi/v3/apis/apps/v1",
                Some("application/com.github.proto-openapi.spec.v3.v1.0+protobuf"),
            ),
        )
        .unwrap();
        assert_eq!(pb.status(), StatusCode::NOT_ACCEPTABLE);

        let missing = serve(
            &snapshot,
            &[],
            "/openapi/v3/apis/nope/v1",
            &request("/openapi/v3/apis/nope/v1", None),
        );
        assert!(missing.is_err_and(|e| e.code == 404));

        // Same snapshot: same shared documents.
        assert!(Arc::ptr_eq(&documents(&snapshot), &documents(&snapshot)));
    }

    #[tokio::test]
    async fn hash_follows_catalog_changes() {
        let catalog = Catalog::new(built_in());
        let before = documents(&catalog.snapshot());
        let mut crd_defs: Vec<ResourceDef> = Vec::new();
        let mut def = built_in()
            .into_iter()
            .find(|d| d.kind == "ConfigMap")
            .unwrap_or_else(|| panic!("configmaps"));
        def.group = "example.com".into();
        def.source = crate::resources::Source::Custom(Box::new(crate::resources::CustomSource {
            crd_name: "configmaps.example.com".into(),
            schema: None,
            printer_columns: vec![],
            selectable_fields: vec![],
            scale: None,
        }));
        crd_defs.push(def);
        catalog.set_custom(crd_defs);
        let after = documents(&catalog.snapshot());
        assert_ne!(before.root.etag, after.root.etag);
        assert!(after.groups.contains_key("apis/example.com/v1"));
        assert!(!before.groups.contains_key("apis/example.com/v1"));
        // Unchanged group-versions keep their document (and hash).
        assert!(Arc::ptr_eq(
            &before.groups["apis/apps/v1"],
            &after.groups["apis/apps/v1"]
        ));
        catalog.set_custom(vec![]);
        let gone = documents(&catalog.snapshot());
        assert_eq!(gone.root.etag, before.root.etag);
    }

    /// A CRD as the CRD controller stores it once its names are accepted.
    fn crontab_crd(root_preserves_unknown: bool) -> Value {
        let mut schema = json!({
            "type": "object",
            "description": "A cron tab.",
            "properties": {"spec": {"type": "object", "description": "What to run and when.",
                "properties": {
                    "cronSpec": {"type": "string", "description": "The schedule in cron format."},
                    "replicas": {"type": "integer", "default": 1},
                    "note": {"type": "string", "nullable": true},
                }}},
        });
        if root_preserves_unknown {
            schema["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
        json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": schema}}]},
            "status": {"acceptedNames": {"plural": "crontabs", "kind": "CronTab"}},
        })
    }

    fn catalog() -> Catalog {
        let mut all = built_in();
        all.extend(registered());
        Catalog::new(all)
    }

    /// The definition of a GVK, found as kubectl finds it (by its GVK extension).
    fn by_gvk<'a>(doc: &'a Value, group: &str, version: &str, kind: &str) -> Option<&'a Value> {
        let want = json!({"group": group, "version": version, "kind": kind});
        doc["definitions"].as_object()?.values().find(|d| {
            d["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|l| l.contains(&want))
        })
    }

    #[test]
    fn the_document_reads_as_kubectl_reads_it() {
        let catalog = catalog();
        catalog.set_custom(apiextensions::definition::resource_defs(&crontab_crd(
            false,
        )));
        let doc: Value = serde_json::from_slice(&swagger(&catalog.snapshot(), &[]).json.bytes)
            .unwrap_or_default();
        assert_eq!(doc["swagger"], "2.0");
        let definitions = doc["definitions"].as_object().cloned().unwrap_or_default();
        let errors = v2::tests::kubectl_parse_errors(&definitions);
        assert!(errors.is_empty(), "{errors:#?}");

        for (g, v, k) in [
            ("", "v1", "ConfigMap"),
            ("apps", "v1", "Deployment"),
            ("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
            ("cluster.karmada.io", "v1alpha1", "Cluster"),
            ("stable.example.com", "v1", "CronTab"),
            ("stable.example.com", "v1", "CronTabList"),
        ] {
            assert!(by_gvk(&doc, g, v, k).is_some(), "{k}");
        }
        let crontab = by_gvk(&doc, "stable.example.com", "v1", "CronTab").cloned();
        let crontab = crontab.unwrap_or_default();
        assert_eq!(crontab["description"], "A cron tab.");
        let spec = &crontab["properties"]["spec"];
        assert_eq!(spec["description"], "What to run and when.");
        assert_eq!(
            spec["properties"]["cronSpec"]["description"],
            "The schedule in cron format."
        );
        // v2 has no defaults (kube prunes them) and no nullable (the value is untyped).
        assert_eq!(spec["properties"]["replicas"], json!({"type": "integer"}));
        assert_eq!(spec["properties"]["note"], json!({}));
        assert_eq!(
            crontab["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(
            crontab["properties"]["metadata"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Standard object's metadata."))
        );

        // Built-in kinds carry the merge metadata `kubectl apply` computes patches from.
        let pod_spec = &definitions["io.k8s.api.core.v1.PodSpec"]["properties"];
        assert_eq!(
            pod_spec["containers"]["x-kubernetes-patch-merge-key"],
            "name"
        );
        assert_eq!(
            pod_spec["containers"]["x-kubernetes-patch-strategy"],
            "merge"
        );
        assert_eq!(
            pod_spec["volumes"]["x-kubernetes-patch-strategy"],
            "merge,retainKeys"
        );
        assert!(pod_spec["tolerations"]["x-kubernetes-patch-strategy"].is_null());
        let strategy = &definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
        assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
        assert_eq!(
            strategy["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy"
        );
        let env = &definitions["io.k8s.api.core.v1.Container"]["properties"]["env"];
        assert_eq!(env["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(env["x-kubernetes-list-map-keys"], json!(["name"]));
        let finalizers = &definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
            ["finalizers"];
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(finalizers["x-kubernetes-list-type"], "set");

        // Paths: the PATCH of each kind offers fieldValidation (kubectl's v2 verifier) and,
        // for kinds the server merges strategically, the strategic merge patch type.
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(
            patch["consumes"]
                .as_array()
                .is_some_and(|c| c.contains(&json!("application/strategic-merge-patch+json")))
        );
        assert!(patch["parameters"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        }));
        let cr_patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
            ["patch"];
        assert!(
            cr_patch["consumes"]
                .as_array()
                .is_some_and(|c| !c.contains(&json!("application/strategic-merge-patch+json")))
        );
    }

    #[test]
    fn a_root_that_keeps_unknown_fields_is_a_bare_object() {
        let catalog = catalog();
        catalog.set_custom(apiextensions::definition::resource_defs(&crontab_crd(true)));
        let doc: Value = serde_json::from_slice(&swagger(&catalog.snapshot(), &[]).json.bytes)
            .unwrap_or_default();
        assert_eq!(
            by_gvk(&doc, "stable.example.com", "v1", "CronTab").cloned(),
            Some(
                json!({"type": "object", "x-kubernetes-group-version-kind": [
                {"group": "stable.example.com", "kind": "CronTab", "version": "v1"}]})
            )
        );
    }

    #[test]
    fn protobuf_holds_the_same_document() {
        let catalog = catalog();
        let doc = swagger(&catalog.snapshot(), &[]);
        let json: Value = serde_json::from_slice(&doc.json.bytes).unwrap_or_default();
        let pb = gnostic::Document::decode(doc.protobuf.clone()).unwrap_or_default();
        assert_eq!(pb.swagger, "2.0");
        assert_eq!(
            pb.info.as_ref().map(|i| i.title.as_str()),
            Some("Kubernetes")
        );
        let defs = pb.definitions.unwrap_or_default().additional_properties;
        assert_eq!(
            defs.len(),
            json["definitions"].as_object().map_or(0, |d| d.len())
        );
        let schema = |name: &str| {
            defs.iter()
                .find(|d| d.name == name)
                .and_then(|d| d.value.clone())
                .unwrap_or_default()
        };
        // The GVK extension reads back as kubectl's YAML decoder reads it.
        let cm = schema("io.k8s.api.core.v1.ConfigMap");
        let gvk = cm
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .and_then(|e| e.value.clone())
            .unwrap_or_default();
        let gvk: Value = serde_yaml::from_str(&gvk.yaml).unwrap_or_default();
        assert_eq!(
            gvk,
            json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
        );
        assert_eq!(cm.r#type.map(|t| t.value), Some(vec!["object".to_string()]));
        let props = cm.properties.unwrap_or_default().additional_properties;
        let prop = |n: &str| {
            props
                .iter()
                .find(|p| p.name == n)
                .and_then(|p| p.value.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            prop("metadata")._ref,
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let data = prop("data");
        let values = data.additional_properties.and_then(|a| a.oneof);
        assert!(
            matches!(&values, Some(gnostic::AdditionalPropertiesOneof::Schema(s))
                if s.r#type.as_ref().is_some_and(|t| t.value == ["string"])),
            "{values:?}"
        );
        let containers = schema("io.k8s.api.core.v1.PodSpec")
            .properties
            .unwrap_or_default()
            .additional_properties
            .into_iter()
            .find(|p| p.name == "containers")
            .and_then(|p| p.value)
            .unwrap_or_default();
        assert_eq!(
            containers
                .items
                .map(|i| i.schema.into_iter().map(|s| s._ref).collect::<Vec<_>>()),
            Some(vec![
                "#/definitions/io.k8s.api.core.v1.Container".to_string()
            ])
        );

        // The PATCH of a kind lists fieldValidation among its query parameters, as kubectl's
        // v2 parameter verifier looks for it.
        let paths = pb.paths.unwrap_or_default().path;
        let item = paths
            .iter()
            .find(|p| p.name == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
            .and_then(|p| p.value.clone())
            .unwrap_or_default();
        let patch = item.patch.unwrap_or_default();
        let names: Vec<String> = patch
            .parameters
            .iter()
            .filter_map(|p| {
                let Some(gnostic::ParametersItemOneof::Parameter(p)) = &p.oneof else {
                    return None;
                };
                match &p.oneof {
                    Some(gnostic::ParameterOneof::NonBodyParameter(nb)) => match &nb.oneof {
                        Some(gnostic::NonBodyParameterOneof::QueryParameterSubSchema(q)) => {
                            Some(q.name.clone())
                        }
                        _ => None,
                    },
                    Some(gnostic::ParameterOneof::BodyParameter(b)) => Some(format!(
                        "body:{}",
                        b.schema.clone().unwrap_or_default()._ref
                    )),
                    None => None,
                }
            })
            .collect();
        assert!(names.contains(&"fieldValidation".to_string()), "{names:?}");
        assert!(
            names.contains(&"body:#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into()),
            "{names:?}"
        );
        let gvk = patch
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .map(|e| e.value.clone().unwrap_or_default().yaml)
            .unwrap_or_default();
        let gvk: std::collections::BTreeMap<String, String> =
            serde_yaml::from_str(&gvk).unwrap_or_default();
        assert_eq!(gvk.get("kind").map(String::as_str), Some("Deployment"));
        let ok = patch
            .responses
            .unwrap_or_default()
            .response_code
            .into_iter()
            .find(|r| r.name == "200")
            .and_then(|r| r.value?.oneof);
        assert!(
            matches!(&ok, Some(gnostic::ResponseValueOneof::Response(r))
                if r.schema.as_ref().and_then(|s| s.schema.as_ref()).is_some_and(|s| s._ref == "#/definitions/io.k8s.api.apps.v1.Deployment")),
            "{ok:?}"
        );
    }

    #[tokio::test]
    async fn representations_etags_and_changes() {
        let catalog = catalog();
        let snapshot = catalog.snapshot();
        let v2 =
            |accept, inm| serve(&snapshot, &[], "/openapi/v2", &v2_request(accept, inm)).unwrap();

        let json = v2(None, None);
        assert_eq!(json.status(), StatusCode::OK);
        assert_eq!(json.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(json.headers()[header::VARY], "Accept");
        let etag = json.headers()[header::ETAG]
            .to_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(etag.len(), 130, "{etag}");
        assert!(json.headers().contains_key(header::LAST_MODIFIED));
        let bytes = body(json).await;
        assert_eq!(format!("\"{}\"", hash(&bytes)), etag);

        // kubectl's request.
        let pb = v2(
            Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            None,
        );
        assert_eq!(pb.status(), StatusCode::OK);
        assert_eq!(pb.headers()[header::CONTENT_TYPE], PROTOBUF_V2);
        assert_eq!(pb.headers()[header::ETAG], etag.as_str());
        assert!(gnostic::Document::decode(body(pb).await).is_ok());

        let cached = v2(
            Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            Some(&etag),
        );
        assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(cached.headers()[header::ETAG], etag.as_str());
        assert!(!cached.headers().contains_key(header::CONTENT_TYPE));
        assert!(body(cached).await.is_empty());
        let weak = format!("W/{etag}");
        assert_eq!(v2(None, Some(&weak)).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(v2(None, Some("\"other\"")).status(), StatusCode::OK);
        let since = |t: SystemTime| {
            let mut parts = v2_request(None, None);
            if let Ok(v) = HeaderValue::from_str(&http_date(t)) {
                parts.headers.insert(header::IF_MODIFIED_SINCE, v);
            }
            serve(&snapshot, &[], "/openapi/v2", &parts)
                .unwrap()
                .status()
        };
        let built = swagger(&snapshot, &[]).json.modified;
        assert_eq!(
            since(built + Duration::from_secs(5)),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(since(built - Duration::from_secs(5)), StatusCode::OK);

        // Accept negotiation: quality first, then the first acceptable clause.
        let ct = |accept| {
            v2(Some(accept), None)
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        assert_eq!(
            ct(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            ),
            Some(PROTOBUF_V2.to_string())
        );
        assert_eq!(ct("text/plain, */*;q=0.1"), Some("application/json".into()));
        assert_eq!(ct("application/*"), Some("application/json".into()));
        let refused = v2(Some("text/html"), None);
        assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
        assert_eq!(refused.headers()[header::VARY], "Accept");

        // Same snapshot: the same document; a CRD change: a new one, and back.
        assert!(Arc::ptr_eq(
            &swagger(&snapshot, &[]),
            &swagger(&snapshot, &[])
        ));
        catalog.set_custom(apiextensions::definition::resource_defs(&crontab_crd(
            false,
        )));
        let with_crd = swagger(&catalog.snapshot(), &[]);
        assert_ne!(with_crd.json.etag, swagger(&snapshot, &[]).json.etag);
        let has_crontab = |d: &SwaggerDocument| {
            serde_json::from_slice::<Value>(&d.json.bytes).is_ok_and(|v| {
                v["definitions"]
                    .get("com.example.stable.v1.CronTab")
                    .is_some()
            })
        };
        assert!(has_crontab(&with_crd));
        assert!(!has_crontab(&swagger(&snapshot, &[])));
        catalog.set_custom(vec![]);
        let without = swagger(&catalog.snapshot(), &[]);
        assert!(!has_crontab(&without));
        assert_eq!(without.json.bytes, swagger(&snapshot, &[]).json.bytes);
    }
}
