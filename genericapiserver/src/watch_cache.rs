//! The watch cache (kube-apiserver's `Cacher`): one storage watch per resource feeds an
//! in-memory copy of every object plus a window of recent events. Lists and watches are
//! served from it; each event is serialized once and shared by every watcher.
//!
//! Lock order: only `state` (a std RwLock), never held across an await.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use storage::{EventKind, ProgressRequester, RangeRequest, Store, WatchItem};
use tokio::sync::watch;

use crate::fields;
use crate::object;
use crate::resources::ResourceDef;
use apimachinery::selectors::{FieldSelector, LabelSelector, Labels};

/// One object as the cache holds it: its served JSON and what selectors need.
#[derive(Debug)]
pub struct CachedObject {
    /// Storage key, shared by every version of the object and the cache's index: the event
    /// window holds many versions of each object.
    key: Arc<str>,
    /// Where `metadata.namespace` and `metadata.name` are.
    names: Names,
    /// `metadata.labels`, shared with the previous version of the object when unchanged (the
    /// event window holds many versions of each object; most writes leave labels alone).
    pub labels: Arc<Labels>,
    /// Kind-specific selectable field values, shared with the previous version of the object
    /// when unchanged (as the labels).
    pub fields: Option<fields::FieldValues>,
    /// resourceVersion of this state.
    pub rv: i64,
    body: Body,
}

/// Where an object's namespace and name are: inside its key, which ends with them for every
/// key the registry builds (`<prefix><namespace>/<name>`), so no version holds copies.
#[derive(Clone, Debug)]
enum Names {
    /// Byte ranges of the key: namespace (empty when cluster-scoped), then the name from
    /// this offset to the end.
    InKey { ns: (u32, u32), name: u32 },
    /// A key of another shape: the values themselves.
    Own(Arc<(String, String)>),
}

impl Names {
    fn locate(key: &str, namespace: &str, name: &str) -> Names {
        let in_key = key.strip_suffix(name).and_then(|before| {
            let name_at = u32::try_from(before.len()).ok()?;
            if namespace.is_empty() {
                return Some(Names::InKey {
                    ns: (0, 0),
                    name: name_at,
                });
            }
            let ns_at = before.strip_suffix('/')?.strip_suffix(namespace)?.len();
            let ns_at = u32::try_from(ns_at).ok()?;
            let ns_end = u32::try_from(ns_at as usize + namespace.len()).ok()?;
            Some(Names::InKey {
                ns: (ns_at, ns_end),
                name: name_at,
            })
        });
        in_key.unwrap_or_else(|| Names::Own(Arc::new((namespace.to_owned(), name.to_owned()))))
    }
}

/// How an object's served JSON is kept.
#[derive(Debug)]
enum Body {
    /// The stored bytes (shared with the store, not copied) and where the resourceVersion
    /// goes: the served JSON is written on demand straight into list and event buffers.
    Stored {
        bytes: Bytes,
        splice: crate::json_splice::Splice,
    },
    /// The store's packed form of the stored bytes (shared with the store, not copied; see
    /// `storage::packed`), the length of the JSON they start with (a stored value may end
    /// with whitespace after it) and where the resourceVersion goes: unpacked into list and
    /// event buffers on demand.
    Packed {
        bytes: Bytes,
        splice: crate::json_splice::Splice,
        len: u32,
    },
    /// Served JSON built from a parsed object (kinds with read-time conversion or defaults).
    Served(Bytes),
}

impl Body {
    /// The stored JSON, or the store's packed form of the value it starts when it has one
    /// (the JSON is the value up to trailing whitespace).
    fn of_stored(json: &Bytes, packed: Option<&Bytes>, splice: crate::json_splice::Splice) -> Body {
        match (packed, u32::try_from(json.len())) {
            (Some(p), Ok(len)) => Body::Packed {
                bytes: p.clone(),
                splice,
                len,
            },
            _ => Body::Stored {
                bytes: json.clone(),
                splice,
            },
        }
    }
}

/// The part of an object's metadata the cache indexes, read without building a tree.
#[derive(serde::Deserialize)]
struct MetaLite<'a> {
    #[serde(borrow, default)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: std::borrow::Cow<'a, str>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

impl CachedObject {
    /// Builds a cached object from stored bytes (which carry no resourceVersion). Built-in
    /// kinds serve the stored bytes with the resourceVersion spliced in, reading only the
    /// metadata (or, for kinds with their own field selectors, parsing the object for the
    /// field values); kinds with read-time conversions or defaults are parsed and served from
    /// the parsed object.
    /// `packed` is the store's packed form of `stored`, when it keeps one: the object then
    /// holds that instead.
    pub fn from_stored(
        def: &ResourceDef,
        key: Arc<str>,
        rv: i64,
        stored: &Bytes,
        packed: Option<&Bytes>,
    ) -> Result<CachedObject, crate::error::ApiError> {
        let json = match crate::storage_codec::decode(def, stored)? {
            crate::storage_codec::Decoded::Json(json) => json,
            crate::storage_codec::Decoded::Object(mut value) => {
                // Protobuf, or a storage version other than the one served: served from the
                // decoded object.
                object::set_resource_version(&mut value, rv);
                return Ok(CachedObject::from_value(def, key, rv, &value));
            }
        };
        // The store's packed form is of the whole stored value: usable when nothing was
        // trimmed off its end, or by unpacking all and dropping the rest.
        let stored = &json;
        if crate::conversion::serves_stored_bytes(def)
            && fields::has_kind_fields(def)
            && let Some(splice) = crate::json_splice::Splice::find(stored)
        {
            // Selectable fields (an Event's involvedObject, ...) need the parsed object, but
            // the served JSON is still the stored bytes: no second copy of each version.
            let value = object::from_stored(stored, rv)?;
            let body = Body::of_stored(stored, packed, splice);
            return Ok(CachedObject::indexed(def, key, rv, &value, body));
        }
        if crate::conversion::serves_stored_bytes(def)
            && let Some((splice, metadata)) = crate::json_splice::Splice::find_with_metadata(stored)
            && let Ok(meta) = serde_json::from_slice::<MetaLite<'_>>(&stored[metadata])
        {
            // Only the metadata object is parsed, not the whole object again.
            return Ok(CachedObject {
                names: Names::locate(&key, &meta.namespace, &meta.name),
                key,
                labels: Arc::new(meta.labels.as_ref().map(Labels::new).unwrap_or_default()),
                fields: None,
                rv,
                body: Body::of_stored(stored, packed, splice),
            });
        }
        let value = object::from_stored(stored, rv)?;
        Ok(CachedObject::from_value(def, key, rv, &value))
    }

    /// The same object stamped with another resourceVersion (a delete's); shares the bytes.
    pub fn restamped(&self, rv: i64) -> CachedObject {
        let body = match &self.body {
            Body::Stored { bytes, splice } => Body::Stored {
                bytes: bytes.clone(),
                splice: *splice,
            },
            Body::Packed { bytes, splice, len } => Body::Packed {
                bytes: bytes.clone(),
                splice: *splice,
                len: *len,
            },
            Body::Served(json) => match crate::json_splice::Splice::find(json) {
                Some(splice) => Body::Stored {
                    bytes: json.clone(),
                    splice,
                },
                None => Body::Served(json.clone()),
            },
        };
        CachedObject {
            key: self.key.clone(),
            names: self.names.clone(),
            labels: self.labels.clone(),
            fields: self.fields.clone(),
            rv,
            body,
        }
    }

