//! Admission: the defaulting and validation every write passes before storage, in
//! kube-apiserver's order — mutating admission (built-in defaulting, then the mutating
//! plugins), validation (the kind's strategy, CRD schemas, the installed kinds' own admission
//! ([`crate::kinds`]: Karmada's in-process webhooks)),
//! then the validating plugins.
//!
//! Dynamic admission plugins (k8s.io/apiserver pkg/admission) plug in through
//! [`crate::admission_plugin`]: a [`MutationPlugin`] or [`ValidationPlugin`] is told the
//! request's [`Attributes`] — operation, resource and kind ([`ResourceDef`]), subresource,
//! name and namespace, the old object, dry-run, the user (UserInfo JSON) and the request's
//! options — with the object (mutable for a mutating plugin), and answers `Ok` (allow) or an
//! [`ApiError`] (deny: its code, reason and message reach the client), adding warnings and
//! audit annotations to a [`Record`]. The plugins are set once at launch
//! ([`ApiState::set_admission_plugins`]); a plugin's `handles` is asked first on every write,
//! so a server whose plugins have nothing configured does no more per write than one without
//! plugins. Writes by the server itself (no request user) pass the plugins too, as kube's
//! loopback writes do.
//!
//! `apiserver_admission_step_admission_duration_seconds` (`type` admit or validate,
//! `operation`, `rejected`) times the dynamic steps of writes that reach a plugin, and
//! `apiserver_admission_controller_admission_duration_seconds` (`name`, `type`, `operation`,
//! `rejected`) each plugin, with kube's buckets.

use std::time::Instant;

use serde_json::{Value, json};

pub use crate::admission_plugin::{
    AdmissionOperation, AdmissionPlugins, Attributes, MutationPlugin, Record, ValidationPlugin,
};
use crate::error::{ApiError, Cause};
use crate::kinds::{self, WriteOperation};
use crate::managed_fields::Subresource;
use crate::object;
use crate::options::WriteContext;
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;
use component_base::metrics::{Desc, Kind};
use kube_registry::Strategy;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch.
    Update,
}

/// kube's admission latency buckets (pkg/admission/metrics).
const ADMISSION_BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

/// `apiserver_admission_step_admission_duration_seconds`.
pub static STEP_DURATION: Desc = Desc {
    name: "apiserver_admission_step_admission_duration_seconds",
    help: "[STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
    labels: &["operation", "rejected", "type"],
    kind: Kind::Histogram(&ADMISSION_BUCKETS),
};

/// `apiserver_admission_controller_admission_duration_seconds`.
pub static CONTROLLER_DURATION: Desc = Desc {
    name: "apiserver_admission_controller_admission_duration_seconds",
    help: "[STABLE] Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
    labels: &["name", "operation", "rejected", "type"],
    kind: Kind::Histogram(&ADMISSION_BUCKETS),
};

/// What admission adds to a successful write: the API warnings of the response.
#[derive(Debug, Default)]
pub struct Admitted {
    /// Warnings, to be sent as `Warning` headers.
    pub warnings: Vec<String>,
}

/// One request's pass through the dynamic plugins that handle it.
struct Dynamic<'a> {
    plugins: &'a AdmissionPlugins,
    def: &'a ResourceDef,
    op: AdmissionOperation,
    subresource: &'static str,
    name: String,
    namespace: String,
    old: Option<&'a Value>,
    dry_run: bool,
    user: Option<Value>,
    options: Value,
}

