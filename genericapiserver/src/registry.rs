//! The generic registry: create, get, list, update, delete of any stored resource over the
//! [`storage::Store`], with kube-apiserver's object semantics
//! (k8s.io/apiserver/pkg/registry/generic/registry/store.go).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use storage::{RangeRequest, Store};

use crate::admission::{self, Operation};
use crate::conversion;
use crate::error::{ApiError, success_status};
use crate::managed_fields;
use crate::object;
use crate::options::{ContinueToken, DeleteOptions, ListOptions, Propagation, RvMatch};
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;
use crate::storage_codec;
use crate::watch_cache::{CachedObject, Filter};

pub use apimachinery::meta::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

pub use crate::managed_fields::Subresource;
pub use crate::options::WriteContext;

/// The result of a list: items (served JSON) and list metadata.
pub struct ListPage {
    /// Items in key order.
    pub items: Vec<Arc<CachedObject>>,
    /// The list's resourceVersion.
    pub revision: i64,
    /// Continue token, when there are more.
    pub continue_token: Option<String>,
    /// remainingItemCount.
    pub remaining: Option<usize>,
}

/// What a delete did.
pub enum DeleteOutcome {
    /// The object is gone; the body is a Status (or the object for some kinds).
    Deleted(Value),
    /// The object is terminating (finalizers pending); the body is the object.
    Terminating(Value),
}

/// Registry operations on one resource.
pub struct Registry<'a> {
    state: &'a ApiState,
    def: Arc<ResourceDef>,
}

fn store_of(state: &ApiState) -> &Arc<dyn Store> {
    &state.store
}