    /// Appends the served JSON (with `metadata.resourceVersion`) to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match &self.body {
            Body::Stored { bytes, splice } => splice.write(bytes, self.rv, out),
            Body::Packed { bytes, splice, len } => {
                let at = out.len();
                storage::packed::unpack_into(bytes, out);
                if out.len() > at {
                    out.truncate(at + *len as usize);
                    splice.write_in_place(out, at, self.rv);
                }
            }
            Body::Served(json) => out.extend_from_slice(json),
        }
    }

    /// The length of the served JSON.
    pub fn json_len(&self) -> usize {
        match &self.body {
            Body::Stored { bytes, splice } => splice.stamped_len(bytes.len(), self.rv),
            Body::Packed { splice, len, .. } => splice.stamped_len(*len as usize, self.rv),
            Body::Served(json) => json.len(),
        }
    }

    /// The object's JSON as stored (without its resourceVersion) or, for kinds the cache
    /// parses, as served: for readers of other fields, without a copy.
    pub fn raw_json(&self) -> std::borrow::Cow<'_, [u8]> {
        match &self.body {
            Body::Stored { bytes, .. } => std::borrow::Cow::Borrowed(bytes),
            Body::Packed { bytes, len, .. } => {
                let mut json: Vec<u8> = storage::packed::unpack(bytes).into();
                json.truncate(*len as usize);
                std::borrow::Cow::Owned(json)
            }
            Body::Served(json) => std::borrow::Cow::Borrowed(json),
        }
    }

    /// Memory the object's JSON takes (packed or not).
    fn footprint(&self) -> usize {
        match &self.body {
            Body::Stored { bytes, .. } | Body::Packed { bytes, .. } | Body::Served(bytes) => {
                bytes.len()
            }
        }
    }

    /// The served JSON.
    pub fn json(&self) -> Bytes {
        match &self.body {
            Body::Served(json) => json.clone(),
            Body::Stored { .. } | Body::Packed { .. } => {
                let mut out = Vec::with_capacity(self.json_len());
                self.write_json(&mut out);
                Bytes::from(out)
            }
        }
    }

    /// Builds a cached object from a served JSON value.
    pub fn from_value(def: &ResourceDef, key: Arc<str>, rv: i64, value: &Value) -> CachedObject {
        let defaulted = crate::conversion::on_read(def, value);
        let value = defaulted.as_ref().unwrap_or(value);
        let body = Body::Served(object::to_json_bytes(value));
        CachedObject::indexed(def, key, rv, value, body)
    }

    /// A cached object whose selectable values are read from its parsed form `value`.
    fn indexed(
        def: &ResourceDef,
        key: Arc<str>,
        rv: i64,
        value: &Value,
        body: Body,
    ) -> CachedObject {
        CachedObject {
            names: Names::locate(&key, object::namespace(value), object::name(value)),
            key,
            labels: Arc::new(Labels::new(&object::labels(value))),
            fields: fields::has_kind_fields(def).then(|| fields::extract(def, value)),
            rv,
            body,
        }
    }

    /// Storage key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `metadata.namespace` (empty when cluster-scoped).
    pub fn namespace(&self) -> &str {
        match &self.names {
            Names::InKey { ns, .. } => &self.key[ns.0 as usize..ns.1 as usize],
            Names::Own(own) => &own.0,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        match &self.names {
            Names::InKey { name, .. } => &self.key[*name as usize..],
            Names::Own(own) => &own.1,
        }
    }

    /// Parses the served JSON.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json()).unwrap_or(Value::Null)
    }

    fn field(&self, f: &str) -> Option<String> {
        match f {
            "metadata.name" => Some(self.name().to_owned()),
            "metadata.namespace" => Some(self.namespace().to_owned()),
            _ => self
                .fields
                .iter()
                .flat_map(|values| values.iter())
                .find(|(k, _)| k.as_str() == f)
                .map(|(_, v)| v.to_string()),
        }
    }
}

/// Watch event types as they appear on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of one object, shared by every watcher.
#[derive(Debug)]
pub struct CacheEvent {
    /// Revision of the change.
    pub rv: i64,
    /// What happened to the key in storage.
    pub kind: EventType,
    /// The object after the change (for a delete: its last state stamped with the delete's rv).
    pub object: Arc<CachedObject>,
    /// The object before the change.
    pub prev: Option<Arc<CachedObject>>,
    /// Frames built for watchers, kept only while the event is among the newest of the window
    /// (`keeps_frames`): watchers that keep up share them, and the rest of the window holds
    /// each object version once. Boxed, so that the window's cooled events (most of it) do
    /// not carry empty slots each.
    frames: Option<Box<Frames>>,
    keeps_frames: AtomicBool,
    prev_as_deleted: OnceLock<Arc<CachedObject>>,
}

/// The wire forms of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameFormat {
    /// `{"type":T,"object":...}\n`.
    Json,
    /// A length-prefixed protobuf `WatchEvent`.
    Protobuf,
}

/// The frames of one event, per event type; protobuf ones only once a protobuf watcher asks.
#[derive(Debug, Default)]
struct Frames {
    json: [OnceLock<Bytes>; 3],
    protobuf: OnceLock<Box<[OnceLock<Bytes>; 3]>>,
}

impl CacheEvent {
    fn new(
        rv: i64,
        kind: EventType,
        object: Arc<CachedObject>,
        prev: Option<Arc<CachedObject>>,
    ) -> CacheEvent {
        CacheEvent {
            rv,
            kind,
            object,
            prev,
            frames: Some(Default::default()),
            keeps_frames: AtomicBool::new(true),
            prev_as_deleted: OnceLock::new(),
        }
    }

    /// The newline-terminated watch frame `{"type":T,"object":...}` for this event seen as
    /// type `t`, built once and shared.
    pub fn frame(&self, t: EventType) -> Bytes {
        self.shared_frame(FrameFormat::Json, t, |t, obj| {
            Some(object_frame(t.as_str(), obj))
        })
        .unwrap_or_default()
    }

    /// The frame of this event seen as type `t` in `format`, built by `build` from the object
    /// the event carries for that type, once for every watcher of that format. `None` when it
    /// cannot be built.
    pub fn shared_frame(
        &self,
        format: FrameFormat,
        t: EventType,
        build: impl FnOnce(EventType, &CachedObject) -> Option<Bytes>,
    ) -> Option<Bytes> {
        let slot = match &self.frames {
            Some(frames) if self.keeps_frames.load(Ordering::Relaxed) => match format {
                FrameFormat::Json => Some(&frames.json[t as usize]),
                FrameFormat::Protobuf => {
                    Some(&frames.protobuf.get_or_init(Default::default)[t as usize])
                }
            },
            _ => None,
        };
        if let Some(frame) = slot.and_then(OnceLock::get) {
            return Some(frame.clone());
        }
        let frame = build(t, &self.object_for(t))?;
        if let Some(slot) = slot {
            // Two watchers may build the same frame at once; either copy is the same.
            let _ = slot.set(frame.clone());
        }
        Some(frame)
    }

    /// The object an event of type `t` carries.
    pub fn object_for(&self, t: EventType) -> Arc<CachedObject> {
        if t == EventType::Deleted && self.kind != EventType::Deleted {
            // The object stopped matching: kube sends its previous state with the event's
            // resourceVersion.
            self.prev_stamped()
        } else {
            self.object.clone()
        }
    }

    /// Stops keeping frames; returns the same event without its frame slots, if it has them.
    fn cool(&self) -> Option<CacheEvent> {
        self.keeps_frames.store(false, Ordering::Relaxed);
        self.frames.as_ref()?;
        Some(CacheEvent {
            rv: self.rv,
            kind: self.kind,
            object: self.object.clone(),
            prev: self.prev.clone(),
            frames: None,
            keeps_frames: AtomicBool::new(false),
            prev_as_deleted: self.prev_as_deleted.clone(),
        })
    }