impl<'a> Dynamic<'a> {
    /// `None` when no plugin handles the resource and operation (the common, free path).
    fn new(
        state: &'a ApiState,
        def: &'a ResourceDef,
        op: AdmissionOperation,
        sub: Subresource,
        obj: &Value,
        old: Option<&'a Value>,
        ctx: &WriteContext,
    ) -> Option<Dynamic<'a>> {
        let plugins = state.admission_plugins()?;
        let any = plugins.mutating.iter().any(|p| p.handles(def, op))
            || plugins.validating.iter().any(|p| p.handles(def, op));
        if !any {
            return None;
        }
        let mut options = json!({"kind": op.options_kind(), "apiVersion": "meta.k8s.io/v1"});
        if ctx.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if op != AdmissionOperation::Delete && !ctx.manager.is_empty() {
            options["fieldManager"] = json!(ctx.manager);
        }
        let named = match (obj.is_null(), old) {
            (true, Some(old)) => old,
            _ => obj,
        };
        Some(Dynamic {
            plugins,
            def,
            op,
            subresource: match sub {
                Subresource::Main => "",
                Subresource::Status => "status",
                Subresource::Finalize => "finalize",
            },
            name: object::name(named).to_string(),
            namespace: object::meta_str(named, "namespace").to_string(),
            old,
            dry_run: ctx.dry_run,
            user: (plugins.user)(),
            options,
        })
    }

    fn attributes(&self) -> Attributes<'_> {
        Attributes {
            def: self.def,
            operation: self.op,
            subresource: self.subresource,
            name: &self.name,
            namespace: &self.namespace,
            old_object: self.old,
            dry_run: self.dry_run,
            user: self.user.as_ref(),
            options: &self.options,
        }
    }

    async fn mutate(&self, obj: &mut Value, record: &mut Record) -> Result<(), ApiError> {
        let started = Instant::now();
        let mut result = Ok(());
        for p in &self.plugins.mutating {
            if !p.handles(self.def, self.op) {
                continue;
            }
            let attrs = self.attributes();
            let t = Instant::now();
            result = p.admit(&attrs, obj, record).await;
            observe_plugin(p.name(), "admit", self.op, result.is_err(), t);
            if result.is_err() {
                break;
            }
        }
        observe_step("admit", self.op, result.is_err(), started);
        result
    }

    async fn validate(&self, obj: Option<&Value>, record: &mut Record) -> Result<(), ApiError> {
        let started = Instant::now();
        let mut result = Ok(());
        let attrs = self.attributes();
        for p in &self.plugins.validating {
            if !p.handles(self.def, self.op) {
                continue;
            }
            let t = Instant::now();
            result = p.validate(&attrs, obj, record).await;
            observe_plugin(p.name(), "validate", self.op, result.is_err(), t);
            if result.is_err() {
                break;
            }
        }
        observe_step("validate", self.op, result.is_err(), started);
        result
    }
}

fn observe_step(ty: &str, op: AdmissionOperation, rejected: bool, started: Instant) {
    component_base::metrics::global().observe_duration(
        &STEP_DURATION,
        &[op.as_str(), if rejected { "true" } else { "false" }, ty],
        started.elapsed(),
    );
}

fn observe_plugin(name: &str, ty: &str, op: AdmissionOperation, rejected: bool, started: Instant) {
    component_base::metrics::global().observe_duration(
        &CONTROLLER_DURATION,
        &[
            name,
            op.as_str(),
            if rejected { "true" } else { "false" },
            ty,
        ],
        started.elapsed(),
    );
}

/// Hands a request's audit annotations to the audit event and returns its warnings.
fn finish(record: Record) -> Admitted {
    crate::admission_plugin::add_audit_annotations(&record.audit_annotations);
    Admitted {
        warnings: record.warnings,
    }
}

/// Whether admitting a status write of this kind reads nothing but the object's `metadata` and
/// `status` (so a registry may hand it the object without its other members): true for
/// built-in kinds (see `admit`) and for Karmada's kinds but Cluster, whose admission decodes
/// and canonicalises the whole object, and older versions served by conversion, which convert
/// the whole object; a custom resource is validated whole against its schema. Never while a
/// dynamic plugin handles status updates of the kind: plugins see whole objects.
pub fn status_write_reads_only_status(state: &ApiState, def: &ResourceDef) -> bool {
    if let Some(p) = state.admission_plugins() {
        let op = AdmissionOperation::Update;
        if p.mutating.iter().any(|m| m.handles(def, op))
            || p.validating.iter().any(|v| v.handles(def, op))
        {
            return false;
        }
    }
    kinds::for_resource(def).is_some_and(|k| k.status_admission_reads_only_status(def))
}

