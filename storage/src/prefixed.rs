//! Keys under another root (kube-apiserver's `--etcd-prefix`): the server keys everything
//! under `/registry`, and this wrapper puts those keys under the configured prefix in the
//! backend and takes it off again on the way back (keys of reads, watch events and the
//! current key-values carried by errors). kube joins the prefix and a resource's key with
//! `path.Join`, so `--etcd-prefix=/karmada/` and `/karmada` key alike.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;

use crate::{
    Error, Event, KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision, Store,
    WatchItem, WatchStream,
};

/// A [`Store`] whose keys under `from` live under `to` in `inner`.
pub struct PrefixedStore {
    inner: Arc<dyn Store>,
    from: String,
    to: String,
}

/// kube's form of an etcd prefix: rooted, without a trailing `/` (`path.Join("/", prefix)`).
pub fn normalize(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        format!("/{trimmed}")
    }
}

impl PrefixedStore {
    /// Wraps `inner`, or returns it as it is when the two prefixes are the same.
    pub fn wrap(inner: Arc<dyn Store>, from: &str, to: &str) -> Arc<dyn Store> {
        let (from, to) = (normalize(from), normalize(to));
        if from == to {
            return inner;
        }
        Arc::new(PrefixedStore { inner, from, to })
    }

    fn down(&self, key: &str) -> String {
        match key.strip_prefix(self.from.as_str()) {
            Some(rest) if self.to == "/" => {
                if rest.starts_with('/') {
                    rest.to_string()
                } else {
                    format!("/{rest}")
                }
            }
            Some(rest) => format!("{}{rest}", self.to),
            None => key.to_string(),
        }
    }

    fn up(&self, key: String) -> String {
        let rest = if self.to == "/" {
            Some(key.as_str())
        } else {
            key.strip_prefix(self.to.as_str())
        };
        match rest {
            Some(rest) => format!("{}{rest}", self.from),
            None => key,
        }
    }

    fn up_kv(&self, mut kv: KeyValue) -> KeyValue {
        kv.key = self.up(std::mem::take(&mut kv.key));
        kv
    }

    fn up_error(&self, e: Error) -> Error {
        match e {
            Error::AlreadyExists { key, current } => Error::AlreadyExists {
                key: self.up(key),
                current: Box::new(self.up_kv(*current)),
            },
            Error::Conflict {
                key,
                expected,
                current,
            } => Error::Conflict {
                key: self.up(key),
                expected,
                current: Box::new(self.up_kv(*current)),
            },
            Error::NotFound { key } => Error::NotFound { key: self.up(key) },
            Error::Transform { key, message } => Error::Transform {
                key: self.up(key),
                message,
            },
            other => other,
        }
    }
}