impl<'a> Registry<'a> {
    /// The registry of `def`.
    pub fn new(state: &'a ApiState, def: Arc<ResourceDef>) -> Registry<'a> {
        Registry { state, def }
    }

    /// The resource.
    pub fn def(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    fn key(&self, ns: &str, name: &str) -> Result<String, ApiError> {
        self.def
            .key(ns, name)
            .ok_or_else(|| ApiError::method_not_allowed("get", &self.def.kind))
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.def.group, &self.def.plural, name)
    }

    fn relative_key<'k>(&self, key: &'k str) -> &'k str {
        key.strip_prefix(self.def.prefix().unwrap_or(""))
            .unwrap_or(key)
    }

    /// Reads one object (consistent read from storage).
    pub async fn get(&self, ns: &str, name: &str) -> Result<Value, ApiError> {
        let key = self.key(ns, name)?;
        let (kv, _) = store_of(self.state).get(&key).await?;
        let kv = kv.ok_or_else(|| self.not_found(name))?;
        let obj = storage_codec::decode_value(&self.def, &kv.value, kv.mod_revision)?;
        Ok(conversion::served(&self.def, obj))
    }

    /// Reads one object with kube's resourceVersion semantics for get (`"0"`: from cache).
    pub async fn get_with_rv(
        &self,
        ns: &str,
        name: &str,
        rv: Option<&str>,
    ) -> Result<Value, ApiError> {
        match rv {
            Some("0") => {
                let cache = self.state.cache(&self.def)?;
                let key = self.key(ns, name)?;
                cache
                    .get(&key)
                    .map(|o| o.value())
                    .ok_or_else(|| self.not_found(name))
            }
            Some(r) => {
                let want = object::parse_resource_version(r)?;
                let cache = self.state.cache(&self.def)?;
                if self.caught_up(&cache, want).await? {
                    let key = self.key(ns, name)?;
                    return cache
                        .get(&key)
                        .map(|o| o.value())
                        .ok_or_else(|| self.not_found(name));
                }
                // The store's current state is not older than `want` (checked above).
                self.get(ns, name).await
            }
            None => self.get(ns, name).await,
        }
    }

    /// Whether the cache reached `rev` (kube's waitUntilFreshAndBlock, with progress
    /// requests where the store answers them). False when it cannot be shown to: the store,
    /// which is then at least at `rev`, answers instead. A revision the store has not reached
    /// either is too large (kube's 504 with Retry-After).
    async fn caught_up(
        &self,
        cache: &crate::watch_cache::WatchCache,
        rev: i64,
    ) -> Result<bool, ApiError> {
        match cache
            .catch_up(rev, self.state.config.cache_freshness_wait)
            .await
        {
            Ok(_) => Ok(true),
            Err(crate::watch_cache::CacheError::Unprovable) => {
                if store_of(self.state).current_revision().await? >= rev {
                    Ok(false)
                } else {
                    Err(ApiError::too_large_resource_version(rev, cache.revision()))
                }
            }
            Err(_) => Err(ApiError::too_large_resource_version(rev, cache.revision())),
        }
    }

    /// Lists objects with kube's resourceVersion / limit / continue semantics.
    pub async fn list(&self, ns: &str, opts: &ListOptions) -> Result<ListPage, ApiError> {
        crate::fields::validate(&self.def, &opts.field_selector).map_err(ApiError::bad_request)?;
        let cache = self.state.cache(&self.def)?;
        let filter = Filter {
            namespace: if self.def.namespaced {
                ns.to_string()
            } else {
                String::new()
            },
            labels: opts.label_selector.clone(),
            fields: opts.field_selector.clone(),
        };
        let prefix = self.def.prefix().unwrap_or("").to_string();

        // Continuations are served at the revision of the first page.
        if let Some(tok) = &opts.continue_token {
            let start_after = format!("{prefix}{}", tok.start_after);
            return self
                .list_at(&cache, &filter, Some(start_after), opts.limit, tok.rv)
                .await;
        }

        let limit = opts.limit;
        match (opts.resource_version.as_deref(), opts.rv_match) {
            // "Any": whatever the cache has, never paged.
            (Some("0"), _) => {
                cache
                    .wait_for(0, self.state.config.cache_freshness_wait)
                    .await
                    .map_err(|_| ApiError::too_large_resource_version(0, cache.revision()))?;
                Ok(self.page(cache.list(&filter, None, 0)))
            }
            (Some(rv), RvMatch::NotOlderThan) | (Some(rv), RvMatch::Unset)
                if !(opts.rv_match == RvMatch::Unset && limit > 0) =>
            {
                let want = object::parse_resource_version(rv)?;
                if self.caught_up(&cache, want).await? {
                    Ok(self.page(cache.list(&filter, None, limit)))
                } else {
                    self.list_from_store(&filter, None, limit, 0).await
                }
            }
            // Exact (or legacy exact: an RV with a limit).
            (Some(rv), _) => {
                let want = object::parse_resource_version(rv)?;
                self.list_at(&cache, &filter, None, limit, want).await
            }
            // Most recent: a consistent read, from the cache once it is shown current, else
            // from the store (kube-apiserver's fallback without RequestWatchProgress).
            (None, _) => {
                match cache
                    .wait_fresh(
                        store_of(self.state).as_ref(),
                        self.state.config.cache_freshness_wait,
                    )
                    .await
                {
                    Ok(_) => Ok(self.page(cache.list(&filter, None, limit))),
                    Err(_) => self.list_from_store(&filter, None, limit, 0).await,
                }
            }
        }
    }

    fn page(&self, r: crate::watch_cache::ListResult) -> ListPage {
        ListPage {
            continue_token: r
                .continue_key
                .as_deref()
                .map(|k| ContinueToken::encode(r.revision, self.relative_key(k))),
            items: r.items,
            revision: r.revision,
            remaining: r.remaining,
        }
    }

    /// Lists exactly at `rev`: from the cache while its window holds every change since, else
    /// from the store's history.
    async fn list_at(
        &self,
        cache: &crate::watch_cache::WatchCache,
        filter: &Filter,
        start_after: Option<String>,
        limit: usize,
        rev: i64,
    ) -> Result<ListPage, ApiError> {
        // The page is "at rev", its continue token too, so every page is read at the first's.
        if let Some(r) = cache.list_at(rev, filter, start_after.as_deref(), limit) {
            return Ok(self.page(r));
        }
        self.list_from_store(filter, start_after, limit, rev).await
    }

    async fn list_from_store(
        &self,
        filter: &Filter,
        start_after: Option<String>,
        limit: usize,
        rev: i64,
    ) -> Result<ListPage, ApiError> {
        let prefix = if filter.namespace.is_empty() {
            self.def.prefix().unwrap_or("").to_string()
        } else {
            format!("{}{}/", self.def.prefix().unwrap_or(""), filter.namespace)
        };
        let mut items = Vec::new();
        let mut cursor = start_after;
        let mut read_rev = rev;
        let mut last_key = None;
        let mut more;
        let mut count_after = 0usize;
        loop {
            let resp = match store_of(self.state)
                .range(RangeRequest {
                    prefix: prefix.clone(),
                    start_after: cursor.clone().filter(|c| c.starts_with(&prefix)),
                    limit: if limit > 0 { limit.max(64) } else { 0 },
                    revision: read_rev,
                })
                .await
            {
                Ok(r) => r,
                Err(storage::Error::Compacted { .. }) => {
                    return Err(ApiError::expired(
                        "The resourceVersion for the provided list is too old.",
                    ));
                }
                Err(e) => return Err(e.into()),
            };
            // A read at a past revision answers with the store's current revision (etcd's
            // header): the list stays at the revision asked for, and a list of "now" stays at
            // the revision of its first read, so every page is one snapshot and a watch from
            // the list's resourceVersion misses nothing.
            if read_rev == 0 {
                read_rev = resp.revision;
            }
            more = resp.more;
            let n = resp.kvs.len();
            for (i, kv) in resp.kvs.into_iter().enumerate() {
                let o = CachedObject::from_stored(
                    &self.def,
                    Arc::from(kv.key.as_str()),
                    kv.mod_revision,
                    &kv.value,
                    kv.packed.as_ref(),
                )?;
                last_key = Some(kv.key.clone());
                if filter.matches(&o) {
                    items.push(Arc::new(o));
                    if limit > 0 && items.len() == limit {
                        let rest = n - i - 1;
                        more = more || rest > 0;
                        count_after = resp.count.saturating_sub(i + 1);
                        break;
                    }
                }
            }
            if !(limit > 0 && items.len() < limit && more) {
                break;
            }
            cursor = last_key.clone();
        }
        let continue_token = if limit > 0 && more {
            last_key
                .as_deref()
                .map(|k| ContinueToken::encode(read_rev, self.relative_key(k)))
        } else {
            None
        };
        let remaining = (continue_token.is_some() && filter.is_trivial()).then_some(count_after);
        Ok(ListPage {
            items,
            revision: read_rev,
            continue_token,
            remaining,
        })
    }

    /// Checks that a namespaced object's namespace exists and is not terminating
    /// (kube's NamespaceLifecycle admission; `name` is empty for generated names).
    async fn check_namespace(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        if !self.def.namespaced {
            return Ok(());
        }
        let namespaces = self
            .state
            .catalog
            .snapshot()
            .get("", "v1", "namespaces")
            .cloned()
            .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
        let key = namespaces
            .key("", ns)
            .ok_or_else(|| ApiError::internal("namespaces are not stored"))?;
        let (kv, _) = store_of(self.state).get(&key).await?;
        let kv = kv.ok_or_else(|| ApiError::not_found("", "namespaces", ns))?;
        let nsobj = storage_codec::decode_value(&namespaces, &kv.value, kv.mod_revision)?;
        if object::is_terminating(&nsobj) {
            // admission.NewForbidden's message, with NamespaceLifecycle's cause.
            let resource = self.def.qualified();
            let subject = if name.is_empty() {
                resource
            } else {
                format!("{resource} \"{name}\"")
            };
            let mut e = ApiError::forbidden_message(
                &self.def.group,
                &self.def.plural,
                name,
                format!(
                    "{subject} is forbidden: unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            if let Some(d) = e.details.as_mut() {
                d.causes.push(crate::error::Cause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {ns} is being terminated"),
                    field: "metadata.namespace".into(),
                });
            }
            return Err(e);
        }
        Ok(())
    }

    /// Normalizes apiVersion/kind and namespace of an incoming object against the URL.
    pub fn normalize_incoming(&self, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
        let Value::Object(map) = obj else {
            return Err(ApiError::bad_request(format!(
                "the body of the request must be a {} object",
                self.def.kind
            )));
        };
        let want_av = self.def.api_version();
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), Value::String(want_av.clone()));
            }
            Some(av) if av == want_av => {}
            Some(av) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({av}) does not match the expected API version ({want_av})"
                )));
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), Value::String(self.def.kind.clone()));
            }
            Some(k) if k == self.def.kind => {}
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({}) for {}",
                    self.def.kind,
                    self.def.qualified()
                )));
            }
        }
        if map
            .get("metadata")
            .is_some_and(|m| !m.is_object() && !m.is_null())
        {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
                self.def.kind, self.def.version, self.def.kind
            )));
        }
        let meta = object::meta_mut(obj);
        if self.def.namespaced {
            match meta.get("namespace").and_then(Value::as_str) {
                None | Some("") => {
                    meta.insert("namespace".into(), Value::String(ns.to_string()));
                }
                Some(n) if n == ns => {}
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    /// Creates an object (kube's `Store.Create` with `BeforeCreate`).
    pub async fn create(
        &self,
        ns: &str,
        obj: Value,
        ctx: &WriteContext,
    ) -> Result<Value, ApiError> {
        self.create_written(ns, obj, ctx)
            .await
            .and_then(Written::into_object)
    }

    /// [`Registry::create`], also returning the bytes stored.
    pub async fn create_written(
        &self,
        ns: &str,
        mut obj: Value,
        ctx: &WriteContext,
    ) -> Result<Written, ApiError> {
        self.normalize_incoming(ns, &mut obj)?;
        if object::resource_version(&obj)?.is_some() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        // Name or generateName.
        let generate = {
            let name = object::name(&obj);
            let gen_name = object::meta_str(&obj, "generateName");
            if name.is_empty() && gen_name.is_empty() {
                return Err(ApiError::invalid_field(
                    &self.def,
                    "",
                    "FieldValueRequired",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ));
            }
            name.is_empty().then(|| gen_name.to_string())
        };
        self.check_namespace(ns, object::name(&obj)).await?;

        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut candidate = obj.clone();
            if let Some(prefix) = &generate {
                let name = generate_name(prefix);
                object::meta_mut(&mut candidate).insert("name".into(), Value::String(name));
            }
            self.prepare_for_create(&mut candidate);
            let track = |obj: &mut Value| {
                if !ctx.apply {
                    managed_fields::track_update(
                        &self.def,
                        None,
                        obj,
                        &ctx.manager,
                        Subresource::Main,
                    );
                }
            };
            // Field ownership is recorded in the version written (kube's field manager runs
            // before conversion to the storage version).
            let converting = conversion::converts(&self.def);
            if converting {
                track(&mut candidate);
                conversion::to_storage(&self.def, &mut candidate)?;
            }
            let admitted = admission::admit(
                self.state,
                &self.def,
                Operation::Create,
                Subresource::Main,
                &mut candidate,
                None,
                ctx,
            )
            .await?;
            if !converting {
                track(&mut candidate);
            }
            let mut warnings = admission::warnings(&self.def, Subresource::Main, &candidate);
            warnings.extend(admitted.warnings);
            let name = object::name(&candidate).to_string();
            let key = self.key(ns, &name)?;
            if ctx.dry_run {
                // DryRunnableStorage.Create: nothing is written, but an existing object is
                // still AlreadyExists. The result has no resourceVersion, as kube's.
                if let (Some(existing), _) = store_of(self.state).get(&key).await? {
                    if generate.is_some() && attempts < 8 {
                        continue;
                    }
                    return Err(self.already_exists(&name, &existing));
                }
                return Ok(Written::unstored(conversion::served(&self.def, candidate))
                    .with_warnings(warnings));
            }
            let bytes = storage_codec::encode(&self.def, &candidate)?;
            self.check_stored_size(&name, &bytes)?;
            match store_of(self.state).create(&key, bytes.clone()).await {
                Ok(kv) => {
                    object::set_resource_version(&mut candidate, kv.mod_revision);
                    if converting {
                        return Ok(Written::unstored(conversion::served(&self.def, candidate))
                            .with_warnings(warnings)
                            .at(kv.mod_revision));
                    }
                    return Ok(Written {
                        obj: candidate,
                        revision: Some(kv.mod_revision),
                        json: self.served_json(&bytes),
                        partial: false,
                        warnings,
                    });
                }
                Err(storage::Error::AlreadyExists { current, .. }) => {
                    // kube retries generated names (RetryGenerateName, GA in 1.32).
                    if generate.is_some() && attempts < 8 {
                        continue;
                    }
                    return Err(self.already_exists(&name, &current));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Refuses an object whose stored form is over the size limit (etcd's default request
    /// limit): a 422 naming the object, before anything is written.
    fn check_stored_size(&self, name: &str, bytes: &[u8]) -> Result<(), ApiError> {
        let limit = self.state.config.max_stored_object_bytes;
        if bytes.len() <= limit {
            return Ok(());
        }
        Err(ApiError::invalid_field(
            &self.def,
            name,
            "FieldValueTooLong",
            "",
            format!(
                "Too long: may not be more than {limit} bytes (the object would be stored as {} bytes, over etcd's default request limit)",
                bytes.len()
            ),
        ))
    }

    /// The JSON a write stored, when the resource stores JSON text served as it is.
    fn served_json(&self, bytes: &Bytes) -> Option<Bytes> {
        (storage_codec::Encoding::of(&self.def).is_unstructured()
            && conversion::serves_stored_bytes(&self.def))
        .then(|| storage_codec::trimmed_json(bytes))
    }

    /// AlreadyExists for `name`, prefixed as kube's Store.Create does when the existing
    /// object is being deleted.
    fn already_exists(&self, name: &str, existing: &storage::KeyValue) -> ApiError {
        let mut e = ApiError::already_exists(&self.def.group, &self.def.plural, name);
        if let Ok(existing) =
            storage_codec::decode_value(&self.def, &existing.value, existing.mod_revision)
            && object::is_terminating(&existing)
        {
            e.message = format!("object is being deleted: {}", e.message);
        }
        e
    }

    /// kube's rest.BeforeCreate: server-owned metadata and a fresh status.
    fn prepare_for_create(&self, obj: &mut Value) {
        object::drop_empty_meta(obj);
        let generation = self.def.generation;
        let has_status = self.def.status;
        let m = object::meta_mut(obj);
        m.insert(
            "uid".into(),
            Value::String(crate::ids::uuid_v4().to_string()),
        );
        m.insert(
            "creationTimestamp".into(),
            Value::String(object::now_rfc3339()),
        );
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        m.remove("selfLink");
        m.remove("resourceVersion");
        if generation {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
        if has_status && let Value::Object(root) = obj {
            // Status is owned by the status subresource: a create starts with none.
            root.remove("status");
        }
    }

    /// Replaces an object (PUT), creating it when the kind allows create-on-update.
    /// Returns the stored object and whether it was created.
    pub async fn update(
        &self,
        ns: &str,
        name: &str,
        obj: Value,
        sub: Subresource,
        ctx: &WriteContext,
    ) -> Result<(Value, bool), ApiError> {
        self.update_written(ns, name, obj, sub, ctx)
            .await
            .and_then(|(w, created)| Ok((w.into_object()?, created)))
    }

    /// [`Registry::update`], also returning the bytes stored.
    pub async fn update_written(
        &self,
        ns: &str,
        name: &str,
        mut obj: Value,
        sub: Subresource,
        ctx: &WriteContext,
    ) -> Result<(Written, bool), ApiError> {
        self.normalize_incoming(ns, &mut obj)?;
        let body_name = object::name(&obj).to_string();
        if body_name.is_empty() {
            object::meta_mut(&mut obj).insert("name".into(), Value::String(name.to_string()));
        } else if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let obj_for_create = obj.clone();
        let unconditional = allow_unconditional_update(&self.def);
        let result = self
            .guaranteed_update_written(ns, name, sub, ctx, |_current| {
                // Store.Update: without a resourceVersion the update is unconditional only
                // where the kind's strategy allows it.
                if !unconditional && object::resource_version(&obj)?.is_none() {
                    return Err(self.resource_version_required(name));
                }
                Ok(obj.clone())
            })
            .await;
        match result {
            Err(e)
                if e.code == 404
                    && sub == Subresource::Main
                    && allow_create_on_update(&self.def) =>
            {
                let created = self.create_written(ns, obj_for_create, ctx).await?;
                Ok((created, true))
            }
            other => other.map(|v| (v, false)),
        }
    }

    /// The 422 kube's Store.Update gives an update without a resourceVersion of a kind that
    /// does not allow unconditional updates (its Kind is the resource, as kube words it).
    pub fn resource_version_required(&self, name: &str) -> ApiError {
        ApiError::invalid(
            &self.def.group,
            &self.def.plural,
            name,
            vec![crate::error::Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: 0x0: must be specified for an update".into(),
                field: "metadata.resourceVersion".into(),
            }],
        )
    }

    /// Reads the current object, computes the new one with `mutate`, and writes it with a
    /// compare-and-swap, retrying on races (kube's `GuaranteedUpdate`). A resourceVersion set
    /// by the caller in the new object is a precondition (409 on mismatch, no retry).
    pub async fn guaranteed_update<F>(
        &self,
        ns: &str,
        name: &str,
        sub: Subresource,
        ctx: &WriteContext,
        mutate: F,
    ) -> Result<Value, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        self.guaranteed_update_written(ns, name, sub, ctx, mutate)
            .await
            .and_then(Written::into_object)
    }

    /// A read-modify-write at the storage layer, retried on races, without the strategy,
    /// admission or field manager (kube's `Store.Storage.GuaranteedUpdate`, which the pod
    /// binding uses to set `spec.nodeName` and the PodScheduled condition in one write).
    /// Nothing is written on a dry run; the object `mutate` made is returned either way.
    pub async fn storage_update<F>(
        &self,
        ns: &str,
        name: &str,
        dry_run: bool,
        mut mutate: F,
    ) -> Result<Value, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        let key = self.key(ns, name)?;
        loop {
            let (kv, _) = store_of(self.state).get(&key).await?;
            let kv = kv.ok_or_else(|| self.not_found(name))?;
            let current = storage_codec::decode_value(&self.def, &kv.value, kv.mod_revision)?;
            let mut new = mutate(&current)?;
            if dry_run {
                return Ok(new);
            }
            let bytes = storage_codec::encode(&self.def, &new)?;
            match store_of(self.state)
                .update(&key, bytes, kv.mod_revision)
                .await
            {
                Ok(written) => {
                    object::set_resource_version(&mut new, written.mod_revision);
                    return Ok(new);
                }
                Err(storage::Error::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// [`Registry::guaranteed_update`], also returning the bytes stored.
    pub async fn guaranteed_update_written<F>(
        &self,
        ns: &str,
        name: &str,
        sub: Subresource,
        ctx: &WriteContext,
        mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        self.guaranteed_update_view(ns, name, sub, ctx, false, mutate)
            .await
    }

    /// [`Registry::guaranteed_update_written`] for a status write whose `mutate` reads and
    /// changes only `metadata` and `status` (a merge patch does; a JSON patch may test any
    /// member): when admission also reads only those, `mutate` gets the object without its
    /// other members, which are written back as stored (`status_write`).
    pub async fn guaranteed_status_update<F>(
        &self,
        ns: &str,
        name: &str,
        ctx: &WriteContext,
        mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        let view = admission::status_write_reads_only_status(self.state, &self.def);
        self.guaranteed_update_view(ns, name, Subresource::Status, ctx, view, mutate)
            .await
    }

    async fn guaranteed_update_view<F>(
        &self,
        ns: &str,
        name: &str,
        sub: Subresource,
        ctx: &WriteContext,
        status_view: bool,
        mut mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        let key = self.key(ns, name)?;
        let converting = conversion::converts(&self.def);
        // The partial view splices JSON text: custom resources' encoding only.
        let status_view =
            status_view && !converting && storage_codec::Encoding::of(&self.def).is_unstructured();
        loop {
            let (kv, _) = store_of(self.state).get(&key).await?;
            let kv = kv.ok_or_else(|| self.not_found(name))?;
            // A value another encoding wrote is rewritten even when nothing changed.
            let stale = kv.stale || storage_codec::is_stale(&self.def, &kv.value);
            // `stored` is the object in its storage version when the resource serves another.
            let mut stored = None;
            let (current, kept) = if status_view {
                crate::status_write::from_stored(&kv.value, kv.mod_revision)?
            } else {
                let current = storage_codec::decode_value(&self.def, &kv.value, kv.mod_revision)?;
                match conversion::on_read(&self.def, &current) {
                    Some(view) => {
                        if converting {
                            stored = Some(current);
                        }
                        (view, None)
                    }
                    None => (current, None),
                }
            };
            // The answers that carry the object as a value need it whole, and as served.
            let whole = |obj: Value| match &kept {
                Some(kept) => kept.complete(obj),
                None if converting => Ok(conversion::served(&self.def, obj)),
                None => Ok(obj),
            };
            let mut new = mutate(&current)?;
            let user_rv = object::resource_version(&new)?;
            if let Some(rv) = user_rv
                && rv != kv.mod_revision
            {
                return Err(ApiError::stale(&self.def.group, &self.def.plural, name));
            }
            let track = |old: &Value, obj: &mut Value| {
                if !ctx.apply {
                    managed_fields::track_update(&self.def, Some(old), obj, &ctx.manager, sub);
                }
            };
            // Field ownership is recorded in the version written, before conversion.
            if converting {
                track(&current, &mut new);
                conversion::to_storage(&self.def, &mut new)?;
            }
            let current = stored.unwrap_or(current);
            self.prepare_for_update(sub, &mut new, &current)?;
            let admitted = admission::admit(
                self.state,
                &self.def,
                Operation::Update,
                sub,
                &mut new,
                Some(&current),
                ctx,
            )
            .await?;
            // The strategies' PrepareForUpdate compares the specs after mutating admission
            // (which runs first in kube's Store.Update), so a field the client dropped and
            // admission defaults back is no change.
            if matches!(sub, Subresource::Main | Subresource::Finalize) {
                self.update_generation(&current, &mut new);
            }
            if !converting {
                track(&current, &mut new);
            }
            let mut warnings = admission::warnings(&self.def, sub, &new);
            warnings.extend(admitted.warnings);
            let bytes = match &kept {
                Some(kept) => kept.to_stored(&new)?,
                None => storage_codec::encode(&self.def, &new)?,
            };
            if !stale && storage_codec::unchanged(&self.def, &kv.value, &bytes) {
                // No change: kube skips the write and keeps the resourceVersion, unless the
                // stored form is stale (e.g. encrypted with a key that no longer writes):
                // then the update rewrites it, which is how keys are rotated.
                return Ok(Written::unstored(whole(current)?).with_warnings(warnings));
            }
            if ctx.dry_run {
                // What the write would store, with the resourceVersion it is based on
                // (DryRunnableStorage.GuaranteedUpdate returns the updated object as is).
                let mut would = whole(new)?;
                object::set_resource_version(&mut would, kv.mod_revision);
                return Ok(Written::unstored(would).with_warnings(warnings));
            }
            self.check_stored_size(name, &bytes)?;
            // A graceful deletion still under way is finished by its deleter (a pod's
            // kubelet), not by its last finalizer going.
            let grace_pending = object::meta(&current)
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64)
                .is_some_and(|g| g > 0);
            if object::is_terminating(&new)
                && object::finalizers(&new).is_empty()
                && !is_namespace_blocked(&self.def, &new)
                && !grace_pending
            {
                // The last finalizer is gone: the object is deleted (ShouldDeleteDuringUpdate).
                match store_of(self.state).delete(&key, kv.mod_revision).await {
                    Ok((_, rev)) => {
                        object::set_resource_version(&mut new, rev);
                        return Ok(Written::unstored(whole(new)?).with_warnings(warnings));
                    }
                    Err(storage::Error::Conflict { .. }) if user_rv.is_none() => continue,
                    Err(storage::Error::Conflict { .. }) => {
                        return Err(ApiError::stale(&self.def.group, &self.def.plural, name));
                    }
                    Err(storage::Error::NotFound { .. }) => return Err(self.not_found(name)),
                    Err(e) => return Err(e.into()),
                }
            }
            match store_of(self.state)
                .update(&key, bytes.clone(), kv.mod_revision)
                .await
            {
                Ok(kv) => {
                    object::set_resource_version(&mut new, kv.mod_revision);
                    if converting {
                        return Ok(Written::unstored(whole(new)?)
                            .with_warnings(warnings)
                            .at(kv.mod_revision));
                    }
                    return Ok(Written {
                        obj: new,
                        revision: Some(kv.mod_revision),
                        json: self.served_json(&bytes),
                        partial: kept.is_some(),
                        warnings,
                    });
                }
                Err(storage::Error::Conflict { .. }) if user_rv.is_none() => continue,
                Err(storage::Error::Conflict { .. }) => {
                    return Err(ApiError::stale(&self.def.group, &self.def.plural, name));
                }
                Err(storage::Error::NotFound { .. }) => return Err(self.not_found(name)),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// kube's rest.BeforeUpdate plus the status/main split of the strategies.
    fn prepare_for_update(
        &self,
        sub: Subresource,
        new: &mut Value,
        old: &Value,
    ) -> Result<(), ApiError> {
        let name = object::name(old).to_string();
        // uid, if given, must match (it is immutable); creationTimestamp is kept.
        let new_uid = object::uid(new).to_string();
        if !new_uid.is_empty() && new_uid != object::uid(old) {
            return Err(ApiError::invalid_field(
                &self.def,
                &name,
                "FieldValueInvalid",
                "metadata.uid",
                format!("Invalid value: \"{new_uid}\": field is immutable"),
            ));
        }
        match sub {
            Subresource::Status => {
                // Only status (and managedFields) come from the request. The request is
                // usually the stored object with a new status, so it is aligned in place.
                let new_has_managed =
                    object::meta(new).is_some_and(|m| m.contains_key("managedFields"));
                if let (Value::Object(root), Value::Object(old_root)) = (&mut *new, old)
                    && let (Some(Value::Object(meta)), Some(Value::Object(old_meta))) =
                        (root.get_mut("metadata"), old_root.get("metadata"))
                {
                    adopt(
                        meta,
                        old_meta,
                        if new_has_managed {
                            &["managedFields"]
                        } else {
                            &[]
                        },
                    );
                    adopt(root, old_root, &["status", "metadata"]);
                    object::meta_mut(new).remove("resourceVersion");
                    return Ok(());
                }
                let status = new.get("status").cloned();
                let managed = object::meta(new)
                    .and_then(|m| m.get("managedFields"))
                    .cloned();
                let mut merged = old.clone();
                if let Value::Object(root) = &mut merged {
                    match status {
                        Some(s) => {
                            root.insert("status".into(), s);
                        }
                        None => {
                            root.remove("status");
                        }
                    }
                }
                if let Some(mf) = managed {
                    object::meta_mut(&mut merged).insert("managedFields".into(), mf);
                }
                *new = merged;
                // The precondition (if any) was already checked against the current object.
                object::meta_mut(new).remove("resourceVersion");
                return Ok(());
            }
            Subresource::Main | Subresource::Finalize => {}
        }
        object::drop_empty_meta(new);
        let old_meta = object::meta(old).cloned().unwrap_or_default();
        let m = object::meta_mut(new);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old_meta.get(field) {
                Some(v) => {
                    m.insert(field.into(), v.clone());
                }
                None => {
                    m.remove(field);
                }
            }
        }
        m.remove("resourceVersion");
        m.remove("selfLink");
        if self.def.status
            && let Value::Object(root) = new
        {
            match old.get("status") {
                Some(s) => {
                    root.insert("status".into(), s.clone());
                }
                None => {
                    root.remove("status");
                }
            }
        }
        Ok(())
    }

    /// The generation rule of the strategies' PrepareForUpdate: kinds that track it keep the
    /// stored generation, plus one when anything outside metadata (and status) changed.
    fn update_generation(&self, old: &Value, new: &mut Value) {
        if self.def.generation {
            let old_gen = object::meta(old)
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            // deploymentStrategy.PrepareForUpdate also counts annotations, because the
            // Deployment controller copies them to its ReplicaSets.
            let annotations_changed = || {
                self.def.source == Source::BuiltIn
                    && self.def.group == "apps"
                    && self.def.kind == "Deployment"
                    && annotations_of(old) != annotations_of(new)
            };
            let changed = spec_changed(old, new, self.def.status) || annotations_changed();
            object::meta_mut(new).insert(
                "generation".into(),
                json!(if changed { old_gen + 1 } else { old_gen }),
            );
        } else {
            object::meta_mut(new).remove("generation");
        }
    }

    /// Deletes an object with kube's finalizer, grace-period and propagation semantics
    /// (Store.Delete with rest.BeforeDelete and updateForGracefulDeletionAndFinalizers).
    pub async fn delete(
        &self,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.key(ns, name)?;
        loop {
            let (kv, _) = store_of(self.state).get(&key).await?;
            let kv = kv.ok_or_else(|| self.not_found(name))?;
            let current = storage_codec::decode_value(&self.def, &kv.value, kv.mod_revision)?;
            let write = WriteContext {
                manager: String::new(),
                dry_run: opts.dry_run,
                apply: false,
            };
            admission::admit_delete(self.state, &self.def, &current, &write).await?;
            self.check_delete_preconditions(&current, opts)?;
            let mut updated = current.clone();
            let grace = match before_delete(&self.def, &mut updated, opts) {
                // A graceful deletion is under way: finalizers cannot change any more.
                GracefulDelete::Pending => {
                    return Ok(DeleteOutcome::Terminating(conversion::served(
                        &self.def, current,
                    )));
                }
                GracefulDelete::Graceful(period) => Some(period),
                GracefulDelete::NotGraceful => None,
            };

            let mut finalizers = object::finalizers(&current);
            match opts.propagation {
                Some(Propagation::Foreground) => {
                    finalizers.retain(|f| f != ORPHAN_FINALIZER);
                    if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                        finalizers.push(FOREGROUND_FINALIZER.into());
                    }
                }
                Some(Propagation::Orphan) => {
                    finalizers.retain(|f| f != FOREGROUND_FINALIZER);
                    if !finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                        finalizers.push(ORPHAN_FINALIZER.into());
                    }
                }
                Some(Propagation::Background) | None => {}
            }
            crate::crd::add_cleanup_finalizer(&self.def, &current, &mut finalizers);
            let namespace_pending = self.def.group.is_empty() && self.def.plural == "namespaces";
            let pending_finalizers = !finalizers.is_empty() || namespace_pending;
            if grace.is_none() && !pending_finalizers {
                if opts.dry_run {
                    return Ok(DeleteOutcome::Deleted(self.delete_body(&current)));
                }
                match self.delete_now(&key, &kv, current, name).await? {
                    Some(done) => return Ok(done),
                    None => continue,
                }
            }

            if grace.is_none() {
                // markAsDeleting: terminating now, with no grace, until the finalizers' owners
                // finish.
                if !object::is_terminating(&current) {
                    let m = object::meta_mut(&mut updated);
                    m.insert(
                        "deletionTimestamp".into(),
                        Value::String(object::now_rfc3339()),
                    );
                    if self.def.generation {
                        let g = m.get("generation").and_then(Value::as_i64).unwrap_or(1);
                        m.insert("generation".into(), json!(g + 1));
                    }
                    if namespace_pending {
                        object::set_path(&mut updated, ".status.phase", json!("Terminating"));
                    }
                    crate::crd::mark_terminating(&self.def, &mut updated);
                }
                object::meta_mut(&mut updated)
                    .insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            object::set_finalizers(&mut updated, &finalizers);
            if updated == current {
                // Nothing to write: already terminating with these finalizers.
                return Ok(DeleteOutcome::Terminating(conversion::served(
                    &self.def, current,
                )));
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Terminating(conversion::served(
                    &self.def, updated,
                )));
            }
            let bytes = storage_codec::encode(&self.def, &updated)?;
            let written = match store_of(self.state)
                .update(&key, bytes, kv.mod_revision)
                .await
            {
                Ok(kv) => kv,
                Err(storage::Error::Conflict { .. }) => continue,
                Err(storage::Error::NotFound { .. }) => return Err(self.not_found(name)),
                Err(e) => return Err(e.into()),
            };
            object::set_resource_version(&mut updated, written.mod_revision);
            if pending_finalizers || grace.is_some_and(|g| g > 0) {
                return Ok(DeleteOutcome::Terminating(conversion::served(
                    &self.def, updated,
                )));
            }
            // A graceful kind deleted with no grace: marked, then deleted at once (a racing
            // deleter winning is fine, as in kube).
            match self.delete_now(&key, &written, updated.clone(), name).await {
                Ok(Some(done)) => return Ok(done),
                Ok(None) => continue,
                Err(e) if e.code == 404 => {
                    return Ok(DeleteOutcome::Deleted(self.delete_body(&updated)));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Removes the object stored as `kv`; `None` when it changed meanwhile (retry).
    async fn delete_now(
        &self,
        key: &str,
        kv: &storage::KeyValue,
        mut last: Value,
        name: &str,
    ) -> Result<Option<DeleteOutcome>, ApiError> {
        match store_of(self.state).delete(key, kv.mod_revision).await {
            Ok((_, rev)) => {
                object::set_resource_version(&mut last, rev);
                Ok(Some(DeleteOutcome::Deleted(self.delete_body(&last))))
            }
            Err(storage::Error::Conflict { .. }) => Ok(None),
            Err(storage::Error::NotFound { .. }) => Err(self.not_found(name)),
            Err(e) => Err(e.into()),
        }
    }

    /// The precondition check of rest.BeforeDelete (it fails early, before storage's own):
    /// a Conflict on the kind (not the resource), worded as kube words it. Public for the
    /// writes a deletion makes first (an eviction's DisruptionTarget condition).
    pub fn check_delete_preconditions(
        &self,
        current: &Value,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let name = object::name(current);
        if let Some(uid) = &opts.precondition_uid
            && uid != object::uid(current)
        {
            return Err(ApiError::conflict(
                &self.def.group,
                &self.def.kind,
                name,
                &format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    object::uid(current)
                ),
            ));
        }
        let rv = object::meta_str(current, "resourceVersion");
        if let Some(want) = &opts.precondition_rv
            && want != rv
        {
            return Err(ApiError::conflict(
                &self.def.group,
                &self.def.kind,
                name,
                &format!(
                    "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
                ),
            ));
        }
        Ok(())
    }

    fn delete_body(&self, last: &Value) -> Value {
        if returns_deleted_object(&self.def) {
            last.clone()
        } else {
            success_status(
                &self.def.group,
                &self.def.plural,
                object::name(last),
                Some(object::uid(last)),
            )
        }
    }

    /// Deletes every matching object (deletecollection); returns the deleted objects.
    pub async fn delete_collection(
        &self,
        ns: &str,
        list_opts: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        let mut plain = list_opts.clone();
        plain.limit = 0;
        plain.continue_token = None;
        let page = self.list(ns, &plain).await?;
        let mut deleted = Vec::new();
        for item in page.items {
            match self.delete(item.namespace(), item.name(), opts).await {
                Ok(DeleteOutcome::Deleted(_)) => deleted.push(item.value()),
                Ok(DeleteOutcome::Terminating(v)) => deleted.push(v),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// What rest.BeforeDelete decided about a deletion.
#[derive(Debug, PartialEq, Eq)]
enum GracefulDelete {
    /// The kind deletes at once (or through finalizers only).
    NotGraceful,
    /// The object is now terminating with this grace period (seconds).
    Graceful(i64),
    /// A longer-or-equal graceful deletion is already under way: nothing changes.
    Pending,
}

/// rest.BeforeDelete's grace-period part with the pod strategy's CheckGracefulDelete, the
/// only graceful strategy of the kinds served: a scheduled, unfinished pod is given
/// `gracePeriodSeconds` (else its `terminationGracePeriodSeconds`, else 0) before its kubelet
/// removes it; `obj` gets the deletion timestamp and grace period. A second delete may only
/// shorten the period.
fn before_delete(def: &ResourceDef, obj: &mut Value, opts: &DeleteOptions) -> GracefulDelete {
    if !(def.group.is_empty() && def.plural == "pods") {
        return GracefulDelete::NotGraceful;
    }
    let meta = object::meta(obj).cloned().unwrap_or_default();
    let deletion_grace = meta
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if object::is_terminating(obj) {
        let Some(current) = deletion_grace.filter(|g| *g != 0) else {
            return GracefulDelete::NotGraceful;
        };
        let Some(period) = opts.grace_period_seconds.filter(|p| *p < current) else {
            return GracefulDelete::Pending;
        };
        let started = meta
            .get("deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(object::parse_time)
            .unwrap_or_else(jiff::Timestamp::now);
        let shortened = started
            .checked_sub(jiff::SignedDuration::from_secs(current))
            .and_then(|t| t.checked_add(jiff::SignedDuration::from_secs(period)))
            .unwrap_or(started);
        let m = object::meta_mut(obj);
        m.insert(
            "deletionTimestamp".into(),
            Value::String(object::format_time(shortened)),
        );
        m.insert("deletionGracePeriodSeconds".into(), json!(period));
        return GracefulDelete::Graceful(period);
    }
    let scheduled = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        obj.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    let period = if !scheduled || finished {
        0
    } else {
        opts.grace_period_seconds
            .or_else(|| {
                obj.pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_i64)
            })
            .unwrap_or(0)
    };
    let at = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(period))
        .unwrap_or(jiff::Timestamp::MAX);
    let m = object::meta_mut(obj);
    m.insert(
        "deletionTimestamp".into(),
        Value::String(object::format_time(at)),
    );
    m.insert("deletionGracePeriodSeconds".into(), json!(period));
    if let Some(g) = m
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        m.insert("generation".into(), json!(g + 1));
    }
    GracefulDelete::Graceful(period)
}

/// An object's annotations, none and empty alike (as `apiequality.Semantic` compares maps).
fn annotations_of(obj: &Value) -> Option<&serde_json::Map<String, Value>> {
    object::meta(obj)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
}

/// A namespace is kept while `spec.finalizers` is not empty, even without metadata finalizers.
fn is_namespace_blocked(def: &ResourceDef, obj: &Value) -> bool {
    def.group.is_empty()
        && def.plural == "namespaces"
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// Did anything outside metadata (and status, when it is a subresource) change?
pub fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
    // Maps are sorted by key, so the filtered entries compare in step, without copies.
    fn rest(v: &Value, status: bool) -> impl Iterator<Item = (&String, &Value)> {
        v.as_object()
            .into_iter()
            .flatten()
            .filter(move |(k, _)| *k != "metadata" && !(status && *k == "status"))
    }
    !rest(old, status_subresource).eq(rest(new, status_subresource))
}

/// Makes `target` hold `source`'s entries, except the keys in `keep`, which stay as they are
/// in `target`. Entries already equal are left alone, so nothing is copied for them.
fn adopt(target: &mut Map<String, Value>, source: &Map<String, Value>, keep: &[&str]) {
    target.retain(|k, _| keep.contains(&k.as_str()) || source.contains_key(k));
    for (k, v) in source {
        if !keep.contains(&k.as_str()) && target.get(k) != Some(v) {
            target.insert(k.clone(), v.clone());
        }
    }
}

/// Kinds whose PUT creates a missing object (kube's `AllowCreateOnUpdate`).
fn allow_create_on_update(def: &ResourceDef) -> bool {
    matches!(
        (def.group.as_str(), def.plural.as_str()),
        ("", "events")
            | ("", "endpoints")
            | ("coordination.k8s.io", "leases")
            | ("rbac.authorization.k8s.io", _)
    )
}

/// Whether an update without a resourceVersion is applied to the current object (kube's
/// `AllowUnconditionalUpdate`, true for most built-in strategies in 1.32 and for Karmada's
/// Cluster); custom resources, CRDs, APIServices, Leases and PodDisruptionBudgets require one.
pub fn allow_unconditional_update(def: &ResourceDef) -> bool {
    if def.served_as_crd() {
        return false;
    }
    !matches!(
        (def.group.as_str(), def.plural.as_str()),
        ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("apiregistration.k8s.io", "apiservices")
            | ("coordination.k8s.io", "leases")
            | ("policy", "poddisruptionbudgets")
    )
}

/// Kinds whose DELETE returns the deleted object rather than a Status (kube's
/// `ReturnDeletedObject`).
fn returns_deleted_object(def: &ResourceDef) -> bool {
    matches!(
        (def.group.as_str(), def.plural.as_str()),
        ("", "pods")
            | ("", "namespaces")
            | ("", "services")
            | ("", "persistentvolumeclaims")
            | ("", "persistentvolumes")
            | ("", "nodes")
            | ("apiextensions.k8s.io", "customresourcedefinitions")
    )
}

/// An object as a write left it, with the JSON stored for it when it was stored as JSON.
pub struct Written {
    /// The object as served (with its resourceVersion); see `partial`.
    obj: Value,
    /// The revision the object was stored at; None for dry runs, unchanged objects and
    /// deletions.
    pub revision: Option<i64>,
    /// The stored JSON text (no resourceVersion, no trailing newline) when the object is
    /// stored as JSON and served as stored.
    pub json: Option<Bytes>,
    /// `obj` has only the members a status write reads (`status_write`); the stored JSON
    /// has them all.
    partial: bool,
    /// The API warnings admission returned (kube sends them as `Warning` headers).
    pub warnings: Vec<String>,
}

impl Written {
    fn unstored(obj: Value) -> Written {
        Written {
            obj,
            revision: None,
            json: None,
            partial: false,
            warnings: Vec::new(),
        }
    }

    fn with_warnings(mut self, warnings: Vec<String>) -> Written {
        self.warnings = warnings;
        self
    }

    fn at(mut self, revision: i64) -> Written {
        self.revision = Some(revision);
        self
    }

    /// The stored JSON and the revision it was stored at, for answers that splice it.
    pub fn stored_json(&self) -> Option<(&Bytes, i64)> {
        self.json.as_ref().zip(self.revision)
    }

    /// The object as served.
    pub fn object(&self) -> Result<std::borrow::Cow<'_, Value>, ApiError> {
        match (self.stored_json(), self.partial) {
            (Some((json, rv)), true) => object::from_stored(json, rv).map(std::borrow::Cow::Owned),
            _ => Ok(std::borrow::Cow::Borrowed(&self.obj)),
        }
    }

    /// The object as served, owned.
    pub fn into_object(self) -> Result<Value, ApiError> {
        match (self.json, self.revision, self.partial) {
            (Some(json), Some(rv), true) => object::from_stored(&json, rv),
            _ => Ok(self.obj),
        }
    }
}

/// kube's SimpleNameGenerator: prefix (at most 58 chars) + 5 random characters.
pub fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut p: String = prefix.chars().take(58).collect();
    let bytes = crate::ids::uuid_v4();
    for b in bytes.as_bytes().iter().take(5) {
        p.push(ALPHABET[*b as usize % ALPHABET.len()] as char);
    }
    p
}

/// Waits for a cache to be usable; used by the server at start.
pub async fn wait_ready(state: &ApiState, timeout: Duration) -> Result<(), ApiError> {
    state.warm(timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names() {
        let n = generate_name("web-");
        assert!(n.starts_with("web-") && n.len() == 9);
        let long = "a".repeat(70);
        assert_eq!(generate_name(&long).len(), 63);
    }

    #[test]
    fn spec_change_detection() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"s": 2}});
        assert!(!spec_changed(&a, &b, true));
        assert!(spec_changed(&a, &b, false));
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(spec_changed(&a, &c, true));
    }

    use crate::resources::served as def;

    #[test]
    fn unconditional_updates_follow_the_strategies() {
        for (group, plural) in [
            ("", "configmaps"),
            ("", "pods"),
            ("apps", "deployments"),
            ("rbac.authorization.k8s.io", "roles"),
            ("cluster.karmada.io", "clusters"),
        ] {
            assert!(allow_unconditional_update(&def(group, plural)), "{plural}");
        }
        for (group, plural) in [
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("apiregistration.k8s.io", "apiservices"),
            ("coordination.k8s.io", "leases"),
            ("policy", "poddisruptionbudgets"),
            ("policy.karmada.io", "propagationpolicies"),
            ("work.karmada.io", "works"),
        ] {
            assert!(!allow_unconditional_update(&def(group, plural)), "{plural}");
        }
    }

    fn pod(node: &str, phase: &str, grace: Option<i64>) -> Value {
        let mut p = json!({"metadata": {"name": "p"}, "spec": {"nodeName": node}, "status": {"phase": phase}});
        if let Some(g) = grace {
            p["spec"]["terminationGracePeriodSeconds"] = json!(g);
        }
        p
    }

    fn grace(secs: Option<i64>) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: secs,
            ..Default::default()
        }
    }

    #[test]
    fn only_running_pods_are_deleted_gracefully() {
        let pods = def("", "pods");
        let before = jiff::Timestamp::now();
        let mut p = pod("n1", "Running", Some(30));
        assert_eq!(
            before_delete(&pods, &mut p, &grace(None)),
            GracefulDelete::Graceful(30)
        );
        assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30);
        let at: jiff::Timestamp = p["metadata"]["deletionTimestamp"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let ahead = at.duration_since(before).as_secs();
        assert!((29..=31).contains(&ahead), "{ahead}");
        // The request's grace period wins over the pod's.
        let mut p = pod("n1", "Running", Some(30));
        assert_eq!(
            before_delete(&pods, &mut p, &grace(Some(5))),
            GracefulDelete::Graceful(5)
        );
        // Unscheduled or finished pods, and pods without a grace period, go at once.
        for mut p in [
            pod("", "Pending", Some(30)),
            pod("n1", "Succeeded", Some(30)),
            pod("n1", "Failed", None),
            pod("n1", "Running", None),
        ] {
            assert_eq!(
                before_delete(&pods, &mut p, &grace(Some(10))),
                if p["status"]["phase"] == "Running" && p["spec"]["nodeName"] == "n1" {
                    GracefulDelete::Graceful(10)
                } else {
                    GracefulDelete::Graceful(0)
                }
            );
        }
        let mut p = pod("n1", "Running", None);
        assert_eq!(
            before_delete(&pods, &mut p, &grace(None)),
            GracefulDelete::Graceful(0)
        );
        // Other kinds have no graceful deletion.
        let mut cm = json!({"metadata": {"name": "c"}});
        assert_eq!(
            before_delete(&def("", "configmaps"), &mut cm, &grace(Some(30))),
            GracefulDelete::NotGraceful
        );
        assert!(cm["metadata"].get("deletionTimestamp").is_none());
    }

    #[test]
    fn a_second_delete_may_only_shorten_the_grace_period() {
        let pods = def("", "pods");
        let mut p = pod("n1", "Running", None);
        p["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:01:00Z");
        p["metadata"]["deletionGracePeriodSeconds"] = json!(60);
        let mut same = p.clone();
        assert_eq!(
            before_delete(&pods, &mut same, &grace(None)),
            GracefulDelete::Pending
        );
        assert_eq!(
            before_delete(&pods, &mut same, &grace(Some(90))),
            GracefulDelete::Pending
        );
        assert_eq!(same, p, "a pending deletion is left alone");
        let mut shorter = p.clone();
        assert_eq!(
            before_delete(&pods, &mut shorter, &grace(Some(10))),
            GracefulDelete::Graceful(10)
        );
        assert_eq!(
            shorter["metadata"]["deletionTimestamp"],
            "2030-01-01T00:00:10Z"
        );
        assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
        // A deletion already at grace 0 is not graceful any more: it completes.
        let mut done = p.clone();
        done["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert_eq!(
            before_delete(&pods, &mut done, &grace(None)),
            GracefulDelete::NotGraceful
        );
    }
}
