//! Values transformed between their users and a backend: every value written goes through a
//! [`ValueTransformer`] chosen by its key, and every value read (get, range, watch events,
//! the current value carried by a conflict) comes back through it. This is where encryption
//! at rest sits (k8s.io/apiserver/pkg/storage/value: the etcd3 store calls
//! `TransformToStorage`/`TransformFromStorage` around each etcd operation); the backend never
//! sees the plain value, its users never see the stored one.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::{
    Error, Event, EventKind, KeyValue, ProgressRequester, RangeRequest, RangeResponse, Revision,
    Store, WatchItem, WatchStream,
};

/// A value as read back from storage.
pub struct FromStorage {
    /// The plain value; `None` when it is the stored value itself (nothing was transformed).
    pub value: Option<Bytes>,
    /// The transformer would not write the value this way today (kube's `stale`).
    pub stale: bool,
}

/// How values of some keys are stored (kube's `value.Transformer`). `key` is the storage
/// key, which authenticated encryption binds the value to (kube's `DefaultContext`).
pub trait ValueTransformer: Send + Sync + 'static {
    /// The plain value of a stored one, or why it cannot be read (a message for the user).
    fn transform_from_storage(&self, key: &str, stored: &Bytes) -> Result<FromStorage, String>;
    /// The value to store for a plain one.
    fn transform_to_storage(&self, key: &str, plain: &Bytes) -> Result<Bytes, String>;
}

/// Chooses the transformer of a key; `None` stores the key's values as they are.
pub type TransformerFor = Arc<dyn Fn(&str) -> Option<Arc<dyn ValueTransformer>> + Send + Sync>;

/// A [`Store`] whose values go through the transformers `transformer_for` chooses.
pub struct TransformingStore {
    inner: Arc<dyn Store>,
    transformer_for: TransformerFor,
}

impl TransformingStore {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Store>, transformer_for: TransformerFor) -> Arc<TransformingStore> {
        Arc::new(TransformingStore {
            inner,
            transformer_for,
        })
    }
}

fn transform_error(key: &str, message: String) -> Error {
    Error::Transform {
        key: key.to_owned(),
        message,
    }
}

/// The plain form of a stored key-value.
fn read(f: &TransformerFor, mut kv: KeyValue) -> Result<KeyValue, Error> {
    let Some(t) = f(&kv.key) else {
        return Ok(kv);
    };
    let out = t
        .transform_from_storage(&kv.key, &kv.value)
        .map_err(|m| transform_error(&kv.key, m))?;
    if let Some(value) = out.value {
        kv.value = value;
        // The store's packed form is of the stored value, not of this one.
        kv.packed = None;
    }
    kv.stale = out.stale;
    Ok(kv)
}

/// A key-value the inner store answered for a write of `plain`: the caller sees its value.
fn written(mut kv: KeyValue, plain: Bytes, transformed: bool) -> KeyValue {
    if transformed {
        kv.value = plain;
        kv.packed = None;
    }
    kv
}

/// The stored key-values an error carries, read back.
fn read_error(f: &TransformerFor, e: Error) -> Error {
    match e {
        Error::AlreadyExists { key, current } => match read(f, *current) {
            Ok(kv) => Error::AlreadyExists {
                key,
                current: Box::new(kv),
            },
            Err(e) => e,
        },
        Error::Conflict {
            key,
            expected,
            current,
        } => match read(f, *current) {
            Ok(kv) => Error::Conflict {
                key,
                expected,
                current: Box::new(kv),
            },
            Err(e) => e,
        },
        other => other,
    }
}

fn read_event(f: &TransformerFor, ev: Event) -> Result<Event, Error> {
    Ok(Event {
        kv: match ev.kind {
            // A delete's key-value carries no value.
            EventKind::Delete => ev.kv,
            EventKind::Put => read(f, ev.kv)?,
        },
        prev: ev.prev.map(|p| read(f, p)).transpose()?,
        kind: ev.kind,
    })
}

impl TransformingStore {
    fn transform_to_storage(&self, key: &str, plain: &Bytes) -> Result<(Bytes, bool), Error> {
        match (self.transformer_for)(key) {
            Some(t) => t
                .transform_to_storage(key, plain)
                .map(|v| (v, true))
                .map_err(|m| transform_error(key, m)),
            None => Ok((plain.clone(), false)),
        }
    }
}