    /// Memory the event window keeps alive through this event besides the live objects: the
    /// version it superseded (or deleted). Its own object is live, or superseded by a later
    /// event that counts it.
    fn window_cost(&self) -> usize {
        WINDOW_EVENT_OVERHEAD + self.prev.as_ref().map_or(0, |p| p.footprint())
    }

    /// The previous state stamped with this event's revision (for "stopped matching").
    pub fn prev_stamped(&self) -> Arc<CachedObject> {
        self.prev_as_deleted
            .get_or_init(|| match &self.prev {
                Some(p) => Arc::new(p.restamped(self.rv)),
                None => self.object.clone(),
            })
            .clone()
    }
}

/// Takes the matching objects of a key-ordered walk that stay under `ns_prefix`, at most
/// `limit` (0: all), noting where a cut page continues and, without selectors, how many
/// objects remain.
fn page<'a>(
    objects: impl Iterator<Item = (&'a str, &'a Arc<CachedObject>)>,
    ns_prefix: &str,
    filter: &Filter,
    limit: usize,
) -> ListResult {
    let mut items = Vec::new();
    let mut continue_key = None;
    let mut remaining = None;
    let mut iter = objects.take_while(|(k, _)| k.starts_with(ns_prefix));
    for (k, o) in iter.by_ref() {
        if !filter.matches(o) {
            continue;
        }
        items.push(o.clone());
        if limit > 0 && items.len() == limit {
            continue_key = Some(k.to_string());
            break;
        }
    }
    if continue_key.is_some() {
        let rest = iter.count();
        if rest == 0 {
            continue_key = None;
        } else if filter.is_trivial() {
            remaining = Some(rest);
        }
    }
    ListResult {
        items,
        revision: 0,
        continue_key,
        remaining,
    }
}

/// Approximate memory one window event costs besides the object versions it holds.
const WINDOW_EVENT_OVERHEAD: usize = 200;

/// Builds a watch frame for a cached object, writing its JSON straight into the frame.
pub fn object_frame(t: &str, obj: &CachedObject) -> Bytes {
    let mut out = Vec::with_capacity(obj.json_len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(t.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    obj.write_json(&mut out);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// Builds a watch frame from a type and the object's JSON bytes.
pub fn frame(t: &str, object_json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object_json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(t.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object_json);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// What a list or watch selects.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only this namespace (`""`: all).
    pub namespace: String,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

impl Filter {
    /// Does the object pass?
    pub fn matches(&self, o: &CachedObject) -> bool {
        (self.namespace.is_empty() || o.namespace() == self.namespace)
            && self.labels.matches(&*o.labels)
            && self.fields.matches(|f| o.field(f))
    }

    /// True when the filter is a namespace restriction at most.
    pub fn is_trivial(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// How a watcher with this filter sees an event (None: not at all).
    pub fn event_type(&self, ev: &CacheEvent) -> Option<EventType> {
        let now = ev.kind != EventType::Deleted && self.matches(&ev.object);
        let before = match ev.kind {
            EventType::Added => false,
            EventType::Deleted => self.matches(ev.prev.as_ref().unwrap_or(&ev.object)),
            EventType::Modified => ev.prev.as_ref().is_some_and(|p| self.matches(p)),
        };
        match (before, now) {
            (false, true) => Some(EventType::Added),
            (true, true) => Some(EventType::Modified),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        }
    }
}

/// Why a cache read or watch could not be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheError {
    /// The requested revision is older than the cache's window.
    TooOld {
        /// Requested.
        requested: i64,
        /// Oldest servable.
        oldest: i64,
    },
    /// The cache did not reach the requested revision in time.
    NotReady {
        /// Requested.
        requested: i64,
        /// Current.
        current: i64,
    },
    /// The store cannot tell the cache how far it is (an etcd that does not answer progress
    /// requests in order): whether the cache holds the latest state cannot be shown, so a
    /// consistent read goes to the store, as kube-apiserver does without
    /// `RequestWatchProgress`.
    Unprovable,
}

struct State {
    objects: BTreeMap<Arc<str>, Arc<CachedObject>>,
    /// The cache reflects the store through this revision.
    revision: i64,
    /// Revision of the last change applied (<= revision).
    last_change: i64,
    /// Recent events, ascending rv; they cover (oldest, revision].
    events: VecDeque<Arc<CacheEvent>>,
    /// What the window alone keeps alive ([`CacheEvent::window_cost`] summed).
    window_bytes: usize,
    oldest: i64,
    ready: bool,
    /// Bumped when the cache relists: receivers of the previous state are closed.
    epoch: u64,
}

/// How often a cache waiting to be shown fresh asks its storage watch for progress again.
const PROGRESS_RETRY: Duration = Duration::from_millis(100);

/// Events at the end of the window whose frames are kept for watchers that keep up.
const HOT_EVENTS: usize = 1_024;

/// Events a window keeps whatever their size, so that watchers of a resource with large
/// objects can still fall a little behind.
const MIN_WINDOW_EVENTS: usize = 100;

/// Tunables.
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// Events kept for watch resumption. Watchers read live events from this window too, so
    /// a watcher further behind than the window is cut off (it resumes or relists).
    pub event_window: usize,
    /// Bytes of superseded object versions the window may keep alive (at least
    /// `MIN_WINDOW_EVENTS` events are kept whatever their size). A count alone is no bound:
    /// ten thousand versions of a 1 MiB ConfigMap are ten GiB.
    pub event_window_bytes: usize,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            event_window: 10_000,
            event_window_bytes: 4 << 20,
        }
    }
}

/// The cache of one resource.
pub struct WatchCache {
    def: Arc<ResourceDef>,
    prefix: String,
    opts: CacheOptions,
    state: RwLock<State>,
    revision_tx: watch::Sender<i64>,
    /// Times the cache listed the store (the first time and after losing its storage
    /// watch), kube's `apiserver_watch_cache_initializations_total`.
    initializations: AtomicU64,
    /// Watchers cut off for falling behind the event window, kube's
    /// `apiserver_terminated_watchers_total`.
    terminated_watchers: AtomicU64,
    /// Why the store's values cannot be read (a value the encryption configuration cannot
    /// decrypt), while that lasts: waiting for the cache is then pointless.
    unreadable: std::sync::Mutex<Option<String>>,
    /// Asks the storage watch feeding the cache for a progress report (kube's
    /// conditionalProgressRequester); None until it runs, or when the store cannot answer.
    progress: std::sync::Mutex<Option<ProgressRequester>>,
}

impl std::fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A subscription: the events to replay, then the live receiver.
pub struct Subscription {
    /// Events after the requested revision already in the window.
    pub backlog: Vec<Arc<CacheEvent>>,
    /// Initial objects (for watches without a revision), at `revision`.
    pub initial: Vec<Arc<CachedObject>>,
    /// The revision the subscription starts after (the requested one when the cache has not
    /// reached it yet).
    pub revision: i64,
    /// Live events.
    pub rx: EventReceiver,
}

/// Why a receiver returned no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// The receiver fell behind the event window; it continues with the oldest event kept.
    Lagged,
    /// The cache relisted or is gone: subscribe again.
    Closed,
}

/// Why [`EventReceiver::try_recv`] returned no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing new yet.
    Empty,
    /// See [`RecvError::Lagged`].
    Lagged,
    /// See [`RecvError::Closed`].
    Closed,
}

/// Events a receiver takes per visit to the cache's lock.
const RECV_BATCH: usize = 128;

