//! What the patch algorithms need to know about a kind's fields: which lists merge by which key
//! (strategic merge patch) and which lists and maps are atomic, sets or associative (server-side
//! apply). It plays the role of Go struct tags for `strategicpatch` and of the
//! structured-merge-diff schema for `managedfields`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// A group, version and kind, borrowed (`cluster.karmada.io`, `v1alpha1`, `Cluster`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupVersionKindRef<'a> {
    /// API group; empty for the core group.
    pub group: &'a str,
    /// API version within the group.
    pub version: &'a str,
    /// Kind.
    pub kind: &'a str,
}

impl<'a> GroupVersionKindRef<'a> {
    /// Builds one from an object's `apiVersion` (`apps/v1`, `v1`) and `kind`.
    pub fn from_api_version(api_version: &'a str, kind: &'a str) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        GroupVersionKindRef {
            group,
            version,
            kind,
        }
    }

    /// The `apiVersion` string of this group and version.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for GroupVersionKindRef<'_> {
    /// `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for the core group), as Go prints a
    /// `schema.GroupVersionKind`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// Index of a node in a schema arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeId(pub(crate) u32);

/// Built-in field default: objects are structs of open fields, lists are atomic (and replaced by
/// strategic merge patch), as for every Go field without tags.
pub(crate) const OPEN: NodeId = NodeId(0);
/// Untyped custom-resource default: objects are granular maps, lists are atomic.
pub(crate) const DEDUCED: NodeId = NodeId(1);
/// Any value, owned and replaced as a whole.
pub(crate) const ATOMIC: NodeId = NodeId(2);
/// A scalar.
pub(crate) const SCALAR: NodeId = NodeId(3);

/// How server-side apply treats a list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListType {
    /// Owned and replaced as a whole (`x-kubernetes-list-type: atomic`, the default).
    Atomic,
    /// A set of scalars (`x-kubernetes-list-type: set`).
    Set,
    /// Objects identified by key fields (`x-kubernetes-list-type: map`); a key missing from an
    /// item takes its default, if the schema has one.
    Map {
        keys: Vec<String>,
        defaults: BTreeMap<String, Value>,
    },
}

/// How strategic merge patch treats a list (`patchStrategy` / `patchMergeKey` tags).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SmpList {
    /// No merge strategy: the patch replaces the list.
    Replace,
    /// `patchStrategy:"merge"` on scalars, or on objects with `patchMergeKey` (`Some`).
    Merge(Option<String>),
}

/// One node of a schema.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// An object with named fields. Keys not listed resolve to `other`; `other_is_field` says
    /// whether such keys still count as named fields (Go structs: yes, unknown fields of a CRD
    /// schema that preserves them: no).
    Struct {
        fields: BTreeMap<String, NodeId>,
        other: NodeId,
        other_is_field: bool,
        atomic: bool,
    },
    /// A `map[string]T`.
    Map { elem: NodeId, atomic: bool },
    /// A list.
    List {
        elem: NodeId,
        list: ListType,
        smp: SmpList,
    },
    /// A scalar.
    Scalar,
    /// See [`OPEN`].
    Open,
    /// See [`DEDUCED`].
    Deduced,
    /// See [`ATOMIC`].
    Atomic,
}

/// How server-side apply walks an object value.
pub(crate) enum ObjectType {
    /// Owned as a whole.
    Atomic,
    /// Each key is tracked on its own.
    Granular,
}

/// Type information for one kind.
///
/// Cheap to clone: the built-in tables are built once and shared.
#[derive(Debug, Clone)]
pub struct Schema {
    pub(crate) arena: Arc<Vec<Node>>,
    pub(crate) root: NodeId,
    /// The object Go's zero value of the kind serializes to (`spec: {}`, `containers: null`...),
    /// which kube-apiserver compares a created object against.
    pub(crate) zero: Arc<Value>,
    /// Whether strategic merge patch is defined for the kind.
    pub(crate) strategic: bool,
}

impl Schema {
    /// The schema of a built-in kind the server serves, or `None` (then strategic merge patch is
    /// not available: 415).
    pub fn builtin(gvk: &GroupVersionKindRef<'_>) -> Option<Schema> {
        super::schema_builtin::lookup(gvk)
    }

