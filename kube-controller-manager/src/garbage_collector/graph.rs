//! The owner graph of kube's garbage collector (pkg/controller/garbagecollector/graph.go and
//! the decisions of garbagecollector.go), without I/O: nodes are objects keyed by uid, edges
//! are ownerReferences, and [`Graph::decide`] says what the collector should do with a node.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use apimachinery::meta::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

use crate::api_server::Propagation;

/// One `metadata.ownerReferences` entry.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    /// The owner's apiVersion.
    #[serde(default)]
    pub api_version: String,
    /// The owner's kind.
    #[serde(default)]
    pub kind: String,
    /// The owner's name.
    #[serde(default)]
    pub name: String,
    /// The owner's uid.
    #[serde(default)]
    pub uid: String,
    /// The owner cannot finish a foreground deletion while this dependent exists.
    #[serde(default, deserialize_with = "null_as_false")]
    pub block_owner_deletion: bool,
}

fn null_as_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

impl OwnerRef {
    /// The owner's API group.
    pub fn group(&self) -> &str {
        karmada_api::names::split_api_version(&self.api_version).0
    }
}

/// One object as the collector sees it. The graph holds every object of the server, so the
/// strings most nodes share (resource, group, kind, namespace) are held once by the graph
/// ([`Graph::upsert`] interns them) and the uid once for the node and the graph's indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// `metadata.uid`.
    pub uid: Arc<str>,
    /// The storage prefix of its resource (which registry writes it).
    pub resource: Arc<str>,
    /// API group.
    pub group: Arc<str>,
    /// Kind.
    pub kind: Arc<str>,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub namespace: Arc<str>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.ownerReferences`.
    pub owners: Vec<OwnerRef>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl Node {
    /// Deleted with `propagationPolicy: Foreground`: waits for its blocking dependents.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER)
    }

    /// Deleted with `propagationPolicy: Orphan`: its dependents lose their references to it.
    pub fn orphaning(&self) -> bool {
        self.deleting && self.finalizers.iter().any(|f| f == ORPHAN_FINALIZER)
    }

    fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }
}

/// Work for the collector's queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Item {
    /// Decide whether the object (by uid) is garbage, or whether its foreground deletion is
    /// complete (kube's attemptToDelete queue).
    AttemptToDelete(String),
    /// Remove the object's (by uid) references from its dependents, then its `orphan`
    /// finalizer (kube's attemptToOrphan queue).
    AttemptToOrphan(String),
}

/// How the collector sees one ownerReference of a dependent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists and is not deleted in the foreground.
    Solid,
    /// No owner with this uid exists at the referenced coordinates.
    Absent,
    /// The owner exists and is being deleted in the foreground.
    Waiting,
}

/// What the collector should do with a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing, for now.
    Nothing,
    /// An ownerReference names a kind that is not served (yet): look again when the catalog
    /// changes (kube retries on a REST mapping error).
    Unresolvable,
    /// The node is deleted in the foreground and no blocking dependent remains: remove its
    /// `foregroundDeletion` finalizer.
    RemoveForegroundFinalizer,
    /// The node is deleted in the foreground and waits for these blocking dependents, which
    /// should be examined (they are not themselves deleting their dependents).
    AwaitDependents(Vec<String>),
    /// A solid owner remains: drop the references to these owner uids (gone, or being deleted
    /// in the foreground). `verify` are the references believed absent.
    RemoveOwnerRefs {
        /// Owner uids whose references are removed.
        uids: Vec<String>,
        /// References to confirm absent with a consistent read first.
        verify: Vec<OwnerRef>,
    },
    /// The node is garbage: delete it with this propagation policy.
    Delete {
        /// Propagation policy of the delete.
        propagation: Propagation,
        /// Clear `blockOwnerDeletion` on its references first (a dependency cycle in foreground
        /// deletion would otherwise never finish).
        unblock: bool,
        /// References to confirm absent with a consistent read first.
        verify: Vec<OwnerRef>,
    },
}

/// Whether a kind is namespaced (`Some(true)`), cluster-scoped (`Some(false)`) or not served.
pub trait Scopes {
    /// The scope of `group`/`kind`.
    fn namespaced(&self, group: &str, kind: &str) -> Option<bool>;
}

impl<F: Fn(&str, &str) -> Option<bool>> Scopes for F {
    fn namespaced(&self, group: &str, kind: &str) -> Option<bool> {
        self(group, kind)
    }
}

/// The owner graph.
#[derive(Debug, Default)]
pub struct Graph {
    /// Boxed: the table keeps room for twice as many entries as it holds, and a node inline is
    /// 200 bytes (most of the graph's memory at tens of thousands of objects).
    nodes: HashMap<Arc<str>, Box<Node>>,
    /// Owner uid → uids of nodes referencing it (the owner need not be in the graph).
    dependents: HashMap<String, BTreeSet<Arc<str>>>,
    /// Resource prefix → uids of its nodes.
    by_resource: HashMap<Arc<str>, HashSet<Arc<str>>>,
    /// The one copy of each resource, group, kind and namespace the nodes name.
    names: HashSet<Arc<str>>,
}

impl Graph {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A node by uid.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid).map(|n| &**n)
    }

    /// Uids of the nodes referencing `owner_uid`.
    pub fn dependents(&self, owner_uid: &str) -> Vec<String> {
        self.dependents
            .get(owner_uid)
            .map(|s| s.iter().map(|u| u.to_string()).collect())
            .unwrap_or_default()
    }

    /// Drops the graph's copy of the names of `gone` that no other node uses (namespaces come
    /// and go).
    fn release(&mut self, gone: &Node) {
        for s in [&gone.resource, &gone.group, &gone.kind, &gone.namespace] {
            // Held by `gone` and by the set only.
            if Arc::strong_count(s) == 2 {
                self.names.remove(&**s);
            }
        }
    }

    /// The graph's copy of `s`.
    fn intern(&mut self, s: &Arc<str>) -> Arc<str> {
        match self.names.get(&**s) {
            Some(kept) => kept.clone(),
            None => {
                self.names.insert(s.clone());
                s.clone()
            }
        }
    }

    /// How `dep` sees one of its references, by the graph alone. A namespaced owner must be in
    /// the dependent's namespace (kube looks it up there), so a reference across namespaces is
    /// absent.
    pub fn owner_state(&self, dep: &Node, r: &OwnerRef) -> OwnerState {
        match self.nodes.get(r.uid.as_str()) {
            Some(o)
                if *o.group == *r.group()
                    && *o.kind == *r.kind
                    && o.name == r.name
                    && (o.namespace.is_empty() || o.namespace == dep.namespace) =>
            {
                if o.deleting_dependents() {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                }
            }
            _ => OwnerState::Absent,
        }
    }

    fn needs_examination(&self, node: &Node) -> bool {
        node.owners
            .iter()
            .any(|r| self.owner_state(node, r) != OwnerState::Solid)
    }

    /// Adds or replaces a node; returns the work its change calls for (kube's
    /// processGraphChanges and processTransitions).
    pub fn upsert(&mut self, mut node: Node) -> Vec<Item> {
        node.resource = self.intern(&node.resource);
        node.group = self.intern(&node.group);
        node.kind = self.intern(&node.kind);
        node.namespace = self.intern(&node.namespace);
        let mut items = Vec::new();
        let uid = node.uid.clone();
        let old = self.nodes.remove(&*uid);
        if let Some(old) = &old {
            for r in &old.owners {
                if let Some(set) = self.dependents.get_mut(&r.uid) {
                    set.remove(&*uid);
                    if set.is_empty() {
                        self.dependents.remove(&r.uid);
                    }
                }
            }
            if old.resource != node.resource
                && let Some(set) = self.by_resource.get_mut(&*old.resource)
            {
                set.remove(&*uid);
            }
        }
        for r in &node.owners {
            self.dependents
                .entry(r.uid.clone())
                .or_default()
                .insert(uid.clone());
        }
        self.by_resource
            .entry(node.resource.clone())
            .or_default()
            .insert(uid.clone());

        let was = |f: fn(&Node) -> bool| old.as_deref().is_some_and(f);
        if node.orphaning() && !was(Node::orphaning) {
            items.push(Item::AttemptToOrphan(uid.to_string()));
        }
        if node.deleting_dependents() {
            if !was(Node::deleting_dependents) {
                items.extend(self.dependents(&uid).into_iter().map(Item::AttemptToDelete));
            }
            items.push(Item::AttemptToDelete(uid.to_string()));
        }
        // A reference that went away (or stopped blocking) may be what a foreground deletion
        // waited for.
        if let Some(old) = &old {
            for r in &old.owners {
                let still_blocks = node
                    .owners
                    .iter()
                    .any(|n| n.uid == r.uid && n.block_owner_deletion);
                if r.block_owner_deletion
                    && !still_blocks
                    && self.node(&r.uid).is_some_and(Node::deleting_dependents)
                {
                    items.push(Item::AttemptToDelete(r.uid.clone()));
                }
            }
        }
        if self.needs_examination(&node) {
            items.push(Item::AttemptToDelete(uid.to_string()));
        }
        // Dependents that saw this uid as absent (their owner was not loaded yet) or whose view
        // of it changed are examined again.
        let state_changed = old.as_ref().is_none_or(|o| {
            o.deleting_dependents() != node.deleting_dependents()
                || o.group != node.group
                || o.kind != node.kind
                || o.namespace != node.namespace
                || o.name != node.name
        });
        self.nodes.insert(uid.clone(), Box::new(node));
        if let Some(old) = &old {
            self.release(old);
        }
        if state_changed {
            items.extend(self.dependents(&uid).into_iter().map(Item::AttemptToDelete));
        }
        dedup(items)
    }

    /// Removes a node (the object is gone); returns the work this calls for.
    pub fn remove(&mut self, uid: &str) -> Vec<Item> {
        let Some(node) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        if let Some(set) = self.by_resource.get_mut(&*node.resource) {
            set.remove(uid);
        }
        self.release(&node);
        let mut items: Vec<Item> = self
            .dependents(uid)
            .into_iter()
            .map(Item::AttemptToDelete)
            .collect();
        for r in &node.owners {
            if let Some(set) = self.dependents.get_mut(&r.uid) {
                set.remove(uid);
                if set.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
            if self.node(&r.uid).is_some_and(Node::deleting_dependents) {
                items.push(Item::AttemptToDelete(r.uid.clone()));
            }
        }
        dedup(items)
    }

    /// Replaces every node of one resource; returns the work the differences call for.
    pub fn resync(&mut self, resource: &str, nodes: Vec<Node>) -> Vec<Item> {
        let fresh: HashSet<&str> = nodes.iter().map(|n| &*n.uid).collect();
        let stale: Vec<Arc<str>> = self
            .by_resource
            .get(resource)
            .map(|s| {
                s.iter()
                    .filter(|u| !fresh.contains(&***u))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut items = Vec::new();
        for uid in stale {
            items.extend(self.remove(&uid));
        }
        for n in nodes {
            if self.node(&n.uid) != Some(&n) {
                items.extend(self.upsert(n));
            }
        }
        dedup(items)
    }

    /// Drops every node of a resource that is no longer served.
    pub fn remove_resource(&mut self, resource: &str) -> Vec<Item> {
        let uids: Vec<Arc<str>> = self
            .by_resource
            .remove(resource)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default();
        let mut items = Vec::new();
        for uid in uids {
            items.extend(self.remove(&uid));
        }
        dedup(items)
    }

    /// Everything worth examining on a full pass (after the initial sync or a catalog change):
    /// nodes with references, and owners being deleted in the foreground or orphaning.
    pub fn full_pass(&self) -> Vec<Item> {
        let mut items = Vec::new();
        for (uid, n) in &self.nodes {
            if n.orphaning() {
                items.push(Item::AttemptToOrphan(uid.to_string()));
            }
            if n.deleting_dependents() || !n.owners.is_empty() {
                items.push(Item::AttemptToDelete(uid.to_string()));
            }
        }
        items.sort();
        items
    }

    /// Kube's attemptToDeleteItem: what to do with the node `uid`.
    pub fn decide(&self, uid: &str, scopes: &dyn Scopes) -> Verdict {
        let Some(node) = self.nodes.get(uid) else {
            return Verdict::Nothing;
        };
        if node.deleting {
            if !node.deleting_dependents() {
                return Verdict::Nothing;
            }
            // processDeletingDependentsItem: only dependents that block this owner count.
            let blocking: Vec<&Node> = self
                .dependents(uid)
                .iter()
                .filter_map(|d| self.node(d))
                .filter(|d| {
                    d.owners
                        .iter()
                        .any(|r| r.uid == uid && r.block_owner_deletion)
                })
                .collect();
            if blocking.is_empty() {
                return Verdict::RemoveForegroundFinalizer;
            }
            return Verdict::AwaitDependents(
                blocking
                    .into_iter()
                    .filter(|d| !d.deleting_dependents())
                    .map(|d| d.uid.to_string())
                    .collect(),
            );
        }
        if node.owners.is_empty() {
            return Verdict::Nothing;
        }

        let (mut solid, mut absent, mut waiting) = (0usize, Vec::new(), Vec::new());
        for r in &node.owners {
            match scopes.namespaced(r.group(), &r.kind) {
                None => return Verdict::Unresolvable,
                // A cluster-scoped object cannot be owned by a namespaced one; kube reports it
                // (OwnerRefInvalidNamespace) and never collects the object.
                Some(true) if node.namespace.is_empty() => return Verdict::Nothing,
                Some(_) => {}
            }
            match self.owner_state(node, r) {
                OwnerState::Solid => solid += 1,
                OwnerState::Absent => absent.push(r.clone()),
                OwnerState::Waiting => waiting.push(r.clone()),
            }
        }

        if solid > 0 {
            if absent.is_empty() && waiting.is_empty() {
                return Verdict::Nothing;
            }
            let mut uids: Vec<String> = absent
                .iter()
                .chain(waiting.iter())
                .map(|r| r.uid.clone())
                .collect();
            uids.sort();
            uids.dedup();
            return Verdict::RemoveOwnerRefs {
                uids,
                verify: absent,
            };
        }
        if !waiting.is_empty() && !self.dependents(uid).is_empty() {
            // Its owner waits for it, and it has dependents of its own: delete it in the
            // foreground too, unless one of them already waits on it (a cycle).
            let unblock = self
                .dependents(uid)
                .iter()
                .filter_map(|d| self.node(d))
                .any(Node::deleting_dependents);
            return Verdict::Delete {
                propagation: Propagation::Foreground,
                unblock,
                verify: absent,
            };
        }
        let propagation = if node.has_finalizer(ORPHAN_FINALIZER) {
            Propagation::Orphan
        } else if node.has_finalizer(FOREGROUND_FINALIZER) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        Verdict::Delete {
            propagation,
            unblock: false,
            verify: absent,
        }
    }

    /// Kube's orphanDependents: the dependents to release when `uid` is being deleted with the
    /// `orphan` finalizer (None: the node is not orphaning).
    pub fn orphan_targets(&self, uid: &str) -> Option<Vec<String>> {
        let node = self.nodes.get(uid)?;
        node.orphaning().then(|| self.dependents(uid))
    }
}

fn dedup(mut items: Vec<Item>) -> Vec<Item> {
    let mut seen = HashSet::new();
    items.retain(|i| seen.insert(i.clone()));
    items
}

/// The metadata the collector reads from an object's JSON, borrowed from it where the text
/// has no escapes: most events change nothing the collector reads (status writes), and those
/// are recognised without building a node.
#[derive(Deserialize)]
struct Object<'a> {
    #[serde(default, borrow)]
    metadata: Meta<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(default, borrow)]
    uid: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    namespace: Cow<'a, str>,
    #[serde(default, deserialize_with = "null_as_empty")]
    owner_references: Vec<OwnerRef>,
    #[serde(default, borrow, deserialize_with = "null_as_empty")]
    finalizers: Vec<Text<'a>>,
    #[serde(default, borrow)]
    deletion_timestamp: Option<&'a serde_json::value::RawValue>,
}

/// A string borrowed from the JSON when it can be.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl Meta<'_> {
    /// References without a uid point at nothing and are left out, as kube's graph does.
    fn owners(&self) -> impl Iterator<Item = &OwnerRef> {
        self.owner_references.iter().filter(|r| !r.uid.is_empty())
    }

    /// Whether `node` already says everything this metadata says.
    fn same_as(&self, node: &Node) -> bool {
        *node.uid == *self.uid
            && node.name == self.name
            && *node.namespace == *self.namespace
            && node.deleting == self.deletion_timestamp.is_some()
            && node.owners.iter().eq(self.owners())
            && node
                .finalizers
                .iter()
                .map(String::as_str)
                .eq(self.finalizers.iter().map(|f| &*f.0))
    }

    fn into_node(self, resource: &str, group: &str, kind: &str) -> Node {
        let deleting = self.deletion_timestamp.is_some();
        Node {
            uid: Arc::from(&*self.uid),
            resource: Arc::from(resource),
            group: Arc::from(group),
            kind: Arc::from(kind),
            namespace: Arc::from(&*self.namespace),
            name: self.name.into_owned(),
            // Collected afresh (sized to the contents), as the graph keeps it for the object's
            // life.
            owners: self
                .owner_references
                .into_iter()
                .filter(|r| !r.uid.is_empty())
                .collect::<Box<[_]>>()
                .into_vec(),
            finalizers: self
                .finalizers
                .into_iter()
                .map(|f| f.0.into_owned())
                .collect::<Box<[_]>>()
                .into_vec(),
            deleting,
        }
    }
}

/// Reads the metadata of an object's JSON; None when it has no uid (not a stored object) or
/// is not an object.
fn read_meta(json: &[u8]) -> Option<Meta<'_>> {
    // Only `metadata` is parsed: serialized objects put it before spec and status, which are
    // then not even scanned. Anything unusual (whitespace first, an escaped key) takes the
    // whole parse.
    let meta = match apimachinery::json_splice::object_member(json, 0, "metadata") {
        Some((start, end)) => serde_json::from_slice::<Meta<'_>>(&json[start..end]).ok()?,
        None => serde_json::from_slice::<Object<'_>>(json).ok()?.metadata,
    };
    (!meta.uid.is_empty()).then_some(meta)
}

/// Builds a node from an object's JSON; None when it has no uid (not a stored object) or is
/// not an object.
pub fn node_from_json(resource: &str, group: &str, kind: &str, json: &[u8]) -> Option<Node> {
    read_meta(json).map(|m| m.into_node(resource, group, kind))
}

impl Graph {
    /// An object added or updated, from its JSON: the graph takes it in (see
    /// [`Graph::upsert`]) unless it already has the object exactly so. kube's collector too
    /// acts on an update only when the owner references or the deletion state changed.
    pub fn observe(&mut self, resource: &str, group: &str, kind: &str, json: &[u8]) -> Vec<Item> {
        let Some(meta) = read_meta(json) else {
            return Vec::new();
        };
        let known = self.node(&meta.uid).is_some_and(|n| {
            meta.same_as(n) && *n.resource == *resource && *n.group == *group && *n.kind == *kind
        });
        if known {
            return Vec::new();
        }
        self.upsert(meta.into_node(resource, group, kind))
    }

    /// An object deleted, from its last JSON: only its uid is read.
    pub fn forget(&mut self, json: &[u8]) -> Vec<Item> {
        match read_meta(json) {
            Some(meta) => self.remove(&meta.uid),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "default";

    fn node(kind: &str, ns: &str, name: &str, uid: &str) -> Node {
        let (group, resource) = match kind {
            "Deployment" => ("apps", "/registry/apps/deployments/"),
            "Namespace" => ("", "/registry/namespaces/"),
            "ClusterRole" => ("rbac.authorization.k8s.io", "/registry/rbac/clusterroles/"),
            _ => ("", "/registry/configmaps/"),
        };
        Node {
            uid: uid.into(),
            resource: resource.into(),
            group: group.into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            owners: vec![],
            finalizers: vec![],
            deleting: false,
        }
    }

    fn cm(name: &str, uid: &str) -> Node {
        node("ConfigMap", NS, name, uid)
    }

    fn to(n: &Node) -> OwnerRef {
        OwnerRef {
            api_version: if n.group.is_empty() {
                "v1".into()
            } else {
                format!("{}/v1", n.group)
            },
            kind: n.kind.to_string(),
            name: n.name.clone(),
            uid: n.uid.to_string(),
            block_owner_deletion: false,
        }
    }

    fn blocking(n: &Node) -> OwnerRef {
        OwnerRef {
            block_owner_deletion: true,
            ..to(n)
        }
    }

    fn owned(mut n: Node, refs: &[OwnerRef]) -> Node {
        n.owners = refs.to_vec();
        n
    }

    fn deleting(mut n: Node, finalizers: &[&str]) -> Node {
        n.deleting = true;
        n.finalizers = finalizers.iter().map(|s| s.to_string()).collect();
        n
    }

    fn scopes(group: &str, kind: &str) -> Option<bool> {
        match (group, kind) {
            ("", "ConfigMap") | ("apps", "Deployment") => Some(true),
            ("", "Namespace") | ("rbac.authorization.k8s.io", "ClusterRole") => Some(false),
            _ => None,
        }
    }

    fn graph(nodes: &[Node]) -> Graph {
        let mut g = Graph::default();
        for n in nodes {
            g.upsert(n.clone());
        }
        g
    }

    fn delete(p: Propagation, verify: &[OwnerRef]) -> Verdict {
        Verdict::Delete {
            propagation: p,
            unblock: false,
            verify: verify.to_vec(),
        }
    }

    #[test]
    fn nodes_share_the_graph_s_copy_of_common_names() {
        let mut g = Graph::default();
        g.upsert(cm("a", "u-a"));
        g.upsert(cm("b", "u-b"));
        let (a, b) = (g.node("u-a").expect("a"), g.node("u-b").expect("b"));
        assert!(Arc::ptr_eq(&a.namespace, &b.namespace));
        assert!(Arc::ptr_eq(&a.kind, &b.kind));
        assert!(Arc::ptr_eq(&a.resource, &b.resource));
        assert_eq!((&*a.namespace, &*a.kind), (NS, "ConfigMap"));
        // The same node again is not a change.
        assert!(
            g.resync(
                "/registry/configmaps/",
                vec![cm("a", "u-a"), cm("b", "u-b")]
            )
            .is_empty()
        );
        assert_eq!(g.len(), 2);
        // A namespace no node is in any more is forgotten.
        g.upsert(node("ConfigMap", "gone-soon", "c", "u-c"));
        assert!(g.names.contains("gone-soon"));
        g.remove("u-c");
        assert!(!g.names.contains("gone-soon"));
        assert!(g.names.contains(NS));
    }

    #[test]
    fn decisions() {
        let owner = cm("owner", "u-owner");
        let other = cm("other", "u-other");
        let gone = cm("gone", "u-gone");
        let unknown = OwnerRef {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            name: "w".into(),
            uid: "u-w".into(),
            block_owner_deletion: false,
        };
        let ns_owner = node("Namespace", "", "team", "u-ns");
        let cluster_owner = node("ClusterRole", "", "admin", "u-cr");
        let elsewhere = node("ConfigMap", "other-ns", "owner", "u-elsewhere");
        let recreated = cm("gone", "u-new");

        let cases: Vec<(&str, Vec<Node>, &str, Verdict)> = vec![
            (
                "no references",
                vec![cm("d", "u-d")],
                "u-d",
                Verdict::Nothing,
            ),
            (
                "owner exists",
                vec![owner.clone(), owned(cm("d", "u-d"), &[to(&owner)])],
                "u-d",
                Verdict::Nothing,
            ),
            (
                "owner gone",
                vec![owned(cm("d", "u-d"), &[to(&gone)])],
                "u-d",
                delete(Propagation::Background, &[to(&gone)]),
            ),
            (
                "owner replaced by an object with another uid",
                vec![recreated, owned(cm("d", "u-d"), &[to(&gone)])],
                "u-d",
                delete(Propagation::Background, &[to(&gone)]),
            ),
            (
                "one owner left",
                vec![
                    owner.clone(),
                    owned(cm("d", "u-d"), &[to(&owner), to(&gone)]),
                ],
                "u-d",
                Verdict::RemoveOwnerRefs {
                    uids: vec!["u-gone".into()],
                    verify: vec![to(&gone)],
                },
            ),
            (
                "one owner left, another deleted in the foreground",
                vec![
                    owner.clone(),
                    deleting(other.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("d", "u-d"), &[to(&owner), to(&other)]),
                ],
                "u-d",
                Verdict::RemoveOwnerRefs {
                    uids: vec!["u-other".into()],
                    verify: vec![],
                },
            ),
            (
                "owner deleted in the foreground",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("d", "u-d"), &[blocking(&owner)]),
                ],
                "u-d",
                delete(Propagation::Background, &[]),
            ),
            (
                "owner deleted in the foreground, dependent has dependents",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("d", "u-d"), &[blocking(&owner)]),
                    owned(cm("dd", "u-dd"), &[to(&cm("d", "u-d"))]),
                ],
                "u-d",
                delete(Propagation::Foreground, &[]),
            ),
            (
                "foreground cycle is unblocked",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("d", "u-d"), &[blocking(&owner)]),
                    deleting(
                        owned(cm("dd", "u-dd"), &[blocking(&cm("d", "u-d"))]),
                        &[FOREGROUND_FINALIZER],
                    ),
                ],
                "u-d",
                Verdict::Delete {
                    propagation: Propagation::Foreground,
                    unblock: true,
                    verify: vec![],
                },
            ),
            (
                "owner terminating with other finalizers still owns",
                vec![
                    deleting(owner.clone(), &["example.com/hold"]),
                    owned(cm("d", "u-d"), &[to(&owner)]),
                ],
                "u-d",
                Verdict::Nothing,
            ),
            (
                "namespaced owner in another namespace is absent",
                vec![elsewhere.clone(), owned(cm("d", "u-d"), &[to(&elsewhere)])],
                "u-d",
                delete(Propagation::Background, &[to(&elsewhere)]),
            ),
            (
                "cluster-scoped owner of a namespaced dependent",
                vec![
                    cluster_owner.clone(),
                    owned(cm("d", "u-d"), &[to(&cluster_owner)]),
                ],
                "u-d",
                Verdict::Nothing,
            ),
            (
                "cluster-scoped dependent of a namespaced kind is never collected",
                vec![owned(node("Namespace", "", "x", "u-x"), &[to(&gone)])],
                "u-x",
                Verdict::Nothing,
            ),
            (
                "cluster-scoped dependent of a cluster-scoped owner",
                vec![owned(node("ClusterRole", "", "x", "u-x"), &[to(&ns_owner)])],
                "u-x",
                delete(Propagation::Background, &[to(&ns_owner)]),
            ),
            (
                "kind not served",
                vec![owned(cm("d", "u-d"), &[unknown.clone(), to(&gone)])],
                "u-d",
                Verdict::Unresolvable,
            ),
            (
                "dependent already terminating",
                vec![deleting(
                    owned(cm("d", "u-d"), &[to(&gone)]),
                    &["example.com/hold"],
                )],
                "u-d",
                Verdict::Nothing,
            ),
            (
                "garbage keeps its own propagation finalizer",
                vec![{
                    let mut d = owned(cm("d", "u-d"), &[to(&gone)]);
                    d.finalizers = vec![ORPHAN_FINALIZER.into()];
                    d
                }],
                "u-d",
                delete(Propagation::Orphan, &[to(&gone)]),
            ),
            (
                "foreground owner with a blocking dependent",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("d", "u-d"), &[blocking(&owner)]),
                    owned(cm("e", "u-e"), &[to(&owner)]),
                ],
                "u-owner",
                Verdict::AwaitDependents(vec!["u-d".into()]),
            ),
            (
                "foreground owner whose blocking dependent deletes its own dependents",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    deleting(
                        owned(cm("d", "u-d"), &[blocking(&owner)]),
                        &[FOREGROUND_FINALIZER],
                    ),
                ],
                "u-owner",
                Verdict::AwaitDependents(vec![]),
            ),
            (
                "foreground owner with only non-blocking dependents",
                vec![
                    deleting(owner.clone(), &[FOREGROUND_FINALIZER]),
                    owned(cm("e", "u-e"), &[to(&owner)]),
                ],
                "u-owner",
                Verdict::RemoveForegroundFinalizer,
            ),
            ("unknown uid", vec![], "u-nothing", Verdict::Nothing),
        ];
        for (what, nodes, uid, want) in cases {
            let g = graph(&nodes);
            assert_eq!(g.decide(uid, &scopes), want, "{what}");
        }
    }

    #[test]
    fn orphan_targets() {
        let owner = cm("owner", "u-owner");
        let d1 = owned(cm("d1", "u-d1"), &[to(&owner)]);
        let d2 = owned(cm("d2", "u-d2"), &[to(&owner), to(&cm("x", "u-x"))]);
        let unrelated = cm("u", "u-u");
        let g = graph(&[owner.clone(), d1.clone(), d2.clone(), unrelated.clone()]);
        assert_eq!(g.orphan_targets("u-owner"), None);
        let g = graph(&[
            deleting(owner.clone(), &[ORPHAN_FINALIZER]),
            d1,
            d2,
            unrelated,
        ]);
        assert_eq!(
            g.orphan_targets("u-owner"),
            Some(vec!["u-d1".to_string(), "u-d2".to_string()])
        );
        assert_eq!(g.orphan_targets("u-missing"), None);
    }

    #[test]
    fn transitions_queue_work() {
        let owner = cm("owner", "u-owner");
        let dep = owned(cm("d", "u-d"), &[blocking(&owner)]);
        let del = |u: &str| Item::AttemptToDelete(u.to_string());

        // A dependent whose owner is not loaded yet is examined; the owner's arrival
        // examines it again.
        let mut g = Graph::default();
        assert_eq!(g.upsert(dep.clone()), vec![del("u-d")]);
        assert_eq!(g.upsert(owner.clone()), vec![del("u-d")]);
        // A change that matters to nobody queues nothing.
        let mut labelled = owner.clone();
        labelled.finalizers = vec!["example.com/x".into()];
        assert_eq!(g.upsert(labelled), vec![]);

        // Foreground deletion starts: dependents and the owner are examined.
        assert_eq!(
            g.upsert(deleting(owner.clone(), &[FOREGROUND_FINALIZER])),
            vec![del("u-d"), del("u-owner")]
        );
        // The blocking reference stops blocking: the owner is examined.
        let unblocked = owned(cm("d", "u-d"), &[to(&owner)]);
        let items = g.upsert(unblocked);
        assert!(items.contains(&del("u-owner")), "{items:?}");
        // The dependent goes away: the owner is examined.
        assert_eq!(g.remove("u-d"), vec![del("u-owner")]);
        assert_eq!(g.remove("u-d"), vec![]);

        // Orphaning starts.
        let mut g = graph(&[owner.clone(), dep.clone()]);
        assert_eq!(
            g.upsert(deleting(owner.clone(), &[ORPHAN_FINALIZER])),
            vec![Item::AttemptToOrphan("u-owner".into())]
        );

        // The owner goes away: its dependents are examined.
        let mut g = graph(&[owner.clone(), dep.clone()]);
        assert_eq!(g.remove("u-owner"), vec![del("u-d")]);
        assert_eq!(g.dependents("u-owner"), vec!["u-d".to_string()]);

        // A resync without the owner removes it; one with an unchanged set does nothing.
        let mut g = graph(&[owner.clone(), dep.clone()]);
        assert_eq!(
            g.resync("/registry/configmaps/", vec![owner.clone(), dep.clone()]),
            vec![]
        );
        assert_eq!(
            g.resync("/registry/configmaps/", vec![dep.clone()]),
            vec![del("u-d")]
        );
        assert_eq!(g.len(), 1);
        assert_eq!(g.remove_resource("/registry/configmaps/"), vec![]);
        assert!(g.is_empty());
        assert_eq!(g.dependents("u-owner"), Vec::<String>::new());

        // A full pass looks at every owned node and every pending deletion.
        let g = graph(&[
            deleting(owner.clone(), &[ORPHAN_FINALIZER]),
            dep.clone(),
            cm("plain", "u-plain"),
        ]);
        assert_eq!(
            g.full_pass(),
            vec![del("u-d"), Item::AttemptToOrphan("u-owner".into())]
        );
    }

    #[test]
    fn nodes_from_json() {
        let json = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "c", "namespace": "ns", "uid": "u1",
                "deletionTimestamp": "2024-01-01T00:00:00Z",
                "finalizers": ["a"],
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u2", "blockOwnerDeletion": true},
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "e", "uid": "u3", "blockOwnerDeletion": null},
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "no-uid"}
                ]
            },
            "data": {"k": "v"}
        });
        let n = node_from_json(
            "/registry/configmaps/",
            "",
            "ConfigMap",
            json.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!((&*n.namespace, n.name.as_str(), &*n.uid), ("ns", "c", "u1"));
        assert!(n.deleting);
        assert_eq!(n.finalizers, ["a"]);
        assert_eq!(n.owners.len(), 2);
        assert_eq!(n.owners[0].group(), "apps");
        assert!(n.owners[0].block_owner_deletion);
        assert!(!n.owners[1].block_owner_deletion);
        assert_eq!(n.owners[1].group(), "");

        let bare = serde_json::json!({"metadata": {"name": "x", "uid": "u", "finalizers": null, "ownerReferences": null}});
        let n = node_from_json(
            "/registry/configmaps/",
            "",
            "ConfigMap",
            bare.to_string().as_bytes(),
        )
        .unwrap();
        assert!(n.owners.is_empty() && n.finalizers.is_empty() && !n.deleting);
        assert_eq!(node_from_json("p", "", "K", b"{\"metadata\":{}}"), None);
        assert_eq!(node_from_json("p", "", "K", b"[]"), None);
    }

    #[test]
    fn updates_that_change_nothing_the_graph_reads_are_ignored() {
        let mut g = Graph::default();
        let cm = |status: &str, finalizers: &str| {
            format!(
                r#"{{"metadata":{{"name":"c","namespace":"ns","uid":"u1","finalizers":{finalizers},
                "ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"u9"}}]}},
                "status":"{status}"}}"#
            )
        };
        let observe = |g: &mut Graph, json: &str| {
            g.observe("/registry/configmaps/", "", "ConfigMap", json.as_bytes())
        };
        // Its owner is absent: the new object is examined.
        assert_eq!(
            observe(&mut g, &cm("a", "null")),
            [Item::AttemptToDelete("u1".into())]
        );
        // A status change: nothing the collector reads changed, nothing to do (as kube).
        assert_eq!(observe(&mut g, &cm("b", "null")), []);
        assert_eq!(observe(&mut g, &cm("b", "[]")), []);
        // A finalizer is what the collector reads: the node is updated and examined again.
        assert_eq!(
            observe(&mut g, &cm("b", r#"["x"]"#)),
            [Item::AttemptToDelete("u1".into())]
        );
        assert_eq!(g.node("u1").unwrap().finalizers, ["x"]);
        // Escaped text is read as text.
        observe(&mut g, &cm("b", r#"["x\u0079"]"#));
        assert_eq!(g.node("u1").unwrap().finalizers, ["xy"]);
        // Not an object, or no uid: nothing.
        assert_eq!(observe(&mut g, "[]"), []);
        assert_eq!(observe(&mut g, r#"{"metadata":{"name":"n"}}"#), []);
    }
}
