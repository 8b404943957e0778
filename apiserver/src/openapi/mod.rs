//! OpenAPI v3 discovery (`/openapi/v3`) and per-group-version documents
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/G/V`) as kube-openapi's handler3 serves them:
//! each document's ETag is the SHA-512 of its bytes; the root links every document with its
//! hash; a request naming the current hash may be cached forever, a stale hash is redirected
//! to the current one. `kubectl apply/create/replace/edit` need these to validate fields on
//! the server, `kubectl explain` reads the schemas.
//!
//! Documents are built and serialized once per catalog snapshot (built-in and Karmada
//! group-versions once per process) and shared. `/openapi/v2` is not served (404), which
//! kubectl tolerates.

pub mod builtin;
pub mod document;

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

/// One serialized document.
#[derive(Debug)]
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
        let bytes = Bytes::from(serde_json::to_vec(v).unwrap_or_default());
        Document {
            etag: hash(&bytes),
            bytes,
            modified: SystemTime::now(),
        }
    }
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

type GroupCache = HashMap<String, Vec<(Vec<ResourceDef>, Arc<Document>)>>;

/// Group-version documents by their resources: built-in and Karmada ones never change, a
/// CRD's change only when it does.
fn group_cache() -> &'static Mutex<GroupCache> {
    static CACHE: OnceLock<Mutex<GroupCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// How many variants of one group-version's document are remembered.
const VARIANTS_KEPT: usize = 4;

fn group_document(group: &str, version: &str, defs: &[Arc<ResourceDef>]) -> Arc<Document> {
    let key = document::gv_key(group, version);
    let plain: Vec<ResourceDef> = defs.iter().map(|d| (**d).clone()).collect();
    let mut cache = group_cache().lock().unwrap_or_else(|p| p.into_inner());
    let variants = cache.entry(key).or_default();
    if let Some((_, doc)) = variants.iter().find(|(d, _)| *d == plain) {
        return doc.clone();
    }
    let doc = Arc::new(Document::new(&document::group_version_document(
        group, version, defs,
    )));
    variants.push((plain, doc.clone()));
    if variants.len() > VARIANTS_KEPT {
        variants.remove(0);
    }
    doc
}

fn build(snapshot: &CatalogSnapshot) -> Documents {
    let mut groups = HashMap::new();
    let mut root_paths = serde_json::Map::new();
    for (group, versions) in snapshot.groups() {
        for version in versions {
            let defs: Vec<Arc<ResourceDef>> = snapshot
                .resources
                .iter()
                .filter(|r| r.group == group && r.version == version)
                .cloned()
                .collect();
            let key = document::gv_key(&group, &version);
            let doc = group_document(&group, &version, &defs);
            root_paths.insert(
                key.clone(),
                json!({"serverRelativeURL": relative_url(&key, &doc.etag)}),
            );
            groups.insert(key, doc);
        }
    }
    Documents {
        root: Document::new(&json!({"paths": root_paths})),
        groups,
    }
}

fn relative_url(key: &str, etag: &str) -> String {
    format!("/openapi/v3/{key}?hash={etag}")
}

type SnapshotCache = Vec<(Weak<CatalogSnapshot>, Arc<Documents>)>;

/// The documents of a catalog snapshot, built on first use and kept while the snapshot
/// lives.
pub fn documents(snapshot: &Arc<CatalogSnapshot>) -> Arc<Documents> {
    static CACHE: OnceLock<Mutex<SnapshotCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    cache.retain(|(w, _)| w.strong_count() > 0);
    if let Some((_, docs)) = cache
        .iter()
        .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(snapshot)))
    {
        return docs.clone();
    }
    let docs = Arc::new(build(snapshot));
    cache.push((Arc::downgrade(snapshot), docs.clone()));
    docs
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

fn http_date(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn set(resp: &mut Response, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

fn respond(doc: &Document, parts: &http::request::Parts) -> Response {
    let quoted = format!("\"{}\"", doc.etag);
    let not_modified = parts
        .headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == quoted || t.trim() == "*"));
    let mut resp = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(doc.bytes.clone()))
    };
    set(&mut resp, header::CONTENT_TYPE, "application/json");
    set(&mut resp, header::ETAG, &quoted);
    set(&mut resp, header::LAST_MODIFIED, &http_date(doc.modified));
    resp
}

/// Serves `/openapi/v2` (404), `/openapi/v3` and `/openapi/v3/<group-version>`.
pub fn serve(
    snapshot: &Arc<CatalogSnapshot>,
    path: &str,
    parts: &http::request::Parts,
) -> Result<Response, ApiError> {
    if path == "/openapi/v2" {
        return Err(ApiError::path_not_found());
    }
    let docs = documents(snapshot);
    let key = path.trim_start_matches("/openapi/v3").trim_matches('/');
    if key.is_empty() {
        return Ok(respond(&docs.root, parts));
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
    let mut resp = respond(doc, parts);
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
    use super::*;
    use crate::resources::{Catalog, built_in, karmada};

    fn request(uri: &str, accept: Option<&str>) -> http::request::Parts {
        let mut b = http::Request::builder().uri(uri);
        if let Some(a) = accept {
            b = b.header(header::ACCEPT, a);
        }
        b.body(())
            .map(|r| r.into_parts().0)
            .unwrap_or_else(|_| panic!("request"))
    }

    async fn body_json(resp: Response) -> Value {
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    #[tokio::test]
    async fn root_hash_redirect_and_negotiation() {
        let mut all = built_in();
        all.extend(karmada());
        let catalog = Catalog::new(all);
        let snapshot = catalog.snapshot();
        let root = serve(&snapshot, "/openapi/v3", &request("/openapi/v3", None)).unwrap();
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
            "/openapi/v3/apis/apps/v1",
            &request("/openapi/v3/apis/apps/v1?hash=ABC", None),
        )
        .unwrap();
        assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(stale.headers()[header::LOCATION], url.as_str());

        let plain = serve(
            &snapshot,
            "/openapi/v3/apis/apps/v1",
            &request("/openapi/v3/apis/apps/v1", None),
        )
        .unwrap();
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(!plain.headers().contains_key(header::CACHE_CONTROL));

        let pb = serve(
            &snapshot,
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
            "/openapi/v3/apis/nope/v1",
            &request("/openapi/v3/apis/nope/v1", None),
        );
        assert!(missing.is_err_and(|e| e.code == 404));
        assert!(
            serve(&snapshot, "/openapi/v2", &request("/openapi/v2", None))
                .is_err_and(|e| e.code == 404)
        );

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
}