    /// A schema for a custom resource from its CRD version's `openAPIV3Schema` (the
    /// `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`
    /// extensions decide list and map semantics; `metadata` is always `ObjectMeta`).
    pub fn from_openapi_v3(open_api_v3_schema: &Value) -> Schema {
        super::schema_crd::from_openapi_v3(open_api_v3_schema)
    }

    /// The schema of a custom resource without one: lists atomic, objects granular maps.
    pub fn untyped() -> Schema {
        super::schema_crd::untyped()
    }

    /// Whether strategic merge patch is defined for this kind (built-in kinds only).
    pub fn supports_strategic_merge(&self) -> bool {
        self.strategic
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        // Node ids come from the same arena, so the index is always in range; fall back to the
        // most permissive node rather than panic on a broken table.
        self.arena.get(id.0 as usize).unwrap_or(&Node::Deduced)
    }

    /// The node of field `key` of an object node, and whether it is a named field.
    pub(crate) fn field(&self, id: NodeId, key: &str) -> (NodeId, bool) {
        match self.node(id) {
            Node::Struct {
                fields,
                other,
                other_is_field,
                ..
            } => match fields.get(key) {
                Some(field) => (*field, true),
                None => (*other, *other_is_field),
            },
            Node::Map { elem, .. } => (*elem, false),
            Node::Open => (OPEN, true),
            Node::Deduced => (DEDUCED, false),
            Node::Atomic | Node::Scalar | Node::List { .. } => (ATOMIC, false),
        }
    }

    /// The node of the items of a list node.
    pub(crate) fn elem(&self, id: NodeId) -> NodeId {
        match self.node(id) {
            Node::List { elem, .. } => *elem,
            Node::Open => OPEN,
            _ => ATOMIC,
        }
    }

    /// How an object value at `id` is tracked by server-side apply.
    pub(crate) fn object_type(&self, id: NodeId) -> ObjectType {
        match self.node(id) {
            Node::Struct { atomic: false, .. } | Node::Map { atomic: false, .. } => {
                ObjectType::Granular
            }
            Node::Open | Node::Deduced => ObjectType::Granular,
            _ => ObjectType::Atomic,
        }
    }

    /// How a list value at `id` is tracked by server-side apply.
    pub(crate) fn list_type(&self, id: NodeId) -> &ListType {
        const ATOMIC_LIST: &ListType = &ListType::Atomic;
        match self.node(id) {
            Node::List { list, .. } => list,
            _ => ATOMIC_LIST,
        }
    }

    /// How strategic merge patch merges a list at `id`.
    pub(crate) fn smp_list(&self, id: NodeId) -> &SmpList {
        const REPLACE: &SmpList = &SmpList::Replace;
        match self.node(id) {
            Node::List { smp, .. } => smp,
            _ => REPLACE,
        }
    }

    /// Every list under the kind's root that merges or is keyed, as the OpenAPI extensions
    /// kube-openapi publishes for its Go tags (`x-kubernetes-patch-strategy`,
    /// `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`),
    /// each with its path of field names from the root (`[]` steps into list items). Clients
    /// compute strategic merge patches from these, so they must be the ones the server
    /// merges with.
    pub fn list_extensions(&self) -> Vec<(Vec<String>, serde_json::Map<String, Value>)> {
        let mut out = Vec::new();
        self.collect_list_extensions(self.root, &mut Vec::new(), &mut out);
        out
    }