/// A watcher's position in a cache's event window. Watchers read the window itself instead of
/// a per-cache broadcast buffer: nothing is allocated per resource or per watcher beyond this
/// cursor, and a slow watcher may fall as far behind as the window before it is cut off.
pub struct EventReceiver {
    /// Weak so that dropping the cache closes its receivers.
    cache: std::sync::Weak<WatchCache>,
    /// Signalled after every applied event (and on progress).
    wake: watch::Receiver<i64>,
    epoch: u64,
    /// Revision of the last event taken from the window.
    after: i64,
    batch: VecDeque<Arc<CacheEvent>>,
}

impl EventReceiver {
    /// Moves the next events of the window into `batch`.
    fn fill(&mut self) -> Result<(), RecvError> {
        let cache = self.cache.upgrade().ok_or(RecvError::Closed)?;
        let st = cache.read();
        if st.epoch != self.epoch {
            return Err(RecvError::Closed);
        }
        if self.after < st.oldest {
            // Events in (after, oldest] left the window before this receiver took them.
            self.after = st.oldest;
            return Err(RecvError::Lagged);
        }
        let start = st.events.partition_point(|e| e.rv <= self.after);
        self.batch
            .extend(st.events.range(start..).take(RECV_BATCH).cloned());
        if let Some(last) = self.batch.back() {
            self.after = last.rv;
        }
        Ok(())
    }

    /// The next event, waiting for one.
    pub async fn recv(&mut self) -> Result<Arc<CacheEvent>, RecvError> {
        loop {
            if let Some(ev) = self.batch.pop_front() {
                return Ok(ev);
            }
            // Marked seen before looking, so an event applied after the look still wakes us.
            self.wake.borrow_and_update();
            self.fill()?;
            if self.batch.is_empty() && self.wake.changed().await.is_err() {
                return Err(RecvError::Closed);
            }
        }
    }

    /// The next event if one is there.
    pub fn try_recv(&mut self) -> Result<Arc<CacheEvent>, TryRecvError> {
        if self.batch.is_empty() {
            self.fill().map_err(|e| match e {
                RecvError::Lagged => TryRecvError::Lagged,
                RecvError::Closed => TryRecvError::Closed,
            })?;
        }
        self.batch.pop_front().ok_or(TryRecvError::Empty)
    }

    /// True when every event the cache has applied was taken (false when the next `recv`
    /// reports a lag or a close).
    pub fn is_empty(&self) -> bool {
        if !self.batch.is_empty() {
            return false;
        }
        let Some(cache) = self.cache.upgrade() else {
            return false;
        };
        let st = cache.read();
        st.epoch == self.epoch
            && self.after >= st.oldest
            && st.events.back().is_none_or(|e| e.rv <= self.after)
    }

    /// The receiver as a stream; it ends when the receiver is closed.
    pub fn into_stream(
        self,
    ) -> impl futures::Stream<Item = Result<Arc<CacheEvent>, RecvError>> + Send {
        futures::stream::unfold(self, |mut rx| async move {
            match rx.recv().await {
                Err(RecvError::Closed) => None,
                r => Some((r, rx)),
            }
        })
    }
}

/// A consistent view of matching objects.
pub struct ListResult {
    /// Matching objects in key order.
    pub items: Vec<Arc<CachedObject>>,
    /// The revision the list reflects.
    pub revision: i64,
    /// Key to continue after, when cut by the limit.
    pub continue_key: Option<String>,
    /// Objects remaining after this page (only without selectors).
    pub remaining: Option<usize>,
}