/// Defaults and validates `obj` (the new state); `old` is the current state on update. The
/// dynamic plugins mutate after the built-in defaulting and validate last.
pub async fn admit(
    state: &ApiState,
    def: &ResourceDef,
    op: Operation,
    sub: Subresource,
    obj: &mut Value,
    old: Option<&Value>,
    ctx: &WriteContext,
) -> Result<Admitted, ApiError> {
    // RBAC privilege-escalation prevention runs first, as kube's policy-based storage does.
    state.check_escalation(def, obj, old)?;
    let aop = match op {
        Operation::Create => AdmissionOperation::Create,
        Operation::Update => AdmissionOperation::Update,
    };
    let dynamic = Dynamic::new(state, def, aop, sub, obj, old, ctx);
    let mut record = Record::default();
    let (group, kind) = (def.group.as_str(), def.kind.as_str());
    let strategy = kube_registry::strategy_for(group, kind);
    // A status write keeps everything but `.status` from the stored object (registry's
    // prepare_for_update), which was defaulted and validated when written: for built-in kinds
    // there is nothing left to default or validate (kube's status strategies validate only
    // metadata and status). The most frequent writes of the pipeline take this path.
    let built_in_status = sub == Subresource::Status && def.source == Source::BuiltIn;
    if !built_in_status {
        default_object(state, def, op, sub, obj, old, &strategy)?;
    }
    if let Some(d) = &dynamic {
        d.mutate(obj, &mut record).await?;
        // What a webhook returned is decoded (and so defaulted) again, as kube's dispatcher
        // applies the defaulter to the patched object.
        if !d.plugins.mutating.is_empty() && !built_in_status {
            if def.source == Source::BuiltIn {
                strategy.default(obj);
            }
            if def.is_custom() {
                crate::crd::default_custom_resource(def, obj);
            }
        }
    }
    if !built_in_status {
        validate_object(state, def, op, sub, obj, old, &strategy).await?;
    }
    if let Some(d) = &dynamic {
        d.validate(Some(obj), &mut record).await?;
    }
    Ok(finish(record))
}

/// Built-in defaulting and PrepareForCreate/Update, CRD defaulting.
fn default_object(
    state: &ApiState,
    def: &ResourceDef,
    op: Operation,
    sub: Subresource,
    obj: &mut Value,
    old: Option<&Value>,
    strategy: &impl Strategy,
) -> Result<(), ApiError> {
    let (group, kind) = (def.group.as_str(), def.kind.as_str());
    if def.source == Source::BuiltIn {
        // A resource served by conversion got its own version's defaults when converted.
        if !crate::conversion::converts(def) {
            strategy.default(obj);
        }
        match (op, old) {
            (Operation::Create, _) | (_, None) => strategy.prepare_for_create(obj),
            (Operation::Update, Some(old)) if sub == Subresource::Main => {
                strategy.prepare_for_update(obj, old)
            }
            _ => {}
        }
        if op == Operation::Create && group.is_empty() && kind == "Service" {
            allocate_cluster_ip(state, def, obj);
        }
    }
    if def.is_custom() {
        if op == Operation::Create {
            crate::crd::check_create_allowed(state, def)?;
        }
        crate::crd::default_custom_resource(def, obj);
    }
    Ok(())
}

/// The kind's validation, CRD schemas and the kind's own admission ([`crate::kinds`]).
async fn validate_object(
    state: &ApiState,
    def: &ResourceDef,
    op: Operation,
    sub: Subresource,
    obj: &mut Value,
    old: Option<&Value>,
    strategy: &impl Strategy,
) -> Result<(), ApiError> {
    let (group, kind) = (def.group.as_str(), def.kind.as_str());
    // kube validates metadata for every kind; the built-in rules add the kind's own checks.
    let mut causes = strategy.validate(obj, old);
    causes.extend(crate::crd::validate(def, obj, old));
    let own = kinds::for_resource(def);
    if let Some(k) = own {
        let name = object::name(obj);
        for msg in k.validate_name(def, name) {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{name}\": {msg}"),
                field: "metadata.name".into(),
            };
            if !causes.contains(&cause) {
                causes.push(cause);
            }
        }
    }
    if !causes.is_empty() {
        let group = kube_registry::conversion::storage_group(group, kind);
        return Err(ApiError::invalid(group, kind, object::name(obj), causes));
    }
    if let Some(k) = own {
        let wop = match (op, sub) {
            (Operation::Create, _) => WriteOperation::Create,
            (Operation::Update, Subresource::Main | Subresource::Finalize) => {
                WriteOperation::Update
            }
            (Operation::Update, Subresource::Status) => WriteOperation::UpdateStatus,
        };
        // Karmada's customization webhook compares with the other stored objects of the kind.
        let peers = if k.admission_reads_peers(def) {
            stored_objects(state, def).await?
        } else {
            Vec::new()
        };
        k.admit(def, wop, obj, old, &peers)?;
    }
    Ok(())
}