#[async_trait]
impl Store for PrefixedStore {
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error> {
        let (kv, rev) = self
            .inner
            .get(&self.down(key))
            .await
            .map_err(|e| self.up_error(e))?;
        Ok((kv.map(|kv| self.up_kv(kv)), rev))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error> {
        let req = RangeRequest {
            prefix: self.down(&req.prefix),
            start_after: req.start_after.map(|k| self.down(&k)),
            ..req
        };
        let mut resp = self.inner.range(req).await.map_err(|e| self.up_error(e))?;
        resp.kvs = std::mem::take(&mut resp.kvs)
            .into_iter()
            .map(|kv| self.up_kv(kv))
            .collect();
        Ok(resp)
    }

    async fn create(&self, key: &str, value: bytes::Bytes) -> Result<KeyValue, Error> {
        self.inner
            .create(&self.down(key), value)
            .await
            .map(|kv| self.up_kv(kv))
            .map_err(|e| self.up_error(e))
    }

    async fn update(
        &self,
        key: &str,
        value: bytes::Bytes,
        expected: Revision,
    ) -> Result<KeyValue, Error> {
        self.inner
            .update(&self.down(key), value, expected)
            .await
            .map(|kv| self.up_kv(kv))
            .map_err(|e| self.up_error(e))
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error> {
        self.inner
            .delete(&self.down(key), expected)
            .await
            .map(|(kv, rev)| (self.up_kv(kv), rev))
            .map_err(|e| self.up_error(e))
    }

    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
        let (stream, progress) = self
            .inner
            .watch_with_progress(&self.down(prefix), after)
            .await
            .map_err(|e| self.up_error(e))?;
        let (from, to) = (self.from.clone(), self.to.clone());
        let keys = PrefixedStore {
            inner: self.inner.clone(),
            from,
            to,
        };
        let stream: WatchStream = Box::pin(stream.map(move |item| {
            match item {
                Ok(WatchItem::Events(events)) => Ok(WatchItem::Events(
                    events
                        .into_iter()
                        .map(|ev| Event {
                            kind: ev.kind,
                            kv: keys.up_kv(ev.kv),
                            prev: ev.prev.map(|p| keys.up_kv(p)),
                        })
                        .collect(),
                )),
                Ok(other) => Ok(other),
                Err(e) => Err(keys.up_error(e)),
            }
        }));
        Ok((stream, progress))
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

    async fn health(&self) -> Result<(), Error> {
        self.inner.health().await
    }

    async fn db_size(&self) -> Result<u64, Error> {
        self.inner.db_size().await
    }

    async fn close(&self) -> Result<(), Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn stores(to: &str) -> (tempfile::TempDir, Arc<dyn Store>, Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Store> =
            crate::embedded::EmbeddedStore::open(dir.path(), Default::default()).expect("open");
        let outer = PrefixedStore::wrap(inner.clone(), "/registry", to);
        (dir, inner, outer)
    }

    #[test]
    fn prefixes_are_normalized_as_kube_joins_them() {
        assert_eq!(normalize("/registry"), "/registry");
        assert_eq!(normalize("registry/"), "/registry");
        assert_eq!(normalize("/a/b/"), "/a/b");
        assert_eq!(normalize("/"), "/");
    }

    #[tokio::test]
    async fn keys_live_under_the_prefix_and_come_back_without_it() {
        for to in ["/karmada/registry/", "/"] {
            let (_dir, inner, outer) = stores(to);
            let stored = |k: &str| {
                format!(
                    "{}{}",
                    normalize(to).trim_end_matches('/'),
                    &k["/registry".len()..]
                )
            };
            let rev = outer.current_revision().await.expect("rev");
            let mut watch = outer
                .watch("/registry/configmaps/", rev)
                .await
                .expect("watch");
            let kv = outer
                .create("/registry/configmaps/ns/a", Bytes::from("1"))
                .await
                .expect("create");
            assert_eq!(kv.key, "/registry/configmaps/ns/a");
            let raw = inner
                .get(&stored("/registry/configmaps/ns/a"))
                .await
                .expect("get")
                .0;
            assert!(raw.is_some(), "stored under {to}");
            match outer
                .create("/registry/configmaps/ns/a", Bytes::from("2"))
                .await
            {
                Err(Error::AlreadyExists { key, current }) => {
                    assert_eq!(key, "/registry/configmaps/ns/a");
                    assert_eq!(current.key, "/registry/configmaps/ns/a");
                }
                other => panic!("expected AlreadyExists, got {other:?}"),
            }
            outer
                .create("/registry/configmaps/ns/b", Bytes::from("3"))
                .await
                .expect("create b");
            let page = outer
                .range(RangeRequest {
                    prefix: "/registry/configmaps/".into(),
                    start_after: Some("/registry/configmaps/ns/a".into()),
                    ..Default::default()
                })
                .await
                .expect("range");
            let keys: Vec<_> = page.kvs.iter().map(|kv| kv.key.as_str()).collect();
            assert_eq!(keys, vec!["/registry/configmaps/ns/b"]);
            let mut seen = Vec::new();
            while seen.len() < 2 {
                if let Some(Ok(WatchItem::Events(evs))) = watch.next().await {
                    seen.extend(evs.into_iter().map(|e| e.kv.key));
                }
            }
            assert_eq!(
                seen,
                vec!["/registry/configmaps/ns/a", "/registry/configmaps/ns/b"]
            );
        }
    }
}
