//! The watch cache's objects behind apimachinery's object accessors (`meta::Object`, as Go
//! reads a cached object through `metav1.Object`). The impl lives beside the type, so the
//! in-process controllers that read the cache (kube-controller-manager's informers) get the
//! cached `Arc`s as they are: no wrapper to allocate per object or per event.

use std::borrow::Cow;

use apimachinery::meta::Object;
use serde_json::Value;

use crate::watch_cache::CachedObject;

impl Object for CachedObject {
    fn key(&self) -> &str {
        CachedObject::key(self)
    }

    fn namespace(&self) -> &str {
        CachedObject::namespace(self)
    }

    fn name(&self) -> &str {
        CachedObject::name(self)
    }

    fn rv(&self) -> i64 {
        self.rv
    }

    fn value(&self) -> Value {
        CachedObject::value(self)
    }

    fn raw_json(&self) -> Cow<'_, [u8]> {
        CachedObject::raw_json(self)
    }
}
