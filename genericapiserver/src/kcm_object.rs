//! The watch cache's objects as the kube-controller-manager controllers read them (their
//! `Object` interface). The impl lives beside the type, not in the server crate that hands the
//! objects over, so lists and events pass the cached `Arc`s as they are: no wrapper to
//! allocate per object or per event.

use std::borrow::Cow;

use kube_controller_manager::api_server::Object;
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
