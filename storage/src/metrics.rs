//! kube-apiserver's storage request metrics (`k8s.io/apiserver/pkg/storage/etcd3/metrics`, v1.32):
//! `etcd_request_duration_seconds`, `etcd_requests_total` and `etcd_request_errors_total` by
//! operation and object type, recorded around every read and write of any backend — the
//! embedded store as etcd — by [`MeteredStore`].

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use component_base::metrics::{Desc, Kind, REQUEST_DURATION_BUCKETS, Registry};

use crate::{
    Error, KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision, Store, WatchStream,
};

/// `etcd_request_duration_seconds`.
pub static REQUEST_DURATION: Desc = Desc {
    name: "etcd_request_duration_seconds",
    help: "[ALPHA] Etcd request latency in seconds for each operation and object type.",
    labels: &["operation", "type"],
    kind: Kind::Histogram(&REQUEST_DURATION_BUCKETS),
};
/// `etcd_requests_total`.
pub static REQUESTS: Desc = Desc {
    name: "etcd_requests_total",
    help: "[ALPHA] Etcd request counts for each operation and object type.",
    labels: &["operation", "type"],
    kind: Kind::Counter,
};
/// `etcd_request_errors_total`.
pub static REQUEST_ERRORS: Desc = Desc {
    name: "etcd_request_errors_total",
    help: "[ALPHA] Etcd failed request counts for each operation and object type.",
    labels: &["operation", "type"],
    kind: Kind::Counter,
};

/// The object type of a storage key (kube's group-resource string: `deployments.apps`,
/// `configmaps`).
pub type TypeOf = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A [`Store`] that records every request's latency, count and failure.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
    registry: &'static Registry,
    type_of: TypeOf,
}

impl MeteredStore {
    /// Wraps `inner`, recording into `registry` with the types `type_of` names.
    pub fn new(inner: Arc<dyn Store>, registry: &'static Registry, type_of: TypeOf) -> Arc<Self> {
        Arc::new(MeteredStore {
            inner,
            registry,
            type_of,
        })
    }

    /// Records one request (`metrics.RecordEtcdRequest`). As kube's store, a request that
    /// reached the backend and got its answer is not an error even when the answer is "not
    /// found", "exists" or "changed": only failures of the backend are.
    fn record<T>(&self, operation: &str, key: &str, started: Instant, res: &Result<T, Error>) {
        let ty = (self.type_of)(key);
        let labels = [operation, ty.as_str()];
        self.registry
            .observe_duration(&REQUEST_DURATION, &labels, started.elapsed());
        self.registry.inc(&REQUESTS, &labels);
        let failed = match res {
            Ok(_) => false,
            Err(e) => !matches!(
                e,
                Error::NotFound { .. } | Error::AlreadyExists { .. } | Error::Conflict { .. }
            ),
        };
        if failed {
            self.registry.inc(&REQUEST_ERRORS, &labels);
        }
    }
}

#[async_trait]
impl Store for MeteredStore {
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error> {
        let started = Instant::now();
        let res = self.inner.get(key).await;
        self.record("get", key, started, &res);
        res
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error> {
        let started = Instant::now();
        let prefix = req.prefix.clone();
        let res = self.inner.range(req).await;
        self.record("list", &prefix, started, &res);
        res
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, Error> {
        let started = Instant::now();
        let res = self.inner.create(key, value).await;
        self.record("create", key, started, &res);
        res
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue, Error> {
        let started = Instant::now();
        let res = self.inner.update(key, value, expected).await;
        self.record("update", key, started, &res);
        res
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error> {
        let started = Instant::now();
        let res = self.inner.delete(key, expected).await;
        self.record("delete", key, started, &res);
        res
    }

    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
        self.inner.watch_with_progress(prefix, after).await
    }

    async fn current_revision(&self) -> Result<Revision, Error> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<(), Error> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision, Error> {
        self.inner.compacted_revision().await
    }

    async fn db_size(&self) -> Result<u64, Error> {
        self.inner.db_size().await
    }

    async fn health(&self) -> Result<(), Error> {
        self.inner.health().await
    }

    async fn close(&self) -> Result<(), Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_are_counted_by_operation_and_type_and_only_backend_failures_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Store> =
            crate::embedded::EmbeddedStore::open(dir.path(), Default::default()).expect("open");
        let registry: &'static Registry = Box::leak(Box::default());
        let type_of: TypeOf = Arc::new(|key: &str| {
            key.trim_start_matches("/registry/")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string()
        });
        let store = MeteredStore::new(inner, registry, type_of);
        let kv = store
            .create("/registry/configmaps/ns/a", Bytes::from_static(b"1"))
            .await
            .expect("create");
        assert!(
            store
                .create("/registry/configmaps/ns/a", Bytes::from_static(b"1"))
                .await
                .is_err()
        );
        store
            .update(
                "/registry/configmaps/ns/a",
                Bytes::from_static(b"2"),
                kv.mod_revision + 5,
            )
            .await
            .expect_err("a stale revision is a conflict");
        store.get("/registry/secrets/ns/b").await.expect("get");
        store
            .range(RangeRequest {
                prefix: "/registry/configmaps/".into(),
                ..Default::default()
            })
            .await
            .expect("list");
        store
            .update("", Bytes::from_static(b"x"), 1)
            .await
            .expect_err("an empty key is refused");
        let v = |d, op, ty| registry.value(d, &[op, ty]);
        assert_eq!(v(&REQUESTS, "create", "configmaps"), Some(2.0));
        assert_eq!(v(&REQUESTS, "update", "configmaps"), Some(1.0));
        assert_eq!(v(&REQUESTS, "get", "secrets"), Some(1.0));
        assert_eq!(v(&REQUESTS, "list", "configmaps"), Some(1.0));
        assert_eq!(v(&REQUEST_DURATION, "create", "configmaps"), Some(2.0));
        assert_eq!(
            v(&REQUEST_ERRORS, "create", "configmaps"),
            None,
            "exists is no failure"
        );
        assert_eq!(
            v(&REQUEST_ERRORS, "update", "configmaps"),
            None,
            "a conflict neither"
        );
        assert_eq!(v(&REQUEST_ERRORS, "update", ""), Some(1.0));
    }
}