impl WatchCache {
    /// Creates the cache of a stored resource (it is empty until [`WatchCache::run`] lists).
    pub fn new(def: Arc<ResourceDef>, opts: CacheOptions) -> Arc<WatchCache> {
        let prefix = def.prefix().unwrap_or_default().to_string();
        let (revision_tx, _) = watch::channel(0);
        Arc::new(WatchCache {
            def,
            prefix,
            opts,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                revision: 0,
                last_change: 0,
                events: VecDeque::new(),
                window_bytes: 0,
                oldest: 0,
                ready: false,
                epoch: 0,
            }),
            revision_tx,
            initializations: AtomicU64::new(0),
            terminated_watchers: AtomicU64::new(0),
            unreadable: std::sync::Mutex::new(None),
            progress: std::sync::Mutex::new(None),
        })
    }

    /// Times the cache has listed the store.
    pub fn initializations(&self) -> u64 {
        self.initializations.load(Ordering::Relaxed)
    }

    /// Watchers cut off so far for falling behind the event window.
    pub fn terminated_watchers(&self) -> u64 {
        self.terminated_watchers.load(Ordering::Relaxed)
    }

    /// Counts a watcher cut off for falling behind the event window.
    pub fn note_terminated_watcher(&self) {
        self.terminated_watchers.fetch_add(1, Ordering::Relaxed);
    }

    /// The resource this cache holds.
    pub fn def(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The revision the cache reflects (0 until it has listed).
    pub fn revision(&self) -> i64 {
        self.read().revision
    }

    /// True once the initial list is loaded.
    pub fn is_ready(&self) -> bool {
        self.read().ready
    }

    /// Why the cache cannot list the store's values, when a stored value cannot be
    /// transformed (decrypted).
    pub fn unreadable(&self) -> Option<String> {
        self.unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// True when no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the cache in sync with the store until the task is dropped.
    pub async fn run(self: Arc<Self>, store: Arc<dyn Store>) {
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.sync_once(&store).await {
                Ok(()) => backoff = Duration::from_millis(100),
                Err(e) => {
                    if let storage::Error::Transform { .. } = &e {
                        *self.unreadable.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(e.to_string());
                        // Wakes the waiters, which give up rather than time out.
                        self.revision_tx.send_modify(|_| {});
                    }
                    tracing::warn!(prefix = %self.prefix, error = %e, "watch cache lost its storage watch; relisting");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn sync_once(&self, store: &Arc<dyn Store>) -> Result<(), storage::Error> {
        let resp = store
            .range(RangeRequest {
                prefix: self.prefix.clone(),
                ..Default::default()
            })
            .await?;
        *self.unreadable.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let mut objects = BTreeMap::new();
        for kv in resp.kvs {
            let key: Arc<str> = Arc::from(kv.key);
            match CachedObject::from_stored(
                &self.def,
                key.clone(),
                kv.mod_revision,
                &kv.value,
                kv.packed.as_ref(),
            ) {
                Ok(o) => {
                    objects.insert(key, Arc::new(o));
                }
                Err(e) => {
                    tracing::error!(key = %key, error = %e, "skipping undecodable stored object")
                }
            }
        }
        let rev = resp.revision;
        self.initializations.fetch_add(1, Ordering::Relaxed);
        {
            let mut st = self.write();
            st.last_change = objects.values().map(|o| o.rv).max().unwrap_or(0);
            st.objects = objects;
            st.revision = rev;
            st.events.clear();
            st.window_bytes = 0;
            st.oldest = rev;
            st.ready = true;
            // Watchers of the old state cannot be continued consistently: end them (they
            // resume from their last revision or relist, as with kube's cacher).
            st.epoch += 1;
        }
        self.revision_tx.send_replace(rev);

        let (mut stream, progress) = store.watch_with_progress(&self.prefix, rev).await?;
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = progress;
        while let Some(item) = stream.next().await {
            match item? {
                WatchItem::Events(events) => {
                    for ev in events {
                        self.apply(ev);
                    }
                }
                WatchItem::Progress(r) => {
                    let mut st = self.write();
                    if r > st.revision {
                        st.revision = r;
                    }
                    drop(st);
                    self.revision_tx.send_if_modified(|cur| {
                        if r > *cur {
                            *cur = r;
                            true
                        } else {
                            false
                        }
                    });
                }
            }
        }
        Err(storage::Error::Unavailable("storage watch ended".into()))
    }

    fn apply(&self, ev: storage::Event) {
        let rv = ev.kv.mod_revision;
        // Only this task writes the state, so the object can be built before taking the write
        // lock: readers (lists, new watchers) are never blocked by a parse.
        let prev = self.read().objects.get(ev.kv.key.as_str()).cloned();
        let key: Arc<str> = match &prev {
            Some(p) => p.key.clone(),
            None => Arc::from(ev.kv.key.as_str()),
        };
        let cache_ev = match ev.kind {
            EventKind::Put => {
                let obj = match CachedObject::from_stored(
                    &self.def,
                    key.clone(),
                    rv,
                    &ev.kv.value,
                    ev.kv.packed.as_ref(),
                ) {
                    Ok(mut o) => {
                        if let Some(p) = &prev {
                            if p.labels == o.labels {
                                o.labels = p.labels.clone();
                            }
                            if p.fields == o.fields {
                                o.fields = p.fields.clone();
                            }
                        }
                        Arc::new(o)
                    }
                    Err(e) => {
                        tracing::error!(key = %key, error = %e, "skipping undecodable stored object");
                        let mut st = self.write();
                        st.revision = st.revision.max(rv);
                        return;
                    }
                };
                let t = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                CacheEvent::new(rv, t, obj, prev)
            }
            EventKind::Delete => {
                let Some(p) = prev else {
                    let mut st = self.write();
                    st.revision = st.revision.max(rv);
                    return;
                };
                // A deleted object is its last state with the delete's revision.
                let obj = Arc::new(p.restamped(rv));
                CacheEvent::new(rv, EventType::Deleted, obj, Some(p))
            }
        };
        let mut st = self.write();
        match cache_ev.kind {
            EventType::Deleted => {
                st.objects.remove(&*key);
            }
            _ => {
                st.objects.insert(key, cache_ev.object.clone());
            }
        }
        let cache_ev = Arc::new(cache_ev);
        st.revision = st.revision.max(rv);
        st.last_change = rv;
        st.window_bytes += cache_ev.window_cost();
        st.events.push_back(cache_ev.clone());
        if let Some(i) = st.events.len().checked_sub(HOT_EVENTS + 1)
            && let Some(cooled) = st.events[i].cool()
        {
            st.events[i] = Arc::new(cooled);
        }
        while st.events.len() > self.opts.event_window
            || (st.window_bytes > self.opts.event_window_bytes
                && st.events.len() > MIN_WINDOW_EVENTS)
        {
            if let Some(old) = st.events.pop_front() {
                st.window_bytes = st.window_bytes.saturating_sub(old.window_cost());
                st.oldest = old.rv;
            }
        }
        let r = st.revision;
        drop(st);
        self.revision_tx.send_replace(r);
    }

    /// Waits until the cache reflects at least `rev`, up to `timeout`.
    pub async fn wait_for(&self, rev: i64, timeout: Duration) -> Result<(), CacheError> {
        let mut rx = self.revision_tx.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let st = self.read();
                if st.ready && st.revision >= rev {
                    return Ok(());
                }
                if !st.ready && self.unreadable().is_some() {
                    return Err(CacheError::NotReady {
                        requested: rev,
                        current: st.revision,
                    });
                }
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    let st = self.read();
                    if st.ready && st.revision >= rev {
                        return Ok(());
                    }
                    return Err(CacheError::NotReady {
                        requested: rev,
                        current: st.revision,
                    });
                }
            }
        }
    }

    /// Waits until the cache reflects everything the store holds now: reads the store's
    /// current revision (a quorum read), then [`WatchCache::catch_up`] to it. Returns the
    /// cache's revision.
    pub async fn wait_fresh(
        &self,
        store: &dyn Store,
        timeout: Duration,
    ) -> Result<i64, CacheError> {
        let rev = store
            .current_revision()
            .await
            .map_err(|_| CacheError::NotReady {
                requested: 0,
                current: self.revision(),
            })?;
        self.catch_up(rev, timeout).await
    }

    /// Waits until the cache reflects at least `rev`, asking the storage watch for progress
    /// while it is behind (as kube's watch cache does with etcd's `RequestProgress`), up to
    /// `timeout`; returns the cache's revision. When the store cannot answer progress
    /// requests, a listed cache that is behind fails at once with
    /// [`CacheError::Unprovable`]: it may be current with nothing to show for it, and a read
    /// from the store is then cheaper than waiting for an event that may never come.
    pub async fn catch_up(&self, rev: i64, timeout: Duration) -> Result<i64, CacheError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let (ready, revision) = {
                let st = self.read();
                (st.ready, st.revision)
            };
            if ready && revision >= rev {
                return Ok(revision);
            }
            let requester = self
                .progress
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
            match requester {
                // Not listed yet: the list itself brings it to a revision at least `rev`.
                None if !ready => self.wait_for(rev, wait).await?,
                None => return Err(CacheError::Unprovable),
                Some(requester) => {
                    requester.request();
                    // An etcd watch that was not synced when asked drops the request (3.4.31
                    // and later answer synced watches only): ask again after a while.
                    match self.wait_for(rev, wait.min(PROGRESS_RETRY)).await {
                        Ok(()) => {}
                        Err(CacheError::NotReady { .. }) if !wait.is_zero() => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// Lists matching objects from the current state, starting after `start_after` (a full
    /// key), at most `limit` (0: all).
    pub fn list(&self, filter: &Filter, start_after: Option<&str>, limit: usize) -> ListResult {
        let st = self.read();
        let (ns_prefix, after) = self.list_bounds(filter, start_after);
        let lower = after.map_or(Bound::Included(ns_prefix.as_str()), Bound::Excluded);
        let objects = st
            .objects
            .range::<str, _>((lower, Bound::Unbounded))
            .map(|(k, o)| (&**k, o));
        let mut r = page(objects, &ns_prefix, filter, limit);
        r.revision = st.revision;
        r
    }

    /// Lists matching objects as they were at `rev`, as [`WatchCache::list`] does, when the
    /// window still holds every change since: the state then is the current one with those
    /// changes undone. None when it does not (the caller reads the store's history).
    pub fn list_at(
        &self,
        rev: i64,
        filter: &Filter,
        start_after: Option<&str>,
        limit: usize,
    ) -> Option<ListResult> {
        let st = self.read();
        if !st.ready || rev < st.oldest || rev > st.revision {
            return None;
        }
        // Each key changed after `rev` was, at `rev`, what its first change since replaced.
        let start = st.events.partition_point(|e| e.rv <= rev);
        let mut undone: BTreeMap<&str, Option<&Arc<CachedObject>>> = BTreeMap::new();
        for ev in st.events.iter().skip(start) {
            undone.entry(&*ev.object.key).or_insert(ev.prev.as_ref());
        }
        let (ns_prefix, after) = self.list_bounds(filter, start_after);
        let lower = after.map_or(Bound::Included(ns_prefix.as_str()), Bound::Excluded);
        let mut now = st
            .objects
            .range::<str, _>((lower, Bound::Unbounded))
            .map(|(k, o)| (&**k, Some(o)))
            .peekable();
        let mut then = undone
            .range::<str, _>((lower, Bound::Unbounded))
            .map(|(k, o)| (*k, *o))
            .peekable();
        let merged = std::iter::from_fn(move || {
            let next = match (now.peek(), then.peek()) {
                (Some(a), Some(b)) if a.0 < b.0 => now.next(),
                (Some(a), Some(b)) if a.0 == b.0 => {
                    now.next();
                    then.next()
                }
                (_, Some(_)) => then.next(),
                (Some(_), None) => now.next(),
                (None, None) => None,
            };
            Some(next)
        })
        .map_while(|entry| entry)
        .filter_map(|(k, o)| o.map(|o| (k, o)));
        let mut r = page(merged, &ns_prefix, filter, limit);
        r.revision = rev;
        Some(r)
    }

    /// The key prefix a list covers, and the key it continues after when that is within it.
    fn list_bounds<'a>(
        &self,
        filter: &Filter,
        start_after: Option<&'a str>,
    ) -> (String, Option<&'a str>) {
        let ns_prefix = if filter.namespace.is_empty() {
            self.prefix.clone()
        } else {
            format!("{}{}/", self.prefix, filter.namespace)
        };
        let after = start_after.filter(|k| *k >= ns_prefix.as_str());
        (ns_prefix, after)
    }

    /// One object by key from the current state.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.read().objects.get(key).cloned()
    }

    /// A receiver of the events after the state `st` holds.
    fn receiver(self: &Arc<Self>, st: &State) -> EventReceiver {
        EventReceiver {
            cache: Arc::downgrade(self),
            wake: self.revision_tx.subscribe(),
            epoch: st.epoch,
            after: st.revision,
            batch: VecDeque::new(),
        }
    }

    /// Subscribes to changes after `after` (`None`: start with the current objects as
    /// initial events).
    pub fn subscribe(
        self: &Arc<Self>,
        after: Option<i64>,
        filter: &Filter,
    ) -> Result<Subscription, CacheError> {
        let st = self.read();
        match after {
            None => {
                let initial = st
                    .objects
                    .values()
                    .filter(|o| filter.matches(o))
                    .cloned()
                    .collect();
                Ok(Subscription {
                    backlog: vec![],
                    initial,
                    revision: st.revision,
                    rx: self.receiver(&st),
                })
            }
            Some(rev) => {
                if rev < st.oldest {
                    return Err(CacheError::TooOld {
                        requested: rev,
                        oldest: st.oldest,
                    });
                }
                // A revision the cache has not reached yet (a list read from the store, whose
                // resourceVersion is the store's) is watched from there on, as kube's cacher
                // does: the events after it arrive through the cache in order.
                let start = st.events.partition_point(|e| e.rv <= rev);
                let backlog = st.events.iter().skip(start).cloned().collect();
                let mut rx = self.receiver(&st);
                rx.after = rx.after.max(rev);
                Ok(Subscription {
                    backlog,
                    initial: vec![],
                    revision: st.revision.max(rev),
                    rx,
                })
            }
        }
    }

    /// The revision watch channel (for bookmarks).
    pub fn revision_watch(&self) -> watch::Receiver<i64> {
        self.revision_tx.subscribe()
    }

    /// Every object currently held (for controllers inside the server, e.g. GC).
    pub fn all(&self) -> Vec<Arc<CachedObject>> {
        self.read().objects.values().cloned().collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::resources::built_in;
    use apimachinery::selectors::LabelSelector;
    use bytes::Bytes;
    use serde_json::json;
    use std::collections::HashMap;

    fn cm_def() -> Arc<ResourceDef> {
        Arc::new(
            built_in()
                .into_iter()
                .find(|d| d.plural == "configmaps")
                .expect("configmaps"),
        )
    }

    /// A stored ConfigMap in namespace default.
    pub(crate) fn cm(name: &str, labels: serde_json::Value) -> Bytes {
        Bytes::from(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "default", "labels": labels}})
            .to_string(),
        )
    }

    #[test]
    fn names_are_read_from_the_key_or_kept_when_it_does_not_end_with_them() {
        let def = cm_def();
        let at = |key: &str, body: Bytes| {
            CachedObject::from_stored(&def, Arc::from(key), 3, &body, None).expect("cached")
        };
        let o = at("/registry/configmaps/default/a", cm("a", json!({})));
        assert!(matches!(o.names, Names::InKey { .. }));
        assert_eq!((o.namespace(), o.name()), ("default", "a"));
        assert_eq!(o.key(), "/registry/configmaps/default/a");
        let restamped = o.restamped(4);
        assert_eq!((restamped.namespace(), restamped.name()), ("default", "a"));
        // A key of another shape (not one the registry builds): the values are kept.
        let o = at("/elsewhere/x", cm("a", json!({})));
        assert!(matches!(o.names, Names::Own(_)));
        assert_eq!((o.namespace(), o.name()), ("default", "a"));
        let o = at("/registry/configmaps/other/a", cm("a", json!({})));
        assert_eq!((o.namespace(), o.name()), ("default", "a"));
        // Cluster-scoped.
        let ns = Bytes::from(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}"#);
        let o = at("/registry/namespaces/n", ns);
        assert!(matches!(o.names, Names::InKey { .. }));
        assert_eq!((o.namespace(), o.name()), ("", "n"));
    }

    /// A cache of ConfigMaps over a fresh embedded store, listed and ready.
    pub(crate) async fn setup(
        opts: CacheOptions,
    ) -> (tempfile::TempDir, Arc<dyn Store>, Arc<WatchCache>) {
        setup_with(cm_def(), opts).await
    }

    async fn setup_with(
        def: Arc<ResourceDef>,
        opts: CacheOptions,
    ) -> (tempfile::TempDir, Arc<dyn Store>, Arc<WatchCache>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = storage::embedded::EmbeddedStore::open(
            dir.path(),
            storage::embedded::EmbeddedOptions {
                progress_interval: Duration::from_millis(10),
                ..Default::default()
            },
        )
        .expect("store");
        let cache = WatchCache::new(def, opts);
        tokio::spawn(cache.clone().run(store.clone()));
        cache
            .wait_for(0, Duration::from_secs(5))
            .await
            .expect("ready");
        (dir, store, cache)
    }

    async fn next(rx: &mut EventReceiver) -> Arc<CacheEvent> {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("event in time")
            .expect("event")
    }

    #[tokio::test]
    async fn selector_transitions_and_resume() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let key = "/registry/configmaps/default/a";
        let kv = store
            .create(key, cm("a", json!({"app": "x"})))
            .await
            .expect("create");
        let filter = Filter {
            labels: LabelSelector::parse("app=x").expect("selector"),
            ..Default::default()
        };
        cache
            .wait_for(kv.mod_revision, Duration::from_secs(5))
            .await
            .expect("caught up");
        let mut sub = cache
            .subscribe(Some(kv.mod_revision), &filter)
            .expect("subscribe");
        // Stops matching: DELETED for this watcher; matches again: ADDED; change: MODIFIED.
        let kv2 = store
            .update(key, cm("a", json!({"app": "y"})), kv.mod_revision)
            .await
            .expect("update");
        let ev = next(&mut sub.rx).await;
        assert_eq!(filter.event_type(&ev), Some(EventType::Deleted));
        assert!(
            ev.frame(EventType::Deleted)
                .starts_with(b"{\"type\":\"DELETED\"")
        );
        let kv3 = store
            .update(key, cm("a", json!({"app": "x"})), kv2.mod_revision)
            .await
            .expect("update");
        assert_eq!(
            filter.event_type(&*next(&mut sub.rx).await),
            Some(EventType::Added)
        );
        let kv4 = store
            .update(
                key,
                cm("a", json!({"app": "x", "v": "2"})),
                kv3.mod_revision,
            )
            .await
            .expect("update");
        assert_eq!(
            filter.event_type(&*next(&mut sub.rx).await),
            Some(EventType::Modified)
        );
        store.delete(key, kv4.mod_revision).await.expect("delete");
        let del = next(&mut sub.rx).await;
        assert_eq!(filter.event_type(&del), Some(EventType::Deleted));
        assert_eq!(
            del.object.rv, del.rv,
            "a deleted object carries the delete's revision"
        );

        // Resuming from the first revision replays the same four events from the window.
        cache
            .wait_for(del.rv, Duration::from_secs(5))
            .await
            .expect("caught up");
        let resumed = cache
            .subscribe(Some(kv.mod_revision), &filter)
            .expect("resume");
        let types: Vec<_> = resumed
            .backlog
            .iter()
            .map(|e| filter.event_type(e))
            .collect();
        assert_eq!(
            types,
            vec![
                Some(EventType::Deleted),
                Some(EventType::Added),
                Some(EventType::Modified),
                Some(EventType::Deleted)
            ]
        );
    }

    #[tokio::test]
    async fn versions_share_unchanged_labels() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let key = "/registry/configmaps/default/l";
        let mut rx = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe")
            .rx;
        let kv = store
            .create(key, cm("l", json!({"app": "x", "tier": "web"})))
            .await
            .expect("create");
        let first = next(&mut rx).await;
        let kv = store
            .update(
                key,
                cm("l", json!({"app": "x", "tier": "web"})),
                kv.mod_revision,
            )
            .await
            .expect("update");
        let second = next(&mut rx).await;
        assert!(Arc::ptr_eq(&first.object.labels, &second.object.labels));
        store
            .update(key, cm("l", json!({"app": "y"})), kv.mod_revision)
            .await
            .expect("update");
        let third = next(&mut rx).await;
        assert!(!Arc::ptr_eq(&second.object.labels, &third.object.labels));
        assert_eq!(third.object.labels.get("app"), Some("y"));
        assert_eq!(third.object.labels.len(), 1);
    }

    #[tokio::test]
    async fn versions_share_unchanged_field_values() {
        let def = built_in()
            .into_iter()
            .find(|d| d.plural == "events" && d.group.is_empty())
            .expect("events");
        let (_d, store, cache) = setup_with(Arc::new(def), CacheOptions::default()).await;
        let key = "/registry/events/default/e";
        let event = |count: i64, reason: &str| {
            Bytes::from(
                json!({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": "e", "namespace": "default"},
                       "involvedObject": {"kind": "Pod", "name": "p1"},
                       "reason": reason, "count": count})
                .to_string(),
            )
        };
        let mut rx = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe")
            .rx;
        let kv = store.create(key, event(1, "Pulled")).await.expect("create");
        let first = next(&mut rx).await;
        let kv = store
            .update(key, event(2, "Pulled"), kv.mod_revision)
            .await
            .expect("update");
        let second = next(&mut rx).await;
        let (a, b) = (first.object.fields.as_ref(), second.object.fields.as_ref());
        assert!(a.zip(b).is_some_and(|(a, b)| Arc::ptr_eq(a, b)));
        store
            .update(key, event(3, "Failed"), kv.mod_revision)
            .await
            .expect("update");
        let third = next(&mut rx).await;
        assert_eq!(third.object.field("reason").as_deref(), Some("Failed"));
        assert_eq!(second.object.field("reason").as_deref(), Some("Pulled"));
        assert_eq!(
            third.object.field("involvedObject.name").as_deref(),
            Some("p1")
        );
    }

    #[test]
    fn kinds_with_own_field_selectors_serve_the_stored_bytes() {
        let def = built_in()
            .into_iter()
            .find(|d| d.plural == "events" && d.group.is_empty())
            .expect("events");
        let stored = Bytes::from(
            json!({"apiVersion": "v1", "kind": "Event",
                   "metadata": {"name": "e1", "namespace": "default", "labels": {"a": "b"}},
                   "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
                   "reason": "Started", "type": "Normal"})
            .to_string(),
        );
        let obj =
            CachedObject::from_stored(&def, "/registry/events/default/e1".into(), 7, &stored, None)
                .expect("cached");
        assert!(
            matches!(&obj.body, Body::Stored { bytes, .. } if bytes.as_ptr() == stored.as_ptr())
        );
        assert_eq!(obj.field("involvedObject.name").as_deref(), Some("p1"));
        assert_eq!(obj.field("reason").as_deref(), Some("Started"));
        assert_eq!(obj.labels.get("a"), Some("b"));
        let served = obj.value();
        assert_eq!(served["metadata"]["resourceVersion"], "7");
        assert_eq!(served["involvedObject"]["kind"], "Pod");
    }

    #[tokio::test]
    async fn protobuf_frames_are_built_once_per_event_and_type() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let mut watcher = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe")
            .rx;
        store
            .create("/registry/configmaps/default/p", cm("p", json!({})))
            .await
            .expect("create");
        let ev = next(&mut watcher).await;
        let builds = std::sync::atomic::AtomicUsize::new(0);
        let build = |t: EventType, obj: &CachedObject| {
            builds.fetch_add(1, Ordering::Relaxed);
            Some(Bytes::from(format!("{}:{}", t.as_str(), obj.name())))
        };
        // Every protobuf watcher of the event shares one frame per event type...
        for _ in 0..3 {
            let f = ev.shared_frame(FrameFormat::Protobuf, EventType::Added, build);
            assert_eq!(f.as_deref(), Some(&b"ADDED:p"[..]));
        }
        assert_eq!(builds.load(Ordering::Relaxed), 1);
        let f = ev.shared_frame(FrameFormat::Protobuf, EventType::Deleted, build);
        assert_eq!(f.as_deref(), Some(&b"DELETED:p"[..]));
        assert_eq!(builds.load(Ordering::Relaxed), 2);
        // ...apart from the JSON frames, and a frame that cannot be built is not kept.
        assert!(
            ev.frame(EventType::Added)
                .starts_with(b"{\"type\":\"ADDED\"")
        );
        assert!(
            ev.shared_frame(FrameFormat::Protobuf, EventType::Modified, |_, _| None)
                .is_none()
        );
        let f = ev.shared_frame(FrameFormat::Protobuf, EventType::Modified, build);
        assert_eq!(f.as_deref(), Some(&b"MODIFIED:p"[..]));
    }

    #[tokio::test]
    async fn frames_are_kept_only_for_the_newest_events() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let mut watcher = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe")
            .rx;
        let total = HOT_EVENTS + 40;
        for i in 0..total {
            store
                .create(
                    &format!("/registry/configmaps/default/f{i}"),
                    cm(&format!("f{i}"), json!({})),
                )
                .await
                .expect("create");
            // A watcher that keeps up builds (and shares) each event's frame.
            let ev = next(&mut watcher).await;
            assert!(
                ev.frame(EventType::Added)
                    .starts_with(b"{\"type\":\"ADDED\"")
            );
        }
        let st = cache.read();
        assert_eq!(st.events.len(), total);
        let kept = |e: &Arc<CacheEvent>| {
            e.frames
                .as_ref()
                .is_some_and(|f| f.json.iter().any(|f| f.get().is_some()))
        };
        // The oldest events hold their object only; the newest keep their frames.
        assert!(!st.events.iter().take(total - HOT_EVENTS).any(kept));
        assert!(
            st.events
                .iter()
                .take(total - HOT_EVENTS)
                .all(|e| e.frames.is_none())
        );
        assert!(st.events.iter().skip(total - HOT_EVENTS + 1).all(kept));
        // A frame of a cooled event is still served (built on demand, not kept).
        let old = st.events[0].clone();
        drop(st);
        let frame = old.frame(EventType::Added);
        let v: Value = serde_json::from_slice(&frame).expect("JSON frame");
        assert_eq!(v["object"]["metadata"]["name"], "f0");
        assert!(!kept(&old));
    }

    #[tokio::test]
    async fn too_old_and_slow_watchers() {
        let (_d, store, cache) = setup(CacheOptions {
            event_window: 4,
            ..Default::default()
        })
        .await;
        let first = store
            .create("/registry/configmaps/default/x0", cm("x0", json!({})))
            .await
            .expect("create");
        let slow = cache
            .subscribe(None, &Filter::default())
            .expect("subscribe");
        for i in 1..40 {
            store
                .create(
                    &format!("/registry/configmaps/default/x{i}"),
                    cm(&format!("x{i}"), json!({})),
                )
                .await
                .expect("create");
        }
        let last = store.current_revision().await.expect("rev");
        cache
            .wait_for(last, Duration::from_secs(5))
            .await
            .expect("caught up");
        // The window keeps 4 events: the first revision is too old to resume from.
        assert!(matches!(
            cache.subscribe(Some(first.mod_revision), &Filter::default()),
            Err(CacheError::TooOld { .. })
        ));
        // A watcher that never read falls behind the window and is told so instead of
        // holding every event in memory; it then continues with the oldest event kept.
        let mut rx = slow.rx;
        assert!(!rx.is_empty());
        assert_eq!(rx.recv().await.err(), Some(RecvError::Lagged));
        let next = rx.recv().await.expect("oldest kept event");
        assert_eq!(next.object.name(), "x36");
        assert!(rx.try_recv().is_ok());
        for _ in 0..2 {
            rx.recv().await.expect("kept event");
        }
        assert!(rx.is_empty());
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
        // Lists see everything.
        let all = cache.list(&Filter::default(), None, 0);
        assert_eq!(all.items.len(), 40);
        let page = cache.list(&Filter::default(), None, 10);
        assert_eq!(page.items.len(), 10);
        assert_eq!(page.remaining, Some(30));
        let rest = cache.list(&Filter::default(), page.continue_key.as_deref(), 0);
        assert_eq!(rest.items.len(), 30);
    }

    #[tokio::test]
    async fn the_window_is_bounded_by_the_bytes_of_superseded_versions() {
        let (_d, store, cache) = setup(CacheOptions {
            event_window: 10_000,
            event_window_bytes: 1,
        })
        .await;
        let key = "/registry/configmaps/default/big";
        let mut kv = store
            .create(key, cm("big", json!({"v": "0"})))
            .await
            .expect("create");
        let mut revs = vec![kv.mod_revision];
        for i in 1..150 {
            kv = store
                .update(key, cm("big", json!({"v": i.to_string()})), kv.mod_revision)
                .await
                .expect("update");
            revs.push(kv.mod_revision);
        }
        cache
            .wait_for(kv.mod_revision, Duration::from_secs(5))
            .await
            .expect("caught up");
        // Over its byte budget the window keeps its floor of events, no more.
        assert_eq!(cache.read().events.len(), MIN_WINDOW_EVENTS);
        assert!(matches!(
            cache.subscribe(Some(revs[10]), &Filter::default()),
            Err(CacheError::TooOld { .. })
        ));
        let resumed = cache
            .subscribe(Some(revs[100]), &Filter::default())
            .expect("resume within the window");
        assert_eq!(resumed.backlog.len(), 49);
    }

    #[tokio::test]
    async fn lists_at_a_past_revision_undo_the_changes_since() {
        let (_d, store, cache) = setup(CacheOptions {
            event_window: 20,
            ..Default::default()
        })
        .await;
        let key = |n: &str| format!("/registry/configmaps/default/{n}");
        let mut kvs = HashMap::new();
        for n in ["a", "b", "c", "d", "e"] {
            let kv = store
                .create(&key(n), cm(n, json!({"v": "1"})))
                .await
                .expect("create");
            kvs.insert(n, kv);
        }
        let then = store.current_revision().await.expect("revision");
        // After `then`: an update, a delete, a key before all others and one in between,
        // and a second change to a key already changed.
        store
            .update(&key("b"), cm("b", json!({"v": "2"})), kvs["b"].mod_revision)
            .await
            .expect("update");
        store
            .delete(&key("c"), kvs["c"].mod_revision)
            .await
            .expect("delete");
        store
            .create(&key("0"), cm("0", json!({})))
            .await
            .expect("create");
        store
            .create(&key("bb"), cm("bb", json!({})))
            .await
            .expect("create");
        let kv = store.get(&key("d")).await.expect("get").0.expect("d");
        let kv = store
            .update(&key("d"), cm("d", json!({"v": "2"})), kv.mod_revision)
            .await
            .expect("update");
        store
            .update(&key("d"), cm("d", json!({"v": "3"})), kv.mod_revision)
            .await
            .expect("update");
        let now = store.current_revision().await.expect("revision");
        cache
            .wait_for(now, Duration::from_secs(5))
            .await
            .expect("caught up");

        // The store's own read at `then` is the reference.
        let stored = store
            .range(RangeRequest {
                prefix: "/registry/configmaps/".into(),
                revision: then,
                ..Default::default()
            })
            .await
            .expect("range");
        let want: Vec<(String, i64)> = stored
            .kvs
            .iter()
            .map(|kv| (kv.key.clone(), kv.mod_revision))
            .collect();
        let seen = |r: &ListResult| -> Vec<(String, i64)> {
            r.items.iter().map(|o| (o.key.to_string(), o.rv)).collect()
        };
        let all = cache
            .list_at(then, &Filter::default(), None, 0)
            .expect("the window covers it");
        assert_eq!(all.revision, then);
        assert_eq!(seen(&all), want);
        // Paged: two at a time, each page continuing after the last key of the one before.
        let mut paged = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let p = cache
                .list_at(then, &Filter::default(), after.as_deref(), 2)
                .expect("the window covers it");
            paged.extend(seen(&p));
            match p.continue_key {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        assert_eq!(paged, want);
        // The current state is a list at the current revision.
        let current = cache
            .list_at(now, &Filter::default(), None, 0)
            .expect("now");
        assert_eq!(
            seen(&current),
            seen(&cache.list(&Filter::default(), None, 0))
        );
        // Before the window, the cache cannot say.
        for n in 0..30 {
            store
                .create(&key(&format!("z{n}")), cm("z", json!({})))
                .await
                .expect("create");
        }
        let last = store.current_revision().await.expect("revision");
        cache
            .wait_for(last, Duration::from_secs(5))
            .await
            .expect("caught up");
        assert!(cache.list_at(then, &Filter::default(), None, 0).is_none());
    }

    #[tokio::test]
    async fn objects_the_store_keeps_packed_are_held_packed_and_served_whole() {
        let (_d, store, cache) = setup(CacheOptions::default()).await;
        let key = "/registry/configmaps/default/big";
        let value = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "big", "namespace": "default", "labels": {"a": "b"}},
                           "data": {"k": "value ".repeat(300)}});
        let kv = store
            .create(key, Bytes::from(value.to_string()))
            .await
            .expect("create");
        cache
            .wait_for(kv.mod_revision, Duration::from_secs(5))
            .await
            .expect("caught up");
        let (stored, _) = store.get(key).await.expect("get");
        let packed = stored.and_then(|kv| kv.packed).expect("the store packs it");
        let obj = cache.get(key).expect("cached");
        assert!(
            matches!(&obj.body, Body::Packed { bytes, .. } if bytes.as_ptr() == packed.as_ptr()),
            "the cache shares the store's packed bytes"
        );
        let served: Value = serde_json::from_slice(&obj.json()).expect("served JSON");
        assert_eq!(served["data"], value["data"]);
        assert_eq!(
            served["metadata"]["resourceVersion"],
            kv.mod_revision.to_string()
        );
        assert_eq!(obj.json().len(), obj.json_len());
        assert_eq!(obj.labels.get("a"), Some("b"));
        // Lists and watch frames unpack it the same way.
        let mut listed = Vec::new();
        cache.list(&Filter::default(), None, 0).items[0].write_json(&mut listed);
        assert_eq!(&listed[..], &obj.json()[..]);
        assert_eq!(&obj.raw_json()[..], value.to_string().as_bytes());
    }
}