/// Every stored object of a resource (a webhook's list of its kind).
async fn stored_objects(state: &ApiState, def: &ResourceDef) -> Result<Vec<Value>, ApiError> {
    let Some(prefix) = def.prefix() else {
        return Ok(Vec::new());
    };
    let resp = state
        .store
        .range(storage::RangeRequest {
            prefix: prefix.to_string(),
            start_after: None,
            limit: 0,
            revision: 0,
        })
        .await?;
    Ok(resp
        .kvs
        .iter()
        .filter_map(|kv| crate::storage_codec::decode_value(def, &kv.value, kv.mod_revision).ok())
        .collect())
}

/// The API warnings of an admitted write, as admission webhooks return them: the fields of an
/// object that its kind accepts without effect (main-resource writes).
pub fn warnings(def: &ResourceDef, sub: Subresource, obj: &Value) -> Vec<String> {
    if sub != Subresource::Main {
        return Vec::new();
    }
    kinds::for_resource(def)
        .map(|k| k.warnings(def, obj))
        .unwrap_or_default()
}

/// Admission of a delete: on a control plane the installed delete admission (Karmada's
/// resource-deletion-protection webhook: objects labelled
/// `resourcetemplate.karmada.io/deletion-protected=Always` cannot be deleted), then the
/// dynamic plugins with the object as `oldObject`.
pub async fn admit_delete(
    state: &ApiState,
    def: &ResourceDef,
    obj: &Value,
    ctx: &WriteContext,
) -> Result<Admitted, ApiError> {
    if state.config.flavor == crate::state::Flavor::ControlPlane
        && let Some(d) = kinds::delete_admission()
    {
        d.admit_delete(def, obj)?;
    }
    let Some(d) = Dynamic::new(
        state,
        def,
        AdmissionOperation::Delete,
        Subresource::Main,
        &Value::Null,
        Some(obj),
        ctx,
    ) else {
        return Ok(Admitted::default());
    };
    let mut record = Record::default();
    let mut none = Value::Null;
    d.mutate(&mut none, &mut record).await?;
    d.validate(None, &mut record).await?;
    Ok(finish(record))
}

/// The error kube gives for an invalid name of this resource, if any (also used for names
/// in URLs).
pub fn name_error(def: &ResourceDef, name: &str) -> Option<String> {
    kube_registry::strategy_for(&def.group, &def.kind).validate_name(name)
}

/// The service CIDR clusterIPs are allocated from (kube's default 10.96.0.0/12).
const SERVICE_CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_CIDR_SIZE: u32 = 1 << 20;

/// Allocates a free clusterIP for a new Service that asks for one, as kube's ipallocator
/// does: random addresses from the service range that no other Service holds.
fn allocate_cluster_ip(state: &ApiState, def: &ResourceDef, obj: &mut Value) {
    let spec_type = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if spec_type == "ExternalName" {
        return;
    }
    let wanted = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !wanted.is_empty() {
        return;
    }
    let snapshot = state.catalog.snapshot();
    let Some(services) = snapshot.get(&def.group, &def.version, &def.plural).cloned() else {
        return;
    };
    let used: std::collections::HashSet<String> = state
        .cache(&services)
        .map(|c| {
            c.all()
                .iter()
                .filter_map(|o| {
                    o.value()
                        .pointer("/spec/clusterIP")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    for _ in 0..64 {
        let r = u32::from_be_bytes(
            uuid::Uuid::new_v4().as_bytes()[..4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        // Skip the network address and the first address (kube reserves .1 for the
        // `kubernetes` Service).
        let offset = 2 + r % (SERVICE_CIDR_SIZE - 3);
        let ip = std::net::Ipv4Addr::from(SERVICE_CIDR_BASE + offset).to_string();
        if !used.contains(&ip) {
            object::set_path(obj, ".spec.clusterIP", json!(ip));
            object::set_path(obj, ".spec.clusterIPs", json!([ip]));
            return;
        }
    }
}

/// Validation causes as an Invalid error (helper for callers with ready causes).
pub fn invalid(def: &ResourceDef, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&def.group, &def.kind, name, causes)
}