    fn collect_list_extensions(
        &self,
        id: NodeId,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, serde_json::Map<String, Value>)>,
    ) {
        match self.node(id) {
            Node::Struct { fields, .. } => {
                for (name, field) in fields {
                    path.push(name.clone());
                    self.collect_list_extensions(*field, path, out);
                    path.pop();
                }
            }
            Node::List { elem, list, smp } => {
                let mut ext = serde_json::Map::new();
                if let SmpList::Merge(key) = smp {
                    ext.insert("x-kubernetes-patch-strategy".into(), "merge".into());
                    if let Some(key) = key {
                        ext.insert("x-kubernetes-patch-merge-key".into(), key.as_str().into());
                    }
                }
                match list {
                    ListType::Map { keys, .. } => {
                        ext.insert("x-kubernetes-list-type".into(), "map".into());
                        ext.insert("x-kubernetes-list-map-keys".into(), keys.clone().into());
                    }
                    ListType::Set => {
                        ext.insert("x-kubernetes-list-type".into(), "set".into());
                    }
                    ListType::Atomic => {}
                }
                if !ext.is_empty() {
                    out.push((path.clone(), ext));
                }
                path.push("[]".into());
                self.collect_list_extensions(*elem, path, out);
                path.pop();
            }
            _ => {}
        }
    }
}

/// Builds a schema arena; the first nodes are always [`OPEN`], [`DEDUCED`], [`ATOMIC`] and
/// [`SCALAR`].
pub(crate) struct Builder {
    nodes: Vec<Node>,
}

impl Builder {
    pub(crate) fn new() -> Self {
        Builder {
            nodes: vec![Node::Open, Node::Deduced, Node::Atomic, Node::Scalar],
        }
    }

    pub(crate) fn add(&mut self, node: Node) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.nodes.push(node);
        id
    }

    pub(crate) fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.0 as usize)
    }

    /// A Go struct: listed fields have special types, every other field is [`OPEN`].
    pub(crate) fn strukt(&mut self, fields: &[(&str, NodeId)]) -> NodeId {
        self.add(Node::Struct {
            fields: fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            other: OPEN,
            other_is_field: true,
            atomic: false,
        })
    }

    /// A granular `map[string]T`.
    pub(crate) fn map(&mut self, elem: NodeId) -> NodeId {
        self.add(Node::Map {
            elem,
            atomic: false,
        })
    }

    /// A list of objects merged by `key` by both strategic merge patch and server-side apply.
    pub(crate) fn list_by(&mut self, elem: NodeId, key: &str) -> NodeId {
        self.list(elem, &[key], Some(key))
    }

    /// An associative list: server-side apply keys `keys` (with `(name, default)` pairs),
    /// strategic merge patch merges by `merge_key` when given, otherwise replaces.
    pub(crate) fn list(&mut self, elem: NodeId, keys: &[&str], merge_key: Option<&str>) -> NodeId {
        self.list_with_defaults(elem, keys, &[], merge_key)
    }

    pub(crate) fn list_with_defaults(
        &mut self,
        elem: NodeId,
        keys: &[&str],
        defaults: &[(&str, Value)],
        merge_key: Option<&str>,
    ) -> NodeId {
        self.add(Node::List {
            elem,
            list: ListType::Map {
                keys: keys.iter().map(|k| k.to_string()).collect(),
                defaults: defaults
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            },
            smp: match merge_key {
                Some(key) => SmpList::Merge(Some(key.to_string())),
                None => SmpList::Replace,
            },
        })
    }

    /// A set of scalars; `merge` says whether strategic merge patch merges it too.
    pub(crate) fn set_of_scalars(&mut self, merge: bool) -> NodeId {
        self.add(Node::List {
            elem: SCALAR,
            list: ListType::Set,
            smp: if merge {
                SmpList::Merge(None)
            } else {
                SmpList::Replace
            },
        })
    }

    /// An atomic list for server-side apply that strategic merge patch still merges by `key`
    /// (`hostIPs`, Job `conditions`).
    pub(crate) fn atomic_list_merged_by(&mut self, elem: NodeId, key: &str) -> NodeId {
        self.add(Node::List {
            elem,
            list: ListType::Atomic,
            smp: SmpList::Merge(Some(key.to_string())),
        })
    }

    pub(crate) fn finish(self, root: NodeId, zero: Value, strategic: bool) -> Schema {
        Schema {
            arena: Arc::new(self.nodes),
            root,
            zero: Arc::new(zero),
            strategic,
        }
    }

    /// Finishes a builder holding several roots that share one arena.
    pub(crate) fn finish_shared(self) -> Arc<Vec<Node>> {
        Arc::new(self.nodes)
    }
}