#[async_trait]
impl Store for TransformingStore {
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), Error> {
        let (kv, rev) = self.inner.get(key).await?;
        Ok((
            kv.map(|kv| read(&self.transformer_for, kv)).transpose()?,
            rev,
        ))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Error> {
        let mut resp = self.inner.range(req).await?;
        resp.kvs = std::mem::take(&mut resp.kvs)
            .into_iter()
            .map(|kv| read(&self.transformer_for, kv))
            .collect::<Result<_, _>>()?;
        Ok(resp)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, Error> {
        let (stored, transformed) = self.transform_to_storage(key, &value)?;
        match self.inner.create(key, stored).await {
            Ok(kv) => Ok(written(kv, value, transformed)),
            Err(e) => Err(read_error(&self.transformer_for, e)),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue, Error> {
        let (stored, transformed) = self.transform_to_storage(key, &value)?;
        match self.inner.update(key, stored, expected).await {
            Ok(kv) => Ok(written(kv, value, transformed)),
            Err(e) => Err(read_error(&self.transformer_for, e)),
        }
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(KeyValue, Revision), Error> {
        match self.inner.delete(key, expected).await {
            Ok((kv, rev)) => Ok((read(&self.transformer_for, kv)?, rev)),
            Err(e) => Err(read_error(&self.transformer_for, e)),
        }
    }

    async fn watch_with_progress(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(WatchStream, Option<ProgressRequester>), Error> {
        let f = self.transformer_for.clone();
        let (stream, progress) = self.inner.watch_with_progress(prefix, after).await?;
        let stream: WatchStream = Box::pin(stream.map(move |item| {
            match item {
                Ok(WatchItem::Events(events)) => events
                    .into_iter()
                    .map(|ev| read_event(&f, ev))
                    .collect::<Result<Vec<_>, _>>()
                    .map(WatchItem::Events),
                other => other,
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

    /// Reverses the bytes under `/x/` and marks values that start with `old:` stale.
    struct Reverse;

    impl ValueTransformer for Reverse {
        fn transform_from_storage(
            &self,
            _key: &str,
            stored: &Bytes,
        ) -> Result<FromStorage, String> {
            if stored.as_ref() == b"bad" {
                return Err("failed to decrypt".into());
            }
            let mut v = stored.to_vec();
            v.reverse();
            Ok(FromStorage {
                stale: v.starts_with(b"old:"),
                value: Some(v.into()),
            })
        }
        fn transform_to_storage(&self, _key: &str, plain: &Bytes) -> Result<Bytes, String> {
            let mut v = plain.to_vec();
            v.reverse();
            Ok(v.into())
        }
    }

    fn store() -> (tempfile::TempDir, Arc<dyn Store>, Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Store> =
            crate::embedded::EmbeddedStore::open(dir.path(), Default::default()).expect("open");
        let f: TransformerFor = Arc::new(|key: &str| {
            key.starts_with("/x/")
                .then(|| Arc::new(Reverse) as Arc<dyn ValueTransformer>)
        });
        let outer: Arc<dyn Store> = TransformingStore::new(inner.clone(), f);
        (dir, inner, outer)
    }

    #[tokio::test]
    async fn values_are_transformed_both_ways_and_only_for_chosen_keys() {
        let (_dir, inner, outer) = store();
        let kv = outer
            .create("/x/a", Bytes::from("abc"))
            .await
            .expect("create");
        assert_eq!(kv.value, "abc");
        outer
            .create("/y/a", Bytes::from("abc"))
            .await
            .expect("create");
        assert_eq!(
            inner.get("/x/a").await.expect("get").0.expect("a").value,
            "cba"
        );
        assert_eq!(
            inner.get("/y/a").await.expect("get").0.expect("a").value,
            "abc"
        );
        let got = outer.get("/x/a").await.expect("get").0.expect("a");
        assert_eq!((got.value.as_ref(), got.stale), (&b"abc"[..], false));
        // A conflict carries the current value in plain.
        match outer.update("/x/a", Bytes::from("z"), 999).await {
            Err(Error::Conflict { current, .. }) => assert_eq!(current.value, "abc"),
            other => panic!("expected a conflict, got {other:?}"),
        }
        let listed = outer
            .range(RangeRequest {
                prefix: "/".into(),
                ..Default::default()
            })
            .await
            .expect("range");
        let values: Vec<_> = listed.kvs.iter().map(|kv| kv.value.clone()).collect();
        assert_eq!(values, vec![Bytes::from("abc"), Bytes::from("abc")]);
    }

    #[tokio::test]
    async fn watches_see_plain_values_and_stale_ones_are_marked() {
        let (_dir, inner, outer) = store();
        let rev = outer.current_revision().await.expect("rev");
        let mut w = outer.watch("/x/", rev).await.expect("watch");
        let kv = outer
            .create("/x/a", Bytes::from("one"))
            .await
            .expect("create");
        // Written under the inner store's feet as an older writer would have.
        inner
            .update("/x/a", Bytes::from(":dlo"), kv.mod_revision)
            .await
            .expect("update");
        let mut seen = vec![];
        while seen.len() < 2 {
            if let Some(Ok(WatchItem::Events(evs))) = w.next().await {
                seen.extend(evs);
            }
        }
        assert_eq!(seen[0].kv.value, "one");
        assert_eq!(seen[1].kv.value, "old:");
        assert!(seen[1].kv.stale);
        assert_eq!(
            seen[1].prev.as_ref().map(|p| p.value.clone()),
            Some("one".into())
        );
    }

    #[tokio::test]
    async fn an_unreadable_value_is_an_error_that_names_the_key() {
        let (_dir, inner, outer) = store();
        inner
            .create("/x/bad", Bytes::from("bad"))
            .await
            .expect("create");
        match outer.get("/x/bad").await {
            Err(Error::Transform { key, message }) => {
                assert_eq!(key, "/x/bad");
                assert_eq!(message, "failed to decrypt");
            }
            other => panic!("expected a transform error, got {other:?}"),
        }
        assert!(
            inner.get("/x/bad").await.expect("get").0.is_some(),
            "nothing lost"
        );
    }
}
