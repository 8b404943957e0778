//! One admission request's attributes, as kube's `admission.Attributes` carries them, and the
//! `request` variable built from them (kube's `CreateAdmissionRequest`, fields omitted when
//! empty as the JSON of `admissionv1.AdmissionRequest` omits them).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"group": self.group, "version": self.version, "kind": self.kind})
    }
}

impl std::fmt::Display for Gvk {
    /// schema.GroupVersionKind.String(): `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A group, version and resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gvr {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl Gvr {
    pub fn new(group: &str, version: &str, resource: &str) -> Gvr {
        Gvr {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"group": self.group, "version": self.version, "resource": self.resource})
    }
}

/// The admission operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// The requesting user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What the policy plugin sees of one request.
#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    pub operation: Operation,
    pub kind: Gvk,
    pub resource: Gvr,
    pub subresource: String,
    pub name: String,
    pub namespace: String,
    /// The new object (none on DELETE and CONNECT).
    pub object: Option<&'a Value>,
    /// The stored object (UPDATE, DELETE).
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    /// The operation's options (CreateOptions, UpdateOptions, DeleteOptions).
    pub options: Option<&'a Value>,
    pub user: UserInfo,
}

impl Attributes<'_> {
    /// The `request` variable, with `kind`/`resource` the matched (equivalent) ones.
    pub fn request_json(&self, kind: &Gvk, resource: &Gvr) -> Value {
        let mut r = Map::new();
        r.insert("uid".into(), json!(""));
        r.insert("kind".into(), kind.to_json());
        r.insert("resource".into(), resource.to_json());
        if !self.subresource.is_empty() {
            r.insert("subResource".into(), json!(self.subresource));
            r.insert("requestSubResource".into(), json!(self.subresource));
        }
        r.insert("requestKind".into(), self.kind.to_json());
        r.insert("requestResource".into(), self.resource.to_json());
        if !self.name.is_empty() {
            r.insert("name".into(), json!(self.name));
        }
        if !self.namespace.is_empty() {
            r.insert("namespace".into(), json!(self.namespace));
        }
        r.insert("operation".into(), json!(self.operation.as_str()));
        let mut user = Map::new();
        if !self.user.username.is_empty() {
            user.insert("username".into(), json!(self.user.username));
        }
        if !self.user.uid.is_empty() {
            user.insert("uid".into(), json!(self.user.uid));
        }
        if !self.user.groups.is_empty() {
            user.insert("groups".into(), json!(self.user.groups));
        }
        if !self.user.extra.is_empty() {
            user.insert("extra".into(), json!(self.user.extra));
        }
        r.insert("userInfo".into(), Value::Object(user));
        r.insert("dryRun".into(), json!(self.dry_run));
        if let Some(o) = self.options {
            r.insert("options".into(), o.clone());
        }
        Value::Object(r)
    }
}

/// The `namespaceObject` variable: the fields kube's `CreateNamespaceObject` keeps.
pub fn namespace_object(ns: &Value) -> Value {
    let mut meta = Map::new();
    if let Some(m) = ns.get("metadata").and_then(Value::as_object) {
        for key in [
            "name",
            "generateName",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "finalizers",
        ] {
            if let Some(v) = m.get(key) {
                meta.insert(key.into(), v.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(meta));
    out.insert(
        "spec".into(),
        ns.get("spec").cloned().unwrap_or_else(|| json!({})),
    );
    out.insert(
        "status".into(),
        ns.get("status").cloned().unwrap_or_else(|| json!({})),
    );
    Value::Object(out)
}
